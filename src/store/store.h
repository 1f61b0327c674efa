/*
 * store.h - the database behind metering and the custody ledger.
 *
 * One interface, two backends chosen by URL:
 *   sqlite:PATH                 embedded SQLite (the default), WAL mode, busy
 *                               timeout, so several processes may share PATH
 *   postgres://... postgresql://...
 *                               PostgreSQL through libpq, for several replicas
 *                               writing at once
 * The schema is versioned (table schema_version); store_open applies the
 * missing migrations in one transaction, serialised between concurrent
 * openers. Every statement is prepared; values are never spliced into SQL.
 *
 * A struct store is one connection: use it from one thread at a time and do
 * not call the store from inside a scan callback. Errors name the backend
 * and carry the database's own message; a bad URL is TS_USAGE.
 *
 * A lost PostgreSQL connection (server restart, failover, idle cut) is not
 * fatal to the struct store. A call that starts a transaction (put_samples)
 * reconnects and re-prepares at once and succeeds; any other call in flight
 * when the connection dies fails with TS_IO ("postgresql: ...", nothing of
 * it stored), and the next call on the same struct store reconnects. While
 * the server is down every call fails with TS_IO; callers that must not lose
 * data keep it and retry (store_put_samples is idempotent, so a retry never
 * stores a sample twice). SQLite has no connection to lose.
 */
#ifndef TS_STORE_H
#define TS_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "util/error.h"
#include "util/limits.h" /* STORE_EXPOSITION_MAX */

struct store;

/* One metering sample. Strings must not be NULL (the schema says NOT NULL:
 * a NULL fails the whole batch); use "" for "none". */
struct store_sample {
    const char *node;
    const char *device; /* GPU UUID, or GPU UUID + "/" + GPU instance id for MIG */
    int64_t ts_ms;      /* scrape time, Unix milliseconds */
    const char *model;
    const char *profile; /* "" for a whole GPU */
    const char *tenant;  /* "unattributed" allowed */
    const char *ns;
    const char *pod;
    int64_t share_ppm;    /* the card share it is charged, parts per million */
    int64_t util_ppm;     /* engine-active ratio, ppm; -1 when unknown */
    const char *workload; /* the tenant's workload it is charged for, "" or NULL if not
                           * known (schema v3; "" in rows stored before) */
};

/* One custody event; the caller computes the hashes and its seq. */
struct store_ledger_entry {
    int64_t seq;
    int64_t ts_ms;
    const char *node, *gpu_uuid, *instance_uuid, *gi_id, *profile, *placement, *tenant, *workload,
        *source;
    char hash[65];      /* hex SHA-256 */
    char prev_hash[65]; /* hex SHA-256 */
    char mac[65];       /* hex HMAC, or "" */
};

/* Scan callbacks return 0 to go on, anything else to stop (not an error). */
typedef int (*store_sample_fn)(void *ctx, const struct store_sample *s);
typedef int (*store_ledger_fn)(void *ctx, const struct store_ledger_entry *e);

ts_status store_open(const char *url, struct store **out, struct ts_error *err);
/* As store_open, for verbs that only read: a SQLite file that does not
 * exist is TS_NOT_FOUND naming it, and is not created (a typo in --db must
 * not look like an empty database). */
ts_status store_open_existing(const char *url, struct store **out, struct ts_error *err);
void store_close(struct store *st);

/* "sqlite" or "postgresql". */
const char *store_backend(const struct store *st);

/* Insert a batch in one transaction. Idempotent: the key is (device, ts_ms)
 * and a sample already stored is skipped; *inserted (may be NULL) counts the
 * new ones. On failure nothing of the batch is stored. */
ts_status store_put_samples(struct store *st, const struct store_sample *s, size_t n,
                            size_t *inserted, struct ts_error *err);
/* The same, in a transaction held open until store_commit_samples (one is
 * begun when none is open): several batches share one commit. A batch
 * that brings attributions the store has not seen commits the batches held
 * before it first (new attributions come first in a transaction: attrib.c).
 * Nothing else may use st until that commit. On failure the whole open
 * transaction is rolled back: every batch held since the last commit is
 * gone, and the caller stores them again (storing one twice is harmless). */
ts_status store_hold_samples(struct store *st, const struct store_sample *s, size_t n,
                             size_t *inserted, struct ts_error *err);
/* Commit the held batches (none open: TS_OK). On failure they are rolled
 * back, all of them. */
ts_status store_commit_samples(struct store *st, struct ts_error *err);
/* Roll the held batches back (none open: nothing happens). */
void store_abort_samples(struct store *st);

/* Every sample with from_ms <= ts_ms < to_ms, ordered by device (in byte
 * order on both backends, whatever the database's collation), ts_ms.
 * The sample passed to fn is valid only during the call. */
ts_status store_scan_samples(struct store *st, int64_t from_ms, int64_t to_ms, store_sample_fn fn,
                             void *ctx, struct ts_error *err);

/* *found = 1 when device (a key up to '#') has a sample after after_ms
 * under its own key or, with split, under any key "device#..." (that one
 * reads by time: keep it for devices split by pod). */
#define STORE_DEVICE_PREFIX_MAX 2048
ts_status store_device_scraped_after(struct store *st, const char *device, int split,
                                     int64_t after_ms, int *found, struct ts_error *err);

/* The newest sample's ts_ms into *ms; *found 0 (and *ms 0) when the store
 * has none. */
ts_status store_last_sample(struct store *st, int64_t *ms, int *found, struct ts_error *err);

