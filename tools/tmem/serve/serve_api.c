/* serve_api.c: the OpenAI requests tmem serve answers, read with the
 * library's strict JSON reader (typedmem/json.h), and its responses. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <typedmem/json.h>
#include "serve.h"

void serve_error_set(serve_error *e, unsigned status, const char *type, const char *code, const char *param,
                     const char *fmt, ...) {
    e->status = status;
    e->type = type;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

void serve_error_json(const serve_error *e, serve_text *out) {
    serve_text_puts(out, "{\"error\":{\"message\":");
    serve_text_json_str(out, e->message, strlen(e->message));
    serve_text_puts(out, ",\"type\":");
    serve_text_json_str(out, e->type, strlen(e->type));
    serve_text_puts(out, ",\"param\":");
    if (e->param[0]) serve_text_json_str(out, e->param, strlen(e->param));
    else serve_text_puts(out, "null");
    serve_text_puts(out, ",\"code\":");
    if (e->code) serve_text_json_str(out, e->code, strlen(e->code));
    else serve_text_puts(out, "null");
    serve_text_puts(out, "}}");
}

static bool bad(serve_error *e, const char *param, const char *msg) {
    serve_error_set(e, 400, "invalid_request_error", NULL, param, "%s", msg);
    return false;
}

/* Append the encoding of n bytes of text (no control tokens parsed). */
static bool encode(serve_state *ss, serve_request *rq, const char *text, size_t n, serve_error *e) {
    size_t got = 0;
    tmem_status st = tmrt_tokenizer_encode(ss->tok, text, n, 0, rq->prompt + rq->n_prompt,
                                           ss->lim.max_prompt - rq->n_prompt, &got);
    if (st == TMEM_E_FULL) {
        serve_error_set(e, 400, "invalid_request_error", "context_length_exceeded", "messages",
                        "the prompt is longer than %u tokens", ss->lim.max_prompt);
        return false;
    }
    if (st) return bad(e, "messages", "the prompt cannot be tokenized");
    rq->n_prompt += (uint32_t)got;
    return true;
}

static bool emit(serve_state *ss, serve_request *rq, int32_t id, serve_error *e) {
    if (rq->n_prompt >= ss->lim.max_prompt) {
        serve_error_set(e, 400, "invalid_request_error", "context_length_exceeded", "messages",
                        "the prompt is longer than %u tokens", ss->lim.max_prompt);
        return false;
    }
    rq->prompt[rq->n_prompt++] = id;
    return true;
}

