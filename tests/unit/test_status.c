/* Status codes: every code has a distinct name and message. */
#include "harness.h"
#include <string.h>

static void test_names_and_messages(void) {
    static const tmem_status all[] = {
#define X_(name, value, msg) name,
        TMEM_STATUS_LIST(X_)
#undef X_
    };
    size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        CHECK(strncmp(tmem_status_name(all[i]), "TMEM_", 5) == 0);
        CHECK(strlen(tmem_strerror(all[i])) > 0);
        for (size_t j = 0; j < i; j++) {
            CHECK(all[i] != all[j]);
            CHECK(strcmp(tmem_status_name(all[i]), tmem_status_name(all[j])) != 0);
        }
    }
    CHECK(strcmp(tmem_strerror((tmem_status)12345), "unknown status") == 0);
    CHECK(strcmp(tmem_status_name(TMEM_E_BUDGET), "TMEM_E_BUDGET") == 0);
}

int main(void) {
    RUN(test_names_and_messages);
    return tmem_test_finish();
}
