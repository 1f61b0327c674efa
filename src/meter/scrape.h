/*
 * scrape.h - the live scraper behind `tessera meter scrape`: every interval
 * (rounds aligned to multiples of it on the wall clock) GET each target's
 * dcgm-exporter page (meter/fetch.h) and stream it through the ingest
 * (meter/ingest.h) into the store; keep each target's latest body for the
 * tenant-labelled /metrics (store_put_exposition).
 *
 * Nothing scraped is dropped on a store failure: a scrape whose samples
 * could not be stored waits in a queue (at most METER_SCRAPE_PENDING_MAX
 * scrapes, oldest dropped and counted as lost beyond that) and is flushed
 * again, in order, before each later round and, with backoff, at the end.
 * Retried flushes never store a sample twice (inserts are idempotent).
 * The scrape time of a sample is the time its request was sent, unless the
 * exporter gives it a timestamp.
 *
 * The library never prints: each event goes to the caller's log callback.
 */
#ifndef METER_SCRAPE_H
#define METER_SCRAPE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "meter/fetch.h"
#include "meter/ingest.h"
#include "util/limits.h"            /* METER_SCRAPE_PENDING_MAX, METER_SCRAPE_BODY_MAX */
#define METER_SCRAPE_DRAIN_MS 30000 /* at the end, how long to retry the store */

struct meter_scrape_opts {
    const char *const *targets;
    size_t ntargets;
    int64_t interval_ms;
    long count; /* rounds; 0: until *stop */
    struct meter_fetch_opts fetch;
    size_t expo_max;                   /* bodies above it are not kept for /metrics */
    int64_t drain_ms;                  /* store retries at the end, at most this long */
    const volatile sig_atomic_t *stop; /* set by a signal: finish the round, then end */
    /* Called before each round (never during one): the attribution context
     * for that round on, or NULL to keep the current one. A context given
     * here must stay valid until the run returns (waiting scrapes hold it). */
    const struct meter_ctx *(*refresh)(void *arg);
    void *refresh_arg;
    /* Called before each round after refresh (never during one): the targets
     * for that round on, valid until the next call, or NULL to keep the
     * current ones (targets/ntargets at first). With it, targets may start
     * empty (`meter scrape --discover`). */
    const char *const *(*retarget)(void *arg, size_t *n);
    void *retarget_arg;
};

/* What happened, one event at a time. Fields that do not apply are 0/""/NULL. */
enum meter_scrape_kind {
    METER_EV_SCRAPE,      /* one target fetched (or not) in a round */
    METER_EV_STORED_LATE, /* a waiting scrape finally stored */
    METER_EV_STORE_WAIT,  /* a scrape's samples wait for the store */
    METER_EV_LOST,        /* a waiting scrape dropped (queue full, or the end came) */
    METER_EV_EXPO_SKIP,   /* a body not kept for /metrics (too large, or store error) */
    METER_EV_OVERRUN      /* a round took longer than the interval: rounds skipped */
};

struct meter_scrape_event {
    enum meter_scrape_kind kind;
    const char *target; /* URL, user:password hidden */
    long round;         /* 1-based */
    long status;        /* HTTP status, 0 when none */
    size_t bytes, devices, inserted;
    int rejected_lines, attempts;
    int64_t at_ms, ms;                 /* request sent; how long it all took */
    long skipped;                      /* METER_EV_OVERRUN: rounds skipped */
    const struct ts_error *error;      /* NULL when none */
    const struct ts_diag *diag;        /* malformed lines of this body, or NULL */
    const struct meter_ingest *ingest; /* METER_EV_SCRAPE with samples, else NULL */
};

typedef void (*meter_scrape_log_fn)(void *ctx, const struct meter_scrape_event *e);

struct meter_scrape_totals {
    long rounds;
    size_t scrapes, failed; /* failed: not fetched whole */
    size_t rejected;        /* scrapes with malformed lines */
    size_t inserted;        /* new samples stored */
    size_t lost;            /* scrapes whose samples could not be stored */
};

/* Run the scraper until o->count rounds are done or *o->stop is set. st and
 * ctx are borrowed. TS_OK unless the run could not start (bad options, no
 * curl); per-scrape failures are events and totals, not a status. */
ts_status meter_scrape_run(const struct meter_ctx *ctx, struct store *st,
                           const struct meter_scrape_opts *o, meter_scrape_log_fn log,
                           void *log_ctx, struct meter_scrape_totals *t, struct ts_error *err);

#endif