/* A string value into a malloc'd buffer (*n its length); NULL if not a string. */
static char *string_of(const tmem_json *j, tmem_json_ref v, size_t *n) {
    size_t len = 0;
    if (tmem_json_type_of(j, v) != TMEM_JSON_STRING) return NULL;
    tmem_status st = tmem_json_string(j, v, NULL, 0, &len);
    if (st != TMEM_E_FULL && st != TMEM_OK) return NULL;
    char *buf = malloc(len + 1);
    if (!buf || tmem_json_string(j, v, buf, len + 1, n)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* One message's content: a string, or text parts. */
static bool content(serve_state *ss, serve_request *rq, const tmem_json *j, tmem_json_ref c, serve_error *e) {
    size_t n;
    if (tmem_json_type_of(j, c) == TMEM_JSON_STRING) {
        char *s = string_of(j, c, &n);
        if (!s) return bad(e, "messages", "no memory for the message");
        bool ok = encode(ss, rq, s, n, e);
        free(s);
        return ok;
    }
    if (tmem_json_type_of(j, c) != TMEM_JSON_ARRAY)
        return bad(e, "messages", "a message's content must be a string or an array of parts");
    tmem_json_ref part;
    for (tmem_status st = tmem_json_first(j, c, &part); st == TMEM_OK; st = tmem_json_next(j, part, &part)) {
        tmem_json_ref type, text;
        if (tmem_json_type_of(j, part) != TMEM_JSON_OBJECT || tmem_json_get(j, part, "type", &type))
            return bad(e, "messages", "a content part must be an object with a type");
        if (tmem_json_string_eq(j, type, "image_url"))
            return bad(e, "messages", "image parts are not supported by this server (no --mmproj)");
        if (!tmem_json_string_eq(j, type, "text") || tmem_json_get(j, part, "text", &text) ||
            tmem_json_type_of(j, text) != TMEM_JSON_STRING)
            return bad(e, "messages", "a content part must be {\"type\":\"text\",\"text\":...}");
        if (!content(ss, rq, j, text, e)) return false;
    }
    return true;
}

/* ChatML, as tmrt_tokenizer_chat writes one turn: per message
 * <|im_start|>ROLE\n CONTENT <|im_end|>\n, then <|im_start|>assistant\n;
 * the markers are the control tokens, the text never parses them. */
static bool chat_prompt(serve_state *ss, serve_request *rq, const tmem_json *j, serve_error *e) {
    tmem_json_ref msgs, m;
    int32_t start, end;
    if (tmem_json_get(j, TMEM_JSON_ROOT, "messages", &msgs) || tmem_json_type_of(j, msgs) != TMEM_JSON_ARRAY ||
        !tmem_json_count(j, msgs))
        return bad(e, "messages", "'messages' must be a non-empty array");
    if (tmrt_tokenizer_special(ss->tok, "<|im_start|>", &start) ||
        tmrt_tokenizer_special(ss->tok, "<|im_end|>", &end)) {
        serve_error_set(e, 500, "server_error", NULL, NULL, "the model's vocabulary has no chat template markers");
        return false;
    }
    for (tmem_status st = tmem_json_first(j, msgs, &m); st == TMEM_OK; st = tmem_json_next(j, m, &m)) {
        tmem_json_ref role, c;
        if (tmem_json_type_of(j, m) != TMEM_JSON_OBJECT || tmem_json_get(j, m, "role", &role) ||
            tmem_json_get(j, m, "content", &c))
            return bad(e, "messages", "each message needs a role and a content");
        const char *r = tmem_json_string_eq(j, role, "system")      ? "system"
                        : tmem_json_string_eq(j, role, "developer") ? "system"
                        : tmem_json_string_eq(j, role, "user")      ? "user"
                        : tmem_json_string_eq(j, role, "assistant") ? "assistant"
                                                                    : NULL;
        if (!r) return bad(e, "messages", "a message's role must be system, developer, user or assistant");
        char head[16];
        snprintf(head, sizeof head, "%s\n", r);
        if (!emit(ss, rq, start, e) || !encode(ss, rq, head, strlen(head), e) || !content(ss, rq, j, c, e) ||
            !emit(ss, rq, end, e) || !encode(ss, rq, "\n", 1, e))
            return false;
    }
    return emit(ss, rq, start, e) && encode(ss, rq, "assistant\n", 10, e);
}

static bool completion_prompt(serve_state *ss, serve_request *rq, const tmem_json *j, serve_error *e) {
    tmem_json_ref p;
    if (tmem_json_get(j, TMEM_JSON_ROOT, "prompt", &p)) return bad(e, "prompt", "'prompt' is required");
    if (tmem_json_type_of(j, p) == TMEM_JSON_ARRAY && tmem_json_count(j, p) == 1) (void)!tmem_json_at(j, p, 0, &p);
    size_t n;
    char *s = string_of(j, p, &n);
    if (!s) return bad(e, "prompt", "'prompt' must be a string (or an array of one string)");
    bool ok = n ? encode(ss, rq, s, n, e) : bad(e, "prompt", "'prompt' is empty");
    free(s);
    return ok;
}

/* An optional number field in [lo, hi]. */
static bool number(const tmem_json *j, const char *key, double lo, double hi, double *out, bool *present,
                   serve_error *e) {
    tmem_json_ref v;
    *present = tmem_json_get(j, TMEM_JSON_ROOT, key, &v) == TMEM_OK && tmem_json_type_of(j, v) != TMEM_JSON_NULL;
    if (!*present) return true;
    if (tmem_json_number(j, v, out) || !(*out >= lo && *out <= hi)) {
        serve_error_set(e, 400, "invalid_request_error", NULL, key, "'%s' must be a number in [%g, %g]", key, lo, hi);
        return false;
    }
    return true;
}

static bool integer(const tmem_json *j, const char *key, int64_t lo, int64_t hi, int64_t *out, bool *present,
                    serve_error *e) {
    tmem_json_ref v;
    *present = tmem_json_get(j, TMEM_JSON_ROOT, key, &v) == TMEM_OK && tmem_json_type_of(j, v) != TMEM_JSON_NULL;
    if (!*present) return true;
    if (tmem_json_int(j, v, out) || *out < lo || *out > hi) {
        serve_error_set(e, 400, "invalid_request_error", NULL, key, "'%s' must be an integer in [%lld, %lld]", key,
                        (long long)lo, (long long)hi);
        return false;
    }
    return true;
}

bool serve_parse(serve_state *ss, serve_kind kind, const char *body, size_t len, serve_request *rq, serve_error *e) {
    memset(rq, 0, sizeof *rq);
    rq->kind = kind;
    tmem_json *j;
    tmem_json_error je;
    tmem_status st = tmem_json_parse(NULL, body, len, &j, &je);
    if (st) {
        if (st == TMEM_E_NO_MEMORY) serve_error_set(e, 503, "server_error", NULL, NULL, "no memory for the request");
        else serve_error_set(e, 400, "invalid_request_error", NULL, NULL, "malformed JSON at line %u column %u: %s",
                             je.line, je.column, je.message);
        return false;
    }
    bool ok = tmem_json_type_of(j, TMEM_JSON_ROOT) == TMEM_JSON_OBJECT || bad(e, NULL, "the body must be an object");
    tmem_json_ref v;
    if (ok && tmem_json_get(j, TMEM_JSON_ROOT, "stream", &v) == TMEM_OK && tmem_json_type_of(j, v) != TMEM_JSON_NULL)
        ok = tmem_json_bool(j, v, &rq->stream) == TMEM_OK || bad(e, "stream", "'stream' must be a boolean");
    if (ok && tmem_json_get(j, TMEM_JSON_ROOT, "ignore_eos", &v) == TMEM_OK &&
        tmem_json_type_of(j, v) != TMEM_JSON_NULL)
        ok = tmem_json_bool(j, v, &rq->ignore_eos) == TMEM_OK || bad(e, "ignore_eos", "'ignore_eos' must be a boolean");
    int64_t iv = 0;
    bool has;
    if (ok) ok = integer(j, "n", 1, 1, &iv, &has, e);
    int64_t max_tokens = 0;
    bool has_max = false;
    if (ok) ok = integer(j, "max_tokens", 1, ss->lim.max_tokens, &max_tokens, &has_max, e);
    if (ok && !has_max) ok = integer(j, "max_completion_tokens", 1, ss->lim.max_tokens, &max_tokens, &has_max, e);
    rq->max_tokens = has_max ? (uint32_t)max_tokens : ss->lim.max_tokens;
    double dv;
    rq->sampler.temperature = 1.0f; /* OpenAI's default */
    if (ok && (ok = number(j, "temperature", 0, 2, &dv, &has, e)) && has) rq->sampler.temperature = (float)dv;
    if (ok && (ok = number(j, "top_p", 0, 1, &dv, &has, e)) && has) rq->sampler.top_p = (float)dv;
    if (ok && (ok = integer(j, "top_k", 0, 1 << 30, &iv, &has, e)) && has) rq->sampler.top_k = (uint32_t)iv;
    rq->sampler.seed = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)rq * 0x9E3779B97F4A7C15ull);
    if (ok && (ok = integer(j, "seed", INT64_MIN, INT64_MAX, &iv, &has, e)) && has) rq->sampler.seed = (uint64_t)iv;
    if (ok) {
        rq->prompt = malloc((size_t)ss->lim.max_prompt * sizeof *rq->prompt);
        if (!rq->prompt) {
            serve_error_set(e, 503, "server_error", NULL, NULL, "no memory for the prompt");
            ok = false;
        }
    }
    if (ok) ok = kind == SERVE_CHAT ? chat_prompt(ss, rq, j, e) : completion_prompt(ss, rq, j, e);
    if (ok && (uint64_t)rq->n_prompt + rq->max_tokens > ss->n_ctx) {
        if (has_max || rq->n_prompt >= ss->n_ctx) {
            serve_error_set(e, 400, "invalid_request_error", "context_length_exceeded", "max_tokens",
                            "%u prompt tokens and max_tokens %u pass the context of %u tokens", rq->n_prompt,
                            rq->max_tokens, ss->n_ctx);
            ok = false;
        } else {
            rq->max_tokens = ss->n_ctx - rq->n_prompt; /* the default: what the context has left */
        }
    }
    tmem_json_free(j);
    if (!ok) serve_request_free(rq);
    return ok;
}

