/* tmem fit: will a model + request fit a memory budget? Breakdown by type
 * and role, the total, and the largest context / image that fit.
 *
 *   tmem fit --model qwen3.5-0.8b --ctx 8192 --image 1024x1024 --budget 3GiB [--json]
 *            [--gguf FILE] [--mmproj FILE] [--kv-dtype f16|bf16|f32|q8_0] [--state-dtype ...]
 *            [--weights DTYPE] [--seqs N] [--chunk N] [--block N] [--no-flash]
 *            [--min-pixels N] [--max-pixels N]
 *
 * An image is first smart-resized as `tmem run` does it
 * (tmrt_vision_smart_resize, the runtime's own function): sides to multiples
 * of patch x merge inside [min_pixels, max_pixels], the bounds from --mmproj's
 * keys (llama.cpp's defaults when it has none), else the preset's tower
 * (Qwen3.5's processor: 256x256 .. 4096x4096 pixels), else those of
 * --min-pixels / --max-pixels.
 *
 * Exit status: 0 fits (or no budget given), 3 does not fit, 2 usage, 1 error.
 * JSON field names are documented in docs/model.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli/cli.h"
#include "commands.h"
#include "typedmem/typedmem.h"
#include "typedmem/model.h"
#include "tmemrt/runtime.h"
#include "tmemrt/tokenizer.h"
#include "tmemrt/vision.h"

static bool parse_image(const char *v, void *out, const char **why) {
    uint32_t *wh = out;
    return tmem_cli_parse_dims(v, 1, 65536, &wh[0], &wh[1], why);
}

static bool parse_kv_dtype(const char *v, void *out, const char **why) {
    *why = "want f16, bf16, f32 or q8_0";
    return tmem_kv_dtype_from_name(v, out) == TMEM_OK;
}

static bool parse_weights(const char *v, void *out, const char **why) {
    *why = "want f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k or a llama.cpp file type (Q4_K_M, Q8_0, ...)";
    return tmem_weight_dtype_from_name(v, out) == TMEM_OK;
}

static const char *role_label(tmem_role r) {
    const char *name = tmem_role_name(NULL, r); /* builtin names need no context */
    return name ? name : "user";
}

static const char *kv_label(tmem_kv_dtype d, const char *def) {
    return d == TMEM_KV_DTYPE_DEFAULT ? def : tmem_kv_dtype_name(d);
}

static const char *dtype_label(tmem_weight_dtype d, const char *def) {
    if (d == TMEM_WEIGHT_DEFAULT) return def;
    tmem_ggml_type_info ti;
    return tmem_ggml_type_get_info(tmem_weight_dtype_ggml(d), &ti) == TMEM_OK ? ti.name : "?";
}

static double mib(uint64_t b) { return (double)b / 1048576.0; }

/* Bytes per ggml type over a GGUF's tensors (the file's real mix). */
static void file_types(const tmem_gguf *g, uint64_t by_type[TMEM_GGML_TYPE_LIMIT]) {
    memset(by_type, 0, sizeof(uint64_t) * TMEM_GGML_TYPE_LIMIT);
    tmem_gguf_info info;
    if (!g || tmem_gguf_get_info(g, &info) != TMEM_OK) return;
    for (uint64_t i = 0; i < info.tensor_count; i++) {
        tmem_gguf_tensor t;
        if (tmem_gguf_tensor_at(g, i, &t) == TMEM_OK && t.type < TMEM_GGML_TYPE_LIMIT) by_type[t.type] += t.size;
    }
}

/* The image as asked and the smart resize's bounds (the fit gets the resized size). */
typedef struct fit_image {
    uint32_t width, height;
    uint64_t min_pixels, max_pixels;
} fit_image;

/* The smart resize of `tmem run` for this model: the bounds from the mmproj
 * (as the runtime reads them), else the preset's tower, else Qwen3.5's, then
 * the options'. 0, or -1 with a message. */
