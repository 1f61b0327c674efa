/*
 * promq.h - dcgm-exporter series read back from an existing Prometheus
 * through its HTTP API (/api/v1/query_range) and fed to the ingest as the
 * exposition lines the exporter wrote, so a range read from Prometheus is
 * stored exactly like the same scrapes imported directly.
 *
 * meter_promq_text turns one query_range answer into exposition text: one
 * line per series point, `name{labels} value timestamp_ms`, sorted by time
 * (then by the series' order in the answer), without the labels Prometheus
 * adds to every target (`instance`, `job`). Every field is checked and a bad
 * one named by its JSON path (data.result[3].values[17][1]); an answer whose
 * status is not "success" is refused with Prometheus' errorType and error.
 */
#ifndef METER_PROMQ_H
#define METER_PROMQ_H

#include <stddef.h>
#include <stdint.h>
#include "meter/ingest.h"
#include "util/sbuf.h"

struct meter_promq_opts {
    const char *url;   /* the Prometheus base URL (http://host:9090, maybe a path) */
    const char *query; /* PromQL selector; NULL: every DCGM_FI_* series */
    int64_t from_ms, to_ms, step_ms;
    int64_t timeout_ms;
    const char *cacert;
    int insecure;
};

/* One query_range answer (body, len) into exposition lines appended to out.
 * source names the answer in messages. TS_PARSE / TS_INPUT on a bad answer. */
ts_status meter_promq_text(const char *body, size_t len, const char *source, struct ts_sbuf *out,
                           struct ts_error *err);

/* The default query: every DCGM_FI_* series and, when the PriceBook splits
 * shared workloads by usage (sharedSplit: usage), Istio's
 * istio_requests_total of the workloads some tenant uses. */
void meter_promq_default_query(const struct spec_model *m, struct ts_sbuf *out);

/* Read [from, to] (both ends, every step) in pieces of METER_PROM_STEPS_MAX
 * steps into in (not finished: the caller calls meter_ingest_finish). */
ts_status meter_promq_import(const struct meter_promq_opts *o, struct meter_ingest *in,
                             struct ts_error *err);

#endif
