/*
 * ingest.h - a dcgm-exporter body (one live scrape, or a recorded file that
 * may hold many scrape times) streamed into the store as samples, one per
 * device and scrape time.
 *
 * A device is a GPU (its UUID label, `UUID` or the relabelled `uuid`) or a
 * MIG instance (UUID + "/" + GPU_I_ID when GPU_I_PROFILE names a profile);
 * a redacted UUID ("GPU-****") falls back to Hostname + ":gpu" + index.
 * Every pod the exporter lists on a device is charged: a card split between
 * tenants (MPS, time-slicing, memory fractions, or several pods on one
 * device) gives one sample per pod or tenant charged, its key suffixed
 * "#...". Who is charged and for what share: meter/attrib.h. The engine
 * ratio of a sample: DCGM_FI_PROF_GR_ENGINE_ACTIVE in [0, 1], else
 * DCGM_FI_DEV_GPU_UTIL in [0, 100] / 100, else unknown (-1).
 *
 * Lines may come in any order: entries gather in a hash table keyed by
 * device, pod and scrape time, and are attributed in sorted order, so the
 * result equals importing the same lines sorted. Memory stays bounded: the
 * body is fed in chunks of any size; past METER_GATHER_MAX entries the
 * scrape times older than the newest are stored (one transaction a batch),
 * and a later line of a time already stored is rejected with its line.
 * One scrape time is never stored before the end of the body (up to
 * METER_SCRAPE_DEVICES_MAX device-times). A flush that fails keeps its
 * samples; meter_ingest_finish may be called again to retry them (inserts
 * are idempotent on device + time).
 * Custody violations it finds go into the ledger through
 * meter_violation_record (violation.c).
 */
#ifndef METER_INGEST_H
#define METER_INGEST_H

#include "meter/attrib.h"
#include "meter/batch.h"
#include "meter/expo.h"
#include "store/store.h"
#include "util/limits.h" /* METER_GATHER_MAX, METER_SCRAPE_DEVICES_MAX */

/* A pod seen on a device the plan or ledger gives to another tenant. */
struct meter_violation {
    char device[2 * METER_NAME_MAX];
    char node[METER_NAME_MAX], gpu_uuid[METER_NAME_MAX], gi_id[16], profile[32];
    char observed[METER_NAME_MAX], planned[METER_NAME_MAX];
    char ns[TS_K8S_LABEL_MAX + 1], pod[TS_K8S_NAME_MAX + 1];
    int64_t ts_ms; /* the first scrape that showed it */
};

/* The window of scrape times meter import, scrape and prometheus take
 * around now (meter_ctx max_age_ms, max_ahead_ms; --max-age, --max-ahead):
 * a timestamp in seconds read as milliseconds (January 1970) or one in
 * 2099 is refused, not billed in a month no invoice reads. */
#define METER_MAX_AGE_DEFAULT_MS (3650LL * 86400000) /* ten years of history */
#define METER_MAX_AHEAD_DEFAULT_MS 3600000LL         /* an hour of clock skew */

struct meter_ingest_counts {
    size_t devices;        /* device-times seen */
    size_t inserted;       /* new samples stored */
    int rejected_lines;    /* malformed lines (each also in diag) */
    int violations;        /* distinct (device, tenant) custody violations */
    size_t unreadable;     /* device-times whose utilisation was unreadable (NaN, +-Inf,
                           out of range): billed, their use in the unknown column */
    size_t stale_custody;  /* device-times whose latest ledger entry names another
                             profile (a reused GPU instance id): not applied */
    int out_of_window;     /* lines refused for a time outside the window (also in
                             rejected_lines) */
    int duplicates;        /* utilisation lines of a device-time read before with
                              another value: the first kept */
    size_t already_stored; /* samples the store had (device, time): the first kept */
};

struct meter_ingest;

/* source names the body in messages (a file path or a URL); at_ms is the
 * scrape time of samples without a timestamp. diag gets malformed lines and
 * unknown profiles. */
ts_status meter_ingest_new(const struct meter_ctx *ctx, struct store *st, int64_t at_ms,
                           const char *source, struct ts_diag *diag, struct meter_ingest **out);
/* Where flushed samples go (meter_sink_fn and meter_commit_fn, batch.h;
 * commit may be NULL: each sink call is final): the store by default
 * (tests may divert). */
void meter_ingest_set_sink(struct meter_ingest *in, meter_sink_fn fn, meter_commit_fn commit,
                           void *arg);
/* Store each batch on a thread of its own while the next is parsed: only
 * where nothing else uses the store (or the sink) from the first feed until
 * meter_ingest_finish returns or the ingest is freed. */
void meter_ingest_overlap(struct meter_ingest *in);
/* Feed the next chunk. Fails only when a flush to the store fails (err). */
ts_status meter_ingest_feed(struct meter_ingest *in, const char *data, size_t len,
                            struct ts_error *err);
/* End of body: flush everything pending; may be retried after a failure
 * of the store. Out of memory while gathering (a line could not be kept)
 * is final: the feed and every finish after it fail, naming the line. */
ts_status meter_ingest_finish(struct meter_ingest *in, struct ts_error *err);
void meter_ingest_counts(const struct meter_ingest *in, struct meter_ingest_counts *c);
/* The custody violations found (valid until free). */
const struct meter_violation *meter_ingest_violations(const struct meter_ingest *in, size_t *n);
/* Record v in the custody ledger of st (violation.c; key may be NULL: no
 * mac): source "observed", the tenant observed, workload "namespace/pod",
 * v's node, GPU UUID, GI id and profile, at the first scrape that showed it. */
ts_status meter_violation_record(struct store *st, const void *key, size_t key_len,
                                 const struct meter_violation *v, struct ts_error *err);
/* The custody violations one process has recorded, by device and tenant
 * observed: a reader of many windows (meter prometheus --follow, meter
 * scrape's rounds, several files) records each once, as one range read
 * does. */
struct meter_violation_log {
    struct meter_violation_key {
        char device[2 * METER_NAME_MAX], observed[METER_NAME_MAX];
    } * keys;
    size_t n, cap;
    size_t repeats; /* violations not recorded again */
};
/* 1 when v is new to log (added), 0 when it was recorded before (counted in
 * repeats), -1 out of memory. */
int meter_violation_first(struct meter_violation_log *log, const struct meter_violation *v);
void meter_violation_log_free(struct meter_violation_log *log);
void meter_ingest_free(struct meter_ingest *in);

#endif
