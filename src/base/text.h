/*
 * The one text builder (text.c) and its escapers. Three ways to hold text,
 * one set of writers:
 *  - fixed:   a caller's buffer, snprintf style: clipped at cap, every byte
 *             asked for counted, so one pass fills and sizes (stats JSON);
 *  - growing: malloc'd, doubled as needed, moved out by tmem__text_take
 *             (trace exports);
 *  - sink:    growing, but flushed through a callback beyond a chunk, so the
 *             buffer stays small (a trace file, a FILE *).
 * Failure is sticky (`failed`): callers write everything, check once.
 *
 * Escaping rule (JSON and XML alike): valid UTF-8 passes through unchanged
 * (shortest form, no surrogates, at most U+10FFFF); every byte of an invalid
 * sequence is written as its Latin-1 code point (JSON \u00XX, XML &#N;), so
 * the output is always valid and no byte is lost; control characters are
 * escaped (JSON: \uXXXX; XML: '?' except tab and newline).
 */
#ifndef TMEM_BASE_TEXT_H
#define TMEM_BASE_TEXT_H

#include "base/base.h"

/* Writes `len` bytes somewhere; returns false when it could not. */
typedef bool (*tmem__text_sink_fn)(void *arg, const char *data, size_t len);

typedef struct tmem__text {
    char *data;
    size_t len;        /* fixed: every byte asked for, even past cap */
    size_t cap;
    bool fixed;        /* data is the caller's; never grown or freed */
    bool failed;       /* sticky: out of memory or a sink write failed */
    bool sink_failed;  /* the failure was the sink's, not memory */
    tmem__text_sink_fn sink;
    void *sink_arg;
} tmem__text;

/* A growing buffer (empty, nothing allocated yet). */
void tmem__text_init(tmem__text *t);
/* Into buf[cap] (buf may be NULL with cap 0: a sizing pass). */
void tmem__text_init_fixed(tmem__text *t, char *buf, size_t cap);
/* Growing, flushed through sink beyond about 1 MiB; tmem__text_drain writes
 * what is left. */
void tmem__text_init_sink(tmem__text *t, tmem__text_sink_fn sink, void *arg);
void tmem__text_drain(tmem__text *t);
/* Frees a growing buffer (a fixed one is left alone). */
void tmem__text_free(tmem__text *t);

void tmem__text_putn(tmem__text *t, const char *s, size_t n);
void tmem__text_puts(tmem__text *t, const char *s);
void tmem__text_printf(tmem__text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* s escaped for the inside of a JSON string (no quotes added). */
void tmem__text_json_escape(tmem__text *t, const char *s);
/* s as a JSON string, quotes included. */
void tmem__text_json_string(tmem__text *t, const char *s);
/* s escaped for XML/HTML text and attribute values (<>&"'). */
void tmem__text_xml_escape(tmem__text *t, const char *s);

/* Fixed: NUL-terminate (clipped), *needed = bytes with the NUL. TMEM_OK when
 * it fit or for a sizing pass (NULL, 0); TMEM_E_FULL when clipped. */
tmem_status tmem__text_finish(tmem__text *t, size_t *needed);
/* Growing: move the text out (caller frees with free(); "" rather than NULL
 * when empty); TMEM_E_NO_MEMORY if writing failed (the text is freed). */
tmem_status tmem__text_take(tmem__text *t, char **out, size_t *out_len);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there
 * are not one (lone continuation, overlong, surrogate, > U+10FFFF, cut). */
size_t tmem__utf8_valid_len(const unsigned char *s);

#endif /* TMEM_BASE_TEXT_H */
