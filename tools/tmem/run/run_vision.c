/* The image part of `tmem run`; see run_vision.h. */
#include <stdlib.h>
#include <string.h>
#include "cli/args.h"
#include "run/run_vision.h"
#include "tmemrt/image.h"

static const char *const k_image_marker = "<image>";

int run_vision_parse(run_vision *rv, int argc, char **argv, int i) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--mmproj")) return v ? (rv->mmproj = v, 2) : -1;
    if (!strcmp(o, "--image")) return v ? (rv->image = v, 2) : -1;
    if (!strcmp(o, "--embeddings-out")) return v ? (rv->embeddings_out = v, 2) : -1;
    if (!strcmp(o, "--min-pixels"))
        return tmem_arg_u64(v, &rv->min_pixels) && rv->min_pixels ? 2 : -1;
    if (!strcmp(o, "--max-pixels"))
        return tmem_arg_u64(v, &rv->max_pixels) && rv->max_pixels ? 2 : -1;
    if (!strcmp(o, "--image-raw")) {
        if (!v || i + 2 >= argc) return -1;
        uint32_t w, h;
        tmem_pixel_format f;
        if (tmrt_image_parse_raw_spec(v, &w, &h, &f) != 0) return -1;
        rv->raw_spec = v, rv->raw_file = argv[i + 2];
        return 3;
    }
    return 0;
}

bool run_vision_active(const run_vision *rv) { return rv->mmproj || rv->image || rv->raw_spec; }

int run_vision_open(run_vision *rv, tmem_context *ctx, bool naive, const tmrt_tokenizer *tok,
                    const tmrt_hparams *hp) {
    tmrt_error err = {{0}};
    if (!rv->mmproj || (!rv->image == !rv->raw_spec)) {
        fprintf(stderr, "tmem run: an image needs --mmproj FILE and one of --image FILE / --image-raw WxH:fmt FILE\n");
        return -1;
    }
    rv->naive = naive;
    tmem_status rc;
    if (rv->vulkan) {
        if (naive) {
            fprintf(stderr, "tmem run: --device vulkan places the encoder in typed device memory: not with "
                            "--memory naive\n");
            return -1;
        }
        tmem_gpu_desc gd = {0};
        gd.api = TMEM_GPU_VULKAN;
        gd.chunk_size = 512ull << 20; /* the 0.8B encoder's weights and a 1024x1024 arena, a chunk each */
        if ((rc = tmem_gpu_attach(ctx, &gd, &rv->gpu)) != TMEM_OK) {
            fprintf(stderr, "tmem run: --device vulkan: no Vulkan device (%s)\n", tmem_status_name(rc));
            return -1;
        }
    }
    tmrt_vision_desc vd = {rv->mmproj, naive ? TMRT_MEMORY_NAIVE : TMRT_MEMORY_TYPED, rv->gpu};
    rc = tmrt_vision_open(ctx, &vd, &rv->v, &err);
    if (rc != TMEM_OK) {
        fprintf(stderr, "tmem run: %s\n", err.message);
        return -1;
    }
    if ((rv->min_pixels || rv->max_pixels) &&
        tmrt_vision_set_pixel_bounds(rv->v, rv->min_pixels, rv->max_pixels) != 0) {
        fprintf(stderr, "tmem run: --min-pixels / --max-pixels: want min <= max, at least "
                        "one merged token (patch x merge squared) and max below 2^32\n");
        return -1;
    }
    const tmrt_vision_config *c = tmrt_vision_get_config(rv->v);
    if (c->out_hidden != hp->n_embd) {
        fprintf(stderr, "tmem run: the mmproj projects to %u, the text model's hidden size is %u\n", c->out_hidden,
                hp->n_embd);
        return -1;
    }
    rv->image_id = rv->start_id = rv->end_id = -1;
    if (!tok || (tmrt_tokenizer_special(tok, "<|image_pad|>", &rv->image_id) != TMEM_OK ||
                tmrt_tokenizer_special(tok, "<|vision_start|>", &rv->start_id) != TMEM_OK ||
                tmrt_tokenizer_special(tok, "<|vision_end|>", &rv->end_id) != TMEM_OK)) {
        fprintf(stderr, "tmem run: an image needs the model's vocabulary with <|image_pad|>, <|vision_start|> and "
                        "<|vision_end|>\n");
        return -1;
    }
    if (rv->raw_spec) {
        uint32_t w, h;
        tmem_pixel_format f;
        TMEM_IGNORE(tmrt_image_parse_raw_spec(rv->raw_spec, &w, &h, &f)); /* checked when parsed */
        rc = tmrt_image_load_raw(ctx, rv->raw_file, w, h, f, &rv->img, &err);
    } else {
        size_t n = 0;
        const tmrt_image_codec *codecs = NULL;
#ifdef TMRT_HAVE_IMAGE_CODECS
        codecs = tmrt_image_codecs(&n);
#endif
        rc = tmrt_image_load(ctx, rv->image, codecs, n, &rv->img, &err);
    }
    tmem_surface_info info;
    if (rc != TMEM_OK || tmrt_vision_image_grid(rv->v, rv->img, &rv->grid, &err) != TMEM_OK ||
        tmem_surface_get_info(rv->img, &info) != TMEM_OK) {
        fprintf(stderr, "tmem run: %s\n", err.message);
        return -1;
    }
    rv->image_w = info.layout.width, rv->image_h = info.layout.height;
    rv->n_tokens = rv->grid.n_tokens;
    return 0;
}

