/*
 * Internal contract between the files of src/trace. Grouped by the file that
 * defines them.
 */
#ifndef TMEM_TRACE_INTERNAL_H
#define TMEM_TRACE_INTERNAL_H

#include <stdarg.h>
#include "typedmem/trace.h"
#include "base/text.h"
#include "core/internal.h"
#include "os/os.h"

/* Saturating adds (hostile traces may carry sizes near 2^64): tmem__add_sat
 * in base/base.h. */

/* ---- text_fd.c: the one text builder (base/text.h) into an fd ----
 * Streams through tmem__os_write_all: the buffer never holds more than about
 * 1 MiB; a failed write sets `failed` and `sink_failed`; tmem__text_drain
 * writes what is left. */
void tmem__trace_text_fd(tmem__text *t, int fd);
/* html_embed.c: base64 of len bytes; SHA-256 of len bytes. */
void tmem__trace_base64(tmem__text *sb, const void *data, size_t len);
void tmem__sha256(const void *data, size_t len, unsigned char out[32]);
/* "12.3 MiB" style, into buf (>= 32 bytes). */
const char *tmem__fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* ---- trace_data.c: the immutable trace object ---- */
struct tmem_trace_data {
    tmem_trace_event *events;
    uint64_t count, cap;
    uint64_t dropped;
    uint64_t budget;
    uint32_t thread_count;
    bool complete;
    char *type_names[TMEM_TRACE_TYPE_MAX];
    uint64_t type_budgets[TMEM_TRACE_TYPE_MAX];
    uint8_t type_placements[TMEM_TRACE_TYPE_MAX]; /* tmem_placement; 0 = host */
    char *role_names[TMEM_ROLE_MAX];
};
/* Builder used by the reader, the snapshot and tests: an empty trace. */
tmem_status tmem__trace_data_new(tmem_trace_data **out);
/* Append a copy; the caller validated it. TMEM_E_NO_MEMORY on growth failure. */
tmem_status tmem__trace_data_push(tmem_trace_data *data, const tmem_trace_event *ev);
tmem_status tmem__trace_data_set_type(tmem_trace_data *data, uint32_t index, const char *name, uint64_t budget);
tmem_status tmem__trace_data_set_role(tmem_trace_data *data, uint32_t role, const char *name);
tmem_status tmem__trace_data_set_placement(tmem_trace_data *data, uint32_t index,
                                           uint32_t placement);
/* Type `index` (-1 = none) is a device type: its bytes are device bytes. */
bool tmem__trace_type_is_device(const tmem_trace_data *data, int32_t index);
/* Label for a type/role even when unnamed ("type#3", "role#17", "none"). */
const char *tmem__trace_type_label(const tmem_trace_data *data, int32_t index, char *buf, size_t cap);
const char *tmem__trace_role_label(const tmem_trace_data *data, int32_t role, char *buf, size_t cap);
/* Number of type slots worth showing (1 + highest named or used index). */
uint32_t tmem__trace_type_span(const tmem_trace_data *data);

/* ---- trace_format.c: the binary file format (docs/trace.md) ---- */
#define TMEM__TRACE_MAGIC "TMEMTRC\x1a"
#define TMEM__TRACE_HEADER_SIZE 16u
enum {
    TMEM__REC_EVENT = 1,  /* time, size, offset, thread, kind, type, role, name */
    TMEM__REC_TYPE = 2,   /* index, budget, name */
    TMEM__REC_ROLE = 3,   /* role, name */
    TMEM__REC_END = 4,    /* budget, dropped, events: the trailer */
    TMEM__REC_PLACEMENT = 5 /* type index, placement: written for device types only */
};
/* Largest payload of any record (an EVENT with the longest name). */
#define TMEM__REC_MAX 96u
/* Encode the file header / one record into buf (>= TMEM__REC_MAX + 4 bytes);
 * return the bytes written. */
size_t tmem__trace_encode_header(uint8_t *buf);
size_t tmem__trace_encode_event(uint8_t *buf, const tmem_trace_event *ev);
size_t tmem__trace_encode_type(uint8_t *buf, uint32_t index, uint64_t budget, const char *name);
size_t tmem__trace_encode_role(uint8_t *buf, uint32_t role, const char *name);
size_t tmem__trace_encode_placement(uint8_t *buf, uint32_t index, uint32_t placement);
size_t tmem__trace_encode_end(uint8_t *buf, uint64_t budget, uint64_t dropped, uint64_t events);
/* Whole trace encoded into sb (a string, or a file sink); check sb->failed. */
void tmem__trace_write_all(const tmem_trace_data *data, tmem__text *sb);
/* Finish a file written through tmem__os_afile_create: commit it (fsync,
 * rename over the path) when st is TMEM_OK, else drop the temporary so the
 * path is as it was. Returns the final status. */
tmem_status tmem__trace_file_finish(tmem__os_afile *af, tmem_status st);
/* Event validity shared by reader and builder users (kind, type, role, name). */
bool tmem__trace_event_valid(const tmem_trace_event *ev);

/* ---- trace_replay.c: walk a trace keeping in-use/committed counters ----
 * Frees are matched to their allocation by (type, offset) so they subtract
 * what was allocated (size and role); unmatched frees subtract nothing. */
typedef struct tmem__replay {
    const tmem_trace_data *data;
    uint64_t next;                               /* index of the next event */
    uint64_t type_in_use[TMEM_TRACE_TYPE_MAX];
    uint64_t role_in_use[TMEM_ROLE_MAX + 1];     /* [TMEM_ROLE_MAX] = no role */
    uint64_t role_device_in_use[TMEM_ROLE_MAX + 1]; /* the part in device types */
    uint64_t device_in_use;
    uint64_t type_committed[TMEM_TRACE_TYPE_MAX];
    uint64_t in_use, committed;
    uint64_t unmatched_frees;
    /* live allocations: open addressing on (type, offset) -> event index + 1 */
    uint64_t *keys, *vals;
    uint64_t slots, used;
    bool failed;
} tmem__replay;
tmem_status tmem__replay_init(tmem__replay *r, const tmem_trace_data *data);
/* Apply the next event; false at the end or when out of memory (r->failed). */
bool tmem__replay_step(tmem__replay *r);
void tmem__replay_free(tmem__replay *r);
/* Call fn for each live allocation (its ALLOC event). */
void tmem__replay_live(const tmem__replay *r, void (*fn)(const tmem_trace_event *ev, void *user), void *user);

/* ---- exporters (export_*.c) ---- */
tmem_status tmem__export_chrome(const tmem_trace_data *data, tmem__text *sb);
/* by_role: stack roles instead of types (id "tmem-timeline-role"). */
tmem_status tmem__export_svg(const tmem_trace_data *data, const tmem_report_desc *opt,
                             const tmem_trace_peak_info *peak, bool by_role, tmem__text *sb);
void tmem__export_peak_text(const tmem_trace_data *data, const tmem_trace_peak_info *peak,
                            uint32_t top, tmem__text *sb);
void tmem__export_summary_json(const tmem_trace_data *data, const tmem_trace_peak_info *peak, tmem__text *sb);
/* The report options' own checks (plan SVG, notes): TMEM_E_INVALID_ARG. */
tmem_status tmem__export_html_check(const tmem_report_desc *opt);
tmem_status tmem__export_html(const tmem_trace_data *data, const tmem_report_desc *opt,
                              const tmem_trace_peak_info *peak, tmem__text *sb);

/* Series colours, shared by the SVG and the HTML tables. */
const char *tmem__trace_color(uint32_t index);

#endif /* TMEM_TRACE_INTERNAL_H */
