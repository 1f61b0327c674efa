/*
 * agg.h - the usage aggregate: a window's totals (the invoice's month)
 * integrated once from the samples and kept in the store (store_agg_*), so
 * that a thousand tenants' invoices of a month read its samples once.
 *
 * Exact by construction: what meter_agg_scan gives is what
 * meter_usage_scan gives over the samples stored now, to the integer
 * numerator. A batch of samples within a window's reach removes the window
 * in its own transaction (store_put_samples); a device whose last interval
 * in the window waited for a later scrape is kept with it and looked up
 * again by every reader, and the window integrated again once one has it.
 * meter_agg_verify proves it on a store: it integrates the samples again
 * and compares every total.
 */
#ifndef METER_AGG_H
#define METER_AGG_H

#include <stddef.h>
#include <stdint.h>
#include "meter/usage.h"
#include "store/store.h"

/* As meter_usage_scan (u initialised with its interval), from the store's
 * aggregate of [from_ms, to_ms) when it holds it, else from the samples,
 * then kept for the next reader. *cached (may be NULL) is 1 when read from
 * the aggregate. */
ts_status meter_agg_scan(struct store *st, int64_t from_ms, int64_t to_ms, struct meter_usage *u,
                         int *cached, struct ts_error *err);

/* Integrate [from_ms, to_ms) from the samples at interval_ms and compare
 * every total with the aggregate's. *held 0: the aggregate has no such
 * window (nothing compared). *same 0: diff (diff_size bytes) names the
 * first total that differs. */
ts_status meter_agg_verify(struct store *st, int64_t from_ms, int64_t to_ms, int64_t interval_ms,
                           int *held, int *same, char *diff, size_t diff_size,
                           struct ts_error *err);

#endif
