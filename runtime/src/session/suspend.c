/* suspend.c: a session's sequence written to a file and its memory given
 * back; the same bytes read back on resume (docs/serve.md, "Suspend format").
 *
 * The file: a 96-byte header (below), then the payload: the n_past token
 * ids (int32); per attention layer, per block of block_tokens tokens, the
 * K rows of the block's tokens then their V rows (row_bytes each: the
 * cache's own rows, f16 or f32); per DeltaNet layer its conv history then
 * its delta-rule state (f32, the state slot's bytes); the last logits row
 * (n_vocab f32) when the session had one. Native byte order (the file is
 * this machine's swap, not an exchange format). The checksum is
 * tmrt__fnv1a (FNV-1a 64 by 8-byte words) over the payload's regions in
 * that order, each hashed on its own. Written through util/save_file.c: complete or absent. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "session.h"
#include "util/save_file.h"

#define SUSPEND_MAGIC "TMRTSUSP"
#define SUSPEND_VERSION 1u

typedef struct susp_header {
    char magic[8];
    uint32_t version, header_bytes;
    uint32_t n_past, n_ctx, n_vocab, n_layers;
    uint32_t n_attn, n_rec, block_tokens, kv_f32;
    uint64_t row_bytes, conv_bytes, ssm_bytes;
    uint32_t have_logits, reserved;
    uint64_t payload_bytes, checksum;
} susp_header;
_Static_assert(sizeof(susp_header) == 96, "the suspend header is 96 bytes");

/* What this session's file must say (everything but the length-dependent fields). */
static tmem_status expected_header(const tmrt_session *s, susp_header *h) {
    const tmrt_hparams *hp = &s->model->hp;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, SUSPEND_MAGIC, 8);
    h->version = SUSPEND_VERSION;
    h->header_bytes = sizeof *h;
    h->n_ctx = s->n_ctx;
    h->n_vocab = hp->n_vocab;
    h->n_layers = hp->n_layers;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        if (hp->recurrent[il]) h->n_rec++;
        else h->n_attn++;
    }
    h->block_tokens = s->run.kv.block_tokens;
    h->kv_f32 = s->run.kv.f32;
    h->row_bytes = s->run.kv.row_bytes;
    if (h->n_rec) {
        tmem_recurrent_layout rl;
        tmem_recurrent_sizes rs;
        tmem_status st = tmem_model_recurrent_layout(&s->model->mdesc, TMEM_KV_DTYPE_F32, &rl);
        if (!st) st = tmem_recurrent_layout_sizes(&rl, &rs);
        if (st) return st;
        h->conv_bytes = rs.conv_bytes;
        h->ssm_bytes = rs.ssm_bytes;
    }
    return TMEM_OK;
}

static uint64_t payload_bytes(const susp_header *h) {
    uint64_t n = (uint64_t)h->n_past * 4 + (uint64_t)h->n_attn * 2 * h->n_past * h->row_bytes +
                 (uint64_t)h->n_rec * (h->conv_bytes + h->ssm_bytes);
    return n + (h->have_logits ? (uint64_t)h->n_vocab * 4 : 0);
}

/* The payload's regions in file order: fn(user, ptr, bytes) for each. */
typedef tmem_status (*region_fn)(void *user, void *p, size_t n);

static tmem_status each_region(tmrt_session *s, const susp_header *h, region_fn fn, void *user) {
    const tmrt_hparams *hp = &s->model->hp;
    const tmrt_kv_view *kv = &s->run.kv;
    tmem_status st = fn(user, s->tokens, (size_t)h->n_past * 4);
    for (uint32_t l = 0; l < h->n_attn && !st; l++)
        for (uint32_t b = 0; (uint64_t)b * kv->block_tokens < h->n_past && !st; b++) {
            uint32_t first = b * kv->block_tokens, valid = h->n_past - first;
            if (valid > kv->block_tokens) valid = kv->block_tokens;
            void *k, *v;
            tmrt__kv_rows(kv, l, first, &k, &v);
            st = fn(user, k, (size_t)valid * kv->row_bytes);
            if (!st) st = fn(user, v, (size_t)valid * kv->row_bytes);
        }
    for (uint32_t il = 0; il < hp->n_layers && !st; il++) {
        if (!hp->recurrent[il]) continue;
        st = fn(user, s->run.conv_state[il], (size_t)h->conv_bytes);
        if (!st) st = fn(user, s->run.ssm_state[il], (size_t)h->ssm_bytes);
    }
    if (!st && h->have_logits) st = fn(user, s->run.logits, (size_t)h->n_vocab * 4);
    return st;
}

typedef struct save_ctx {
    tmrt_save sv;
    tmrt_error *err;
} save_ctx;

static tmem_status save_region(void *user, void *p, size_t n) {
    save_ctx *c = user;
    return tmrt__save_write(&c->sv, p, n, c->err);
}

