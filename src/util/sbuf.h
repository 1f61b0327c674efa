/*
 * sbuf.h - a growable string builder with a hard size cap.
 *
 * Used for every text the program produces (reports, JSON, SVG, YAML).
 * Appends past the cap or failed allocations set a sticky error flag so a
 * caller can build a whole document and check once at the end.
 */
#ifndef TS_SBUF_H
#define TS_SBUF_H

#include <stddef.h>
#include "util/error.h"

struct ts_sbuf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len, cap, max;
    int failed; /* 1 after an append failed (too large or no memory) */
};

/* max = the largest length allowed (bytes, without the NUL). */
void ts_sbuf_init(struct ts_sbuf *b, size_t max);
void ts_sbuf_release(struct ts_sbuf *b);
void ts_sbuf_add(struct ts_sbuf *b, const char *s, size_t n);
void ts_sbuf_puts(struct ts_sbuf *b, const char *s);
void ts_sbuf_printf(struct ts_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s with XML special characters escaped. */
void ts_sbuf_xml(struct ts_sbuf *b, const char *s);
/* The text so far ("" when empty); valid until the next append. */
const char *ts_sbuf_str(const struct ts_sbuf *b);
/* TS_OK, or TS_TOO_LARGE / TS_NOMEM if any append failed. */
ts_status ts_sbuf_status(const struct ts_sbuf *b);

#endif
