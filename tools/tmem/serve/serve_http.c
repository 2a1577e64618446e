/* serve_http.c: tmem serve's HTTP side on libmicrohttpd (a thread per
 * connection, so a handler may wait for its tokens): the routes, the body
 * limit, the API key, the JSON and SSE responses, and a client that goes
 * away mid-stream (its conversation is cancelled and closed at once: the
 * response's free callback). Built only with libmicrohttpd (TMEM_HAVE_MHD). */
#include "serve.h"

#if TMEM_HAVE_MHD
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One request's state between the access handler's calls. */
typedef struct conn {
    serve_text body;
    bool too_big;
} conn;

/* A streaming response: everything its reader needs after the handler returned. */
typedef struct stream {
    serve_state *ss;
    uint32_t id;                /* 0 once closed */
    serve_request rq;
    char cid[48];
    tmrt_utf8_stream us;
    serve_text out;
    size_t sent;
    bool first, finished;
} stream;

static uint64_t next_cid;       /* completion ids; under ss->mu */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *type, serve_text *t,
                                 unsigned retry_after) {
    if (t->failed) {
        serve_text_free(t);
        status = 500;
        serve_text_puts(t, "{\"error\":{\"message\":\"no memory\",\"type\":\"server_error\","
                           "\"param\":null,\"code\":null}}");
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(t->len, t->data, MHD_RESPMEM_MUST_COPY);
    serve_text_free(t);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    if (retry_after) {
        char v[16];
        snprintf(v, sizeof v, "%u", retry_after);
        MHD_add_response_header(r, "Retry-After", v);
    }
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(serve_state *ss, struct MHD_Connection *c, const serve_error *e) {
    serve_text t = {0};
    serve_error_json(e, &t);
    pthread_mutex_lock(&ss->mu);
    if (e->status >= 500) ss->met.errors_5xx++;
    else ss->met.errors_4xx++;
    if (e->status == 429 || e->status == 503) ss->met.rejected++;
    pthread_mutex_unlock(&ss->mu);
    unsigned retry = e->status == 429 ? 1 : e->status == 503 ? 5 : 0;
    return send_text(c, e->status, "application/json", &t, retry);
}

/* Open a conversation and queue the request (mu held). */
static bool start(serve_state *ss, const serve_request *rq, uint32_t *id, uint64_t *cid, serve_error *e) {
    tmrt_error te = {{0}};
    tmem_status st = tmrt_server_open(ss->srv, id, &te);
    if (st == TMEM_E_FULL) {
        serve_error_set(e, 429, "rate_limit_error", "server_busy", NULL, "all %s sessions are busy: retry later",
                        "the server's");
        return false;
    }
    if (st == TMEM_E_BUDGET || st == TMEM_E_NO_MEMORY) {
        serve_error_set(e, 503, "server_error", "memory_budget", NULL, "no memory for a session now: %s",
                        te.message);
        return false;
    }
    if (st) {
        serve_error_set(e, 500, "server_error", NULL, NULL, "%s", te.message);
        return false;
    }
    tmrt_server_request sr = {0};
    sr.tokens = rq->prompt;
    sr.n_tokens = rq->n_prompt;
    sr.n_predict = rq->max_tokens;
    sr.sampler = rq->sampler;
    memcpy(sr.stop, ss->eog, sizeof sr.stop);
    sr.n_stop = rq->ignore_eos ? 0 : ss->n_eog;
    if ((st = tmrt_server_submit(ss->srv, *id, &sr, &te))) {
        tmrt_server_close(ss->srv, *id);
        *id = 0;
        if (st == TMEM_E_FULL)
            serve_error_set(e, 400, "invalid_request_error", "context_length_exceeded", NULL, "%s", te.message);
        else if (st == TMEM_E_BUDGET)
            serve_error_set(e, 503, "server_error", "memory_budget", NULL, "%s", te.message);
        else serve_error_set(e, 500, "server_error", NULL, NULL, "%s", te.message);
        return false;
    }
    ss->met.requests++;
    ss->met.prompt_tokens += rq->n_prompt;
    *cid = ++next_cid;
    serve_kick(ss);
    return true;
}

/* A finished request that failed inside the server: its error (mu held). */
static void finish_error(const tmrt_server_slot_info *in, serve_error *e) {
    if (in->status == TMEM_E_BUDGET)
        serve_error_set(e, 503, "server_error", "memory_budget", NULL, "the request ran out of memory budget");
    else serve_error_set(e, 500, "server_error", NULL, NULL, "generation failed: %s", tmem_status_name(in->status));
}

static enum MHD_Result complete(serve_state *ss, struct MHD_Connection *c, serve_request *rq) {
    serve_error e = {0};
    int32_t *ids = malloc(((size_t)rq->max_tokens + 1) * sizeof *ids);
    if (!ids) {
        serve_error_set(&e, 503, "server_error", NULL, NULL, "no memory");
        return send_error(ss, c, &e);
    }
    uint32_t id, n = 0;
    tmrt_server_slot_info in = {0};
    pthread_mutex_lock(&ss->mu);
    uint64_t num = 0;
    bool ok = start(ss, rq, &id, &num, &e);
    char cid[48];
    snprintf(cid, sizeof cid, "%s-%llu", rq->kind == SERVE_CHAT ? "chatcmpl" : "cmpl", (unsigned long long)num);
    while (ok) {
        uint32_t got = 0;
        (void)!tmrt_server_read(ss->srv, id, ids + n, rq->max_tokens - n, &got, &in);
        n += got;
        if (in.state == TMRT_SERVER_IDLE || ss->stop) break;
        pthread_cond_wait(&ss->progress, &ss->mu);
    }
    if (ok) {
        tmrt_server_close(ss->srv, id);
        ss->met.completion_tokens += n;
        if (in.finish == TMRT_SERVER_ERROR || in.state != TMRT_SERVER_IDLE) {
            finish_error(&in, &e);
            ok = false;
        }
    }
    pthread_mutex_unlock(&ss->mu);
    if (!ok) {
        free(ids);
        return send_error(ss, c, &e);
    }
    serve_text text = {0}, out = {0};
    tmrt_utf8_stream us = {0};
    serve_decode(ss, &us, ids, n, &text);
    char tail[8];
    size_t tl = 0;
    if (tmrt_utf8_stream_flush(&us, tail, sizeof tail, &tl) == TMEM_OK) serve_text_add(&text, tail, tl);
    serve_response_json(ss, rq, cid, text.data ? text.data : "", text.len, serve_finish_name(in.finish), rq->n_prompt,
                        n, &out);
    serve_text_free(&text);
    free(ids);
    return send_text(c, 200, "application/json", &out, 0);
}

static void sse(stream *s, const char *text, size_t len, const char *finish) {
    serve_text_puts(&s->out, "data: ");
    serve_chunk_json(s->ss, &s->rq, s->cid, text, len, finish, s->first, &s->out);
    serve_text_puts(&s->out, "\n\n");
    s->first = false;
}

/* The SSE body: a chunk per batch of new tokens, the finish chunk, [DONE]. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream *s = cls;
    serve_state *ss = s->ss;
    while (s->sent == s->out.len) {
        if (s->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        serve_text_free(&s->out);
        s->sent = 0;
        int32_t ids[64];
        uint32_t n = 0;
        tmrt_server_slot_info in = {0};
        pthread_mutex_lock(&ss->mu);
        for (;;) {
            if (tmrt_server_read(ss->srv, s->id, ids, 64, &n, &in) || ss->stop) {
                pthread_mutex_unlock(&ss->mu);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            if (n || in.state == TMRT_SERVER_IDLE) break;
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&ss->progress, &ss->mu, &until);
        }
        ss->met.completion_tokens += n;
        bool done = in.state == TMRT_SERVER_IDLE && n < 64;
        if (done) {
            tmrt_server_close(ss->srv, s->id);
            s->id = 0;
            if (in.finish == TMRT_SERVER_ERROR) ss->met.errors_5xx++;
        }
        pthread_mutex_unlock(&ss->mu);
        serve_text text = {0};
        serve_decode(ss, &s->us, ids, n, &text);
        if (text.len) sse(s, text.data, text.len, NULL);
        serve_text_free(&text);
        if (done) {
            char tail[8];
            size_t tl = 0;
            (void)!tmrt_utf8_stream_flush(&s->us, tail, sizeof tail, &tl);
            if (in.finish == TMRT_SERVER_ERROR) {
                serve_error e;
                finish_error(&in, &e);
                serve_text_puts(&s->out, "data: ");
                serve_error_json(&e, &s->out);
                serve_text_puts(&s->out, "\n\n");
            } else {
                sse(s, tail, tl, serve_finish_name(in.finish));
            }
            serve_text_puts(&s->out, "data: [DONE]\n\n");
            s->finished = true;
        }
        if (s->out.failed) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t k = s->out.len - s->sent < max ? s->out.len - s->sent : max;
    memcpy(buf, s->out.data + s->sent, k);
    s->sent += k;
    return (ssize_t)k;
}

/* The response is gone: a client that left before the end frees its conversation now. */
static void stream_free(void *cls) {
    stream *s = cls;
    serve_state *ss = s->ss;
    pthread_mutex_lock(&ss->mu);
    if (s->id) {
        tmrt_server_cancel(ss->srv, s->id);
        tmrt_server_close(ss->srv, s->id);
        ss->met.disconnects++;
    }
    pthread_mutex_unlock(&ss->mu);
    serve_request_free(&s->rq);
    serve_text_free(&s->out);
    free(s);
}

static enum MHD_Result start_stream(serve_state *ss, struct MHD_Connection *c, serve_request *rq) {
    serve_error e = {0};
    stream *s = calloc(1, sizeof *s);
    if (!s) {
        serve_request_free(rq);
        serve_error_set(&e, 503, "server_error", NULL, NULL, "no memory");
        return send_error(ss, c, &e);
    }
    s->ss = ss;
    s->rq = *rq;
    s->first = true;
    pthread_mutex_lock(&ss->mu);
    uint64_t num = 0;
    bool ok = start(ss, &s->rq, &s->id, &num, &e);
    pthread_mutex_unlock(&ss->mu);
    if (!ok) {
        serve_request_free(&s->rq);
        free(s);
        return send_error(ss, c, &e);
    }
    snprintf(s->cid, sizeof s->cid, "%s-%llu", rq->kind == SERVE_CHAT ? "chatcmpl" : "cmpl", (unsigned long long)num);
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static bool authorized(serve_state *ss, struct MHD_Connection *c) {
    if (!ss->api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && !strncmp(h, "Bearer ", 7) && !strcmp(h + 7, ss->api_key);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    serve_state *ss = cls;
    conn *cn = *con_cls;
    if (!cn) {
        if (!(cn = calloc(1, sizeof *cn))) return MHD_NO;
        *con_cls = cn;
        return MHD_YES;
    }
    if (*upload_size) { /* the body, up to the limit */
        if (!cn->too_big && cn->body.len + *upload_size <= ss->lim.max_body)
            serve_text_add(&cn->body, upload, *upload_size);
        else cn->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
    serve_error e = {0};
    serve_text t = {0};
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    bool chat = !strcmp(url, "/v1/chat/completions"), compl = !strcmp(url, "/v1/completions");
    if (!strcmp(url, "/health") && get) {
        serve_text_puts(&t, "{\"status\":\"ok\"}");
        return send_text(c, 200, "application/json", &t, 0);
    }
    if (!authorized(ss, c)) {
        serve_error_set(&e, 401, "invalid_request_error", "invalid_api_key", NULL, "a valid API key is required");
        return send_error(ss, c, &e);
    }
    if (!strcmp(url, "/v1/models") && get) {
        serve_models_json(ss, &t);
        return send_text(c, 200, "application/json", &t, 0);
    }
    if (!strcmp(url, "/metrics") && get) {
        pthread_mutex_lock(&ss->mu);
        serve_metrics_text(ss, &t);
        pthread_mutex_unlock(&ss->mu);
        return send_text(c, 200, "text/plain; version=0.0.4", &t, 0);
    }
    if (!chat && !compl && strcmp(url, "/v1/models") && strcmp(url, "/metrics") && strcmp(url, "/health")) {
        serve_error_set(&e, 404, "invalid_request_error", "not_found", NULL, "no route %s", url);
        return send_error(ss, c, &e);
    }
    if (!post || (!chat && !compl)) {
        serve_error_set(&e, 405, "invalid_request_error", "method_not_allowed", NULL, "%s is not allowed on %s",
                        method, url);
        return send_error(ss, c, &e);
    }
    if (cn->too_big) {
        serve_error_set(&e, 413, "invalid_request_error", "body_too_large", NULL, "the body passes %llu bytes",
                        (unsigned long long)ss->lim.max_body);
        return send_error(ss, c, &e);
    }
    if (cn->body.failed) {
        serve_error_set(&e, 503, "server_error", NULL, NULL, "no memory for the body");
        return send_error(ss, c, &e);
    }
    serve_request rq;
    if (!serve_parse(ss, chat ? SERVE_CHAT : SERVE_COMPLETION, cn->body.data ? cn->body.data : "", cn->body.len, &rq,
                     &e))
        return send_error(ss, c, &e);
    if (rq.stream) return start_stream(ss, c, &rq);
    enum MHD_Result r = complete(ss, c, &rq);
    serve_request_free(&rq);
    return r;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode code) {
    (void)cls;
    (void)c;
    (void)code;
    conn *cn = *con_cls;
    if (!cn) return;
    serve_text_free(&cn->body);
    free(cn);
    *con_cls = NULL;
}

void *serve_http_start(serve_state *ss, const char *host, uint16_t port, uint32_t max_connections) {
    struct sockaddr_in a4 = {0};
    struct sockaddr_in6 a6 = {0};
    const struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons(port);
        addr = (const struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons(port);
        addr = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        fprintf(stderr, "tmem serve: --host %s is not a numeric IPv4 or IPv6 address\n", host);
        return NULL;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, port, NULL, NULL, handle, ss, MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(64 << 10), MHD_OPTION_NOTIFY_COMPLETED, completed, ss, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "tmem serve: cannot listen on %s:%u: %s\n", host, (unsigned)port, strerror(errno));
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("tmem serve: listening on http://%s%s%s:%u\n", strchr(host, ':') ? "[" : "", host,
           strchr(host, ':') ? "]" : "", di ? (unsigned)di->port : (unsigned)port);
    fflush(stdout);
    return d;
}

void serve_http_stop(void *daemon) { MHD_stop_daemon(daemon); }

#else /* no libmicrohttpd */

void *serve_http_start(serve_state *ss, const char *host, uint16_t port, uint32_t max_connections) {
    (void)ss, (void)host, (void)port, (void)max_connections;
    return NULL;
}
void serve_http_stop(void *daemon) { (void)daemon; }

#endif
