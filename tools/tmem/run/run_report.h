/* run_report.h: what `tmem run` measures and prints: speed, and memory per
 * role predicted (tmem_fit for this run) vs committed (the library's
 * accounting) vs measured (the OS's Private_Dirty, sampled between steps). */
#ifndef TMEM_TOOL_RUN_REPORT_H
#define TMEM_TOOL_RUN_REPORT_H

#include "tmemrt/runtime.h"
#include "tmemrt/tokenizer.h"
#include "tmemrt/vision.h"

typedef struct run_report {
    const char *model;
    bool naive;
    tmrt_session_info info;
    tmem_fit_result used;          /* the fit at the tokens the run reached */
    uint32_t n_samples;
    uint64_t tokenizer_bytes;      /* the tokenizer's tables when no fit line has them (image runs) */
    uint64_t baseline_dirty;       /* Private_Dirty before the model was opened */
    uint64_t peak_dirty, peak_rss; /* sampled maxima */
    uint32_t prompt_tokens, generated_tokens, decoded_tokens;
    double prefill_s, decode_s;    /* without the footprint samples taken inside them */
    double sample_s;               /* seconds spent reading the footprint (smaps_rollup) */
    double ttft_s;                  /* prompt processing (image decode and encode included)
                                       to the first sampled token */
    const tmrt_vision_stats *vision; /* the image's encode, NULL without one */
    tmem_gpu *gpu;                 /* --device vulkan: the model's device, else NULL */
} run_report;

void run_report_begin(run_report *r, const char *model, bool naive);
/* Read the OS footprint and keep the maxima; the time it takes (a walk of
 * every page of the mapping) adds to sample_s, which the speed figures
 * leave out. */
void run_report_sample(run_report *r);
/* The refusal: the fit breakdown and the largest context that fits. */
void run_report_refusal(const run_report *r, uint64_t budget, bool json);
/* The summary (text to stderr, or one JSON object to stdout). */
void run_report_finish(run_report *r, tmem_context *ctx, const tmrt_tokenizer *tok, const int32_t *gen,
                       uint32_t n_gen, bool json);

/* A number of `tmem run --json`'s summary ("key": value, or any JSON
 * this tool prints: "key":value); -1 if absent.
 * For the commands that run it as a child (bench run, demo). */
double run_report_json_num(const char *json, const char *key);

#endif
