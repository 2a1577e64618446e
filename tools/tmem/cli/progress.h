/* Progress bars for long CLI work (exact planning, model generation, benches,
 * big reports). Drawn on stdout only when stdout is a terminal, so pipes, CI
 * logs and --json output stay clean. TMEM_PROGRESS=0 turns them off, =1 draws
 * them even when stdout is not a terminal (for tests and `script`).
 *
 *   tmem_progress p;
 *   tmem_progress_begin(&p, "planning", total);   // total 0 = unknown
 *   for (...) tmem_progress_update(&p, done);      // cheap: redraws <= 10x/s
 *   tmem_progress_end(&p);                         // erases the bar
 *
 * One bar at a time per process; not thread-safe (call from one thread). */
#ifndef TMEM_TOOL_PROGRESS_H
#define TMEM_TOOL_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tmem_progress {
    char label[32];
    uint64_t total, done;
    uint64_t start_ns, last_draw_ns;
    int width;   /* columns of the last line drawn, to erase it */
    bool on;
} tmem_progress;

/* Should bars be drawn here (env TMEM_PROGRESS, else isatty(stdout))? */
bool tmem_progress_enabled(void);
void tmem_progress_begin(tmem_progress *p, const char *label, uint64_t total);
void tmem_progress_update(tmem_progress *p, uint64_t done);
/* Draw now whatever the time since the last draw (e.g. at a stage change). */
void tmem_progress_draw(tmem_progress *p);
void tmem_progress_end(tmem_progress *p);

#endif