char *run_vision_prompt(const run_vision *rv, const char *prompt) {
    static const char start[] = "<|vision_start|>", pad[] = "<|image_pad|>", end[] = "<|vision_end|>";
    size_t img = strlen(start) + (size_t)rv->n_tokens * strlen(pad) + strlen(end);
    size_t len = strlen(prompt);
    char *out = malloc(len + img + 1);
    if (!out) return NULL;
    const char *at = strstr(prompt, k_image_marker);
    size_t before = at ? (size_t)(at - prompt) : 0, skip = at ? strlen(k_image_marker) : 0;
    char *p = out;
    memcpy(p, prompt, before), p += before;
    memcpy(p, start, strlen(start)), p += strlen(start);
    for (uint32_t i = 0; i < rv->n_tokens; i++) memcpy(p, pad, strlen(pad)), p += strlen(pad);
    memcpy(p, end, strlen(end)), p += strlen(end);
    memcpy(p, prompt + before + skip, len - before - skip), p += len - before - skip;
    *p = 0;
    return out;
}

int run_vision_layout(run_vision *rv, const int32_t *prompt, uint32_t n_prompt) {
    uint32_t first = UINT32_MAX, count = 0;
    for (uint32_t i = 0; i < n_prompt; i++)
        if (prompt[i] == rv->image_id) {
            if (first == UINT32_MAX) first = i;
            else if (i != first + count) {
                fprintf(stderr, "tmem run: the image tokens must be one run (one image per prompt)\n");
                return -1;
            }
            count++;
        }
    if (count != rv->n_tokens) {
        fprintf(stderr, "tmem run: the prompt holds %u image tokens, the image needs %u (%ux%u -> %ux%u patches)\n",
                count, rv->n_tokens, rv->grid.width, rv->grid.height, rv->grid.grid_w, rv->grid.grid_h);
        return -1;
    }
    rv->first = first;
    rv->positions = malloc((size_t)n_prompt * 4 * sizeof(int32_t));
    if (!rv->positions) return -1;
    /* M-RoPE, Qwen3.5 / Qwen2-VL: text advances t = h = w by one; the image
     * run is (p, p + row, p + col) over the merged grid, then p += max(h, w). */
    uint32_t m = tmrt_vision_get_config(rv->v)->merge, gh = rv->grid.grid_h / m, gw = rv->grid.grid_w / m;
    int32_t p = 0;
    for (uint32_t i = 0; i < n_prompt;) {
        int32_t *q = rv->positions + 4 * (size_t)i;
        if (i == first) {
            for (uint32_t j = 0; j < count; j++, q += 4)
                q[0] = p, q[1] = p + (int32_t)(j / gw), q[2] = p + (int32_t)(j % gw), q[3] = p;
            p += (int32_t)(gh > gw ? gh : gw);
            i += count;
            continue;
        }
        q[0] = q[1] = q[2] = q[3] = p++;
        i++;
    }
    rv->next_pos = p;
    return 0;
}

