/* The one text builder (src/base/text.h): fixed, growing and sink modes, and
 * the escaping rule shared by every JSON and XML writer: valid UTF-8 passes
 * through, invalid bytes become their Latin-1 code point, controls escape. */
#include "harness.h"
#include "base/text.h"
#include "typedmem/placement.h"
#include <stdlib.h>
#include <string.h>

/* JSON-escape s into a growing buffer; the caller frees. */
static char *json(const char *s) {
    tmem__text t;
    tmem__text_init(&t);
    tmem__text_json_escape(&t, s);
    char *out = NULL;
    if (tmem__text_take(&t, &out, NULL) != TMEM_OK) return NULL;
    return out;
}

static char *xml(const char *s) {
    tmem__text t;
    tmem__text_init(&t);
    tmem__text_xml_escape(&t, s);
    char *out = NULL;
    if (tmem__text_take(&t, &out, NULL) != TMEM_OK) return NULL;
    return out;
}

static void check_json(const char *in, const char *want) {
    char *got = json(in);
    CHECK_MSG(got && strcmp(got, want) == 0, "json(%s): got [%s], want [%s]", in,
              got ? got : "(null)", want);
    free(got);
}

static void check_xml(const char *in, const char *want) {
    char *got = xml(in);
    CHECK_MSG(got && strcmp(got, want) == 0, "xml: got [%s], want [%s]", got ? got : "(null)",
              want);
    free(got);
}

static void test_json_escape_rule(void) {
    check_json("plain", "plain");
    check_json("a\"b\\c", "a\\\"b\\\\c");
    check_json("tab\there\n", "tab\\u0009here\\u000a");
    check_json("del\x7f", "del\\u007f");
    /* valid UTF-8: 2, 3 and 4 byte forms pass as they are */
    check_json("caf\xc3\xa9", "caf\xc3\xa9");
    check_json("\xe2\x82\xac", "\xe2\x82\xac");
    check_json("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");
    /* invalid: lone continuation, overlong, surrogate, > U+10FFFF, cut */
    check_json("\x80", "\\u0080");
    check_json("\xc0\xaf", "\\u00c0\\u00af");
    check_json("\xed\xa0\x80", "\\u00ed\\u00a0\\u0080");
    check_json("\xf4\x90\x80\x80", "\\u00f4\\u0090\\u0080\\u0080");
    check_json("x\xc3", "x\\u00c3");
    check_json("\xe2\x82z", "\\u00e2\\u0082z");
    /* Latin-1 text (not UTF-8) stays readable and loses nothing */
    check_json("caf\xe9!", "caf\\u00e9!");
}

static void test_xml_escape_rule(void) {
    check_xml("<a href='x'>&\"</a>", "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
    check_xml("line\nnext\tcol\x01", "line\nnext\tcol?");
    check_xml("caf\xc3\xa9", "caf\xc3\xa9");
    check_xml("caf\xe9", "caf&#233;");
}

static void test_fixed_counts_and_clips(void) {
    char buf[8];
    tmem__text t;
    tmem__text_init_fixed(&t, buf, sizeof buf);
    tmem__text_printf(&t, "%s", "hello");
    tmem__text_json_string(&t, "w\xc3\xb6rld");
    size_t need = 0;
    CHECK_ST(tmem__text_finish(&t, &need), TMEM_E_FULL);
    CHECK(need == strlen("hello\"w\xc3\xb6rld\"") + 1);
    CHECK(strcmp(buf, "hello\"w") == 0); /* clipped, NUL-terminated */
    /* a sizing pass, and a long piece (past the printf's small buffer) */
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tmem__text_init_fixed(&t, NULL, 0);
    tmem__text_printf(&t, "[%s]", big);
    CHECK_OK(tmem__text_finish(&t, &need));
    CHECK(need == sizeof big + 2);
    char *full = malloc(need);
    REQUIRE(full);
    tmem__text_init_fixed(&t, full, need);
    tmem__text_printf(&t, "[%s]", big);
    CHECK_OK(tmem__text_finish(&t, NULL));
    CHECK(strlen(full) == sizeof big + 1 && full[0] == '[' && full[need - 2] == ']');
    free(full);
}

typedef struct sink_log {
    size_t calls, bytes;
    bool fail;
} sink_log;

static bool log_sink(void *arg, const char *data, size_t len) {
    sink_log *l = arg;
    (void)data;
    l->calls++;
    l->bytes += len;
    return !l->fail;
}

static void test_sink_streams_and_fails_sticky(void) {
    sink_log l = {0, 0, false};
    tmem__text t;
    tmem__text_init_sink(&t, log_sink, &l);
    char line[1000];
    memset(line, 'y', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    for (int i = 0; i < 3000; i++) tmem__text_puts(&t, line); /* ~3 MB */
    CHECK(l.calls >= 2);          /* flushed as it went */
    CHECK(t.cap <= (2u << 20));   /* the buffer stayed about one chunk */
    tmem__text_drain(&t);
    CHECK(!t.failed && l.bytes == 3000 * (sizeof line - 1));
    tmem__text_free(&t);
    sink_log bad = {0, 0, true};
    tmem__text_init_sink(&t, log_sink, &bad);
    tmem__text_puts(&t, "x");
    tmem__text_drain(&t);
    CHECK(t.failed && t.sink_failed);
    tmem__text_free(&t);
}

static void test_placement_names_once(void) {
    CHECK(strcmp(tmem_placement_name(TMEM_PLACEMENT_HOST), "host") == 0);
    CHECK(strcmp(tmem_placement_name(TMEM_PLACEMENT_DEVICE_HOST_VISIBLE), "device_host_visible") == 0);
    CHECK(tmem_placement_name(TMEM_PLACEMENT_COUNT) == NULL);
    CHECK(tmem_placement_name((tmem_placement)-1) == NULL);
    CHECK(strcmp(tmem_lifetime_name(TMEM_LIFETIME_SHARED), "shared") == 0);
    CHECK(tmem_lifetime_name(TMEM_LIFETIME_COUNT) == NULL);
    for (int i = 0; i < TMEM_PLACEMENT_COUNT; i++) CHECK(tmem_placement_name((tmem_placement)i));
}

int main(void) {
    RUN(test_json_escape_rule);
    RUN(test_xml_escape_rule);
    RUN(test_fixed_counts_and_clips);
    RUN(test_sink_streams_and_fails_sticky);
    RUN(test_placement_names_once);
    return tmem_test_finish();
}