/* Append e under e->seq (the head's + 1: call inside store_ledger_lock),
 * or, when e->seq <= 0, under the head's seq + 1; a seq already taken fails.
 * *seq_out (may be NULL) gets the seq stored. */
ts_status store_ledger_append(struct store *st, const struct store_ledger_entry *e,
                              int64_t *seq_out, struct ts_error *err);

/* Serialise appends: store_ledger_lock starts a write transaction holding the
 * ledger's append lock (SQLite: BEGIN IMMEDIATE, the file's write lock;
 * PostgreSQL: a transaction-scoped advisory lock), so that reading the head
 * (store_ledger_last), hashing on it and appending cannot interleave with
 * another writer, in this process or another. store_ledger_unlock commits
 * when commit is non-zero, else rolls back; it returns the commit's status.
 * Between the two, call only store_ledger_last and store_ledger_append. */
ts_status store_ledger_lock(struct store *st, struct ts_error *err);
ts_status store_ledger_unlock(struct store *st, int commit, struct ts_error *err);

/* The entry with the highest seq; *found = 0 on an empty ledger. The strings
 * in *out stay valid until the next call on st. */
ts_status store_ledger_last(struct store *st, struct store_ledger_entry *out, int *found,
                            struct ts_error *err);

/* Every entry in seq order. */
ts_status store_ledger_scan(struct store *st, store_ledger_fn fn, void *ctx, struct ts_error *err);

/* Requests: a shared workload's request counter of each series (series:
 * an id of its label set; "" for rows of schema v4-v5, which were summed
 * per consumer) of a consumer tenant at each scrape time (PriceBook
 * sharedSplit: usage). Stored once per (owner, workload, consumer, series,
 * time): a repeat is ignored. */
struct store_request {
    const char *owner, *workload, *consumer;
    int64_t ts_ms, count;
    const char *series; /* NULL: "" */
};
ts_status store_put_requests(struct store *st, const struct store_request *r, size_t n,
                             struct ts_error *err);
/* Every count with from_ms <= ts_ms < to_ms, by owner, workload, consumer,
 * series, time; r is valid only during the call. Return 0 to go on. */
typedef int (*store_request_fn)(void *ctx, const struct store_request *r);
ts_status store_scan_requests(struct store *st, int64_t from_ms, int64_t to_ms, store_request_fn fn,
                              void *ctx, struct ts_error *err);

/* Expositions: the latest raw scrape body of each source (a scrape target
 * URL or an imported file), for re-serving it tenant-labelled on /metrics.
 * Any bytes are kept as they are (NUL and invalid UTF-8 included), up to
 * STORE_EXPOSITION_MAX bytes. */

/* The latest exposition text of one source (a scrape target URL or an
 * imported file), replacing its previous one; text capped by the caller
 * (above STORE_EXPOSITION_MAX bytes: TS_TOO_LARGE, nothing changed). A text
 * older than the stored one (smaller ts_ms) is ignored: not an error. */
ts_status store_put_exposition(struct store *st, const char *source, int64_t ts_ms,
                               const char *text, size_t len, struct ts_error *err);

/* Called once per source, in source order; text is len bytes, not
 * NUL-terminated, valid only during the call. Return 0 to go on. */
typedef int (*store_exposition_fn)(void *ctx, const char *source, int64_t ts_ms, const char *text,
                                   size_t len);
ts_status store_scan_expositions(struct store *st, store_exposition_fn fn, void *ctx,
                                 struct ts_error *err);

/* The usage aggregate (schema v7): the totals meter integrated from the
 * samples of one window [from_ms, to_ms) at one scrape interval, kept so
 * that the next reader of the window need not read its samples again.
 * Exact by construction: store_put_samples removes, in the transaction
 * that stores them, every window whose reach (two intervals before its
 * start to two after its end) holds one of the batch's times; the devices
 * whose last interval in the window waited for a later scrape (tails) are
 * kept with it for the reader to look up again (a card back after an
 * outage). Numerators are decimal text (they may pass 64 bits). */
struct store_agg_total {
    int64_t kind; /* 0: by tenant, model and profile; 1: by workload too */
    const char *tenant, *workload, *model, *profile;
    const char *alloc, *usage, *unknown;
};
struct store_agg_tail {
    const char *family; /* the device (its key up to '#') */
    int64_t split;      /* some key of it has a '#' */
    int64_t ts_ms;
};
typedef int (*store_agg_total_fn)(void *ctx, const struct store_agg_total *t);
typedef int (*store_agg_tail_fn)(void *ctx, const struct store_agg_tail *t);

/* *token > 0 when the window's totals are stored, 0 when not. */
ts_status store_agg_find(struct store *st, int64_t interval_ms, int64_t from_ms, int64_t to_ms,
                         int64_t *token, struct ts_error *err);
/* Claim the window (replacing what is stored of it) before reading its
 * samples; *claim gets the claim's token. A batch of samples within its
 * reach stored from then on voids the claim. */
ts_status store_agg_claim(struct store *st, int64_t interval_ms, int64_t from_ms, int64_t to_ms,
                          int64_t *claim, struct ts_error *err);
/* Store totals and tails under claim, in one transaction, if the claim
 * still stands (*kept 1), else nothing (*kept 0). */
ts_status store_agg_put(struct store *st, int64_t claim, const struct store_agg_total *t, size_t nt,
                        const struct store_agg_tail *tails, size_t ntails, int *kept,
                        struct ts_error *err);
/* The totals of token in their order, then its tails; either fn may be NULL. */
ts_status store_agg_scan(struct store *st, int64_t token, store_agg_total_fn total_fn,
                         store_agg_tail_fn tail_fn, void *ctx, struct ts_error *err);

#endif