int run_vision_encode(run_vision *rv, tmem_context *ctx, uint32_t n_embd, uint32_t threads) {
    tmrt_error err = {{0}};
    size_t bytes = (size_t)rv->n_tokens * n_embd * sizeof(float);
    if (rv->naive) {
        rv->embd = malloc(bytes);
    } else {
        tmem_type *t;
        tmem_heap_desc hd = {0};
        hd.kind = TMEM_HEAP_LINEAR, hd.role = TMEM_ROLE_VISION_INTERMEDIATE, hd.size = bytes + 4096;
        hd.name = "vision.embeddings";
        void *p = NULL;
        if (tmem_role_get_type(ctx, TMEM_ROLE_VISION_INTERMEDIATE, &t) == TMEM_OK && (hd.type = t) &&
            tmem_heap_create(ctx, &hd, &rv->embd_heap) == TMEM_OK &&
            tmem_heap_alloc(rv->embd_heap, bytes, 64, &p) == TMEM_OK)
            rv->embd = p;
    }
    if (!rv->embd) {
        fprintf(stderr, "tmem run: no memory for %u image embeddings\n", rv->n_tokens);
        return -1;
    }
    tmrt_vision_encode_desc d = {(int)threads, false};
    if (tmrt_vision_encode(rv->v, &rv->img, &d, rv->embd, n_embd, &rv->stats, &err) != TMEM_OK) {
        fprintf(stderr, "tmem run: vision: %s\n", err.message);
        return -1;
    }
    if (rv->embeddings_out) {
        FILE *f = fopen(rv->embeddings_out, "wb");
        bool ok = f && fwrite(rv->embd, 1, bytes, f) == bytes;
        if (f && fclose(f) != 0) ok = false;
        if (!ok) {
            fprintf(stderr, "tmem run: writing %s failed\n", rv->embeddings_out);
            return -1;
        }
    }
    return 0;
}

void run_vision_batch(const run_vision *rv, tmrt_batch *b, uint32_t first, uint32_t n) {
    if (!rv->positions) return;
    b->positions = rv->positions + 4 * (size_t)first;
    uint32_t lo = first > rv->first ? first : rv->first, hi = rv->first + rv->n_tokens;
    if (first + n < hi) hi = first + n;
    if (lo < hi && rv->embd) {
        uint32_t n_embd = tmrt_vision_get_config(rv->v)->out_hidden;
        b->embd_rows = rv->embd + (size_t)(lo - rv->first) * n_embd;
        b->embd_first = lo - first;
        b->embd_count = hi - lo;
    }
}

void run_vision_after_batch(run_vision *rv, uint32_t end) {
    if (!rv->embd || end < rv->first + rv->n_tokens) return;
    /* every image row is in the KV cache / state now */
    if (rv->naive) free(rv->embd);
    tmem_heap_destroy(rv->embd_heap);
    rv->embd_heap = NULL;
    rv->embd = NULL;
}

const int32_t *run_vision_decode_positions(run_vision *rv, uint32_t k, int32_t buf[4]) {
    if (!rv->positions) return NULL;
    buf[0] = buf[1] = buf[2] = buf[3] = rv->next_pos + (int32_t)k;
    return buf;
}

void run_vision_report(const run_vision *rv, FILE *f) {
    const tmrt_vision_stats *s = &rv->stats;
    fprintf(f,
            "vision: %ux%u -> %ux%u, %u patches -> %u image tokens; preprocess %.1f ms (%u image cop%s), "
            "encode %.1f ms; patches %.1f MiB, arena %.1f MiB, scratch %.1f MiB (%s)\n",
            rv->image_w, rv->image_h, s->grid.width, s->grid.height, s->grid.n_patches, s->grid.n_tokens,
            s->preprocess_ms, s->image_copies, s->image_copies == 1 ? "y" : "ies", s->encode_ms,
            (double)s->patch_bytes / 1048576.0, (double)s->arena_bytes / 1048576.0,
            (double)s->scratch_bytes / 1048576.0,
            rv->naive    ? "naive: mallocs"
            : rv->vulkan ? "vulkan: a planned device arena"
                         : "typed: planned heaps");
    if (rv->vulkan)
        fprintf(f, "vision: on %s, device buffers %.1f MiB, %u conversion(s)\n", "vulkan",
                (double)s->device_bytes / 1048576.0, s->frame_tries);
}

void run_vision_free(run_vision *rv) {
    if (rv->naive) free(rv->embd);
    tmem_heap_destroy(rv->embd_heap);
    tmem_surface_release(rv->img);
    tmrt_vision_close(rv->v);
    tmem_gpu_release(rv->gpu);
    free(rv->positions);
    memset(rv, 0, sizeof *rv);
}
