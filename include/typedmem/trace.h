/**
 * @file trace.h
 * @brief Event trace of a context's memory, and the pictures made from it:
 *        Chrome/Perfetto trace JSON, an SVG timeline, "what was alive at the
 *        peak", a summary JSON and a self-contained HTML report.
 *
 * Tracing is off by default and then costs one predictable branch per
 * allocation. When on, every allocate, free, alias, purge, commit/decommit,
 * lock/unlock, eviction, budget denial, pressure change and user mark is
 * recorded with a monotonic time, the type, the role, a copied name (at most
 * TMEM_TRACE_NAME_MAX-1 bytes), the size and the offset, into a bounded
 * in-memory ring (oldest events overwritten and counted as dropped) and/or
 * streamed to a file (docs/trace.md describes the versioned binary format).
 *
 * A recorded trace is read back as a ::tmem_trace_data (from a live context
 * with tmem_trace_snapshot(), or from a file with tmem_trace_load()), which
 * needs no context and feeds every exporter.
 *
 * @par Quick start
 * @code
 *   tmem_trace_desc td = {0};               // zeroed: a 65536-event ring
 *   if (tmem_trace_start(ctx, &td) != TMEM_OK) ...;
 *   ... run a request; tmem_trace_mark(ctx, "prefill done"); ...
 *   tmem_trace_data *t;
 *   if (tmem_trace_snapshot(ctx, &t) == TMEM_OK) {
 *       tmem_report_desc rd = {0};
 *       rd.plan_svg = plan_svg_text;         // optional planner picture
 *       TMEM_IGNORE(tmem_trace_export_file(t, TMEM_TRACE_FORMAT_HTML, &rd, "report.html"));
 *       tmem_trace_data_destroy(t);
 *   }
 *   TMEM_IGNORE(tmem_trace_stop(ctx));
 * @endcode
 *
 * @par Threads
 * Events may be emitted from any number of threads at once (the tracer takes
 * its own lock, never the context's). start/stop/snapshot may run while other
 * threads allocate. A ::tmem_trace_data is immutable after creation: any
 * number of threads may read and export it at once.
 *
 * @par Non-goals
 * No sampling, no call stacks, no live streaming to a viewer: the trace is a
 * memory ledger, the exporters turn it into pictures after the fact.
 */
#ifndef TYPEDMEM_TRACE_H
#define TYPEDMEM_TRACE_H

#include <stdio.h>
#include "context.h"

TMEM_EXTERN_C_BEGIN

/** Bytes of an event's name, NUL included; longer names are truncated. */
#define TMEM_TRACE_NAME_MAX 48
/** Entries of each "alive at the peak" table in ::tmem_trace_peak_info. */
#define TMEM_TRACE_TOP_MAX 16
/** Most types a trace distinguishes (type indexes 0..63, as the context). */
#define TMEM_TRACE_TYPE_MAX 64
/** Events of the default ring (tmem_trace_desc::capacity 0, no path). */
#define TMEM_TRACE_DEFAULT_CAPACITY 65536u
/** Version of the binary trace file format written and read here. */
#define TMEM_TRACE_FILE_VERSION 1u

/** @brief What an event records. Values are stable (they are in files). */
typedef enum tmem_trace_kind {
    TMEM_TRACE_ALLOC = 0,      /**< size bytes handed out at offset (pool offset) */
    TMEM_TRACE_FREE,           /**< the allocation at (type, offset) given back */
    TMEM_TRACE_ALIAS,          /**< a transient range made aliasable: reusable by others */
    TMEM_TRACE_PURGE,          /**< a purgeable range dropped (size bytes) */
    TMEM_TRACE_COMMIT,         /**< size bytes of the type's pool committed (charged) */
    TMEM_TRACE_DECOMMIT,       /**< size bytes decommitted (uncharged) */
    TMEM_TRACE_LOCK,           /**< a surface locked; offset = the surface id */
    TMEM_TRACE_UNLOCK,         /**< a surface unlocked; offset = the surface id */
    TMEM_TRACE_EVICT,          /**< size bytes evicted (KV sequences, state snapshots); offset = their id */
    TMEM_TRACE_BUDGET_DENIED,  /**< a request of size bytes refused with TMEM_E_BUDGET */
    TMEM_TRACE_PRESSURE,       /**< pressure level changed; offset = tmem_pressure */
    TMEM_TRACE_MARK,           /**< a user mark (tmem_trace_mark) */
    TMEM_TRACE_RESET,          /**< a heap reset/destroyed: every live allocation of the
                                    type in [offset, offset + size) is freed at once */
    TMEM_TRACE_KIND_COUNT
} tmem_trace_kind;