void serve_request_free(serve_request *rq) {
    free(rq->prompt);
    rq->prompt = NULL;
}

void serve_decode(serve_state *ss, tmrt_utf8_stream *us, const int32_t *ids, uint32_t n, serve_text *out) {
    char buf[256];
    for (uint32_t i = 0; i < n; i++) {
        bool eog = false;
        for (uint32_t k = 0; k < ss->n_eog; k++) eog |= ids[i] == ss->eog[k];
        if (eog || tmrt_tokenizer_token_type(ss->tok, ids[i]) == TMRT_TOKEN_CONTROL) continue;
        size_t len = 0;
        if (tmrt_tokenizer_decode_stream(ss->tok, us, ids[i], buf, sizeof buf, &len) == TMEM_OK)
            serve_text_add(out, buf, len);
    }
}

const char *serve_finish_name(tmrt_server_finish f) {
    switch (f) {
    case TMRT_SERVER_LENGTH: return "length";
    case TMRT_SERVER_STOP: return "stop";
    default: return "stop";
    }
}

static void head(serve_state *ss, const char *id, const char *object, serve_text *out) {
    serve_text_printf(out, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%llu,\"model\":", id, object,
                      (unsigned long long)time(NULL));
    serve_text_json_str(out, ss->model_name, strlen(ss->model_name));
}