static int smart_resize(const tmem_gguf *mmproj, const char *mmproj_path, const char *preset,
                        const tmem_model_desc *m, fit_image *im, uint32_t *rw, uint32_t *rh) {
    tmrt_vision_config c;
    if (!preset || tmrt_vision_preset(preset, &c) != 0)
        if (tmrt_vision_preset("qwen3.5-0.8b", &c) != 0) return -1;
    c.patch = m->vis_patch ? m->vis_patch : c.patch;
    c.merge = m->vis_merge ? m->vis_merge : c.merge;
    if (mmproj &&
        tmrt_vision_pixel_bounds(mmproj, c.patch, c.merge, &c.min_pixels, &c.max_pixels) != 0) {
        fprintf(stderr, "tmem fit: %s: clip.vision.image_min_pixels / image_max_pixels out of "
                        "range\n", mmproj_path);
        return -1;
    }
    if (im->min_pixels) c.min_pixels = im->min_pixels;
    if (im->max_pixels) c.max_pixels = im->max_pixels;
    if (c.min_pixels > c.max_pixels) {
        fprintf(stderr, "tmem fit: --min-pixels %llu is above the max pixels %llu\n",
                (unsigned long long)c.min_pixels, (unsigned long long)c.max_pixels);
        return -1;
    }
    im->min_pixels = c.min_pixels, im->max_pixels = c.max_pixels;
    tmrt_vision_grid g;
    if (tmrt_vision_smart_resize(&c, im->width, im->height, &g) != 0) {
        fprintf(stderr, "tmem fit: the smart resize refuses a %ux%u image (a side below %u pixels, "
                        "an aspect ratio above 200, or a result too large)\n",
                im->width, im->height, c.patch * c.merge);
        return -1;
    }
    *rw = g.width, *rh = g.height;
    return 0;
}