/** @brief Flags of tmem_trace_desc::flags. */
typedef enum tmem_trace_flag {
    TMEM_TRACE_NO_COMMITS = 1u << 0, /**< skip COMMIT/DECOMMIT events (they can be many) */
    TMEM_TRACE_FLAG_MASK = 0x1u
} tmem_trace_flag;

/** @brief How to trace. Zeroed = a ring of TMEM_TRACE_DEFAULT_CAPACITY events. */
typedef struct tmem_trace_desc {
    uint32_t capacity;    /**< ring events, rounded up to a power of two (max 2^24);
                               0 = default ring, or no ring when `path` is set */
    const char *path;     /**< stream every event to this file (created or
                               truncated); NULL = no file */
    uint32_t buffer_size; /**< file write buffer in bytes; 0 = 64 KiB (min 4 KiB) */
    uint32_t flags;       /**< tmem_trace_flag bits */
} tmem_trace_desc;

/** @brief State of a context's tracer (tmem_trace_get_info). */
typedef struct tmem_trace_info {
    bool on;              /**< events are being recorded */
    uint32_t capacity;    /**< ring capacity in events (0 = no ring) */
    uint64_t recorded;    /**< events recorded since the last start */
    uint64_t dropped;     /**< oldest ring events overwritten since start */
    uint64_t file_bytes;  /**< bytes written to the file so far */
    uint32_t file_errors; /**< failed writes (the file is then incomplete) */
} tmem_trace_info;

/** @brief One recorded event, as read back. */
typedef struct tmem_trace_event {
    uint64_t time_ns;     /**< monotonic, since tmem_trace_start; non-decreasing */
    uint64_t size;        /**< bytes (see tmem_trace_kind) */
    uint64_t offset;      /**< pool offset, seed or level (see tmem_trace_kind) */
    uint32_t thread;      /**< 1.. in order of first appearance; 0 = beyond 255 threads */
    uint16_t kind;        /**< tmem_trace_kind */
    int16_t type;         /**< type index 0..63, -1 = none */
    int32_t role;         /**< tmem_role 0..TMEM_ROLE_MAX-1, -1 = none */
    char name[TMEM_TRACE_NAME_MAX]; /**< NUL-terminated, "" = none */
} tmem_trace_event;

/** @brief A recorded trace, detached from any context. Immutable. */
typedef struct tmem_trace_data tmem_trace_data;

/** @brief Summary of a ::tmem_trace_data. */
typedef struct tmem_trace_data_info {
    uint64_t events;      /**< events held */
    uint64_t dropped;     /**< events lost to ring overwrite before these */
    uint64_t duration_ns; /**< time of the last event */
    uint64_t budget;      /**< context budget when recorded (0 = unknown) */
    uint32_t type_count;  /**< 1 + highest type index named or used */
    uint32_t thread_count;
    bool complete;        /**< false: a streamed file that ended early (crash) */
} tmem_trace_data_info;

/** @brief One row of an "alive at the peak" table. */
typedef struct tmem_trace_contributor {
    char label[TMEM_TRACE_NAME_MAX + 16]; /**< role name, type name or event name */
    int32_t id;           /**< role or type index; -1 for names */
    uint32_t count;       /**< live allocations */
    uint64_t bytes;       /**< live bytes */
} tmem_trace_contributor;

/** @brief The in-use peak of a trace and what was alive at it.
 *  In-use bytes are the sum of live allocations (ALLOC minus FREE), counted
 *  from the trace's start: allocations made before it are not seen. */
typedef struct tmem_trace_peak_info {
    uint64_t peak_bytes;           /**< highest total in-use bytes */
    uint64_t peak_time_ns;         /**< first time it was reached */
    uint64_t peak_event;           /**< index of the event that reached it */
    uint64_t peak_committed;       /**< highest total committed bytes (COMMIT - DECOMMIT) */
    uint64_t peak_committed_time_ns;
    uint64_t live_count;           /**< allocations alive at the peak */
    uint64_t unmatched_frees;      /**< FREEs with no ALLOC in the trace (dropped or earlier) */
    uint64_t budget_denials;       /**< BUDGET_DENIED events */
    uint64_t evicted_bytes;        /**< sum of EVICT sizes */
    uint32_t by_role_count, by_type_count, by_name_count;
    tmem_trace_contributor by_role[TMEM_TRACE_TOP_MAX]; /**< largest first */
    tmem_trace_contributor by_type[TMEM_TRACE_TOP_MAX];
    tmem_trace_contributor by_name[TMEM_TRACE_TOP_MAX];
    /** Device bytes (allocations in types of placement DEVICE or
     *  DEVICE_HOST_VISIBLE, tmem_trace_data_type_placement): their own peak
     *  and what was alive at it, by role; all zero without device types. */
    uint64_t device_peak_bytes;
    uint64_t device_peak_time_ns;
    uint64_t device_peak_event;
    uint64_t device_live_count;    /**< device allocations alive at the device peak */
    uint32_t device_by_role_count;
    tmem_trace_contributor device_by_role[TMEM_TRACE_TOP_MAX];
} tmem_trace_peak_info;

