/* llama.cpp as the bench's peer: its tools run as child processes on the
 * caller's files, their figures read from what they print (llama-bench's
 * `-o json`, llama-mtmd-cli's log lines), their memory sampled like ours. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench/bench.h"
#include "bench/bench_peer.h"

static bool tool_path(const bench_peer *p, const char *tool, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/%s", p->bin, tool);
    return n > 0 && (size_t)n < cap && access(out, X_OK) == 0;
}

bool bench_peer_parse(const char *spec, bench_peer *p) {
    static const char prefix[] = "llama.cpp=";
    char probe[1100];
    if (strncmp(spec, prefix, sizeof prefix - 1) != 0 || !spec[sizeof prefix - 1]) {
        fprintf(stderr, "tmem bench: --peer takes llama.cpp=BUILD_DIR (got '%s')\n", spec);
        return false;
    }
    const char *dir = spec + sizeof prefix - 1;
    int n = snprintf(p->bin, sizeof p->bin, "%s", dir);
    if (n > 0 && (size_t)n < sizeof p->bin && tool_path(p, "llama-bench", probe, sizeof probe)) return true;
    n = snprintf(p->bin, sizeof p->bin, "%s/bin", dir);
    if (n > 0 && (size_t)n < sizeof p->bin && tool_path(p, "llama-bench", probe, sizeof probe)) return true;
    fprintf(stderr, "tmem bench: no executable llama-bench in %s or %s/bin (docs/benchmarks.md: building the "
                    "peer)\n", dir, dir);
    return false;
}

/* The number after the first `"key": ` in text; -1 if absent. */
static double json_num(const char *text, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(text, pat);
    return at ? strtod(at + strlen(pat), NULL) : -1;
}

bool bench_peer_llama_bench(const bench_peer *p, const char *model, unsigned threads,
                            unsigned n_prompt, unsigned n_gen, unsigned n_depth, double *tok_s,
                            double *peak_dirty) {
    char exe[1100], t[16], np[16], ng[16], nd[16];
    static char out[1 << 16];
    if (!tool_path(p, "llama-bench", exe, sizeof exe)) return false;
    snprintf(t, sizeof t, "%u", threads);
    snprintf(np, sizeof np, "%u", n_prompt);
    snprintf(ng, sizeof ng, "%u", n_gen);
    snprintf(nd, sizeof nd, "%u", n_depth);
    char *const argv[] = {exe, "-m", (char *)model, "-t", t, "-p", np, "-n", ng, "-d", nd,
                          "-r", "1", "-o", "json", NULL};
    tmem_bench_sample s;
    bool ran = tmem_bench_sampled(argv, false, out, sizeof out, &s);
    double ts = json_num(out, "avg_ts");
    if (!ran || ts <= 0) {
        fprintf(stderr, "tmem bench: llama-bench -p %u -n %u -d %u on %s failed\n", n_prompt, n_gen, n_depth,
                model);
        return false;
    }
    *tok_s = ts;
    *peak_dirty = s.peak_dirty;
    return true;
}

/* The tokens-per-second figure of the llama_perf line that contains what. */
static double perf_tok_s(const char *text, const char *what) {
    for (const char *at = strstr(text, what); at; at = strstr(at + 1, what)) {
        const char *end = strchr(at, '\n'), *tps = strstr(at, "tokens per second");
        if (!tps || (end && tps > end)) continue;
        const char *num = tps;
        while (num > at && num[-1] == ' ') num--;
        while (num > at && (num[-1] == '.' || (num[-1] >= '0' && num[-1] <= '9'))) num--;
        return strtod(num, NULL);
    }
    return 0;
}

bench_peer_mtmd bench_peer_run_mtmd(const bench_peer *p, const char *model, const char *mmproj,
                                    const char *image, unsigned threads, unsigned ctx,
                                    unsigned n_gen) {
    bench_peer_mtmd r = {0};
    char exe[1100], t[16], c[16], n[16];
    static char out[1 << 18];
    if (!tool_path(p, "llama-mtmd-cli", exe, sizeof exe)) {
        fprintf(stderr, "tmem bench: no llama-mtmd-cli in %s\n", p->bin);
        return r;
    }
    snprintf(t, sizeof t, "%u", threads);
    snprintf(c, sizeof c, "%u", ctx);
    snprintf(n, sizeof n, "%u", n_gen);
    char *const argv[] = {exe,  "-m", (char *)model, "--mmproj", (char *)mmproj, "--image", (char *)image,
                          "-p", "Describe the image.", "-n", n, "-t", t, "-c", c, "--temp", "0", NULL};
    tmem_bench_sample s;
    bool ran = tmem_bench_sampled(argv, true, out, sizeof out, &s);
    static const char enc[] = "slice encoded in ";
    for (const char *at = strstr(out, enc); at; at = strstr(at + 1, enc)) r.encode_ms += strtod(at + sizeof enc - 1, NULL);
    r.prefill_tok_s = perf_tok_s(out, "prompt eval time");
    const char *ev = strstr(out, "prompt eval time");
    r.decode_tok_s = ev ? perf_tok_s(ev + 1, " eval time") : 0;
    r.peak_dirty = s.peak_dirty, r.wall_s = s.wall_s, r.cpu_s = s.cpu_s;
    r.ok = ran && r.encode_ms > 0;
    if (!r.ok) fprintf(stderr, "tmem bench: llama-mtmd-cli on %s + %s failed (or printed no encode time)\n",
                       model, mmproj);
    return r;
}