static void print_json(const tmem_model_desc *m, const tmem_fit_desc *f, const tmem_fit_result *r,
                       const tmem_gguf *g, const fit_image *im, bool runtime) {
    uint32_t full, linear;
    tmem_model_layer_counts(m, &full, &linear);
    tmem_ggml_type_info wt = {0};
    if (f->weight_dtype == TMEM_WEIGHT_DEFAULT && m->file_weight_bytes)
        if (tmem_ggml_type_get_info(m->file_weight_type, &wt) != TMEM_OK) wt.name = NULL;
    printf("{\"version\":1,\"source\":\"%s\",\"model\":{", runtime ? "runtime" : "library");
    printf("\"name\":\"%s\",\"arch\":\"%s\",\"layers\":%u,\"full_attention_layers\":%u,"
           "\"linear_attention_layers\":%u,\"hidden\":%u,\"vocab\":%u,\"context_length\":%u,\"has_vision\":%s},",
           m->name, m->arch, m->n_layers, full, linear, m->n_embd, m->n_vocab, m->n_ctx_train,
           m->vis_depth ? "true" : "false");
    printf("\"request\":{\"ctx_tokens\":%" PRIu64 ",\"kv_tokens\":%" PRIu64 ",\"image_width\":%u,\"image_height\":%u,"
           "\"image_tokens\":%" PRIu64 ",\"image_patches\":%" PRIu64 ",\"n_seqs\":%u,\"prefill_chunk\":%u,"
           "\"image_asked_width\":%u,\"image_asked_height\":%u,\"min_pixels\":%" PRIu64
           ",\"max_pixels\":%" PRIu64 ",\"kv_block_tokens\":%u,\"flash_attn\":%s,"
           "\"kv_dtype\":\"%s\","
           "\"state_dtype\":\"%s\",\"weight_dtype\":\"%s\"},",
           f->ctx_tokens, r->kv_tokens, f->image_width, f->image_height, r->image_tokens, r->image_patches,
           f->n_seqs ? f->n_seqs : 1, f->prefill_chunk ? f->prefill_chunk : TMEM_FIT_DEFAULT_CHUNK, im->width,
           im->height, im->min_pixels, im->max_pixels,
           f->kv_block_tokens ? f->kv_block_tokens : TMEM_KV_DEFAULT_BLOCK_TOKENS,
           (f->graph_flags & TMEM_MODEL_GRAPH_NO_FLASH_ATTN) ? "false" : "true", kv_label(f->kv_dtype, "f16"),
           kv_label(f->state_dtype, "f32"), wt.name ? wt.name : dtype_label(f->weight_dtype, "bf16"));
    printf("\"kv_bytes_per_token\":%" PRIu64 ",\"recurrent_bytes_per_seq\":%" PRIu64 ",", r->kv_bytes_per_token,
           r->recurrent_bytes_per_seq);
    printf("\"weights_by_dtype\":{");
    for (int d = 1; d < TMEM_WEIGHT_COUNT; d++) {
        uint64_t t = 0, v = 0;
        if (tmem_model_weight_bytes(m, (tmem_weight_dtype)d, &t, &v) != TMEM_OK) continue;
        printf("%s\"%s\":{\"text\":%" PRIu64 ",\"vision\":%" PRIu64 "}", d > 1 ? "," : "",
               dtype_label((tmem_weight_dtype)d, "?"), t, v);
    }
    printf("},\"file_weights_by_type\":{");
    uint64_t by_type[TMEM_GGML_TYPE_LIMIT];
    file_types(g, by_type);
    for (uint32_t t = 0, first = 1; t < TMEM_GGML_TYPE_LIMIT; t++) {
        tmem_ggml_type_info ti;
        if (!by_type[t] || tmem_ggml_type_get_info(t, &ti) != TMEM_OK) continue;
        printf("%s\"%s\":%" PRIu64, first ? "" : ",", ti.name, by_type[t]);
        first = 0;
    }
    printf("},");
    printf("\"items\":[");
    for (uint32_t i = 0; i < r->item_count; i++) {
        const tmem_fit_item *it = &r->items[i];
        printf("%s{\"what\":\"%s\",\"role\":\"%s\",\"type\":\"%s\",\"clean\":%s,\"bytes\":%" PRIu64 "}", i ? "," : "",
               it->what, role_label(it->role), it->type_name, it->clean ? "true" : "false", it->bytes);
    }
    printf("],\"by_type\":{");
    /* group by type name, first-seen order */
    for (uint32_t i = 0, first = 1; i < r->item_count; i++) {
        bool seen = false;
        for (uint32_t j = 0; j < i; j++) seen |= !strcmp(r->items[j].type_name, r->items[i].type_name);
        if (seen) continue;
        uint64_t sum = 0;
        for (uint32_t j = i; j < r->item_count; j++)
            if (!strcmp(r->items[j].type_name, r->items[i].type_name)) sum += r->items[j].bytes;
        printf("%s\"%s\":%" PRIu64, first ? "" : ",", r->items[i].type_name, sum);
        first = 0;
    }
    printf("},\"by_role\":{");
    for (uint32_t i = 0, first = 1; i < r->item_count; i++) {
        bool seen = false;
        for (uint32_t j = 0; j < i; j++) seen |= r->items[j].role == r->items[i].role;
        if (seen) continue;
        uint64_t sum = 0;
        for (uint32_t j = i; j < r->item_count; j++)
            if (r->items[j].role == r->items[i].role) sum += r->items[j].bytes;
        printf("%s\"%s\":%" PRIu64, first ? "" : ",", role_label(r->items[i].role), sum);
        first = 0;
    }
    printf("},\"peak_dirty_encode_first\":%" PRIu64 ",\"total\":%" PRIu64
           ",\"total_dirty\":%" PRIu64 ",\"budget\":%" PRIu64 ",\"fits\":%s,"
           "\"max_ctx_tokens\":%" PRIu64 ",\"max_image\":{\"width\":%u,\"height\":%u},"
           "\"activation\":{\"lower_bound\":%" PRIu64 ",\"arena\":%" PRIu64 ",\"vision_lower_bound\":%" PRIu64
           ",\"vision_arena\":%" PRIu64 ",\"from_planner\":%s}}\n",
           r->peak_dirty_encode_first, r->total, r->total_dirty, r->budget,
           r->fits ? "true" : "false",
           r->max_ctx_tokens, r->max_image_width,
           r->max_image_height, r->activation_lower_bound, r->activation_arena, r->vision_lower_bound,
           r->vision_arena, r->arena_from_planner ? "true" : "false");
}