/* The sequence's memory back: blocks, state slot, snapshots, logits row, tokens. */
static void release(tmrt_session *s) {
    (void)!tmem_kv_seq_free(s->cache, s->seq);
    s->seq = TMEM_KV_SEQ_NONE;
    tmem_heap_destroy(s->logits_heap);
    tmem_heap_destroy(s->token_heap);
    s->logits_heap = s->token_heap = NULL;
    s->run.logits = NULL;
    s->tokens = NULL;
    s->run.kv.n_blocks = 0;
    memset(s->run.conv_state, 0, sizeof s->run.conv_state);
    memset(s->run.ssm_state, 0, sizeof s->run.ssm_state);
    s->have_logits = false;
    s->suspended = true;
}

tmem_status tmrt_session_suspend(tmrt_session *s, const char *path, tmrt_error *err) {
    if (!s || !path) return tmrt__fail(err, TMEM_E_INVALID_ARG, "suspend: bad arguments");
    if (s->memory == TMRT_MEMORY_NAIVE) return tmrt__fail(err, TMEM_E_UNSUPPORTED, "suspend: naive mode");
    if (s->is_runner || s->suspended) return tmrt__fail(err, TMEM_E_STATE, "suspend: already suspended");
    susp_header h;
    tmem_status st = expected_header(s, &h);
    if (st) return tmrt__fail(err, st, "suspend: layout: %s", tmem_strerror(st));
    h.n_past = s->n_past;
    h.have_logits = s->have_logits;
    save_ctx c = {.err = err};
    if ((st = tmrt__save_begin(&c.sv, path, sizeof h, err))) return st;
    if ((st = each_region(s, &h, save_region, &c))) return st; /* the writer is closed, the temp file gone */
    h.payload_bytes = c.sv.bytes - sizeof h;
    h.checksum = c.sv.hash;
    if ((st = tmrt__save_commit(&c.sv, &h, sizeof h, err))) return st;
    release(s);
    return TMEM_OK;
}

typedef struct load_ctx {
    FILE *f;
    uint64_t hash;
} load_ctx;

static tmem_status load_region(void *user, void *p, size_t n) {
    load_ctx *c = user;
    if (n && fread(p, 1, n, c->f) != n) return TMEM_E_CORRUPT;
    c->hash = tmrt__fnv1a(c->hash, p, n);
    return TMEM_OK;
}

tmem_status tmrt_session_resume(tmrt_session *s, const char *path, tmrt_error *err) {
    if (!s || !path) return tmrt__fail(err, TMEM_E_INVALID_ARG, "resume: bad arguments");
    if (!s->suspended) return tmrt__fail(err, TMEM_E_STATE, "resume: not suspended");
    susp_header want, h;
    tmem_status st = expected_header(s, &want);
    if (st) return tmrt__fail(err, st, "resume: layout: %s", tmem_strerror(st));
    FILE *f = fopen(path, "rb");
    if (!f) return tmrt__fail(err, TMEM_E_OS, "resume: cannot open %s", path);
    if (fread(&h, 1, sizeof h, f) != sizeof h) {
        fclose(f);
        return tmrt__fail(err, TMEM_E_CORRUPT, "resume: %s: short header", path);
    }
    want.n_past = h.n_past;
    want.have_logits = h.have_logits;
    want.payload_bytes = h.payload_bytes;
    want.checksum = h.checksum;
    if (memcmp(&h, &want, sizeof h) || h.n_past > s->n_ctx || h.have_logits > 1 ||
        h.payload_bytes != payload_bytes(&h)) {
        fclose(f);
        return tmrt__fail(err, TMEM_E_CORRUPT, "resume: %s is not a suspended session of this model and layout",
                          path);
    }
    /* the memory again, then the bytes into it */
    s->suspended = false;
    load_ctx c = {f, TMRT_FNV_INIT};
    if ((st = tmrt__session_rows_create(s, err)) || (st = tmrt__session_seq_open(s)) ||
        (h.n_past && (st = tmem_kv_seq_append(s->cache, s->seq, h.n_past))) || (st = tmrt__session_refresh(s))) {
        tmrt__fail(err, st, "resume: %s", tmem_strerror(st));
    } else if ((st = each_region(s, &h, load_region, &c)) || fgetc(f) != EOF || c.hash != h.checksum) {
        st = tmrt__fail(err, TMEM_E_CORRUPT, "resume: %s: %s", path,
                        st ? "short payload" : c.hash != h.checksum ? "checksum mismatch" : "trailing bytes");
    }
    fclose(f);
    if (st) {
        release(s);
        return st;
    }
    s->n_past = h.n_past;
    s->have_logits = h.have_logits;
    (void)unlink(path);
    return TMEM_OK;
}

bool tmrt_session_suspended(const tmrt_session *s) { return s && s->suspended; }
