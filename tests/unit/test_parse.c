/* tmem_parse_size / tmem_parse_u64 (typedmem/parse.h): the one strict parser
 * of sizes and counts, shared by the config file and the tmem CLI. */
#include <string.h>
#include "harness.h"

static tmem_status size_of(const char *s, uint64_t *v, const char **why) {
    return tmem_parse_size(s, strlen(s), v, why);
}

static void test_sizes(void) {
    static const struct { const char *text; uint64_t bytes; } ok[] = {
        {"0", 0},          {"4096", 4096},       {"1B", 1},           {"64K", 64ull << 10},
        {"64KiB", 65536},  {"512mib", 512ull << 20}, {"1536 MiB", 1536ull << 20}, {"3GiB", 3ull << 30},
        {"3G", 3ull << 30}, {"2TiB", 2ull << 40}, {"1KB", 1000},       {"600MB", 600000000ull},
        {"2GB", 2000000000ull}, {"1tb", 1000000000000ull}, {"18446744073709551615", UINT64_MAX},
        {"16777215TiB", 16777215ull << 40},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1;
        const char *why = NULL;
        CHECK_MSG(size_of(ok[i].text, &v, &why) == TMEM_OK && v == ok[i].bytes, "'%s' -> %llu (%s)", ok[i].text,
                  (unsigned long long)v, why ? why : "");
    }
    static const struct { const char *text; tmem_status st; const char *why; } bad[] = {
        {"", TMEM_E_PARSE, "start with a digit"},
        {"-5", TMEM_E_PARSE, "sign"},
        {"+5", TMEM_E_PARSE, "sign"},
        {" 5", TMEM_E_PARSE, "start with a digit"},
        {"5 ", TMEM_E_PARSE, "trailing space"},
        {"0x10", TMEM_E_PARSE, "hex"},
        {"1.5GiB", TMEM_E_PARSE, "whole numbers"},
        {"1e9", TMEM_E_PARSE, "unknown size unit"},
        {"nan", TMEM_E_PARSE, "start with a digit"},
        {"inf", TMEM_E_PARSE, "start with a digit"},
        {"3 XB", TMEM_E_PARSE, "unknown size unit"},
        {"18446744073709551616", TMEM_E_OVERFLOW, "overflows"},
        {"16777216TiB", TMEM_E_OVERFLOW, "overflows"},
        {"18446744073709551615KB", TMEM_E_OVERFLOW, "overflows"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        const char *why = NULL;
        tmem_status st = size_of(bad[i].text, &v, &why);
        CHECK_MSG(st == bad[i].st && v == 0 && why && strstr(why, bad[i].why), "'%s': %s, why '%s'", bad[i].text,
                  tmem_status_name(st), why ? why : "(null)");
    }
    /* a length bound, not a terminator: "64KiB" cut after 2 bytes is 64 */
    uint64_t v;
    CHECK_OK(tmem_parse_size("64KiB", 2, &v, NULL));
    CHECK(v == 64);
    CHECK_ST(tmem_parse_size(NULL, 0, &v, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_parse_size("1", 1, NULL, NULL), TMEM_E_INVALID_ARG);
}

static void test_counts(void) {
    uint64_t v = 9;
    const char *why = NULL;
    CHECK_OK(tmem_parse_u64("64", 2, 1, 64, &v, NULL));
    CHECK(v == 64);
    CHECK_ST(tmem_parse_u64("0", 1, 1, 64, &v, &why), TMEM_E_LIMIT);
    CHECK(v == 0 && why && strstr(why, "range"));
    CHECK_ST(tmem_parse_u64("65", 2, 1, 64, &v, NULL), TMEM_E_LIMIT);
    CHECK_ST(tmem_parse_u64("-1", 2, 0, UINT64_MAX, &v, &why), TMEM_E_PARSE);
    CHECK(why && strstr(why, "sign"));
    CHECK_ST(tmem_parse_u64("4294967295x", 11, 0, UINT64_MAX, &v, NULL), TMEM_E_PARSE);
    CHECK_ST(tmem_parse_u64("1MiB", 4, 0, UINT64_MAX, &v, NULL), TMEM_E_PARSE);
    CHECK_ST(tmem_parse_u64("0x10", 4, 0, UINT64_MAX, &v, NULL), TMEM_E_PARSE);
    CHECK_ST(tmem_parse_u64("99999999999999999999", 20, 0, UINT64_MAX, &v, NULL), TMEM_E_OVERFLOW);
    CHECK_ST(tmem_parse_u64("5", 1, 6, 5, &v, NULL), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_parse_u64("18446744073709551615", 20, 0, UINT64_MAX, &v, NULL));
    CHECK(v == UINT64_MAX);
}

int main(void) {
    RUN(test_sizes);
    RUN(test_counts);
    return tmem_test_finish();
}