/** @brief Output formats of tmem_trace_export(). */
typedef enum tmem_trace_format {
    TMEM_TRACE_FORMAT_CHROME_JSON = 0, /**< Trace Event Format: ui.perfetto.dev, chrome://tracing */
    TMEM_TRACE_FORMAT_SVG,             /**< timeline: stacked in-use area per type, peak, budget */
    TMEM_TRACE_FORMAT_PEAK_TEXT,       /**< "alive at the peak" as plain-text tables */
    TMEM_TRACE_FORMAT_SUMMARY_JSON,    /**< peak, contributors, per-kind counts (docs/trace.md) */
    TMEM_TRACE_FORMAT_HTML,            /**< self-contained report: all of the above + plan picture */
    TMEM_TRACE_FORMAT_SVG_ROLES,       /**< the timeline stacked by role instead of type */
    TMEM_TRACE_FORMAT_COUNT
} tmem_trace_format;

/** @brief A titled block of preformatted text added to the HTML report
 *  (e.g. a stats table, a typed-vs-naive comparison). */
typedef struct tmem_report_note {
    const char *title;
    const char *text;
} tmem_report_note;

/** @brief Options of the exporters. Zeroed = defaults; NULL = all defaults. */
typedef struct tmem_report_desc {
    const char *title;        /**< HTML title; NULL = "typedmem memory report" */
    const char *plan_svg;     /**< SVG text of a plan picture to embed in the HTML
                                   (e.g. from include/typedmem/plan.h); NULL = none.
                                   Must be a single <svg> element (an XML prolog,
                                   comments and a doctype before it are skipped),
                                   else TMEM_E_INVALID_ARG. It is shown as an image
                                   (<img src="data:image/svg+xml;base64,...">), so
                                   nothing in it can run or load anything. */
    const char *plan_caption; /**< text under the plan picture */
    const tmem_report_note *notes;
    uint32_t note_count;
    uint32_t width;           /**< SVG timeline width in px; 0 = 1100 (min 300) */
    uint32_t height;          /**< SVG timeline height in px; 0 = 420 (min 200) */
    uint32_t top;             /**< rows per contributor table; 0 = 10 (max TMEM_TRACE_TOP_MAX) */
} tmem_report_desc;

/* ---- recording ---- */

/** @brief Start recording ctx's events. Forgets the events of a previous run.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL ctx/desc, unknown flags, capacity
 *          above 2^24) | TMEM_E_STATE (already on) | TMEM_E_NO_MEMORY |
 *          TMEM_E_IO (the file cannot be created). Nothing changes on error.
 *  @par Threads safe; other threads may allocate meanwhile (their events from
 *       before the start are not recorded). */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_start(tmem_context *ctx, const tmem_trace_desc *desc);

/** @brief Stop recording: flush and close the file (writing its trailer). The
 *  ring keeps its events for tmem_trace_snapshot() until the next start.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (not on) | TMEM_E_IO
 *          (a write failed: the file is incomplete; tracing is stopped anyway)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_stop(tmem_context *ctx);

/** @brief Write the file stream's buffered events to the file now (fflush
 *  included), e.g. at a checkpoint, so a crash loses nothing recorded before.
 *  A no-op without a file.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (not on) | TMEM_E_IO
 *          (a write failed since the start)
 *  @par Threads safe; emitters wait while the buffer is written. */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_flush(tmem_context *ctx);

