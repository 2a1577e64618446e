/* `tmem demo --bookkeeping --quick --json`: the demo's numbers asserted against each
 * other, never against constants:
 *  - OS-measured private dirty within 5% + 4 MiB of what the library
 *    accounts, clean file pages within 2% + 4 MiB;
 *  - the typed session's peak private dirty below the naive one's, with and
 *    without the naive session's malloc'd weights;
 *  - what the session committed (dirty) at most the fit calculator's
 *    prediction + 5% + 4 MiB;
 *  - the planned arenas at or above their lower bounds and below no-aliasing;
 *  - the HTML report exists and holds the timeline and the plan pictures. */
#include <stdlib.h>
#include <string.h>
#include "data_url.h"
#include "harness.h"

static char json[16384];

/* The number after "key": inside the object that starts at `section`. */
static double num(const char *section, const char *key) {
    const char *s = strstr(json, section);
    CHECK(s != NULL);
    if (!s) return -1e300; /* fails every comparison below */
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *k = strstr(s, pat);
    CHECK(k != NULL);
    if (!k) return -1e300;
    return strtod(k + strlen(pat), NULL);
}

static void test_demo(void) {
    const char *tool = getenv("TMEM_TOOL"), *dir = getenv("TMEM_BUILD_DIR");
    REQUIRE(tool && dir);
    char report[512], cmd[1200];
    snprintf(report, sizeof report, "%s/test-demo-report.html", dir);
    remove(report);
    snprintf(cmd, sizeof cmd, "'%s' demo --bookkeeping --quick --json --report '%s'", tool, report);
    FILE *p = popen(cmd, "r");
    REQUIRE(p != NULL);
    size_t n = fread(json, 1, sizeof json - 1, p);
    json[n] = '\0';
    CHECK(pclose(p) == 0);
    printf("%s", json);
    REQUIRE(strstr(json, "\"typed\":") && strstr(json, "\"naive\":"));

    double acc_d = num("\"typed\"", "accounted_dirty"), os_d = num("\"typed\"", "os_dirty");
    double acc_c = num("\"typed\"", "accounted_clean"), os_c = num("\"typed\"", "os_clean");
    double mib = 1048576.0;
    CHECK(acc_d > 0 && acc_c > 0);
    CHECK(os_d <= acc_d * 1.05 + 4 * mib && os_d >= acc_d * 0.95 - 4 * mib);
    CHECK(os_c <= acc_c * 1.02 + 4 * mib && os_c >= acc_c * 0.98 - 4 * mib);

    double typed = num("\"typed\"", "peak_private_dirty"), naive = num("\"naive\"", "peak_private_dirty");
    double naive_w = num("\"naive\"", "weights_dirty");
    CHECK(typed > 0 && typed < naive);
    CHECK(typed < naive - naive_w);

    double committed = num("\"typed\"", "peak_committed_dirty"), predicted = num("\"predicted\"", "dirty");
    /* the fit sizes the image at the encoder's input (not the 1280x720
     * camera frame) and has no line for the sampler's scratch: 2.5 MiB here */
    CHECK(committed > 0 && committed <= predicted * 1.05 + 4 * mib);

    const char *phases[] = {"\"vision\":", "\"prefill\":", "\"decode\":"};
    for (int i = 0; i < 3; i++) {
        double arena = num(phases[i], "arena"), lb = num(phases[i], "lower_bound"), sum = num(phases[i], "no_alias");
        CHECK(arena >= lb && arena <= sum && lb > 0);
    }

    FILE *f = fopen(report, "rb");
    REQUIRE(f != NULL);
    static char html[8 << 20];
    size_t hn = fread(html, 1, sizeof html - 1, f);
    html[hn] = '\0';
    fclose(f);
    int svgs = 0;
    for (const char *q = html; (q = strstr(q, "<svg")) != NULL; q++) svgs++;
    CHECK(svgs >= 2);
    /* the plan picture (an image: base64 SVG in a data: URL) and its title */
    char *plan = img_data(strstr(html, "id=\"tmem-plan-img\""));
    CHECK(plan && strstr(plan, "<svg") && strstr(plan, "prefill activation arena"));
    free(plan);
    CHECK(strstr(html, "/memory/kv") != NULL);               /* a timeline series */
    remove(report);
}

int main(void) {
    RUN(test_demo);
    return tmem_test_finish();
}