static void print_text(const tmem_model_desc *m, const tmem_fit_desc *f, const tmem_fit_result *r,
                       const tmem_gguf *g, const fit_image *im, bool runtime) {
    uint32_t full, linear;
    tmem_model_layer_counts(m, &full, &linear);
    printf("model %s (%s): %u layers (%u full attention, %u Gated DeltaNet), hidden %u, vocab %u, context %u\n",
           m->name, m->arch, m->n_layers, full, linear, m->n_embd, m->n_vocab, m->n_ctx_train);
    printf("request: ctx %" PRIu64 " tokens (%" PRIu64 " in KV blocks), %u sequence(s)", f->ctx_tokens, r->kv_tokens,
           f->n_seqs ? f->n_seqs : 1);
    if (f->image_width && (im->width != f->image_width || im->height != f->image_height))
        printf(", image %ux%u (smart resize to %ux%u, pixels %" PRIu64 "..%" PRIu64 ")", im->width,
               im->height, f->image_width, f->image_height, im->min_pixels, im->max_pixels);
    else if (f->image_width)
        printf(", image %ux%u", f->image_width, f->image_height);
    if (f->image_width)
        printf(" -> %" PRIu64 " tokens (%" PRIu64 " patches)", r->image_tokens, r->image_patches);
    printf("\n  KV %s: %" PRIu64 " B/token; recurrent state %s: %" PRIu64 " B/sequence\n",
           kv_label(f->kv_dtype, "f16"), r->kv_bytes_per_token, kv_label(f->state_dtype, "f32"),
           r->recurrent_bytes_per_seq);
    printf("  weights if stored as:");
    for (int d = 1; d < TMEM_WEIGHT_COUNT; d++) {
        uint64_t t = 0, v = 0;
        if (tmem_model_weight_bytes(m, (tmem_weight_dtype)d, &t, &v) == TMEM_OK)
            printf(" %s %.0f MiB%s", dtype_label((tmem_weight_dtype)d, "?"), mib(t + v),
                   d + 1 < TMEM_WEIGHT_COUNT ? "," : "");
    }
    printf("%s\n", m->vis_depth ? " (text + vision)" : "");
    uint64_t by_type[TMEM_GGML_TYPE_LIMIT];
    file_types(g, by_type);
    if (g) {
        printf("  file tensors by type:");
        for (uint32_t t = 0; t < TMEM_GGML_TYPE_LIMIT; t++) {
            tmem_ggml_type_info ti;
            if (by_type[t] && tmem_ggml_type_get_info(t, &ti) == TMEM_OK)
                printf(" %s %.2f MiB", ti.name, mib(by_type[t]));
        }
        printf("\n");
    }
    if (runtime)
        printf("  sized by the reference runtime's admission (tmrt_session_admit, what `tmem run` checks): "
               "prefill chunk %u\n", f->prefill_chunk);
    printf("\n%-22s %-20s %-18s %16s %11s\n", "type", "role", "what", "bytes", "MiB");
    for (uint32_t i = 0; i < r->item_count; i++) {
        const tmem_fit_item *it = &r->items[i];
        printf("%-22s %-20s %-18s %16" PRIu64 " %11.2f%s\n", it->type_name, role_label(it->role), it->what, it->bytes,
               mib(it->bytes), it->clean ? "  (clean, file-backed)" : "");
    }
    printf("%-62s %16" PRIu64 " %11.2f\n", "total", r->total, mib(r->total));
    printf("%-62s %16" PRIu64 " %11.2f\n", "  of which private dirty", r->total_dirty, mib(r->total_dirty));
    if (r->image_tokens)
        printf("%-62s %16" PRIu64 " %11.2f\n", "  dirty peak, image encoded before the prefill (tmem run)",
               r->peak_dirty_encode_first, mib(r->peak_dirty_encode_first));
    printf("\nprefill activation arena %.2f MiB, vision encoder arena %.2f MiB (%s)\n", mib(r->activation_arena),
           mib(r->vision_arena), r->arena_from_planner ? "planned" : "sweep lower bound; planner could not answer");
    if (!r->budget) return;
    printf("budget %.2f MiB: %s\n", mib(r->budget), r->fits ? "FITS" : "DOES NOT FIT");
    if (r->max_ctx_tokens)
        printf("largest context that fits: %" PRIu64 " tokens%s\n", r->max_ctx_tokens,
               m->n_ctx_train && r->max_ctx_tokens >= m->n_ctx_train ? " (the model's context length)" : "");
    else printf("no context fits this budget%s\n", f->image_width ? " with this image" : "");
    if (f->image_width) {
        if (r->max_image_width)
            printf("largest image that fits at ctx %" PRIu64 ": %ux%u\n", f->ctx_tokens, r->max_image_width,
                   r->max_image_height);
        else printf("no image fits at ctx %" PRIu64 "\n", f->ctx_tokens);
    }
}

