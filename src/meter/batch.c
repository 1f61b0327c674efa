/*
 * batch.c - batches of attributed samples, and storing one on a thread of
 * its own (see batch.h). On 2 cores a 512-GPU import spent a third of its
 * time parsing and half in the store (SQLite's B-trees and WAL, or the
 * PostgreSQL server): overlapping the two is what the writer is for.
 */
#include "meter/batch.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

struct store_sample *meter_batch_slot(struct meter_batch *b)
{
    if (!ts_grow((void **)&b->s, &b->cap, b->n, sizeof(*b->s)))
        return NULL;
    return &b->s[b->n++];
}

/* ts_arena_printf's result without its cost: this runs for every sample. */
char *meter_batch_join(struct meter_batch *b, const char *x, const char *y)
{
    size_t nx = strlen(x), ny = strlen(y);
    char *s = ts_arena_alloc(&b->arena, nx + ny + 1);
    if (s) {
        memcpy(s, x, nx);
        memcpy(s + nx, y, ny + 1);
    }
    return s;
}

int meter_batch_copies(struct meter_batch *b, const char *const *src, const char **out, size_t n)
{
    size_t len[8], total = 0;
    for (size_t i = 0; i < n; i++)
        total += len[i] = strlen(src[i]) + 1;
    char *p = ts_arena_alloc(&b->arena, total);
    for (size_t i = 0; p && i < n; p += len[i], i++) {
        memcpy(p, src[i], len[i]);
        out[i] = p;
    }
    return p != NULL;
}

void meter_batch_clear(struct meter_batch *b)
{
    b->n = 0;
    ts_arena_free(&b->arena);
    ts_arena_init(&b->arena);
}

void meter_batch_free(struct meter_batch *b)
{
    free(b->s);
    ts_arena_free(&b->arena);
    memset(b, 0, sizeof(*b));
}

/* Swap *b with the spare (empty) batch: the writer keeps what was in *b. */
static struct meter_batch take(struct meter_writer *w, struct meter_batch *b)
{
    struct meter_batch full = *b;
    *b = w->spare;
    w->spare = (struct meter_batch){0};
    return full;
}

/* Let held[i] go: emptied, it becomes the spare if there is none. */
static void release(struct meter_writer *w, size_t i)
{
    meter_batch_clear(&w->held[i]);
    if (!w->spare.cap)
        w->spare = w->held[i];
    else
        meter_batch_free(&w->held[i]);
    w->held[i] = (struct meter_batch){0};
}

/* Every held batch is to be stored again (the sink or the commit failed:
 * the transaction holds none of them any more). */
static ts_status refuse(struct meter_writer *w, ts_status st)
{
    if (w->commit)
        w->commit(w->arg, 0, NULL);
    w->refused = 1;
    return st;
}

static ts_status sink_one(struct meter_writer *w, size_t i, struct ts_error *err)
{
    w->held_inserted[i] = 0;
    return w->sink(w->arg, w->held[i].s, w->held[i].n, &w->held_inserted[i], err);
}

static ts_status commit_held(struct meter_writer *w, struct ts_error *err)
{
    ts_status st = w->commit ? w->commit(w->arg, 1, err) : TS_OK;
    if (st != TS_OK)
        return refuse(w, st);
    for (size_t i = 0; i < w->nheld; i++) {
        w->n += w->held[i].n;
        w->inserted += w->held_inserted[i];
        release(w, i);
    }
    w->nheld = 0;
    return TS_OK;
}

/* The refused batches stored again, in order, and committed if they fill a
 * transaction: afterwards there is room for one more. */
static ts_status store_refused(struct meter_writer *w, struct ts_error *err)
{
    for (size_t i = 0; i < w->nheld; i++) {
        ts_status st = sink_one(w, i, err);
        if (st != TS_OK)
            return refuse(w, st);
    }
    w->refused = 0;
    return w->nheld == METER_COMMIT_BATCHES ? commit_held(w, err) : TS_OK;
}

/* The batch taken last (held[nheld - 1]) stored, and committed with those
 * before it when it is time. */
static ts_status store_last(struct meter_writer *w, int commit_now, struct ts_error *err)
{
    ts_status st = sink_one(w, w->nheld - 1, err);
    if (st != TS_OK)
        return refuse(w, st);
    if (!w->commit || commit_now || w->nheld == METER_COMMIT_BATCHES)
        return commit_held(w, err);
    return TS_OK;
}

ts_status meter_writer_put(struct meter_writer *w, struct meter_batch *full, int commit_now,
                           struct ts_error *err)
{
    ts_status st = w->refused ? store_refused(w, err) : TS_OK;
    if (st != TS_OK)
        return st;
    if (!full || !full->n)
        return commit_now && w->nheld ? commit_held(w, err) : TS_OK;
    w->held[w->nheld++] = take(w, full);
    return store_last(w, commit_now, err);
}

static void *put_on_thread(void *arg)
{
    struct meter_writer *w = arg;
    w->err = (struct ts_error){0};
    w->status = store_last(w, w->commit_now, &w->err);
    return NULL;
}

int meter_writer_start(struct meter_writer *w, struct meter_batch *full, int commit_now)
{
    if (w->refused || !full || !full->n)
        return -1; /* a retry first, or nothing to store: on the caller's thread */
    w->held[w->nheld++] = take(w, full);
    w->commit_now = commit_now;
    if (pthread_create(&w->thread, NULL, put_on_thread, w) != 0) {
        w->spare = *full;
        *full = w->held[--w->nheld];
        w->held[w->nheld] = (struct meter_batch){0};
        return -1;
    }
    w->running = 1;
    return 0;
}

ts_status meter_writer_wait(struct meter_writer *w, size_t *n, size_t *inserted,
                            struct ts_error *err)
{
    ts_status st = TS_OK;
    if (w->running) {
        pthread_join(w->thread, NULL);
        w->running = 0;
        st = w->status;
        if (st != TS_OK && err)
            *err = w->err;
    }
    *n = w->n;
    *inserted = w->inserted;
    w->n = w->inserted = 0;
    return st;
}

void meter_writer_free(struct meter_writer *w)
{
    size_t n, inserted;
    meter_writer_wait(w, &n, &inserted, NULL);
    if (w->nheld && w->commit)
        w->commit(w->arg, 0, NULL); /* never finished: nothing of it stays */
    for (size_t i = 0; i < w->nheld; i++)
        meter_batch_free(&w->held[i]);
    meter_batch_free(&w->spare);
    w->nheld = 0;
}
