/* cmd_serve.c: `tmem serve MODEL`: the model mapped once, its tokenizer, a
 * runtime server (tmemrt/server.h) of --parallel sessions under one budget,
 * one thread that steps it while a request has work, and the HTTP daemon
 * (serve_http.c). SIGINT / SIGTERM stop it. docs/serve.md. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include "cli/args.h"
#include "commands.h"
#include "serve.h"

static const char usage_text[] =
    "usage: tmem serve MODEL.gguf [--host 127.0.0.1] [--port 8080] [--budget SIZE] [--parallel N]\n"
    "                  [--api-key KEY] [--ctx N] [--chunk N] [-t N] [--suspend-dir DIR]\n"
    "                  [--max-body SIZE] [--max-tokens N]\n"
    "  An OpenAI-compatible HTTP server (docs/serve.md): POST /v1/chat/completions,\n"
    "  POST /v1/completions (stream or not), GET /v1/models, GET /health, GET /metrics.\n"
    "  --host        numeric address to listen on (default 127.0.0.1: loopback only)\n"
    "  --port        TCP port (default 8080; 0: any free port, printed)\n"
    "  --budget      the context's budget for everything (default: the machine's limit)\n"
    "  --parallel    conversations at once (default 4, at most 64); more get 429\n"
    "  --api-key     require 'Authorization: Bearer KEY' (all but /health)\n"
    "  --ctx         tokens of context per conversation (default 4096 or the model's)\n"
    "  --chunk       prefill tokens per step (default 512)\n"
    "  -t            threads of the forward pass (default 1)\n"
    "  --suspend-dir where idle conversations are suspended under memory pressure\n"
    "  --max-body    request body limit (default 1MiB)\n"
    "  --max-tokens  largest max_tokens (default: --ctx)\n";

#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

typedef struct serve_args {
    const char *model, *host, *api_key, *suspend_dir;
    uint64_t port, budget, parallel, ctx, chunk, threads, max_body, max_tokens;
} serve_args;

static int usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "tmem serve: %s%s%s\n%s", msg, arg ? " " : "", arg ? arg : "", usage_text);
    return EXIT_USAGE;
}

static int parse(int argc, char **argv, serve_args *a) {
    memset(a, 0, sizeof *a);
    a->host = "127.0.0.1";
    a->port = 8080;
    a->parallel = 4;
    a->threads = 1;
    a->max_body = 1u << 20;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            fputs(usage_text, stdout);
            return -1;
        }
        if (o[0] != '-') {
            if (a->model) return usage_error("more than one model:", o);
            a->model = o;
            continue;
        }
        if (!strcmp(o, "--host")) a->host = v, ok = v != NULL;
        else if (!strcmp(o, "--port")) ok = tmem_arg_u64(v, &a->port) && a->port <= 65535;
        else if (!strcmp(o, "--budget")) ok = tmem_arg_size(v, &a->budget) && a->budget > 0;
        else if (!strcmp(o, "--parallel"))
            ok = tmem_arg_u64(v, &a->parallel) && a->parallel >= 1 && a->parallel <= TMRT_SERVER_MAX_SESSIONS;
        else if (!strcmp(o, "--api-key")) a->api_key = v, ok = v && *v;
        else if (!strcmp(o, "--ctx")) ok = tmem_arg_u64(v, &a->ctx) && a->ctx >= 16 && a->ctx <= (1u << 24);
        else if (!strcmp(o, "--chunk")) ok = tmem_arg_u64(v, &a->chunk) && a->chunk >= 1 && a->chunk <= 65536;
        else if (!strcmp(o, "-t")) ok = tmem_arg_u64(v, &a->threads) && a->threads >= 1 && a->threads <= 64;
        else if (!strcmp(o, "--suspend-dir")) a->suspend_dir = v, ok = v && *v;
        else if (!strcmp(o, "--max-body")) ok = tmem_arg_size(v, &a->max_body) && a->max_body >= 64;
        else if (!strcmp(o, "--max-tokens")) ok = tmem_arg_u64(v, &a->max_tokens) && a->max_tokens >= 1;
        else return usage_error("unknown option", o);
        if (!ok) return usage_error("bad value for", o);
        i++;
    }
    if (!a->model) return usage_error("no model given", NULL);
    return 0;
}

void serve_kick(serve_state *ss) { pthread_cond_signal(&ss->work); }

/* Step the server while a request has work; sleep otherwise. */
static void *stepper(void *arg) {
    serve_state *ss = arg;
    pthread_mutex_lock(&ss->mu);
    while (!ss->stop) {
        tmrt_server_stats st;
        if (tmrt_server_get_stats(ss->srv, &st) || !st.busy) {
            pthread_cond_wait(&ss->work, &ss->mu);
            continue;
        }
        tmrt_server_step_info si;
        (void)!tmrt_server_step(ss->srv, &si, NULL);
        pthread_cond_broadcast(&ss->progress);
        /* let the handlers in between steps */
        pthread_mutex_unlock(&ss->mu);
        sched_yield();
        pthread_mutex_lock(&ss->mu);
    }
    pthread_mutex_unlock(&ss->mu);
    return NULL;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int tmem_cmd_serve(int argc, char **argv) {
    serve_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
#if !TMEM_HAVE_MHD
    fprintf(stderr, "tmem serve: this tmem was built without libmicrohttpd (install libmicrohttpd-dev and "
                    "rebuild)\n");
    return EXIT_USAGE;
#endif
    static serve_state ss; /* the daemon's threads point at it */
    memset(&ss, 0, sizeof ss);
    pthread_mutex_init(&ss.mu, NULL);
    pthread_cond_init(&ss.work, NULL);
    pthread_cond_init(&ss.progress, NULL);
    ss.api_key = a.api_key;
    ss.model_name = base_name(a.model);
    ss.created = (uint64_t)time(NULL);
    tmrt_model *m = NULL;
    tmrt_error e = {{0}};
    void *http = NULL;
    rc = EXIT_RUNTIME;
    tmem_context_desc cd = {0};
    cd.budget = a.budget;
    if (tmem_context_create(&cd, &ss.ctx) != TMEM_OK) {
        fprintf(stderr, "tmem serve: cannot create a context\n");
        return EXIT_RUNTIME;
    }
    tmrt_model_desc md = {0};
    md.path = a.model;
    if (tmrt_model_open(ss.ctx, &md, &m, &e)) {
        fprintf(stderr, "tmem serve: %s\n", e.message);
        goto done;
    }
    if (tmrt_tokenizer_load(ss.ctx, tmrt_model_gguf(m), &ss.tok, &e)) {
        fprintf(stderr, "tmem serve: the model's tokenizer: %s\n", e.message);
        goto done;
    }
    size_t n_eog = 0;
    if (tmrt_tokenizer_eog_ids(ss.tok, ss.eog, TMRT_SERVER_MAX_STOP, &n_eog) == TMEM_OK) ss.n_eog = (uint32_t)n_eog;
    tmrt_server_desc sd = {0};
    sd.session.n_ctx = (uint32_t)a.ctx;
    sd.session.chunk = (uint32_t)a.chunk;
    sd.session.threads = (uint32_t)a.threads;
    sd.max_sessions = (uint32_t)a.parallel;
    sd.suspend_dir = a.suspend_dir;
    sd.flags = a.suspend_dir ? TMRT_SERVER_SUSPEND_ON_PRESSURE : TMRT_SERVER_NO_RECLAIM;
    if (tmrt_server_create(m, &sd, &ss.srv, &e)) {
        fprintf(stderr, "tmem serve: %s\n", e.message);
        goto done;
    }
    tmrt_server_stats st;
    (void)!tmrt_server_get_stats(ss.srv, &st);
    ss.n_ctx = st.n_ctx;
    ss.lim.max_body = a.max_body;
    ss.lim.max_tokens = a.max_tokens && a.max_tokens < st.n_ctx ? (uint32_t)a.max_tokens : st.n_ctx;
    ss.lim.max_prompt = st.n_ctx;

    /* the signals come to sigwait below, not to the daemon's threads */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_t th;
    if (pthread_create(&th, NULL, stepper, &ss)) {
        fprintf(stderr, "tmem serve: cannot start the stepping thread\n");
        goto done;
    }
    http = serve_http_start(&ss, a.host, (uint16_t)a.port, (uint32_t)a.parallel * 4 + 16);
    if (http) {
        int sig = 0;
        (void)sigwait(&sigs, &sig);
        serve_http_stop(http);
        rc = 0;
    }
    pthread_mutex_lock(&ss.mu);
    ss.stop = true;
    pthread_cond_broadcast(&ss.work);
    pthread_cond_broadcast(&ss.progress);
    pthread_mutex_unlock(&ss.mu);
    pthread_join(th, NULL);
done:
    tmrt_server_destroy(ss.srv);
    tmrt_tokenizer_destroy(ss.tok);
    tmrt_model_close(m);
    tmem_context_destroy(ss.ctx);
    return rc;
}
