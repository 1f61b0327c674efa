/*
 * batch.h - attributed samples waiting for the store, and the writer that
 * stores one batch on a thread of its own while the ingest parses and
 * attributes the next (meter_ingest_overlap).
 *
 * A batch owns its samples' texts (its arena). The writer holds at most one
 * batch: meter_writer_start takes a full one (giving an empty one back) and
 * starts a thread that calls the sink once; meter_writer_wait joins it. A
 * batch the sink refused stays in the writer (w->batch) to be stored again
 * (inserts are idempotent on device + time). Nothing else may use the
 * sink's store between start and wait.
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

struct meter_writer {
    meter_sink_fn sink;
    void *arg;
    struct meter_batch batch; /* being stored, or refused and kept for a retry */
    pthread_t thread;
    int running;
    ts_status status; /* the thread's: the sink's answer */
    size_t inserted;
    struct ts_error err;
};

/* Start storing *full on a thread of its own: *full is swapped with the
 * writer's empty batch. The writer must be idle with an empty batch. -1
 * when no thread can be started (nothing changed: store it here). */
int meter_writer_start(struct meter_writer *w, struct meter_batch *full);
/* Wait for the batch started last (none: TS_OK, 0 and 0). Stored: TS_OK,
 * its samples in *n, those new to the store in *inserted, the batch
 * emptied. Refused: the sink's status and *err, the batch kept. */
ts_status meter_writer_wait(struct meter_writer *w, size_t *n, size_t *inserted,
                            struct ts_error *err);
/* Waits for a running batch, then frees the writer's batch. */
void meter_writer_free(struct meter_writer *w);

#endif
