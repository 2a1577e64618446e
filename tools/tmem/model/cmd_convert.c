/* tmem convert / tmem gen: write qwen35 GGUF model files (runtime/convert).
 *
 *   tmem convert HF_DIR OUT.gguf [--dtype f32|f16|bf16|q8_0] [--mmproj OUT] [--name NAME]
 *   tmem gen [--preset NAME|tiny] [--dtype ...] [--seed S] [shape flags] OUT.gguf [--mmproj OUT]
 *
 * Both stream the output (a progress bar on a terminal) and print a one-line
 * summary. Exit status: 0 ok, 2 usage, 1 error (message names the file,
 * tensor or field). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "cli/progress.h"
#include "tmemrt/convert.h"

static bool outputs_spare_inputs(const tmrt_convert_desc *d);

static void on_progress(void *user, uint64_t done, uint64_t total) {
    tmem_progress *p = user;
    p->total = total;
    tmem_progress_update(p, done);
}

static bool parse_dtype(const char *s, tmem_weight_dtype *out) {
    return s && tmem_weight_dtype_from_name(s, out) == TMEM_OK &&
           (*out == TMEM_WEIGHT_F32 || *out == TMEM_WEIGHT_F16 || *out == TMEM_WEIGHT_BF16 || *out == TMEM_WEIGHT_Q8_0);
}

static void summary(const char *verb, const char *path, const tmrt_convert_result *r) {
    printf("%s %s: %" PRIu64 " tensors, %.1f M parameters, %.1f MiB; %u layers (%u full attention, %u Gated "
           "DeltaNet)%s\n", verb, path, r->tensors, (double)r->params / 1e6, (double)r->file_bytes / 1048576.0,
           r->n_layers, r->n_full_attention, r->n_linear_attention, r->tokenizer ? "; tokenizer" : "; no tokenizer");
    if (r->mmproj_bytes) printf("  mmproj: %.1f MiB\n", (double)r->mmproj_bytes / 1048576.0);
}

/* Run a conversion (cd) or a generation (gd) with a progress bar; the exit code. */
static int run(const char *cmd, tmrt_convert_desc *cd, tmrt_gen_desc *gd) {
    tmem_context_desc xd = {0};
    tmem_context *ctx = NULL;
    tmem_status st = tmem_context_create(&xd, &ctx);
    if (st) {
        fprintf(stderr, "tmem %s: cannot create a context: %s\n", cmd, tmem_strerror(st));
        return 1;
    }
    tmem_progress bar;
    tmem_progress_begin(&bar, cd ? "converting" : "generating", 0);
    tmrt_convert_result r;
    tmrt_error e = {{0}};
    if (cd) {
        cd->progress = on_progress;
        cd->progress_user = &bar;
        st = tmrt_convert(ctx, cd, &r, &e);
    } else {
        gd->progress = on_progress;
        gd->progress_user = &bar;
        st = tmrt_gen(ctx, gd, &r, &e);
    }
    tmem_progress_end(&bar);
    tmem_context_destroy(ctx);
    if (st) {
        fprintf(stderr, "tmem %s: %s (%s)\n", cmd, e.message[0] ? e.message : "failed", tmem_strerror(st));
        return 1;
    }
    summary("wrote", cd ? cd->out_path : gd->out_path, &r);
    if (gd) printf("  random weights (seed %" PRIu64 "): text generated from them is noise\n", gd->seed);
    return 0;
}

static void convert_usage(FILE *f) {
    fprintf(f, "usage: tmem convert HF_DIR OUT.gguf [--dtype f32|f16|bf16|q8_0] [--mmproj MMPROJ.gguf] [--name NAME]\n"
               "  HF_DIR: a Hugging Face Qwen3.5 checkpoint (config.json, *.safetensors, tokenizer files)\n"
               "  default dtype f16; norms, 1-D tensors and conv1d stay f32 (as llama.cpp writes them)\n");
}