/* A GGUF that could not be opened or read: the file's problem in words, the
 * parser's message and offset only where it has them. */
static void report_gguf_error(const char *path, tmem_status st, const tmem_gguf_error *e) {
    const char *why = tmem_cli_path_problem(path);
    if (why) fprintf(stderr, "tmem fit: %s: %s\n", path, why);
    else if (e->message[0])
        fprintf(stderr, "tmem fit: %s: %s: %s (at byte %" PRIu64 ")\n", path, tmem_strerror(st), e->message, e->offset);
    else fprintf(stderr, "tmem fit: %s: %s\n", path, tmem_strerror(st));
}

/* What `tmem run` would take for this request. */
typedef struct run_request {
    uint32_t threads;
    uint64_t prompt_bytes;
    bool chat;
} run_request;

/* Can the reference runtime run this request as `tmem run` would? Text
 * only, one sequence, its KV dtypes and graphs: then the answer is its
 * admission's, not a second estimate. */
static bool runtime_request(const tmem_fit_desc *f) {
    return !f->image_width && f->n_seqs <= 1 && !f->kv_block_tokens && !f->graph_flags &&
           f->weight_dtype == TMEM_WEIGHT_DEFAULT && f->state_snapshots == 0 &&
           (f->kv_dtype == TMEM_KV_DTYPE_DEFAULT || f->kv_dtype == TMEM_KV_DTYPE_F16 ||
            f->kv_dtype == TMEM_KV_DTYPE_F32) &&
           (f->state_dtype == TMEM_KV_DTYPE_DEFAULT || f->state_dtype == TMEM_KV_DTYPE_F32);
}

/* The fit of `tmem run GGUF` with these options: the session's admission
 * (tmrt_session_admit), the tokenizer (sized as run sizes it) counted.
 * 1: the runtime cannot open the file (then the library's fit answers),
 * 0 with *r and *chunk set, -1 on an error (printed). */
static int runtime_fit(tmem_context *ctx, const char *path, const tmem_fit_desc *f, const run_request *rq,
                       tmem_fit_result *r, uint32_t *chunk) {
    tmrt_model *m = NULL;
    tmrt_model_desc md = {0};
    md.path = path;
    md.memory = TMRT_MEMORY_TYPED;
    tmrt_error e = {""};
    if (tmrt_model_open(ctx, &md, &m, &e) != TMEM_OK) return 1;
    tmrt_tokenizer_desc tkd = {0};
    tkd.flags = TMRT_TOKENIZER_SCRATCH_EXACT;
    tkd.scratch_bytes = tmrt_tokenizer_scratch_bytes(rq->prompt_bytes, rq->chat);
    tmrt_session_desc sd = {0};
    sd.n_ctx = (uint32_t)f->ctx_tokens;
    sd.chunk = f->prefill_chunk;
    sd.threads = rq->threads;
    sd.budget = f->budget;
    sd.kv_dtype = f->kv_dtype;
    tmem_status st = tmrt_tokenizer_memory_bytes(ctx, tmrt_model_gguf(m), &tkd, &sd.tokenizer_bytes, &e);
    if (st == TMEM_E_NOT_FOUND) st = TMEM_OK, sd.tokenizer_bytes = 0; /* no tokenizer: run takes --tokens */
    tmrt_session_info si;
    if (st == TMEM_OK) st = tmrt_session_admit(m, &sd, &si, &e);
    tmrt_model_close(m);
    if (st != TMEM_OK && st != TMEM_E_BUDGET) {
        fprintf(stderr, "tmem fit: %s: %s\n", path, e.message);
        return -1;
    }
    *r = si.fit;
    *chunk = si.chunk;
    if (!f->budget) { /* report only: the admission used the discovered budget */
        r->budget = 0, r->fits = true, r->max_ctx_tokens = 0;
        r->max_image_width = r->max_image_height = 0;
    }
    return 0;
}

