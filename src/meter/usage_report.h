/*
 * usage_report.h - what `tessera usage` reports: the samples of a time
 * range read from the store and integrated (usage.h), written as a table
 * or as the Usage JSON document (docs/metering.md).
 */
#ifndef METER_USAGE_REPORT_H
#define METER_USAGE_REPORT_H

#include <stdint.h>
#include "catalog/catalog.h"
#include "meter/usage.h"
#include "store/store.h"
#include "util/sbuf.h"

/* Integrate the samples with from_ms <= ts_ms < to_ms into u (initialised
 * by the caller with its interval), then sort its totals. */
ts_status meter_usage_scan(struct store *st, int64_t from_ms, int64_t to_ms, struct meter_usage *u,
                           struct ts_error *err);

/* The requests of each consumer to shared workloads in [from_ms, to_ms)
 * into u->requests (meter_usage_scan reads them too). */
ts_status meter_usage_scan_requests(struct store *st, int64_t from_ms, int64_t to_ms,
                                    struct meter_usage *u, struct ts_error *err);

/* In one pass over the store: u[0] as meter_usage_scan gives [from_ms,
 * to_ms), and u[1..nsteps] as it gives each step [from_ms + i x step_ms,
 * that + step_ms), the last cut at to_ms; each u[i] is fed exactly the
 * samples its own scan would read, so every total is the same integer.
 * Each u[i] is initialised by the caller with the scrape interval. */
ts_status meter_usage_scan_steps(struct store *st, int64_t from_ms, int64_t to_ms, int64_t step_ms,
                                 struct meter_usage *u, size_t nsteps, struct ts_error *err);

/* The one model key of every output: the catalog name of a model as the
 * exporter names it (modelName "NVIDIA H100 80GB HBM3" -> "h100-80gb-sxm"),
 * or the name itself when cat (may be NULL) does not know it. */
const char *meter_model_key(const struct cat_catalog *cat, const char *model);
/* Its display name: the catalog's displayName, or the name itself. */
const char *meter_model_display(const struct cat_catalog *cat, const char *model);

/* u's totals as "text" (a table, GPU-hours with six decimals) or "json"
 * ({"apiVersion", "kind": "Usage", "rows": [...]} in micro-GPU-hours, keys
 * sorted, two-space indent); TS_USAGE for another format. The model is
 * meter_model_key's, meter_model_display's in JSON's "displayName"; a whole
 * card's profile is "whole". */
ts_status meter_usage_write(const struct meter_usage *u, const struct cat_catalog *cat,
                            const char *format, struct ts_sbuf *out);

#endif
