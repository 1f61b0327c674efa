/*
 * expo.h - a streaming parser for the Prometheus text exposition format, as
 * NVIDIA's dcgm-exporter writes it.
 *
 * Feed it the body in chunks of any size; it never holds more than one line
 * (at most METER_LINE_MAX bytes) and calls back once per sample. Comments,
 * HELP and TYPE lines are skipped; label values may hold escaped quotes,
 * backslashes and newlines, and may be empty; values may be NaN, +Inf, -Inf;
 * an optional timestamp (ms) may follow. Every line ends with a newline and
 * is UTF-8: a last line cut short, or a line with a byte that is not
 * well-formed UTF-8, is rejected. A malformed line is reported with
 * its line number and column through the error callback, and parsing goes
 * on with the next line, so one bad line loses nothing else.
 */
#ifndef METER_EXPO_H
#define METER_EXPO_H

#include <stddef.h>
#include <stdint.h>
#include "util/error.h"
#include "util/limits.h" /* METER_LINE_MAX, METER_LABELS_MAX */

struct meter_label {
    const char *name, *value; /* valid during the callback only */
};

struct meter_sample {
    const char *metric;
    struct meter_label labels[METER_LABELS_MAX];
    size_t nlabels;
    double value;
    int has_timestamp;
    int64_t timestamp_ms;
    long line; /* 1-based */
};

/* Return nonzero to stop parsing (meter_expo_feed then returns TS_INTERNAL). */
typedef int (*meter_sample_fn)(void *ctx, const struct meter_sample *s);
typedef void (*meter_error_fn)(void *ctx, long line, int column, const char *msg);

struct meter_expo;

struct meter_expo *meter_expo_new(meter_sample_fn on_sample, meter_error_fn on_error, void *ctx);
void meter_expo_free(struct meter_expo *p);
ts_status meter_expo_feed(struct meter_expo *p, const char *data, size_t len);
/* End of body: a last line without its newline is rejected (cut short). */
ts_status meter_expo_finish(struct meter_expo *p);
/* Lines and samples seen, lines rejected. */
void meter_expo_counts(const struct meter_expo *p, long *lines, long *samples, long *errors);

/* The value of label name in s, or NULL. */
const char *meter_label(const struct meter_sample *s, const char *name);

#endif
