/*
 * The tensors of a Hugging Face checkpoint over its safetensors shards:
 * model.safetensors.index.json's weight_map when present (every shard it
 * names is opened, every tensor it lists must be in the shard it names),
 * else model.safetensors, else every *.safetensors of the directory. Each
 * shard is mapped read-only into the context's FILE type. Names are
 * normalised as llama.cpp does ("language_model." removed, so the text part
 * of a Qwen3_5ForConditionalGeneration reads like a Qwen3_5ForCausalLM);
 * a name present in two shards is refused.
 */
#include "convert_internal.h"
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHARDS 1024

typedef struct entry {
    char *name;          /* normalised */
    uint32_t shard;
    uint64_t index;      /* in the shard */
    bool used;
} entry;

struct cv_source {
    tmem_safetensors *shard[MAX_SHARDS];
    char *shard_name[MAX_SHARDS];
    uint32_t n_shards;
    entry *e;
    size_t n;
};

static int entry_cmp(const void *a, const void *b) {
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static char *normalise(const char *name) {
    const char *lm = strstr(name, "language_model.");
    size_t n = strlen(name), cut = lm ? strlen("language_model.") : 0;
    char *s = malloc(n - cut + 1);
    if (!s) return NULL;
    if (lm) {
        size_t pre = (size_t)(lm - name);
        memcpy(s, name, pre);
        memcpy(s + pre, lm + cut, n - pre - cut + 1);
    } else {
        memcpy(s, name, n + 1);
    }
    return s;
}

void tmrt__cv_source_close(cv_source *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->n_shards; i++) {
        tmem_safetensors_close(s->shard[i]);
        free(s->shard_name[i]);
    }
    for (size_t i = 0; i < s->n; i++) free(s->e[i].name);
    free(s->e);
    free(s);
}

static bool safe_file_name(const char *n) {
    return n[0] && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..");
}

static tmem_status add_shard(tmem_context *ctx, cv_source *s, const char *dir, const char *file,
                             tmrt_error *err) {
    for (uint32_t i = 0; i < s->n_shards; i++)
        if (!strcmp(s->shard_name[i], file)) return TMEM_OK;
    if (s->n_shards == MAX_SHARDS) return tmrt__fail(err, TMEM_E_UNSUPPORTED, "more than %d shards", MAX_SHARDS);
    if (!safe_file_name(file))
        return tmrt__fail(err, TMEM_E_CORRUPT,
                             "shard name '%.100s' is not a file name in the checkpoint directory", file);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    tmem_safetensors_desc d = {0};
    d.path = path;
    tmem_safetensors_error e;
    tmem_safetensors *st;
    tmem_status rc = tmem_safetensors_open(ctx, &d, &st, &e);
    if (rc) return tmrt__fail(err, rc, "%s: %s (byte %llu)", path, e.message, (unsigned long long)e.offset);
    s->shard_name[s->n_shards] = malloc(strlen(file) + 1);
    if (!s->shard_name[s->n_shards]) {
        tmem_safetensors_close(st);
        return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
    }
    strcpy(s->shard_name[s->n_shards], file);
    s->shard[s->n_shards++] = st;
    return TMEM_OK;
}

/* Shards named by the index's weight_map; *index_json keeps the document
 * for the membership check. */