int tmem_cmd_convert(int argc, char **argv) {
    tmrt_convert_desc d = {0};
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            convert_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--dtype") && i + 1 < argc) {
            if (!parse_dtype(argv[++i], &d.dtype)) {
                fprintf(stderr, "tmem convert: --dtype must be f32, f16, bf16 or q8_0\n");
                return 2;
            }
        } else if (!strcmp(a, "--mmproj") && i + 1 < argc) {
            d.mmproj_path = argv[++i];
        } else if (!strcmp(a, "--name") && i + 1 < argc) {
            d.name = argv[++i];
        } else if (a[0] == '-' || npos == 2) {
            fprintf(stderr, "tmem convert: unexpected argument '%s'\n", a);
            convert_usage(stderr);
            return 2;
        } else {
            pos[npos++] = a;
        }
    }
    if (npos != 2) {
        convert_usage(stderr);
        return 2;
    }
    d.hf_dir = pos[0];
    d.out_path = pos[1];
    if (!outputs_spare_inputs(&d)) return 2;
    return run("convert", &d, NULL);
}

/* The outputs may not be a file of the checkpoint folder (the weights, the
 * config, the tokenizer: convert reads from that folder), nor each other,
 * nor a directory, device or fifo: refused before anything is written. The
 * writes themselves replace the output atomically (out_file.h). */
static bool outputs_spare_inputs(const tmrt_convert_desc *d) {
    enum { MAX_IN = 256 };
    static char names[MAX_IN][1024];
    const char *in[MAX_IN + 1];
    size_t n = 0;
    DIR *dir = opendir(d->hf_dir);
    for (struct dirent *e; dir && n < MAX_IN && (e = readdir(dir));) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        int w = snprintf(names[n], sizeof names[n], "%s/%s", d->hf_dir, e->d_name);
        if (w > 0 && (size_t)w < sizeof names[n]) in[n] = names[n], n++;
    }
    if (dir) closedir(dir);
    const char *outs[] = {d->out_path, d->mmproj_path};
    for (size_t i = 0; i < 2; i++) {
        if (!outs[i]) continue;
        tmem_out_error oe;
        in[n] = i ? d->out_path : NULL; /* the mmproj may not be the text model either */
        if (tmem_out_check(outs[i], in, n + 1, &oe) != TMEM_OK) {
            fprintf(stderr, "tmem convert: %s\n", oe.message);
            return false;
        }
        if (i && !strcmp(outs[0], outs[1])) {
            fprintf(stderr, "tmem convert: --mmproj '%s' is the text model's output too\n", outs[1]);
            return false;
        }
    }
    return true;
}

/* ---- gen ---- */

/* A small qwen35 shape for tests and demos: 4 layers (3 Gated DeltaNet, 1
 * full attention), 2 key / 4 value heads so the V-head reorder matters. */
static void tiny_preset(tmem_model_desc *m) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "tiny");
    snprintf(m->arch, sizeof m->arch, "qwen35");
    m->n_layers = 4;
    m->full_attn_interval = 4;
    m->n_embd = 64;
    m->n_ff = 128;
    m->n_vocab = 512;
    m->n_ctx_train = 4096;
    m->n_head = 4;
    m->n_head_kv = 2;
    m->head_dim_k = m->head_dim_v = 16;
    m->attn_output_gate = true;
    m->tied_embeddings = true;
    m->ssm_conv_kernel = 4;
    m->ssm_state_size = 16;
    m->ssm_group_count = 2;
    m->ssm_time_step_rank = 4;
    m->ssm_inner_size = 64;
}

static void gen_usage(FILE *f) {
    fprintf(f, "usage: tmem gen [--preset NAME|tiny] [--dtype f32|f16|bf16|q8_0] [--seed S] OUT.gguf\n"
               "                [--layers N] [--embd N] [--ff N] [--vocab N] [--heads N] [--kv-heads N]\n"
               "                [--head-dim N] [--interval N] [--k-heads N] [--v-heads N] [--state N]\n"
               "                [--untied] [--mmproj MMPROJ.gguf]\n"
               "  random weights (deterministic for a seed) of a qwen35 shape; default preset qwen3.5-0.8b, f16\n"
               "  --state sets the Gated DeltaNet key and value head dim\npresets: tiny");
    for (uint32_t i = 0; tmem_model_preset_name(i); i++) fprintf(f, " %s", tmem_model_preset_name(i));
    fprintf(f, "\n");
}

