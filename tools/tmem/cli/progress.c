/* Progress bars: see progress.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/progress.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool tmem_progress_enabled(void) {
    const char *env = getenv("TMEM_PROGRESS");
    if (env && *env) return strcmp(env, "0") != 0;
    return isatty(fileno(stdout)) == 1;
}

void tmem_progress_begin(tmem_progress *p, const char *label, uint64_t total) {
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    p->total = total;
    p->on = tmem_progress_enabled();
    p->start_ns = now_ns();
    if (p->on) tmem_progress_draw(p);
}

void tmem_progress_draw(tmem_progress *p) {
    if (!p->on) return;
    enum { BAR = 30 };
    char line[160], bar[BAR + 1];
    uint64_t now = now_ns();
    double secs = (double)(now - p->start_ns) / 1e9;
    int n;
    if (p->total) {
        uint64_t done = p->done > p->total ? p->total : p->done;
        int fill = (int)(done * BAR / p->total);
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '.', (size_t)(BAR - fill));
        bar[BAR] = '\0';
        double frac = (double)done / (double)p->total;
        if (done && frac < 1.0 && secs > 0.5)
            n = snprintf(line, sizeof line, "%-16s [%s] %3d%%  %llu/%llu  eta %.0fs", p->label, bar, (int)(frac * 100),
                         (unsigned long long)done, (unsigned long long)p->total, secs / frac - secs);
        else
            n = snprintf(line, sizeof line, "%-16s [%s] %3d%%  %llu/%llu", p->label, bar, (int)(frac * 100),
                         (unsigned long long)done, (unsigned long long)p->total);
    } else {
        static const char spin[] = "|/-\\";
        n = snprintf(line, sizeof line, "%-16s %c %llu  %.1fs", p->label,
                     spin[(now / 100000000u) % 4], (unsigned long long)p->done, secs);
    }
    if (n < 0) return;
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    /* \r and pad over the previous line; no newline until the end. */
    printf("\r%s%*s", line, p->width > n ? p->width - n : 0, "");
    fflush(stdout);
    p->width = n;
    p->last_draw_ns = now;
}

void tmem_progress_update(tmem_progress *p, uint64_t done) {
    p->done = done;
    if (!p->on) return;
    if (now_ns() - p->last_draw_ns >= 100000000u || (p->total && done >= p->total)) tmem_progress_draw(p);
}

void tmem_progress_end(tmem_progress *p) {
    if (!p->on) return;
    printf("\r%*s\r", p->width, "");
    fflush(stdout);
    p->on = false;
}
