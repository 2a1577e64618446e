/* run_report.c: see run_report.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "run/run_report.h"

static double mib(uint64_t b) { return (double)b / 1048576.0; }

void run_report_begin(run_report *r, const char *model, bool naive) {
    memset(r, 0, sizeof *r);
    r->model = model;
    r->naive = naive;
    tmem_footprint fp;
    if (tmem_footprint_read(&fp) == TMEM_OK) r->baseline_dirty = fp.private_dirty;
    run_report_sample(r);
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void run_report_sample(run_report *r) {
    tmem_footprint fp;
    r->n_samples++;
    double t0 = mono_s();
    tmem_status st = tmem_footprint_read(&fp);
    r->sample_s += mono_s() - t0;
    if (st != TMEM_OK) return;
    if (fp.private_dirty > r->peak_dirty) r->peak_dirty = fp.private_dirty;
    if (fp.rss > r->peak_rss) r->peak_rss = fp.rss;
}

static void fit_lines(FILE *f, const tmem_fit_result *fit) {
    for (uint32_t i = 0; i < fit->item_count; i++) {
        const tmem_fit_item *it = &fit->items[i];
        fprintf(f, "  %-18s %-22s %10.2f MiB%s\n", it->what, it->type_name, mib(it->bytes),
                it->clean ? "  (clean file pages)" : "");
    }
}

void run_report_refusal(const run_report *r, uint64_t budget, bool json) {
    const tmem_fit_result *fit = &r->info.fit;
    if (json) {
        printf("{\"fits\": false, \"budget\": %llu, \"total\": %llu, \"total_dirty\": %llu, \"n_ctx\": %u, "
               "\"max_ctx_tokens\": %llu, \"items\": [",
               (unsigned long long)(fit->budget ? fit->budget : budget), (unsigned long long)fit->total,
               (unsigned long long)fit->total_dirty,
               r->info.n_ctx, (unsigned long long)fit->max_ctx_tokens);
        for (uint32_t i = 0; i < fit->item_count; i++)
            printf("%s{\"what\": \"%s\", \"type\": \"%s\", \"bytes\": %llu, \"clean\": %s}", i ? ", " : "",
                   fit->items[i].what, fit->items[i].type_name, (unsigned long long)fit->items[i].bytes,
                   fit->items[i].clean ? "true" : "false");
        printf("]}\n");
        return;
    }
    fprintf(stderr, "tmem run: refused: %u tokens of context need %.2f MiB of dirty memory, the budget is "
            "%.2f MiB%s\n", r->info.n_ctx, mib(fit->total_dirty), mib(fit->budget ? fit->budget : budget),
            budget ? "" : " (discovered: TMEM_LIMIT, cgroup or available memory)");
    fit_lines(stderr, fit);
    fprintf(stderr, "  %-41s %10.2f MiB\n", "total", mib(fit->total));
    fprintf(stderr, "  %-41s %10.2f MiB  (what the budget counts)\n", "of which dirty", mib(fit->total_dirty));
    if (fit->max_ctx_tokens)
        fprintf(stderr, "the largest context that fits: --ctx %llu\n", (unsigned long long)fit->max_ctx_tokens);
    else
        fprintf(stderr, "no context fits this budget\n");
}

/* The image's encode, as fields of the summary object. */
static void json_vision(const tmrt_vision_stats *v) {
    printf(", \"vision\": {\"width\": %u, \"height\": %u, \"patches\": %u, \"image_tokens\": %u, "
           "\"image_copies\": %u, \"preprocess_ms\": %.3f, \"encode_ms\": %.3f, "
           "\"patch_bytes\": %llu, \"arena_bytes\": %llu, \"scratch_bytes\": %llu}",
           v->grid.width, v->grid.height, v->grid.n_patches, v->grid.n_tokens, v->image_copies,
           v->preprocess_ms, v->encode_ms, (unsigned long long)v->patch_bytes,
           (unsigned long long)v->arena_bytes, (unsigned long long)v->scratch_bytes);
}

/* Committed peak of the types the fit lines name (typed mode). */
static uint64_t type_peak(tmem_context *ctx, const char *name, uint64_t *dirty) {
    tmem_type *t;
    tmem_type_stats ts;
    *dirty = 0;
    if (!ctx || tmem_type_find(ctx, name, &t) || tmem_type_get_stats(t, &ts)) return 0;
    *dirty = ts.dirty;
    return ts.committed.peak;
}

/* --device vulkan: device bytes per role from the typed accounting
 * (tmem_role_get_stats: device_in_use, current and peak), the total, and the
 * driver's figure for the device heap where VK_EXT_memory_budget gives one. */