static tmem_status open_indexed(tmem_context *ctx, cv_source *s, const char *dir, const char *path, char *text,
                                size_t len, tmrt_error *err) {
    tmem_json *j;
    tmem_json_error je;
    tmem_status st = tmem_json_parse(ctx, text, len, &j, &je);
    if (st) return tmrt__fail(err, st, "%s:%u:%u: %s", path, je.line, je.column, je.message);
    tmem_json_ref map, k, v;
    if (tmem_json_get(j, TMEM_JSON_ROOT, "weight_map", &map) || tmem_json_type_of(j, map) != TMEM_JSON_OBJECT) {
        tmem_json_free(j);
        return tmrt__fail(err, TMEM_E_PARSE, "%s: no weight_map object", path);
    }
    char file[512];
    size_t n;
    for (st = tmem_json_first(j, map, &k); st == TMEM_OK && !st; ) {
        if (tmem_json_member_value(j, k, &v) || tmem_json_string(j, v, file, sizeof file, &n)) {
            st = tmrt__fail(err, TMEM_E_PARSE, "%s: weight_map value at byte %llu is not a file name", path,
                         (unsigned long long)tmem_json_offset(j, v));
            break;
        }
        if ((st = add_shard(ctx, s, dir, file, err))) break;
        st = tmem_json_next(j, k, &k);
    }
    if (st == TMEM_E_NOT_FOUND) st = TMEM_OK;
    /* every tensor the index lists must be where it says */
    char name[CV_HF_NAME * 2];
    for (tmem_status r = st ? TMEM_E_NOT_FOUND : tmem_json_first(j, map, &k); r == TMEM_OK && !st;
         r = tmem_json_next(j, k, &k)) {
        if (tmem_json_member_value(j, k, &v) || tmem_json_string(j, k, name, sizeof name, &n) ||
            tmem_json_string(j, v, file, sizeof file, &n))
            continue;
        for (uint32_t i = 0; i < s->n_shards; i++) {
            tmem_safetensors_tensor t;
            if (strcmp(s->shard_name[i], file)) continue;
            if (tmem_safetensors_find(s->shard[i], name, &t) != TMEM_OK)
                st =
                    tmrt__fail(err, TMEM_E_NOT_FOUND,
                                  "%s: tensor '%s' is not in %s, where weight_map puts it", path, name, file);
        }
    }
    tmem_json_free(j);
    return st;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static tmem_status open_all(tmem_context *ctx, cv_source *s, const char *dir, tmrt_error *err) {
    DIR *d = opendir(dir);
    if (!d) return tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: cannot open the directory", dir);
    char *names[MAX_SHARDS];
    uint32_t n = 0;
    struct dirent *de;
    tmem_status st = TMEM_OK;
    while ((de = readdir(d)) && !st) {
        size_t l = strlen(de->d_name);
        if (l <= 12 || strcmp(de->d_name + l - 12, ".safetensors")) continue;
        if (n == MAX_SHARDS) st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "more than %d shards", MAX_SHARDS);
        else if (!(names[n] = malloc(l + 1))) st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
        else memcpy(names[n++], de->d_name, l + 1);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], str_cmp);
    for (uint32_t i = 0; i < n && !st; i++) st = add_shard(ctx, s, dir, names[i], err);
    for (uint32_t i = 0; i < n; i++) free(names[i]);
    if (!st && !s->n_shards) st = tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: no *.safetensors file", dir);
    return st;
}

static tmem_status build_index(cv_source *s, tmrt_error *err) {
    size_t total = 0;
    for (uint32_t i = 0; i < s->n_shards; i++) {
        tmem_safetensors_info info;
        if (tmem_safetensors_get_info(s->shard[i], &info) == TMEM_OK) total += (size_t)info.tensor_count;
    }
    s->e = calloc(total ? total : 1, sizeof *s->e);
    if (!s->e) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
    for (uint32_t i = 0; i < s->n_shards; i++) {
        tmem_safetensors_tensor t;
        for (uint64_t k = 0; tmem_safetensors_tensor_at(s->shard[i], k, &t) == TMEM_OK; k++) {
            entry *e = &s->e[s->n];
            if (!(e->name = normalise(t.name))) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
            e->shard = i;
            e->index = k;
            s->n++;
        }
    }
    qsort(s->e, s->n, sizeof *s->e, entry_cmp);
    for (size_t i = 0; i + 1 < s->n; i++)
        if (!strcmp(s->e[i].name, s->e[i + 1].name))
            return tmrt__fail(err, TMEM_E_CORRUPT, "tensor '%s' appears twice (%s and %s)", s->e[i].name,
                           s->shard_name[s->e[i].shard], s->shard_name[s->e[i + 1].shard]);
    return TMEM_OK;
}

tmem_status tmrt__cv_source_open(tmem_context *ctx, const char *hf_dir, cv_source **out, tmrt_error *err) {
    *out = NULL;
    cv_source *s = calloc(1, sizeof *s);
    if (!s) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", hf_dir);
    char *text;
    size_t len;
    tmem_status st = tmrt__cv_read_file(path, &text, &len, err);
    if (st == TMEM_OK) {
        st = open_indexed(ctx, s, hf_dir, path, text, len, err);
        free(text);
    } else if (st == TMEM_E_NOT_FOUND) {
        st = open_all(ctx, s, hf_dir, err);
    }
    if (!st) st = build_index(s, err);
    if (st) {
        tmrt__cv_source_close(s);
        return st;
    }
    *out = s;
    return TMEM_OK;
}

tmem_status tmrt__cv_source_find(cv_source *s, const char *name, tmem_safetensors_tensor *out) {
    entry key = {.name = (char *)name};
    entry *e = bsearch(&key, s->e, s->n, sizeof *s->e, entry_cmp);
    if (!e) return TMEM_E_NOT_FOUND;
    e->used = true;
    return tmem_safetensors_tensor_at(s->shard[e->shard], e->index, out);
}

const char *tmrt__cv_source_unused(const cv_source *s, const char *const *ignore) {
    for (size_t i = 0; i < s->n; i++) {
        if (s->e[i].used) continue;
        bool skip = false;
        for (const char *const *p = ignore; *p && !skip; p++) skip = strncmp(s->e[i].name, *p, strlen(*p)) == 0;
        if (!skip) return s->e[i].name;
    }
    return NULL;
}
