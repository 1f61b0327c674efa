/*
 * batch.h - attributed samples waiting for the store, and the writer that
 * stores one batch on a thread of its own while the ingest parses and
 * attributes the next (meter_ingest_overlap).
 *
 * A batch owns its samples' texts (its arena). The writer stores batches in
 * order, on the caller's thread (meter_writer_put) or on one of its own
 * (meter_writer_start, then meter_writer_wait), one at a time. With a
 * commit function, up to METER_COMMIT_BATCHES batches share a transaction:
 * the writer holds them until their commit, and when the sink or the commit
 * refuses, every batch held is kept and stored again first by the next put
 * (inserts are idempotent on device + time). Without one, each sink call is
 * final. Nothing else may use the sink's store from a put or start to the
 * commit (meter_writer_put with commit_now).
 */
#ifndef METER_BATCH_H
#define METER_BATCH_H

#include <pthread.h>

#include "store/store.h"
#include "util/arena.h"

struct meter_batch {
    struct store_sample *s;
    size_t n, cap;
    struct ts_arena arena; /* the samples' texts */
};

/* The next sample of b (uninitialised), NULL when out of memory. */
struct store_sample *meter_batch_slot(struct meter_batch *b);
/* x then y, one string in b's arena (NULL: out of memory). */
char *meter_batch_join(struct meter_batch *b, const char *x, const char *y);
/* Copies of src[0..n) (n at most 8) into out, in b's arena: 0 when out of
 * memory. */
int meter_batch_copies(struct meter_batch *b, const char *const *src, const char **out, size_t n);
/* Empty b, keeping the array's room; its texts are freed. */
void meter_batch_clear(struct meter_batch *b);
void meter_batch_free(struct meter_batch *b);

/* Where batches go: the store by default (ingest.h, meter_ingest_set_sink). */
typedef ts_status (*meter_sink_fn)(void *arg, const struct store_sample *s, size_t n,
                                   size_t *inserted, struct ts_error *err);
/* Commit (keep 1) or roll back (keep 0) what the sink stored since the last
 * commit; a failed commit has rolled back. */
typedef ts_status (*meter_commit_fn)(void *arg, int keep, struct ts_error *err);

/* Batches a transaction. SQLite at 512 GPUs on 2 cores (with its 16 MiB
 * cache, store/sqlite.c), an hour's import side by side on a quiet machine:
 * 1.25 s (median) at 4, 1.73 s at 1, where each commit rewrote the 512
 * devices' leaves of the primary key into the WAL and checkpointed. A held
 * batch is ~2.5 MiB there; a refused transaction's batches are all kept
 * for the retry. */
#define METER_COMMIT_BATCHES 4

struct meter_writer {
    meter_sink_fn sink;
    meter_commit_fn commit; /* NULL: each sink call is final */
    void *arg;
    struct meter_batch held[METER_COMMIT_BATCHES]; /* stored, not committed; or refused */
    size_t held_inserted[METER_COMMIT_BATCHES];
    size_t nheld;
    int refused;              /* held[] must be stored again before anything else */
    struct meter_batch spare; /* empty, given back for a full batch taken */
    pthread_t thread;
    int running, commit_now;
    ts_status status; /* the last put's */
    struct ts_error err;
    size_t n, inserted; /* committed since the last wait: samples, new ones */
};

/* Store *full (swapped with an empty batch; NULL or empty: none) after any
 * refused batches, and commit when commit_now or METER_COMMIT_BATCHES are
 * held. Refused: the status and *err, every held batch kept. */
ts_status meter_writer_put(struct meter_writer *w, struct meter_batch *full, int commit_now,
                           struct ts_error *err);
/* meter_writer_put on a thread of its own (the writer idle): -1 when no
 * thread can be started (nothing changed: put it here). */
int meter_writer_start(struct meter_writer *w, struct meter_batch *full, int commit_now);
/* Wait for the put started last (none: TS_OK). Its status and *err; in
 * *n and *inserted the samples committed since the last wait and the new
 * ones among them. */
ts_status meter_writer_wait(struct meter_writer *w, size_t *n, size_t *inserted,
                            struct ts_error *err);
/* Waits for a running put, rolls back what is held uncommitted, frees. */
void meter_writer_free(struct meter_writer *w);

#endif
