/* bench_serve_peer.c: the peer of `tmem bench serve`, llama.cpp's
 * llama-server (--parallel N, the same file), in its own process: N
 * concurrent POST /completion requests of the same token ids (n_predict
 * tokens, ignore_eos, greedy, no prompt cache) over loopback, each answer's
 * `timings` read. Aggregate decode tok/s = the generated tokens of all N /
 * the longest `predicted_ms` among them (their decode phases overlap); the
 * peak Private_Dirty of the llama-server process sampled every 20 ms while
 * the requests run. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <typedmem/system.h>
#include "bench/bench_serve.h"

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* One HTTP/1.1 request with Connection: close; the whole answer into out (malloc). */
static bool http(int port, const char *method, const char *path, const char *body, char **out) {
    *out = NULL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        if (fd >= 0) close(fd);
        return false;
    }
    size_t blen = body ? strlen(body) : 0;
    char head[256];
    int hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n",
                      method, path, blen);
    bool ok = write(fd, head, (size_t)hl) == hl && (!blen || write(fd, body, blen) == (ssize_t)blen);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (ok && buf) {
        if (len + 4096 > cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) break;
            buf = p;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    if (!buf) return false;
    buf[len] = '\0';
    *out = buf;
    return ok && len > 12 && !strncmp(buf, "HTTP/1.1 200", 12);
}

typedef struct peer_req {
    int port;
    const char *body;
    double predicted_n, predicted_ms;
    bool ok;
    atomic_uint *done;
} peer_req;

static double field(const char *s, const char *key) {
    const char *p = s ? strstr(s, key) : NULL;
    return p ? strtod(p + strlen(key), NULL) : -1;
}

static void *one(void *arg) {
    peer_req *r = arg;
    char *ans;
    r->ok = http(r->port, "POST", "/completion", r->body, &ans);
    r->predicted_n = field(ans, "\"predicted_n\":");
    r->predicted_ms = field(ans, "\"predicted_ms\":");
    r->ok = r->ok && r->predicted_n > 0 && r->predicted_ms > 0;
    free(ans);
    atomic_fetch_add(r->done, 1);
    return NULL;
}

serve_peer_fig tmem_bench_serve_peer(const char *server, const char *model, uint32_t sessions, uint32_t prompt,
                                     uint32_t gen, uint32_t threads, uint32_t vocab) {
    serve_peer_fig f = {0};
    int port = free_port();
    if (port < 0 || sessions > 64) return f;
    char a_port[16], a_np[16], a_ctx[16], a_t[16];
    snprintf(a_port, sizeof a_port, "%d", port);
    snprintf(a_np, sizeof a_np, "%u", sessions);
    snprintf(a_ctx, sizeof a_ctx, "%u", sessions * (prompt + gen + 16));
    snprintf(a_t, sizeof a_t, "%u", threads);
    pid_t pid = fork();
    if (pid < 0) return f;
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
        execl(server, server, "-m", model, "--host", "127.0.0.1", "--port", a_port, "-np", a_np, "-c", a_ctx, "-t",
              a_t, "--no-webui", "--no-warmup", "--no-cache-prompt", (char *)NULL);
        _exit(127);
    }
    char *ans = NULL;
    bool up = false;
    for (int i = 0; i < 1200 && !up; i++) { /* 2 minutes to load */
        up = http(port, "GET", "/health", NULL, &ans);
        free(ans);
        if (!up) usleep(100000);
        if (waitpid(pid, NULL, WNOHANG) == pid) return f;
    }
    char *body = malloc((size_t)prompt * 12 + 256);
    peer_req rq[64];
    pthread_t th[64];
    uint32_t started = 0;
    atomic_uint done = 0;
    if (up && body) {
        size_t n = (size_t)sprintf(body, "{\"prompt\":[");
        for (uint32_t t = 0; t < prompt; t++)
            n += (size_t)sprintf(body + n, "%s%u", t ? "," : "", (unsigned)((t * 104729u + 11u) % vocab));
        sprintf(body + n, "],\"n_predict\":%u,\"ignore_eos\":true,\"temperature\":0,\"cache_prompt\":false}", gen);
        for (; started < sessions; started++) {
            rq[started] = (peer_req){port, body, 0, 0, false, &done};
            if (pthread_create(&th[started], NULL, one, &rq[started])) break;
        }
        /* the peak while they run */
        for (;;) {
            tmem_footprint fp;
            if (tmem_footprint_read_pid(pid, &fp) == TMEM_OK && fp.private_dirty > f.dirty_peak)
                f.dirty_peak = (double)fp.private_dirty;
            if (atomic_load(&done) == started) break;
            usleep(20000);
        }
        for (uint32_t i = 0; i < started; i++) pthread_join(th[i], NULL);
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    double tokens = 0, ms = 0;
    bool ok = up && started == sessions;
    for (uint32_t i = 0; i < started; i++) {
        ok = ok && rq[i].ok;
        tokens += rq[i].predicted_n;
        ms = rq[i].predicted_ms > ms ? rq[i].predicted_ms : ms;
    }
    free(body);
    f.ok = ok && ms > 0;
    f.decode_tok_s = f.ok ? tokens / (ms / 1000.0) : 0;
    return f;
}
