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

static void *store_batch(void *arg)
{
    struct meter_writer *w = arg;
    w->inserted = 0;
    w->err = (struct ts_error){0};
    w->status = w->sink(w->arg, w->batch.s, w->batch.n, &w->inserted, &w->err);
    return NULL;
}

int meter_writer_start(struct meter_writer *w, struct meter_batch *full)
{
    struct meter_batch empty = w->batch;
    w->batch = *full;
    *full = empty;
    if (pthread_create(&w->thread, NULL, store_batch, w) != 0) {
        *full = w->batch;
        w->batch = empty;
        return -1;
    }
    w->running = 1;
    return 0;
}

ts_status meter_writer_wait(struct meter_writer *w, size_t *n, size_t *inserted,
                            struct ts_error *err)
{
    *n = *inserted = 0;
    if (!w->running)
        return TS_OK;
    pthread_join(w->thread, NULL);
    w->running = 0;
    if (w->status != TS_OK) {
        if (err)
            *err = w->err;
        return w->status;
    }
    *n = w->batch.n;
    *inserted = w->inserted;
    meter_batch_clear(&w->batch);
    return TS_OK;
}

void meter_writer_free(struct meter_writer *w)
{
    size_t n, inserted;
    meter_writer_wait(w, &n, &inserted, NULL);
    meter_batch_free(&w->batch);
}
