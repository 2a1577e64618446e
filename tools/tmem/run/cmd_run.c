/* tmem run MODEL.gguf: generate with the reference runtime on typed memory
 * (or the naive malloc twin), streaming tokens, then a summary: prefill and
 * decode speed, and memory per role as predicted by tmem_fit for this run,
 * committed by the library, and measured by the OS (Private_Dirty peak).
 *
 * Exit codes: 0 ok, 1 runtime error, 2 bad usage, 3 the request does not fit
 * the budget (refused before it starts, with the breakdown and the largest
 * context that fits). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/args.h"
#include "commands.h"
#include "run/run_report.h"
#include "run/run_vision.h"
#include "tmemrt/runtime.h"
#include "tmemrt/tokenizer.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_BUDGET 3
#define MAX_PROMPT 65536u

static const char usage_text[] =
    "usage: tmem run MODEL.gguf [-p TEXT | --tokens ID,ID,...] [-n N] [-t THREADS] [--ctx N]\n"
    "                [--chunk N] [--budget SIZE] [--seed S] [--temp T] [--top-k K] [--top-p P]\n"
    "                [--chat] [--memory typed|naive] [--device cpu|vulkan[:N]] [--trace FILE] [--json]\n"
    "                [--logits-out FILE] [--logits last|all] [--decode-from N]\n"
    "  -n N             tokens to generate (default 16; 0 = evaluate the prompt only)\n"
    "  --logits-out F   raw little-endian f32 rows of n_vocab: the last prompt position\n"
    "                   (--logits last, default) or every evaluated position (all)\n"
    "  --decode-from N  prompt positions >= N go one token at a time (teacher forcing)\n"
    "  --mmproj F --image FILE | --image-raw WxH:nv12|i420 FILE [--embeddings-out F]\n"
    "                   an image (PNG, JPEG, PPM/PGM or a raw camera frame) through the\n"
    "                   vision encoder; `<image>` in -p marks its place (else it goes first);\n"
    "                   with --tokens give the expanded ids (<|image_pad|> once per token)\n"
    "  --min-pixels N --max-pixels N   the smart resize's bounds (default: the mmproj's)\n"
    "  --device cpu|vulkan  where the vision encoder runs (default cpu; vulkan: weights and\n"
    "                   activations in device memory, an NV12 frame imported and converted\n"
    "                   by a shader; the text model stays on the CPU)\n"
    "exit: 0 ok, 1 runtime error, 2 usage, 3 does not fit the budget\n";

typedef struct run_args {
    const char *model, *prompt, *tokens, *trace, *logits_out;
    uint64_t n_gen, threads, ctx, chunk, budget, seed, top_k, decode_from;
    float temp, top_p;
    bool chat, json, logits_all, naive;
    tmrt_device device;
    run_vision vision;
} run_args;

static int usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "tmem run: %s%s%s\n\n%s", msg, arg ? " " : "", arg ? arg : "", usage_text);
    return EXIT_USAGE;
}

static int parse(int argc, char **argv, run_args *a) {
    memset(a, 0, sizeof *a);
    a->n_gen = 16;
    a->threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = run_vision_parse(&a->vision, argc, argv, i);
        if (used < 0) return usage_error("bad value for", o);
        if (used > 0) {
            i += used - 1;
            continue;
        }
        bool ok = true, takes = true;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            fputs(usage_text, stdout);
            return -1;
        } else if (!strcmp(o, "-p")) a->prompt = v, ok = v != NULL;
        else if (!strcmp(o, "--tokens")) a->tokens = v, ok = v != NULL;
        else if (!strcmp(o, "-n")) ok = tmem_arg_u64(v, &a->n_gen);
        else if (!strcmp(o, "-t")) ok = tmem_arg_u64(v, &a->threads) && a->threads >= 1 && a->threads <= 64;
        else if (!strcmp(o, "--ctx")) ok = tmem_arg_u64(v, &a->ctx) && a->ctx >= 1 && a->ctx <= (1u << 24);
        else if (!strcmp(o, "--chunk")) ok = tmem_arg_u64(v, &a->chunk) && a->chunk >= 1 && a->chunk <= 65536;
        else if (!strcmp(o, "--budget")) ok = tmem_arg_size(v, &a->budget) && a->budget > 0;
        else if (!strcmp(o, "--seed")) ok = tmem_arg_u64(v, &a->seed);
        else if (!strcmp(o, "--temp")) ok = tmem_arg_float(v, &a->temp);
        else if (!strcmp(o, "--top-k")) ok = tmem_arg_u64(v, &a->top_k) && a->top_k <= UINT32_MAX;
        else if (!strcmp(o, "--top-p")) ok = tmem_arg_float(v, &a->top_p) && a->top_p <= 1;
        else if (!strcmp(o, "--trace")) a->trace = v, ok = v != NULL;
        else if (!strcmp(o, "--logits-out")) a->logits_out = v, ok = v != NULL;
        else if (!strcmp(o, "--decode-from")) ok = tmem_arg_u64(v, &a->decode_from) && a->decode_from > 0;
        else if (!strcmp(o, "--logits")) {
            ok = v && (!strcmp(v, "last") || !strcmp(v, "all"));
            a->logits_all = ok && !strcmp(v, "all");
        } else if (!strcmp(o, "--device")) {
            ok = v && (!strcmp(v, "cpu") || !strncmp(v, "vulkan", 6));
            if (ok && !strncmp(v, "vulkan", 6)) {
                a->device.kind = TMRT_DEVICE_VULKAN;
                uint64_t idx = 0;
                if (v[6] == ':') ok = tmem_arg_u64(v + 7, &idx) && idx < 64;
                else ok = v[6] == 0;
                a->device.index = (uint32_t)idx;
                a->vision.vulkan = ok; /* the vision encoder on the same device */
            }
        } else if (!strcmp(o, "--memory")) {
            ok = v && (!strcmp(v, "typed") || !strcmp(v, "naive"));
            a->naive = ok && !strcmp(v, "naive");
        } else {
            takes = false;
            if (!strcmp(o, "--chat")) a->chat = true;
            else if (!strcmp(o, "--json")) a->json = true;
            else if (o[0] == '-') return usage_error("unknown option", o);
            else if (!a->model) a->model = o;
            else return usage_error("more than one model:", o);
        }
        if (takes && !ok) return usage_error("bad value for", o);
        if (takes) i++;
    }
    if (!a->model) return usage_error("no model given", NULL);
    if (a->prompt && a->tokens) return usage_error("-p and --tokens are exclusive", NULL);
    if (!a->prompt && !a->tokens) return usage_error("no prompt: give -p TEXT or --tokens ID,ID,...", NULL);
    if (a->chat && !a->prompt) return usage_error("--chat needs -p TEXT", NULL);
    if (a->trace && a->naive) return usage_error("--trace records typed memory: not with --memory naive", NULL);
    if (a->device.kind == TMRT_DEVICE_VULKAN && run_vision_active(&a->vision))
        return usage_error("--device vulkan runs the text model only (the image path is on the CPU)", NULL);
    return 0;
}

