/*
 * promq.h - dcgm-exporter series read back from an existing Prometheus
 * through its HTTP API and fed to the ingest as the exposition lines the
 * exporter wrote, so a range read from Prometheus is stored exactly like the
 * same scrapes imported directly. The raw samples are read, each at the time
 * Prometheus stored it (its scrape's own time, or the exporter's timestamp):
 * window after window, an instant query (/api/v1/query) of the range vector
 * `SELECTOR[Wms]` at the window's last millisecond.
 *
 * meter_promq_text turns one answer into exposition text: one line per
 * sample, `name{labels} value timestamp_ms`, sorted by time (then by the
 * series' order in the answer), without the labels Prometheus adds to every
 * target (`instance`, `job`). Every field is checked and a bad one named by
 * its JSON path (data.result[3].values[17][1]), as are a series' samples out
 * of order or twice, a sample outside the window asked for and a series
 * listed twice; an answer whose status is not "success" is refused with
 * Prometheus' errorType and error.
 */
#ifndef METER_PROMQ_H
#define METER_PROMQ_H

#include <stddef.h>
#include <stdint.h>
#include "meter/ingest.h"
#include "util/limits.h"
#include "util/sbuf.h"

struct meter_promq_opts {
    const char *url; /* the Prometheus base URL (http://host:9090, maybe a path) */
    /* vector selectors, each read as SELECTOR[Wms]; none: every DCGM_FI_* series */
    const char *queries[METER_PROM_QUERIES_MAX];
    size_t nqueries;
    int64_t from_ms, to_ms; /* the samples read: from <= time <= to */
    int64_t step_ms;        /* the scrape interval: a window is METER_PROM_STEPS_MAX of it */
    int64_t timeout_ms;
    const char *cacert;
    int insecure;
};

/* The samples an answer must hold: from <= time <= to; one at from - 1 ms
 * (Prometheus 2 includes a range's start, the previous window's last ms) is
 * left to that window. */
struct meter_promq_window {
    int64_t from_ms, to_ms;
};

/* One answer (body, len) into exposition lines appended to out. source names
 * the answer in messages; w NULL takes any time. TS_SYNTAX / TS_INVALID on a
 * bad answer. */
ts_status meter_promq_text(const char *body, size_t len, const char *source,
                           const struct meter_promq_window *w, struct ts_sbuf *out,
                           struct ts_error *err);

/* One answer parsed and checked as meter_promq_text checks it, its samples
 * sorted by time; the body may be freed at once. */
struct meter_promq_answer;
ts_status meter_promq_parse(const char *body, size_t len, const char *source,
                            const struct meter_promq_window *w, struct meter_promq_answer **out,
                            struct ts_error *err);
void meter_promq_answer_free(struct meter_promq_answer *ans);

/* Where lines go, a run of whole lines at a time. */
typedef ts_status (*meter_promq_sink)(void *ctx, const char *lines, size_t len,
                                      struct ts_error *err);
/* The lines of n answers (at most METER_PROM_QUERIES_MAX) merged in time
 * order (on a tie, the earlier answer first) to fn, about 256 KiB a call:
 * the lines are never held whole. */
ts_status meter_promq_emit(struct meter_promq_answer *const *ans, size_t n, meter_promq_sink fn,
                           void *ctx, struct ts_error *err);

/* The default selectors into o: every DCGM_FI_* series and, when the
 * PriceBook splits shared workloads by usage (sharedSplit: usage), Istio's
 * istio_requests_total of the workloads some tenant uses (its text in
 * istio, which must outlive o). */
void meter_promq_default_query(const struct spec_model *m, struct meter_promq_opts *o,
                               struct ts_sbuf *istio);

/* Read [from, to] (both ends included) in windows of METER_PROM_STEPS_MAX
 * steps, each selector's answer of a window merged in time order, into in
 * (not finished: the caller calls meter_ingest_finish). */
ts_status meter_promq_import(const struct meter_promq_opts *o, struct meter_ingest *in,
                             struct ts_error *err);

#endif