void serve_response_json(serve_state *ss, const serve_request *rq, const char *id, const char *text, size_t len,
                         const char *finish, uint32_t n_prompt, uint32_t n_gen, serve_text *out) {
    bool chat = rq->kind == SERVE_CHAT;
    head(ss, id, chat ? "chat.completion" : "text_completion", out);
    serve_text_puts(out, ",\"choices\":[{\"index\":0,");
    serve_text_puts(out, chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"text\":");
    serve_text_json_str(out, text, len);
    serve_text_printf(out, "%s,\"logprobs\":null,\"finish_reason\":\"%s\"}],", chat ? "}" : "", finish);
    serve_text_printf(out, "\"usage\":{\"prompt_tokens\":%u,\"completion_tokens\":%u,\"total_tokens\":%u}}", n_prompt,
                      n_gen, n_prompt + n_gen);
}

void serve_chunk_json(serve_state *ss, const serve_request *rq, const char *id, const char *text, size_t len,
                      const char *finish, bool first, serve_text *out) {
    bool chat = rq->kind == SERVE_CHAT;
    head(ss, id, chat ? "chat.completion.chunk" : "text_completion", out);
    serve_text_puts(out, ",\"choices\":[{\"index\":0,");
    if (chat) {
        serve_text_puts(out, "\"delta\":{");
        if (first) serve_text_puts(out, "\"role\":\"assistant\"");
        if (len || !finish) {
            if (first) serve_text_puts(out, ",");
            serve_text_puts(out, "\"content\":");
            serve_text_json_str(out, text, len);
        }
        serve_text_puts(out, "},");
    } else {
        serve_text_puts(out, "\"text\":");
        serve_text_json_str(out, text, len);
        serve_text_puts(out, ",");
    }
    serve_text_puts(out, "\"logprobs\":null,\"finish_reason\":");
    if (finish) serve_text_printf(out, "\"%s\"", finish);
    else serve_text_puts(out, "null");
    serve_text_puts(out, "}]}");
}

void serve_models_json(serve_state *ss, serve_text *out) {
    serve_text_puts(out, "{\"object\":\"list\",\"data\":[{\"id\":");
    serve_text_json_str(out, ss->model_name, strlen(ss->model_name));
    serve_text_printf(out, ",\"object\":\"model\",\"created\":%llu,\"owned_by\":\"tmem\"}]}",
                      (unsigned long long)ss->created);
}