/* The longest batch the prefill will evaluate: the prompt up to
 * --decode-from (the rest goes one token at a time). */
static uint32_t first_span(const run_args *a, uint32_t n_prompt) {
    uint32_t n = a->decode_from && a->decode_from < n_prompt ? (uint32_t)a->decode_from : n_prompt;
    return n ? n : 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct logits_file {
    FILE *f;
    bool all;
    uint32_t last_index;  /* with --logits last: the row to keep */
    bool failed;
} logits_file;

static tmem_status write_row(void *user, uint32_t index, const float *logits, uint32_t n_vocab) {
    logits_file *lf = user;
    if (!lf->f || (!lf->all && index != lf->last_index)) return TMEM_OK;
    if (fwrite(logits, sizeof *logits, n_vocab, lf->f) != n_vocab) {
        lf->failed = true;
        return TMEM_E_IO;
    }
    return TMEM_OK;
}

int tmem_cmd_run(int argc, char **argv) {
    run_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    run_report rep;
    run_report_begin(&rep, a.model, a.naive);

    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.budget = a.budget;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) {
        fprintf(stderr, "tmem run: cannot create a context\n");
        return EXIT_RUNTIME;
    }
    if (a.trace) {
        tmem_trace_desc td = {0};
        td.path = a.trace;
        if (tmem_trace_start(ctx, &td) != TMEM_OK) {
            fprintf(stderr, "tmem run: cannot trace to %s\n", a.trace);
            tmem_context_destroy(ctx);
            return EXIT_RUNTIME;
        }
    }
    tmrt_model *m = NULL;
    tmrt_tokenizer *tok = NULL;
    tmrt_session *s = NULL;
    int32_t *prompt = malloc(MAX_PROMPT * sizeof *prompt);
    int32_t *gen = malloc((a.n_gen + 1) * sizeof *gen);
    tmrt_error e = {{0}};
    rc = EXIT_RUNTIME;
    logits_file lf = {NULL, a.logits_all, 0, false};
    if (!prompt || !gen) goto done;

    tmrt_model_desc md = {0};
    md.path = a.model;
    md.memory = a.naive ? TMRT_MEMORY_NAIVE : TMRT_MEMORY_TYPED;
    md.device = a.device;
    tmem_status st = tmrt_model_open(a.naive ? NULL : ctx, &md, &m, &e);
    if (st) {
        fprintf(stderr, "tmem run: %s\n", e.message);
        goto done;
    }
    const tmrt_hparams *hp = tmrt_model_hparams(m);
    rep.gpu = tmrt_model_gpu(m);
    tmrt_error terr = {""};
    /* Text runs: the encode scratch sized for this prompt (none for
     * --tokens), and the tokenizer a line of the session's admission (issue
     * 21: a fixed 16 MiB heap the prediction did not contain). An image's
     * prompt keeps the default scratch, its tables reported beside the fit. */
    bool text_run = !run_vision_active(&a.vision);
    tmrt_tokenizer_desc tkd = {0};
    if (text_run) {
        tkd.flags = TMRT_TOKENIZER_SCRATCH_EXACT;
        tkd.scratch_bytes = a.prompt ? tmrt_tokenizer_scratch_bytes(strlen(a.prompt), a.chat) : 0;
    }
    uint64_t tokenizer_bytes = 0;
    st = text_run ? tmrt_tokenizer_memory_bytes(ctx, tmrt_model_gguf(m), &tkd, &tokenizer_bytes, &terr) : TMEM_OK;
    if (st == TMEM_OK) st = tmrt_tokenizer_load_ex(ctx, tmrt_model_gguf(m), &tkd, &tok, &terr);
    if (st && st != TMEM_E_NOT_FOUND) {
        fprintf(stderr, "tmem run: tokenizer: %s\n", terr.message);
        /* its tables and scratch did not fit: a refusal before the run
         * started, like the session's, not a runtime error */
        if (st == TMEM_E_BUDGET || st == TMEM_E_FULL) {
            fprintf(stderr, "tmem run: refused: the tokenizer's tables do not fit the budget\n");
            rc = EXIT_BUDGET;
        }
        goto done;
    }
    if (!tok) tokenizer_bytes = 0;
    tmrt_tokenizer_info ti;
    if (tok && !text_run && tmrt_tokenizer_get_info(tok, &ti) == TMEM_OK) rep.tokenizer_bytes = ti.table_bytes;

    double t_prompt = now_s(); /* TTFT counts from here: image decode, encode, prefill */
    bool image = run_vision_active(&a.vision);
    if (image && run_vision_open(&a.vision, ctx, a.naive, tok, hp)) goto done;
    char *image_prompt = image && a.prompt ? run_vision_prompt(&a.vision, a.prompt) : NULL;
    const char *text = image_prompt ? image_prompt : a.prompt;
    uint32_t tok_flags = image_prompt ? TMRT_TOKENIZE_PARSE_SPECIAL : 0; /* the vision markers */
    uint32_t n_prompt = 0;
    if (a.tokens) {
        if (!tmem_arg_ids(a.tokens, prompt, MAX_PROMPT, &n_prompt)) {
            rc = usage_error("bad --tokens list", a.tokens);
            goto done;
        }
    } else {
        if (!tok) {
            fprintf(stderr, "tmem run: %s has no tokenizer: give --tokens ID,ID,...\n", a.model);
            rc = EXIT_USAGE;
            goto done;
        }
        size_t n = 0;
        st = a.chat ? tmrt_tokenizer_chat(tok, NULL, text, strlen(text), tok_flags, prompt, MAX_PROMPT, &n)
                    : tmrt_tokenizer_encode(tok, text, strlen(text), tok_flags, prompt, MAX_PROMPT, &n);
        free(image_prompt);
        if (st || n == 0) {
            fprintf(stderr, "tmem run: cannot tokenize the prompt: %s\n", tmem_strerror(st));
            goto done;
        }
        n_prompt = (uint32_t)n;
    }
    for (uint32_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || (uint32_t)prompt[i] >= hp->n_vocab) {
            fprintf(stderr, "tmem run: token %d is outside the vocabulary of %u\n", prompt[i], hp->n_vocab);
            rc = EXIT_USAGE;
            goto done;
        }

    /* the image first: its encoder memory is gone before the session's */
    if (image && (run_vision_layout(&a.vision, prompt, n_prompt) ||
                  run_vision_encode(&a.vision, ctx, hp->n_embd, (uint32_t)a.threads)))
        goto done;
    run_report_sample(&rep);

    tmrt_session_desc sd = {0};
    sd.n_ctx = a.ctx ? (uint32_t)a.ctx : 0;
    sd.chunk = (uint32_t)a.chunk;
    /* a prompt shorter than the chunk needs no arena for the full chunk */
    uint32_t prefill_span = first_span(&a, n_prompt);
    if (prefill_span < (sd.chunk ? sd.chunk : TMRT_DEFAULT_CHUNK)) sd.chunk = prefill_span;
    sd.threads = (uint32_t)a.threads;
    sd.budget = a.budget;
    sd.tokenizer_bytes = tokenizer_bytes; /* the fit's "tokenizer" line */
    /* --ctx absent: the session's default rule (tmemrt/defaults.h), grown to
     * what this request needs; rep.info.n_ctx reads back what it decided */
    uint64_t need = (uint64_t)n_prompt + a.n_gen;
    sd.n_ctx_min = need > UINT32_MAX ? 0 : (uint32_t)need;
    if (need > (sd.n_ctx ? sd.n_ctx : UINT32_MAX)) {
        fprintf(stderr, "tmem run: %u prompt + %llu generated tokens pass --ctx %u\n", n_prompt,
                (unsigned long long)a.n_gen, sd.n_ctx ? sd.n_ctx : UINT32_MAX);
        rc = EXIT_USAGE;
        goto done;
    }
    st = tmrt_session_create(m, &sd, &s, &rep.info, &e);
    if (st == TMEM_E_BUDGET) {
        run_report_refusal(&rep, a.budget, a.json);
        rc = EXIT_BUDGET;
        goto done;
    }
    if (st) {
        fprintf(stderr, "tmem run: %s\n", e.message);
        goto done;
    }
    run_report_sample(&rep);
    if (a.logits_out && !(lf.f = fopen(a.logits_out, "wb"))) {
        fprintf(stderr, "tmem run: cannot write %s\n", a.logits_out);
        goto done;
    }

    /* prefill, chunk by chunk (the OS footprint sampled between chunks) */
    uint32_t first_decode = a.decode_from && a.decode_from < n_prompt ? (uint32_t)a.decode_from : n_prompt;
    uint32_t chunk = rep.info.chunk;
    tmrt_logits_mode lm = lf.f && a.logits_all ? TMRT_LOGITS_ALL : TMRT_LOGITS_LAST;
    double t0 = now_s(), sampled0 = rep.sample_s;
    for (uint32_t done_n = 0; done_n < n_prompt;) {
        bool forced = done_n >= first_decode;
        uint32_t n = forced ? 1 : (first_decode - done_n < chunk ? first_decode - done_n : chunk);
        tmrt_batch b = {0};
        b.tokens = prompt + done_n;
        b.n_tokens = n;
        bool last = done_n + n == n_prompt;
        b.logits = lm == TMRT_LOGITS_ALL ? TMRT_LOGITS_ALL : last ? TMRT_LOGITS_LAST : TMRT_LOGITS_NONE;
        lf.last_index = n - 1;
        run_vision_batch(&a.vision, &b, done_n, n);
        if ((st = tmrt_session_eval(s, &b, write_row, &lf, &e))) {
            fprintf(stderr, "tmem run: %s\n", e.message);
            goto done;
        }
        run_vision_after_batch(&a.vision, done_n + n);
        done_n += n;
        run_report_sample(&rep);
    }
    rep.prefill_s = now_s() - t0 - (rep.sample_s - sampled0);
    rep.prompt_tokens = n_prompt;
    if (a.trace && tmem_trace_mark(ctx, "prefill done") != TMEM_OK) fprintf(stderr, "tmem run: trace mark failed\n");

    /* generation */
    tmrt_sampler sp;
    tmrt_sampler_desc spd = {a.temp, (uint32_t)a.top_k, a.top_p, a.seed};
    tmrt_sampler_init(&sp, &spd);
    tmrt_utf8_stream us = {{0}, 0};
    char piece[512];
    size_t plen;
    t0 = now_s();
    sampled0 = rep.sample_s;
    uint32_t n_gen = 0;
    for (; n_gen < a.n_gen; n_gen++) {
        int32_t next;
        if ((st = tmrt_session_sample(s, &sp, &next))) {
            fprintf(stderr, "tmem run: sampling: %s\n", tmem_strerror(st));
            goto done;
        }
        gen[n_gen] = next;
        if (n_gen == 0) rep.ttft_s = now_s() - t_prompt;
        bool eog = tok ? tmrt_tokenizer_is_eog(tok, next) : next == hp->eos_token;
        if (!a.json) {
            if (tok && !eog && tmrt_tokenizer_decode_stream(tok, &us, next, piece, sizeof piece, &plen) == TMEM_OK)
                fwrite(piece, 1, plen, stdout);
            else if (!tok)
                printf("%s%d", n_gen ? "," : "", next);
            fflush(stdout);
        }
        if (eog) {
            n_gen++;
            break;
        }
        if (n_gen + 1 == a.n_gen) {
            n_gen++;
            break; /* the last token needs no evaluation */
        }
        tmrt_batch b = {0};
        b.tokens = &next;
        b.n_tokens = 1;
        b.logits = TMRT_LOGITS_LAST;
        int32_t pos[4];
        b.positions = run_vision_decode_positions(&a.vision, n_gen, pos);
        if ((st = tmrt_session_eval(s, &b, NULL, NULL, &e))) {
            fprintf(stderr, "tmem run: %s\n", e.message);
            goto done;
        }
        /* smaps_rollup walks every page of the 1.5 GB mapping: sample every
         * 8th token (the KV grows by a block per 16, the peak is kept) */
        if (n_gen % 8 == 7) run_report_sample(&rep);
    }
    rep.decode_s = now_s() - t0 - (rep.sample_s - sampled0);
    rep.generated_tokens = n_gen;
    rep.decoded_tokens = n_gen > 0 ? n_gen - 1 : 0; /* evaluations: the last sampled token is not run */
    if (!a.json && tok && tmrt_utf8_stream_flush(&us, piece, sizeof piece, &plen) == TMEM_OK)
        fwrite(piece, 1, plen, stdout);
    if (!a.json) printf("\n");
    if (lf.f) {
        if (fclose(lf.f) != 0 || lf.failed) {
            lf.f = NULL;
            fprintf(stderr, "tmem run: writing %s failed\n", a.logits_out);
            goto done;
        }
        lf.f = NULL;
    }
    run_report_sample(&rep);
    {
        tmrt_session_info si;
        if (tmrt_session_get_info(s, &si) == TMEM_OK && si.n_past &&
            tmrt_session_fit(s, si.n_past, &rep.used) != TMEM_OK)
            memset(&rep.used, 0, sizeof rep.used);
    }
    if (image) rep.vision = &a.vision.stats;
    run_report_finish(&rep, ctx, tok, gen, n_gen, a.json);
    if (image && !a.json) run_vision_report(&a.vision, stderr);
    rc = 0;
done:
    if (lf.f) fclose(lf.f);
    tmrt_session_destroy(s);
    run_vision_free(&a.vision);
    tmrt_tokenizer_destroy(tok);
    tmrt_model_close(m);
    if (a.trace && ctx && tmem_trace_stop(ctx) != TMEM_OK) fprintf(stderr, "tmem run: trace stop failed\n");
    tmem_context_destroy(ctx);
    free(prompt);
    free(gen);
    return rc;
}