static void device_memory(const run_report *r, tmem_context *ctx, bool json) {
    uint64_t total = 0, total_peak = 0;
    if (!json) fprintf(stderr, "device memory (MiB, typed accounting): role          now       peak\n");
    else printf(", \"device\": \"vulkan\", \"device_roles\": [");
    bool first = true;
    for (int role = TMEM_ROLE_BUILTIN_FIRST; role < TMEM_ROLE_BUILTIN_END; role++) {
        tmem_role_stats rs;
        if (tmem_role_get_stats(ctx, (tmem_role)role, &rs) != TMEM_OK || !rs.device_in_use.peak) continue;
        total += rs.device_in_use.current;
        total_peak += rs.device_in_use.peak;
        if (json)
            printf("%s{\"role\": \"%s\", \"bytes\": %llu, \"peak\": %llu}", first ? "" : ", ",
                   tmem_role_name(ctx, (tmem_role)role), (unsigned long long)rs.device_in_use.current,
                   (unsigned long long)rs.device_in_use.peak);
        else
            fprintf(stderr, "  %-44s %10.2f %10.2f\n", tmem_role_name(ctx, (tmem_role)role),
                    mib(rs.device_in_use.current), mib(rs.device_in_use.peak));
        first = false;
    }
    uint64_t driver = 0;
    bool have_driver = false;
    tmem_gpu_info gi;
    if (r->gpu && tmem_gpu_get_info(r->gpu, &gi) == TMEM_OK && gi.type_count) {
        driver = gi.types[0].usage;
        have_driver = gi.types[0].budget_from_driver;
    }
    if (r->naive) total = total_peak = r->info.device_bytes; /* the twin's own allocations, not typed */
    if (json) {
        printf("], \"device_bytes\": %llu, \"device_bytes_peak\": %llu, \"device_driver_usage\": %lld",
               (unsigned long long)total, (unsigned long long)total_peak, have_driver ? (long long)driver : -1LL);
        return;
    }
    if (r->naive) fprintf(stderr, "  (naive twin: a VkDeviceMemory per tensor, outside the typed accounting)\n");
    fprintf(stderr, "  %-44s %10.2f %10.2f\n", "all roles", mib(total), mib(total_peak));
    if (have_driver) fprintf(stderr, "  driver heap usage (VK_EXT_memory_budget): %.2f MiB\n", mib(driver));
    else fprintf(stderr, "  driver heap usage: no VK_EXT_memory_budget on this device\n");
}

