/* serve.h: `tmem serve`, an OpenAI-compatible HTTP front of the runtime's
 * server (tmemrt/server.h), shared by the files of tools/tmem/serve/:
 *   cmd_serve.c   arguments, model, tokenizer, server, the stepping thread
 *   serve_http.c  libmicrohttpd: routes, limits, auth, streaming (SSE)
 *   serve_api.c   the OpenAI requests (strict JSON reader) and responses
 *   serve_text.c  a growable text buffer with JSON string escaping
 * docs/serve.md is the reference. */
#ifndef TMEM_TOOL_SERVE_H
#define TMEM_TOOL_SERVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tmemrt/server.h>
#include <tmemrt/tokenizer.h>

/* ---- serve_text.c --------------------------------------------------------- */

typedef struct serve_text {
    char *data;
    size_t len, cap;
    bool failed;                /* an allocation failed: the text is cut */
} serve_text;

void serve_text_free(serve_text *t);
void serve_text_add(serve_text *t, const char *s, size_t n);
void serve_text_puts(serve_text *t, const char *s);
void serve_text_printf(serve_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string literal (quotes included) of n bytes; invalid UTF-8 becomes U+FFFD. */
void serve_text_json_str(serve_text *t, const char *s, size_t n);

/* ---- cmd_serve.c: the shared state ---------------------------------------- */

typedef struct serve_limits {
    uint64_t max_body;          /* request body bytes */
    uint32_t max_tokens;        /* cap of max_tokens (and its default) */
    uint32_t max_prompt;        /* prompt tokens */
} serve_limits;

typedef struct serve_metrics {
    uint64_t requests, errors_4xx, errors_5xx, rejected, disconnects, prompt_tokens, completion_tokens;
} serve_metrics;

typedef struct serve_state {
    pthread_mutex_t mu;         /* guards srv and the metrics */
    pthread_cond_t work;        /* the stepping thread waits here */
    pthread_cond_t progress;    /* handlers wait here for tokens */
    tmrt_server *srv;
    tmrt_tokenizer *tok;
    tmem_context *ctx;
    const char *model_name;     /* the file's base name */
    const char *api_key;        /* NULL: none */
    serve_limits lim;
    serve_metrics met;
    int32_t eog[TMRT_SERVER_MAX_STOP];
    uint32_t n_eog;
    uint32_t n_ctx;
    bool stop;
    uint64_t created;           /* unix time at start */
} serve_state;

/* Wake the stepping thread (mu held). */
void serve_kick(serve_state *ss);

/* ---- serve_api.c ------------------------------------------------------------ */

typedef enum serve_kind { SERVE_CHAT = 0, SERVE_COMPLETION } serve_kind;

/* A parsed request. */
typedef struct serve_request {
    serve_kind kind;
    bool stream;
    bool ignore_eos;            /* llama.cpp's extension: generate max_tokens whatever comes */
    int32_t *prompt;            /* malloc */
    uint32_t n_prompt;
    uint32_t max_tokens;
    tmrt_sampler_desc sampler;
} serve_request;

/* An HTTP error: status, OpenAI-style type/code, message. */
typedef struct serve_error {
    unsigned status;
    const char *type;           /* "invalid_request_error", ... */
    const char *code;           /* NULL or "context_length_exceeded", ... */
    char param[64];
    char message[320];
} serve_error;

void serve_error_set(serve_error *e, unsigned status, const char *type, const char *code, const char *param,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* {"error":{"message":...,"type":...,"param":...,"code":...}} */
void serve_error_json(const serve_error *e, serve_text *out);

/* Parse a request body (strict JSON) into rq; false with *e on a bad one. */
bool serve_parse(serve_state *ss, serve_kind kind, const char *body, size_t len, serve_request *rq, serve_error *e);
void serve_request_free(serve_request *rq);

/* The text of generated ids (end-of-generation ids left out). */
void serve_decode(serve_state *ss, tmrt_utf8_stream *us, const int32_t *ids, uint32_t n, serve_text *out);

/* Responses. */
void serve_response_json(serve_state *ss, const serve_request *rq, const char *id, const char *text, size_t len,
                         const char *finish, uint32_t n_prompt, uint32_t n_gen, serve_text *out);
void serve_chunk_json(serve_state *ss, const serve_request *rq, const char *id, const char *text, size_t len,
                      const char *finish, bool first, serve_text *out);
void serve_models_json(serve_state *ss, serve_text *out);
void serve_metrics_text(serve_state *ss, serve_text *out);
const char *serve_finish_name(tmrt_server_finish f);

/* ---- serve_http.c ----------------------------------------------------------- */

/* Start the HTTP daemon on host:port (the address must be numeric);
 * returns an opaque handle or NULL (a message printed). */
void *serve_http_start(serve_state *ss, const char *host, uint16_t port, uint32_t max_connections);
void serve_http_stop(void *daemon);

#endif