int tmem_cmd_fit(int argc, char **argv) {
    const char *model = NULL, *gguf = NULL, *mmproj = NULL;
    bool json = false, no_flash = false;
    uint32_t image[2] = {0, 0};
    fit_image im = {0};
    tmem_fit_desc f = {0};
    run_request rq = {1, 0, false};
    const tmem_cli_opt opts[] = {
        TMEM_CLI_STR("--model", "NAME", "a preset (list below)", &model),
        TMEM_CLI_STR("--gguf", "FILE", "read the model from a llama.cpp GGUF (with --model: vision from the preset)",
                     &gguf),
        TMEM_CLI_STR("--mmproj", "FILE", "llama.cpp vision encoder (mmproj GGUF); else the preset's", &mmproj),
        TMEM_CLI_U64("--ctx", "N", "context tokens", &f.ctx_tokens, 1, UINT32_MAX),
        TMEM_CLI_CUSTOM("--image", "WxH", "an image of W x H pixels in the request", image, parse_image),
        TMEM_CLI_SIZE("--budget", "the memory budget (B, KiB, MiB, GiB or KB, MB, GB)", &f.budget, 1, 0),
        TMEM_CLI_FLAG("--json", "print one JSON object (fields: docs/model.md)", &json),
        TMEM_CLI_CUSTOM("--kv-dtype", "T", "KV cache type: f16 (default), bf16, f32, q8_0", &f.kv_dtype,
                        parse_kv_dtype),
        TMEM_CLI_CUSTOM("--state-dtype", "T", "recurrent state type: f32 (default), f16, bf16", &f.state_dtype,
                        parse_kv_dtype),
        TMEM_CLI_CUSTOM("--weights", "DTYPE", "weights as f16, bf16, q8_0, q4_k, ... or Q4_K_M, Q8_0 (llama.cpp)",
                        &f.weight_dtype, parse_weights),
        TMEM_CLI_U32("--seqs", "N", "parallel sequences", &f.n_seqs, 1, 4096),
        TMEM_CLI_U32("--chunk", "N", "prefill tokens per step (default 512)", &f.prefill_chunk, 1, UINT32_MAX),
        TMEM_CLI_U32("--block", "N", "KV block tokens", &f.kv_block_tokens, 1, 65536),
        TMEM_CLI_FLAG("--no-flash", "attention without flash-attention (scores materialised)", &no_flash),
        TMEM_CLI_U32("--threads", "N", "with --gguf: the run's threads (thread pool, kernel scratch; default 1)",
                     &rq.threads, 1, 64),
        TMEM_CLI_U64("--prompt-bytes", "N", "with --gguf: bytes of the run's -p text (tokenizer scratch; "
                     "default 0, as with --tokens)", &rq.prompt_bytes, 0, UINT32_MAX),
        TMEM_CLI_FLAG("--chat", "with --gguf: the run's --chat (tokenizer scratch for the turn)", &rq.chat),
        TMEM_CLI_U64("--min-pixels", "N", "smart resize: at least N pixels (default: the tower's)",
                     &im.min_pixels, 1, UINT32_MAX),
        TMEM_CLI_U64("--max-pixels", "N", "smart resize: at most N pixels (default: the tower's)",
                     &im.max_pixels, 1, UINT32_MAX),
    };
    char presets[384] = "presets:", epilog[512];
    for (uint32_t i = 0, n = 8; tmem_model_preset_name(i) && n < sizeof presets; i++)
        n += (uint32_t)snprintf(presets + n, sizeof presets - n, " %s", tmem_model_preset_name(i));
    snprintf(epilog, sizeof epilog, "exit status: 0 fits (or no budget given), 3 does not fit, 2 usage error, "
                                    "1 other error\n%s", presets);
    tmem_cli cli = {"tmem fit", "(--model NAME | --gguf FILE) --ctx N [--image WxH] [--budget SIZE] [options]",
                    "Will a model + request fit a memory budget? Breakdown by type and role, the total, and\n"
                    "the largest context and image that fit.",
                    opts, TMEM_CLI_COUNT(opts), NULL, 0, 0, epilog};
    int cli_rc = tmem_cli_parse(&cli, argc, argv);
    if (cli_rc != TMEM_CLI_CONTINUE) return cli_rc;
    if (!model && !gguf) return tmem_cli_usage_error(&cli, "give --model NAME or --gguf FILE");
    if (!f.ctx_tokens) return tmem_cli_usage_error(&cli, "--ctx N is required");
    f.image_width = image[0];
    f.image_height = image[1];
    if (no_flash) f.graph_flags |= TMEM_MODEL_GRAPH_NO_FLASH_ATTN;

    tmem_model_desc m;
    tmem_context *ctx = NULL;
    tmem_gguf *g = NULL, *mp = NULL;
    int rc = 1;
    if (gguf) {
        tmem_context_desc cd = {0};
        tmem_gguf_error e = {0}; /* printed even when the context, not the file, failed */
        tmem_gguf_desc gd = {0};
        gd.path = gguf;
        tmem_status st = tmem_context_create(&cd, &ctx);
        if (!st) st = tmem_gguf_open(ctx, &gd, &g, &e);
        if (st) {
            report_gguf_error(gguf, st, &e);
            goto done;
        }
        if ((st = tmem_model_from_gguf(g, &m, &e))) {
            fprintf(stderr, "tmem fit: %s: %s: %s\n", gguf, tmem_strerror(st), e.message);
            goto done;
        }
        if (model) { /* a preset supplies what the text GGUF lacks: the vision encoder */
            tmem_model_desc p;
            if (tmem_model_preset(model, &p) != TMEM_OK) {
                fprintf(stderr, "tmem fit: unknown model '%s'\n", model);
                rc = 2;
                goto done;
            }
            m.vis_depth = p.vis_depth; m.vis_hidden = p.vis_hidden; m.vis_ff = p.vis_ff;
            m.vis_heads = p.vis_heads; m.vis_patch = p.vis_patch; m.vis_merge = p.vis_merge;
            m.vis_temporal_patch = p.vis_temporal_patch; m.vis_out_hidden = p.vis_out_hidden;
            m.vis_pos_embd = p.vis_pos_embd;
        }
    } else if (tmem_model_preset(model, &m) != TMEM_OK) {
        return tmem_cli_usage_error(&cli, "--model: unknown model '%s' (%s)", model, presets);
    }
    if (mmproj) { /* the vision encoder, exactly, from llama.cpp's mmproj file */
        tmem_gguf_error e = {0}; /* printed even when the context, not the file, failed */
        tmem_gguf_desc gd = {0};
        gd.path = mmproj;
        tmem_context_desc cd = {0};
        tmem_status st = ctx ? TMEM_OK : tmem_context_create(&cd, &ctx);
        if (!st) st = tmem_gguf_open(ctx, &gd, &mp, &e);
        if (!st) st = tmem_model_add_mmproj(mp, &m, &e);
        if (st) {
            report_gguf_error(mmproj, st, &e);
            goto done;
        }
    }
    if (f.image_width && !m.vis_depth) {
        fprintf(stderr, "tmem fit: %s has no vision encoder (with --gguf, add --model PRESET for one)\n", m.name);
        rc = 2;
        goto done;
    }
    im.width = f.image_width, im.height = f.image_height;
    if (f.image_width &&
        smart_resize(mp, mmproj, model, &m, &im, &f.image_width, &f.image_height) != 0) {
        rc = 2;
        goto done;
    }
    if (m.n_ctx_train && f.ctx_tokens > m.n_ctx_train)
        fprintf(stderr, "tmem fit: warning: --ctx %" PRIu64 " exceeds %s's context length (%u tokens); "
                        "the largest context reported is capped at it\n", f.ctx_tokens, m.name, m.n_ctx_train);
    f.model = &m;
    f.ctx = ctx; /* with --gguf: name types by the context's role policy */
    tmem_fit_result r;
    tmem_status st = TMEM_OK;
    /* a GGUF the reference runtime opens: the answer of its admission, the
     * one `tmem run` gets (same call); else the library's estimate */
    int via = gguf && !mmproj && !model && runtime_request(&f) ? runtime_fit(ctx, gguf, &f, &rq, &r, &f.prefill_chunk) : 1;
    if (via < 0) goto done;
    if (via > 0) st = tmem_fit(&f, &r);
    if (st) {
        fprintf(stderr, "tmem fit: %s%s\n", tmem_strerror(st),
                st == TMEM_E_INVALID_ARG && f.image_width ? " (does the image need more tokens than --ctx?)" : "");
        goto done;
    }
    if (json) print_json(&m, &f, &r, g, &im, via == 0);
    else print_text(&m, &f, &r, g, &im, via == 0);
    rc = r.fits ? 0 : 3;
done:
    tmem_gguf_close(mp);
    tmem_gguf_close(g);
    tmem_context_destroy(ctx);
    return rc;
}