void serve_metrics_text(serve_state *ss, serve_text *out) {
    serve_text_puts(out, "# HELP tmem_role_bytes Bytes in live allocations per memory role.\n"
                         "# TYPE tmem_role_bytes gauge\n");
    for (int r = TMEM_ROLE_BUILTIN_FIRST; r < TMEM_ROLE_BUILTIN_END; r++) {
        tmem_role_stats rs;
        if (tmem_role_get_stats(ss->ctx, (tmem_role)r, &rs) == TMEM_OK)
            serve_text_printf(out, "tmem_role_bytes{role=\"%s\"} %llu\n", tmem_role_name(ss->ctx, (tmem_role)r),
                              (unsigned long long)rs.in_use.current);
    }
    serve_text_puts(out, "# HELP tmem_type_committed_bytes Committed bytes per memory type.\n"
                         "# TYPE tmem_type_committed_bytes gauge\n");
    for (uint32_t i = 0, n = tmem_type_count(ss->ctx); i < n; i++) {
        tmem_type *t;
        tmem_type_info ti;
        tmem_type_stats ts;
        if (tmem_type_at(ss->ctx, i, &t) || tmem_type_get_info(t, &ti) || tmem_type_get_stats(t, &ts)) continue;
        serve_text_printf(out, "tmem_type_committed_bytes{type=\"%s\"} %llu\n", ti.name,
                          (unsigned long long)ts.committed.current);
    }
    tmem_budget_info bi;
    if (tmem_context_budget(ss->ctx, &bi) == TMEM_OK) {
        serve_text_printf(out, "# TYPE tmem_budget_bytes gauge\ntmem_budget_bytes %llu\n",
                          (unsigned long long)bi.budget);
        serve_text_printf(out, "# TYPE tmem_dirty_bytes gauge\ntmem_dirty_bytes %llu\n",
                          (unsigned long long)(bi.committed - bi.committed_clean));
        serve_text_printf(out, "# TYPE tmem_clean_bytes gauge\ntmem_clean_bytes %llu\n",
                          (unsigned long long)bi.committed_clean);
    }
    tmrt_server_stats st;
    if (tmrt_server_get_stats(ss->srv, &st) == TMEM_OK) {
        serve_text_printf(out,
                          "# TYPE tmem_sessions gauge\ntmem_sessions{state=\"active\"} %u\n"
                          "tmem_sessions{state=\"suspended\"} %u\ntmem_sessions{state=\"busy\"} %u\n"
                          "# TYPE tmem_sessions_max gauge\ntmem_sessions_max %u\n"
                          "# TYPE tmem_suspends_total counter\ntmem_suspends_total %llu\n"
                          "# TYPE tmem_resumes_total counter\ntmem_resumes_total %llu\n"
                          "# TYPE tmem_suspend_failures_total counter\ntmem_suspend_failures_total %llu\n"
                          "# TYPE tmem_decode_tokens_total counter\ntmem_decode_tokens_total %llu\n"
                          "# TYPE tmem_prefill_tokens_total counter\ntmem_prefill_tokens_total %llu\n"
                          "# TYPE tmem_batched_steps_total counter\ntmem_batched_steps_total %llu\n",
                          st.active, st.suspended, st.busy, st.max_sessions, (unsigned long long)st.suspends,
                          (unsigned long long)st.resumes, (unsigned long long)st.suspend_failures,
                          (unsigned long long)st.decode_tokens, (unsigned long long)st.prefill_tokens,
                          (unsigned long long)st.batched_steps);
    }
    const serve_metrics *m = &ss->met;
    serve_text_printf(out,
                      "# TYPE tmem_http_requests_total counter\ntmem_http_requests_total %llu\n"
                      "# TYPE tmem_http_errors_total counter\ntmem_http_errors_total{class=\"4xx\"} %llu\n"
                      "tmem_http_errors_total{class=\"5xx\"} %llu\n"
                      "# TYPE tmem_http_rejected_total counter\ntmem_http_rejected_total %llu\n"
                      "# TYPE tmem_http_disconnects_total counter\ntmem_http_disconnects_total %llu\n"
                      "# TYPE tmem_prompt_tokens_total counter\ntmem_prompt_tokens_total %llu\n"
                      "# TYPE tmem_completion_tokens_total counter\ntmem_completion_tokens_total %llu\n",
                      (unsigned long long)m->requests, (unsigned long long)m->errors_4xx,
                      (unsigned long long)m->errors_5xx, (unsigned long long)m->rejected,
                      (unsigned long long)m->disconnects, (unsigned long long)m->prompt_tokens,
                      (unsigned long long)m->completion_tokens);
}
