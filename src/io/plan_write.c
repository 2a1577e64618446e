/*
 * Plans written to a caller's FILE (plan_io.h): the planner makes the text
 * (plan/internal.h), the OS layer writes it (tmem__os_stream_write), so a
 * write failure and fault injection both reach these calls.
 */
#include "os/os.h"
#include "plan/internal.h"
#include "typedmem/plan_io.h"

static bool stream_sink(void *f, const char *data, size_t len) {
    return tmem__os_stream_write(f, data, len) == TMEM_OK;
}

/* Drain what is left, free the builder; TMEM_E_IO when any write failed,
 * TMEM_E_NO_MEMORY when the builder could not grow. */
static tmem_status finish(tmem__text *t) {
    tmem__text_drain(t);
    bool failed = t->failed, sink = t->sink_failed;
    tmem__text_free(t);
    if (!failed) return TMEM_OK;
    return tmem__err(sink ? TMEM_E_IO : TMEM_E_NO_MEMORY);
}

/* The three forms through one path (svg_desc only for SVG). */
typedef void (*plan_text_fn)(const tmem_plan *plan, const tmem_plan_svg_desc *svg_desc, tmem__text *t);

static void csv_text(const tmem_plan *plan, const tmem_plan_svg_desc *d, tmem__text *t) {
    (void)d;
    tmem__plan_csv_text(plan, t);
}

static void json_text(const tmem_plan *plan, const tmem_plan_svg_desc *d, tmem__text *t) {
    (void)d;
    tmem__plan_json_text(plan, t);
}

static tmem_status write_plan(const tmem_plan *plan, const tmem_plan_svg_desc *d, FILE *f, plan_text_fn make) {
    if (!plan || !f) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__text t;
    tmem__text_init_sink(&t, stream_sink, f);
    make(plan, d, &t);
    return finish(&t);
}

tmem_status tmem_plan_write_csv(const tmem_plan *plan, FILE *f) { return write_plan(plan, NULL, f, csv_text); }

tmem_status tmem_plan_write_json(const tmem_plan *plan, FILE *f) { return write_plan(plan, NULL, f, json_text); }

tmem_status tmem_plan_write_svg(const tmem_plan *plan, const tmem_plan_svg_desc *desc, FILE *f) {
    return write_plan(plan, desc, f, tmem__plan_svg_text);
}