void run_report_finish(run_report *r, tmem_context *ctx, const tmrt_tokenizer *tok, const int32_t *gen,
                       uint32_t n_gen, bool json) {
    const tmem_fit_result *fit = &r->info.fit, *used = r->used.item_count ? &r->used : fit;
    uint64_t predicted = used->total_dirty + r->tokenizer_bytes;
    uint64_t predicted_ctx = fit->total_dirty + r->tokenizer_bytes;
    uint64_t committed = 0;
    if (r->naive) {
        committed = r->info.naive_bytes + r->tokenizer_bytes;
    } else {
        tmem_budget_info bi;
        uint64_t clean = 0, dirty;
        for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
            tmem_type *t;
            tmem_type_stats ts;
            if (tmem_type_at(ctx, i, &t) == TMEM_OK && tmem_type_get_stats(t, &ts) == TMEM_OK) clean += ts.clean;
        }
        if (tmem_context_budget(ctx, &bi) == TMEM_OK && bi.peak_committed > clean)
            committed = bi.peak_committed - clean;
        (void)dirty;
    }
    double pf = r->prefill_s > 0 ? r->prompt_tokens / r->prefill_s : 0;
    double dc = r->decode_s > 0 ? r->decoded_tokens / r->decode_s : 0;
    double os_vs_pred = predicted ? 100.0 * ((double)r->peak_dirty - (double)predicted) / (double)predicted : 0;
    if (json) {
        printf("{\"model\": \"%s\", \"memory\": \"%s\", \"n_ctx\": %u, \"chunk\": %u, \"chunk_asked\": %u, "
               "\"threads\": %u, \"prompt_tokens\": %u, \"generated_tokens\": %u, \"prefill_s\": %.6f, "
               "\"prefill_tok_s\": %.3f, \"decode_s\": %.6f, \"decode_tok_s\": %.3f, "
               "\"predicted_dirty\": %llu, \"predicted_dirty_ctx\": %llu, \"tokens_held\": %llu, "
               "\"tokenizer_bytes\": %llu, \"committed_dirty_peak\": %llu, "
               "\"os_private_dirty_peak\": %llu, \"os_rss_peak\": %llu, \"os_baseline_private_dirty\": %llu, "
               "\"os_vs_predicted_pct\": %.3f, \"weights_bytes\": %llu, \"items\": [",
               r->model, r->naive ? "naive" : "typed", r->info.n_ctx, r->info.chunk, r->info.chunk_asked,
               r->info.threads, r->prompt_tokens, n_gen, r->prefill_s, pf, r->decode_s, dc,
               (unsigned long long)predicted, (unsigned long long)predicted_ctx,
               (unsigned long long)used->kv_tokens, (unsigned long long)r->tokenizer_bytes,
               (unsigned long long)committed,
               (unsigned long long)r->peak_dirty, (unsigned long long)r->peak_rss,
               (unsigned long long)r->baseline_dirty, os_vs_pred,
               (unsigned long long)(fit->item_count ? fit->items[0].bytes : 0));
        for (uint32_t i = 0; i < fit->item_count; i++) {
            uint64_t d, peak = r->naive ? 0 : type_peak(ctx, fit->items[i].type_name, &d);
            uint64_t u = i < used->item_count ? used->items[i].bytes : 0;
            printf("%s{\"what\": \"%s\", \"type\": \"%s\", \"predicted_ctx\": %llu, \"predicted\": %llu, "
                   "\"type_committed_peak\": %llu, \"clean\": %s}",
                   i ? ", " : "", fit->items[i].what, fit->items[i].type_name,
                   (unsigned long long)fit->items[i].bytes, (unsigned long long)u, (unsigned long long)peak,
                   fit->items[i].clean ? "true" : "false");
        }
        printf("], \"ttft_s\": %.6f", r->ttft_s);
        if (r->gpu) device_memory(r, ctx, true);
        if (r->vision) json_vision(r->vision);
        printf(", \"tokens\": [");
        for (uint32_t i = 0; i < n_gen; i++) printf("%s%d", i ? ", " : "", gen[i]);
        printf("]}\n");
        (void)tok;
        return;
    }
    FILE *f = stderr;
    fprintf(f, "\n-- tmem run: %s memory, %u threads, ctx %u, prefill chunk %u%s\n", r->naive ? "naive" : "typed",
            r->info.threads, r->info.n_ctx, r->info.chunk,
            r->info.chunk != r->info.chunk_asked ? " (shrunk to fit the budget)" : "");
    fprintf(f, "prefill: %u tokens in %.3f s = %.1f tok/s;  decode: %u tokens in %.3f s = %.1f tok/s\n",
            r->prompt_tokens, r->prefill_s, pf, r->decoded_tokens, r->decode_s, dc);
    fprintf(f, "memory (MiB): predicted by tmem fit for --ctx %u | for the %llu tokens this run held | committed "
               "peak of the type%s\n",
            r->info.n_ctx, (unsigned long long)used->kv_tokens,
            r->naive ? " (naive: the twin allocates its own way, see below)" : "");
    for (uint32_t i = 0; i < fit->item_count; i++) {
        const tmem_fit_item *it = &fit->items[i];
        bool first = true; /* a type's committed peak is shown on its first line */
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(fit->items[j].type_name, it->type_name)) first = false;
        uint64_t d, peak = r->naive ? 0 : type_peak(ctx, it->type_name, &d);
        char committed_col[32] = "";
        if (!r->naive && first) snprintf(committed_col, sizeof committed_col, "%10.2f", mib(peak));
        fprintf(f, "  %-18s %-22s %10.2f | %10.2f | %10s%s\n", it->what, it->type_name, mib(it->bytes),
                mib(i < used->item_count ? used->items[i].bytes : it->bytes), committed_col,
                it->clean ? "  (clean file pages)" : "");
    }
    if (r->tokenizer_bytes)
        fprintf(f, "  %-18s %-22s %10.2f | %10.2f |\n", "tokenizer", "(tables)", mib(r->tokenizer_bytes),
                mib(r->tokenizer_bytes));
    fprintf(f, "private dirty: predicted %.2f MiB at --ctx, %.2f MiB for this run; committed peak "
               "%.2f MiB, OS-measured peak %.2f MiB (%+.1f%%; "
               "process baseline %.2f MiB); RSS peak %.2f MiB\n",
            mib(predicted_ctx), mib(predicted), mib(committed), mib(r->peak_dirty), os_vs_pred,
            mib(r->baseline_dirty), mib(r->peak_rss));
    if (r->gpu) device_memory(r, ctx, false);
}

double run_report_json_num(const char *json, const char *key) {
    char k[96];
    snprintf(k, sizeof k, "\"%s\":", key); /* strtod skips the space after the colon, if any */
    const char *p = strstr(json, k);
    return p ? strtod(p + strlen(k), NULL) : -1;
}