static bool parse_u32(const char *s, uint32_t *out) {
    if (!s || *s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > UINT32_MAX) return false;
    *out = (uint32_t)v;
    return true;
}

int tmem_cmd_gen(int argc, char **argv) {
    tmrt_gen_desc d = {0};
    const char *preset = "qwen3.5-0.8b", *out = NULL;
    static const char *const flags[] = {"--layers", "--embd", "--ff", "--vocab", "--heads", "--kv-heads",
                                        "--head-dim", "--interval", "--k-heads", "--v-heads", "--state"};
    uint32_t val[11];
    bool set[11] = {false}, untied = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int f = -1;
        for (int k = 0; k < 11; k++)
            if (!strcmp(a, flags[k])) f = k;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            gen_usage(stdout);
            return 0;
        } else if (f >= 0 && i + 1 < argc) {
            if (!parse_u32(argv[++i], &val[f]) || !val[f]) {
                fprintf(stderr, "tmem gen: %s needs a positive integer\n", a);
                return 2;
            }
            set[f] = true;
        } else if (!strcmp(a, "--preset") && i + 1 < argc) {
            preset = argv[++i];
        } else if (!strcmp(a, "--dtype") && i + 1 < argc) {
            if (!parse_dtype(argv[++i], &d.dtype)) {
                fprintf(stderr, "tmem gen: --dtype must be f32, f16, bf16 or q8_0\n");
                return 2;
            }
        } else if (!strcmp(a, "--seed") && i + 1 < argc) {
            char *end;
            errno = 0;
            d.seed = strtoull(argv[++i], &end, 10);
            if (errno || *end || argv[i][0] < '0' || argv[i][0] > '9') {
                fprintf(stderr, "tmem gen: --seed needs an unsigned integer\n");
                return 2;
            }
        } else if (!strcmp(a, "--mmproj") && i + 1 < argc) {
            d.mmproj_path = argv[++i];
        } else if (!strcmp(a, "--untied")) {
            untied = true;
        } else if (a[0] == '-' || out) {
            fprintf(stderr, "tmem gen: unexpected argument '%s'\n", a);
            gen_usage(stderr);
            return 2;
        } else {
            out = a;
        }
    }
    if (!out) {
        gen_usage(stderr);
        return 2;
    }
    tmem_model_desc m;
    if (!strcmp(preset, "tiny")) {
        tiny_preset(&m);
    } else if (tmem_model_preset(preset, &m) != TMEM_OK) {
        fprintf(stderr, "tmem gen: unknown preset '%s'\n", preset);
        gen_usage(stderr);
        return 2;
    }
    uint32_t *fields[] = {&m.n_layers, &m.n_embd, &m.n_ff, &m.n_vocab, &m.n_head, &m.n_head_kv,
                          &m.head_dim_k, &m.full_attn_interval, &m.ssm_group_count, &m.ssm_time_step_rank,
                          &m.ssm_state_size};
    for (int k = 0; k < 11; k++)
        if (set[k]) *fields[k] = val[k];
    if (set[6]) m.head_dim_v = m.head_dim_k;
    if (set[9] || set[10]) m.ssm_inner_size = m.ssm_time_step_rank * m.ssm_state_size;
    if (untied) m.tied_embeddings = false;
    d.model = &m;
    d.out_path = out;
    const char *outs[] = {d.out_path, d.mmproj_path}, *other[] = {d.out_path};
    for (size_t i = 0; i < 2; i++) {
        tmem_out_error oe;
        if (outs[i] && tmem_out_check(outs[i], other, i, &oe) != TMEM_OK) {
            fprintf(stderr, "tmem gen: %s\n", oe.message);
            return 2;
        }
    }
    if (d.mmproj_path && !strcmp(d.mmproj_path, d.out_path)) {
        fprintf(stderr, "tmem gen: --mmproj '%s' is the text model's output too\n", d.mmproj_path);
        return 2;
    }
    return run("gen", NULL, &d);
}