/** @brief Record a user mark (shown as an instant on every timeline).
 *  @param name  copied, truncated to TMEM_TRACE_NAME_MAX-1 bytes.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) | TMEM_E_STATE (tracing off)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_mark(tmem_context *ctx, const char *name);

/** @brief Tracer state; all zero when tracing never started.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_get_info(tmem_context *ctx, tmem_trace_info *out);

/** @brief Copy the ring's events (oldest first) with the context's type and
 *  role names into a new ::tmem_trace_data. Works while on and after stop.
 *  @param[out] out  NULL on failure; free with tmem_trace_data_destroy().
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_STATE (never started, or
 *          streaming to a file without a ring: load the file instead) |
 *          TMEM_E_NO_MEMORY
 *  @par Threads safe; emitters wait while the ring is copied. */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_snapshot(tmem_context *ctx, tmem_trace_data **out);

/* ---- reading ---- */

/** @brief Read a trace file (TMEM_TRACE_FILE_VERSION). Every field is
 *  validated; a file cut short inside its last record (a crashed writer)
 *  loads with info.complete false.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_IO (cannot open/read) |
 *          TMEM_E_PARSE (not a trace file, or another version) | TMEM_E_CORRUPT
 *          (a record is malformed or hostile) | TMEM_E_NO_MEMORY
 *  @par Threads safe
 *  On failure *out is NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_load(const char *path, tmem_trace_data **out);

/** @brief Same as tmem_trace_load, from `len` bytes in memory (not kept).
 *  @par Threads safe
 *  On failure *out is NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_load_memory(const void *bytes, size_t len, tmem_trace_data **out);

/** @brief Write a trace in the file format (loads back equal).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_IO (cannot create or write
 *          the file; a partly written file is removed) | TMEM_E_NO_MEMORY
 *  @par Threads safe (the trace is only read) */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_data_save(const tmem_trace_data *data, const char *path);

/** @brief Free a trace. NULL is a no-op.
 *  @par Threads externally synchronized: no other call on `data` in flight */
TMEM_API void tmem_trace_data_destroy(tmem_trace_data *data);

/** @brief Summary of a trace. @return TMEM_OK | TMEM_E_INVALID_ARG
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_data_get_info(const tmem_trace_data *data, tmem_trace_data_info *out);

/** @brief Copy event `index` (0 = oldest).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND (index >= events)
 *  @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_data_event(const tmem_trace_data *data,
                                                          uint64_t index, tmem_trace_event *out);

/** @brief Name of type `index` as recorded ("/memory/kv"); NULL if unknown.
 *  Valid as long as `data`. @par Threads safe */
TMEM_API const char *tmem_trace_data_type_name(const tmem_trace_data *data, int32_t index);

/** @brief Name of `role` as recorded ("kv_cache"); NULL if unknown.
 *  Valid as long as `data`. @par Threads safe */
TMEM_API const char *tmem_trace_data_role_name(const tmem_trace_data *data, int32_t role);

/** @brief Placement of type `index` as recorded: traces record it for device
 *  types (DEVICE, DEVICE_HOST_VISIBLE), so their bytes show as device bytes;
 *  TMEM_PLACEMENT_HOST for every other type, an unknown one, or a bad index.
 *  @par Threads safe */
TMEM_API tmem_placement tmem_trace_data_type_placement(const tmem_trace_data *data, int32_t index);

/** @brief Name of an event kind ("alloc", "budget_denied"); "?" if out of
 *  range; a static string. @par Threads safe */
TMEM_API const char *tmem_trace_kind_name(uint32_t kind);

/* ---- analysis and exports ---- */

/** @brief Find the in-use peak and what was alive at it (by role, type, name).
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NO_MEMORY
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_peak(const tmem_trace_data *data, tmem_trace_peak_info *out);

/** @brief Export a trace as text in `format`.
 *  @param opt  may be NULL (defaults).
 *  @param[out] out  NUL-terminated, free with tmem_trace_string_free(); NULL on failure.
 *  @param[out] out_len  may be NULL; length without the NUL.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (format, or a plan_svg that is not a
 *          single <svg> element) | TMEM_E_NO_MEMORY
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_export(const tmem_trace_data *data,
                                                      tmem_trace_format format,
                                                      const tmem_report_desc *opt, char **out,
                                                      size_t *out_len);

/** @brief tmem_trace_export() into a file (created or truncated), written
 *  in 1 MiB pieces as it is produced (a big trace's JSON is never whole in
 *  memory). On failure the file is removed.
 *  @return as tmem_trace_export, plus TMEM_E_IO
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_trace_export_file(const tmem_trace_data *data,
                                                           tmem_trace_format format,
                                                           const tmem_report_desc *opt,
                                                           const char *path);

/** @brief Free a string from tmem_trace_export(). NULL is a no-op.
 *  @par Threads safe */
TMEM_API void tmem_trace_string_free(char *text);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_TRACE_H */
