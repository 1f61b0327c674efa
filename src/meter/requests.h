/*
 * requests.h - the per-consumer usage signal of a shared workload (PriceBook
 * sharedSplit: usage): Istio's standard request counter
 * istio_requests_total, scraped alongside DCGM, read as
 *   destination_workload_namespace  the shared workload's namespace (its owner)
 *   destination_workload            the shared workload's name in the spec
 *   source_workload_namespace       the consumer's namespace (its tenant)
 * Only a workload some tenant `uses` is counted; a consumer that is no
 * tenant, or a tenant that does not use it, is refused (nothing is billed
 * to it); the owner's own requests are not counted.
 */
#ifndef METER_REQUESTS_H
#define METER_REQUESTS_H

#include <stddef.h>
#include "meter/attrib.h"
#include "meter/expo.h"
#include "store/store.h"

#define METER_REQUESTS_METRIC "istio_requests_total"

enum meter_request_verdict { METER_REQ_SKIP, METER_REQ_KEEP, METER_REQ_REFUSE };

/* What x (a sample of METER_REQUESTS_METRIC) is: KEEP with *owner,
 * *workload and *consumer (names from the spec), SKIP (not a shared
 * workload's, or the owner's own), or REFUSE with why (size bytes). */
enum meter_request_verdict meter_request_of(const struct spec_model *m,
                                            const struct meter_sample *x, const char **owner,
                                            const char **workload, const char **consumer, char *why,
                                            size_t size);

/* The request counters one ingest has read, stored at its end: one per
 * consumer, series (its label set) and time. */
struct meter_request_log {
    struct meter_request_read *items;
    size_t n, cap;
};
/* Keep x's value as owner/workload/consumer's count at ts_ms (the names
 * must outlive the log: the spec's); 0 when out of memory. */
int meter_requests_keep(struct meter_request_log *log, const char *owner, const char *workload,
                        const char *consumer, int64_t ts_ms, const struct meter_sample *x);
/* Store the counts kept into st (NULL: nowhere); a series repeated at one
 * time keeps its first value, as the store keeps the first stored. Emptied
 * when stored; source names the body in messages. */
ts_status meter_requests_store(struct meter_request_log *log, struct store *st, const char *source,
                               struct ts_error *err);
void meter_requests_free(struct meter_request_log *log);

#endif
