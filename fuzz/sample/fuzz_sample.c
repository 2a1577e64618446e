/* libFuzzer target for the sampler (tmrt_sample): any logits (NaN, +-Inf,
 * denormals, huge), any temperature, top-k and top-p, any seed. Input: 4
 * bytes temperature (float bits), 4 top-k, 4 top-p (float bits), 8 seed, then
 * the logits as float bits (at most 4,096). The logits and the scratch are
 * exact-size heap copies, so ASan catches any read or write past them.
 * Checked: the answer is -1 exactly when a logit is non-finite or the
 * temperature is NaN, else an id below n_vocab; greedy returns the argmax.
 * Seeds: fuzz/sample/corpus (the issue-21 reproducers: all-NaN, all-Inf,
 * one NaN with top-p 0.9 at temperature 0.8). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "tmemrt/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 20) return 0;
    tmrt_sampler_desc d = {0};
    memcpy(&d.temperature, data, 4);
    memcpy(&d.top_k, data + 4, 4);
    memcpy(&d.top_p, data + 8, 4);
    memcpy(&d.seed, data + 12, 8);
    size_t n = (size - 20) / 4;
    if (n > 4096) n = 4096;
    float *lg = calloc(n ? n : 1, sizeof(float));
    void *scratch = malloc(n ? n * 8 : 1);
    if (!lg || !scratch) abort();
    if (n) memcpy(lg, data + 20, n * sizeof(float));
    bool bad = isnan(d.temperature);
    for (size_t i = 0; i < n; i++) bad |= !isfinite(lg[i]);
    if (tmrt_logits_first_nonfinite(lg, (uint32_t)n) != (uint32_t)n) {
        if (!bad && !isnan(d.temperature)) abort();
    }
    tmrt_sampler sp;
    tmrt_sampler_init(&sp, &d);
    int32_t t = tmrt_sample(lg, (uint32_t)n, &sp, scratch);
    if (!n || bad) {
        if (t != -1) abort();
    } else {
        if (t < 0 || (size_t)t >= n) abort();
        if (d.temperature <= 0) { /* greedy: the first maximum */
            for (size_t i = 0; i < n; i++)
                if (lg[i] > lg[t] || (lg[i] == lg[t] && (int32_t)i < t)) abort();
        }
    }
    int32_t g = tmrt_sample(lg, (uint32_t)n, NULL, NULL); /* greedy without scratch */
    if ((!n || (n && tmrt_logits_first_nonfinite(lg, (uint32_t)n) != n)) != (g == -1)) abort();
    free(scratch);
    free(lg);
    return 0;
}
