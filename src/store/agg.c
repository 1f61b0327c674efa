/*
 * agg.c - the usage aggregate's tables (store.h, schema v7): finding a
 * window, claiming it before its samples are read, storing its totals and
 * tails if no batch of samples within its reach came in between, reading
 * them back. store.c's store_put_samples removes the windows a batch
 * reaches, in the batch's transaction; a claim is made under the backend's
 * exclusive lock (lock_agg) that batches hold shared, so no batch can be
 * between its insert and its commit when a claim commits.
 */
#include <string.h>
#include <sys/random.h>
#include "store/internal.h"

static ts_status run(struct store *st, int id, const struct store_param *p, int np,
                     store_row_fn row, void *ctx, int64_t *changes, struct ts_error *err)
{
    return st->ops->run(st->db, id, p, np, row, ctx, changes, err);
}

ts_status store_agg_find(struct store *st, int64_t interval_ms, int64_t from_ms, int64_t to_ms,
                         int64_t *token, struct ts_error *err)
{
    struct store_param p[3] = {store__int(interval_ms), store__int(from_ms), store__int(to_ms)};
    *token = 0;
    return run(st, STORE_ST_AGG_FIND, p, 3, store__row_first_i64, token, NULL, err);
}

/* A token no claim had: 62 random bits. A voided claim's computation
 * may still call store_agg_put with its token, so a token is never
 * handed out twice (a counter of the rows left would hand out one whose
 * rows were collected). */
static ts_status new_token(int64_t *token, struct ts_error *err)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
        return ts_err(err, TS_IO, "usage aggregate: no random bytes for a claim");
    *token = (int64_t)(v >> 2) + 1;
    return TS_OK;
}

/* Inside the claim's transaction: drop the window and the rows of windows
 * gone, then record the claim. */
static ts_status claim_locked(struct store *st, const struct store_param *p, int64_t *claim,
                              struct ts_error *err)
{
    ts_status rc = new_token(claim, err);
    if (rc == TS_OK)
        rc = run(st, STORE_ST_AGG_DROP, p, 3, NULL, NULL, NULL, err);
    if (rc == TS_OK)
        rc = run(st, STORE_ST_AGG_GC_TOTALS, NULL, 0, NULL, NULL, NULL, err);
    if (rc == TS_OK)
        rc = run(st, STORE_ST_AGG_GC_TAILS, NULL, 0, NULL, NULL, NULL, err);
    struct store_param q[4] = {p[0], p[1], p[2], store__int(*claim)};
    return rc == TS_OK ? run(st, STORE_ST_AGG_CLAIM, q, 4, NULL, NULL, NULL, err) : rc;
}

ts_status store_agg_claim(struct store *st, int64_t interval_ms, int64_t from_ms, int64_t to_ms,
                          int64_t *claim, struct ts_error *err)
{
    struct store_param p[3] = {store__int(interval_ms), store__int(from_ms), store__int(to_ms)};
    *claim = 0;
    ts_status rc = store__exec(st, st->ops->begin_write, err);
    if (rc == TS_OK && st->ops->lock_agg)
        rc = store__exec(st, st->ops->lock_agg, err);
    if (rc == TS_OK)
        rc = claim_locked(st, p, claim, err);
    if (rc == TS_OK)
        return store__exec(st, "COMMIT", err);
    store__rollback(st);
    return rc;
}

static ts_status put_total(struct store *st, int64_t claim, size_t pos,
                           const struct store_agg_total *t, struct ts_error *err)
{
    struct store_param p[10] = {store__int(claim),       store__int((int64_t)pos),
                                store__int(t->kind),     store__str(t->tenant),
                                store__str(t->workload), store__str(t->model),
                                store__str(t->profile),  store__str(t->alloc),
                                store__str(t->usage),    store__str(t->unknown)};
    return run(st, STORE_ST_AGG_PUT_TOTAL, p, 10, NULL, NULL, NULL, err);
}

static ts_status put_tail(struct store *st, int64_t claim, size_t pos,
                          const struct store_agg_tail *t, struct ts_error *err)
{
    struct store_param p[5] = {store__int(claim), store__int((int64_t)pos), store__str(t->family),
                               store__int(t->split), store__int(t->ts_ms)};
    return run(st, STORE_ST_AGG_PUT_TAIL, p, 5, NULL, NULL, NULL, err);
}

ts_status store_agg_put(struct store *st, int64_t claim, const struct store_agg_total *t, size_t nt,
                        const struct store_agg_tail *tails, size_t ntails, int *kept,
                        struct ts_error *err)
{
    struct store_param p[1] = {store__int(claim)};
    int64_t done = 0;
    *kept = 0;
    ts_status rc = store__exec(st, st->ops->begin_write, err);
    if (rc == TS_OK)
        rc = run(st, STORE_ST_AGG_DONE, p, 1, NULL, NULL, &done, err);
    for (size_t i = 0; rc == TS_OK && done == 1 && i < nt; i++)
        rc = put_total(st, claim, i, &t[i], err);
    for (size_t i = 0; rc == TS_OK && done == 1 && i < ntails; i++)
        rc = put_tail(st, claim, i, &tails[i], err);
    if (rc == TS_OK && done == 1)
        rc = store__exec(st, "COMMIT", err);
    else
        store__rollback(st); /* nothing written: the claim was voided */
    *kept = rc == TS_OK && done == 1;
    return rc;
}

struct agg_scan {
    store_agg_total_fn total_fn;
    store_agg_tail_fn tail_fn;
    void *ctx;
};

static int total_row(void *ctx, const char *const *c, const size_t *lens, int n)
{
    (void)lens;
    struct agg_scan *sc = ctx;
    if (n < 8)
        return 1;
    struct store_agg_total t = {store__col_i64(c[0]), store__col_str(c[1]), store__col_str(c[2]),
                                store__col_str(c[3]), store__col_str(c[4]), store__col_str(c[5]),
                                store__col_str(c[6]), store__col_str(c[7])};
    return sc->total_fn(sc->ctx, &t);
}

static int tail_row(void *ctx, const char *const *c, const size_t *lens, int n)
{
    (void)lens;
    struct agg_scan *sc = ctx;
    if (n < 3)
        return 1;
    struct store_agg_tail t = {store__col_str(c[0]), store__col_i64(c[1]), store__col_i64(c[2])};
    return sc->tail_fn(sc->ctx, &t);
}

ts_status store_agg_scan(struct store *st, int64_t token, store_agg_total_fn total_fn,
                         store_agg_tail_fn tail_fn, void *ctx, struct ts_error *err)
{
    struct store_param p[1] = {store__int(token)};
    struct agg_scan sc = {total_fn, tail_fn, ctx};
    ts_status rc = TS_OK;
    if (total_fn)
        rc = run(st, STORE_ST_AGG_TOTALS, p, 1, total_row, &sc, NULL, err);
    if (rc == TS_OK && tail_fn)
        rc = run(st, STORE_ST_AGG_TAILS, p, 1, tail_row, &sc, NULL, err);
    return rc;
}
