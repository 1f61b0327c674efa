/*
 * records.c - the store's tables beside the samples: request counters of
 * shared workloads, the custody ledger (appends under its lock, scans, the
 * head) and the latest exposition of each source. The statements are in
 * store.c's table; see store.h for the contracts.
 */
#include <string.h>
#include "store/internal.h"

/* ---- requests --------------------------------------------------------- */

ts_status store_put_requests(struct store *st, const struct store_request *r, size_t n,
                             struct ts_error *err)
{
    ts_status rc = n ? store__exec(st, st->ops->begin_write, err) : TS_OK;
    for (size_t i = 0; rc == TS_OK && i < n; i++) {
        struct store_param p[6] = {
            store__str(r[i].owner),    store__str(r[i].workload),
            store__str(r[i].consumer), store__int(r[i].ts_ms),
            store__int(r[i].count),    store__str(r[i].series ? r[i].series : "")};
        rc = st->ops->run(st->db, STORE_ST_INS_REQUESTS, p, 6, NULL, NULL, NULL, err);
    }
    if (n && rc == TS_OK)
        return store__exec(st, "COMMIT", err);
    if (n)
        store__rollback(st);
    return rc;
}

struct request_scan {
    store_request_fn fn;
    void *ctx;
};

static int request_row(void *ctx, const char *const *c, const size_t *lens, int n)
{
    (void)lens;
    struct request_scan *sc = ctx;
    if (n < 6)
        return 1;
    struct store_request r = {store__col_str(c[0]), store__col_str(c[1]), store__col_str(c[2]),
                              store__col_i64(c[3]), store__col_i64(c[4]), store__col_str(c[5])};
    return sc->fn(sc->ctx, &r);
}

ts_status store_scan_requests(struct store *st, int64_t from_ms, int64_t to_ms, store_request_fn fn,
                              void *ctx, struct ts_error *err)
{
    struct store_param p[2] = {store__int(from_ms), store__int(to_ms)};
    struct request_scan sc = {fn, ctx};
    return st->ops->run(st->db, STORE_ST_SCAN_REQUESTS, p, 2, request_row, &sc, NULL, err);
}

/* ---- ledger ------------------------------------------------------------ */

ts_status store_ledger_append(struct store *st, const struct store_ledger_entry *e,
                              int64_t *seq_out, struct ts_error *err)
{
#define LEDGER_PARAM(name, type) PARAM_##type(e->name)
    struct store_param p[] = {e->seq > 0 ? store__int(e->seq) : store__str(NULL),
                              STORE_LEDGER_COLUMNS(LEDGER_PARAM, COMMA)};
#undef LEDGER_PARAM
    int64_t seq = 0;
    ts_status rc = st->ops->run(st->db, STORE_ST_INS_LEDGER, p, 1 + STORE_LEDGER_NCOLS,
                                store__row_first_i64, &seq, NULL, err);
    if (rc == TS_OK && seq_out)
        *seq_out = seq;
    return rc;
}

ts_status store_ledger_lock(struct store *st, struct ts_error *err)
{
    ts_status rc = store__exec(st, st->ops->begin_write, err);
    if (rc != TS_OK || !st->ops->lock_ledger)
        return rc;
    rc = store__exec(st, st->ops->lock_ledger, err);
    if (rc != TS_OK)
        store__rollback(st);
    return rc;
}

ts_status store_ledger_unlock(struct store *st, int commit, struct ts_error *err)
{
    if (commit)
        return store__exec(st, "COMMIT", err);
    store__rollback(st);
    return TS_OK;
}

/* Fill e from a row of "seq, LEDGER_COLS"; strings point into cols. */
static int ledger_from_row(struct store_ledger_entry *e, const char *const *c, int n)
{
    if (n < 1 + STORE_LEDGER_NCOLS)
        return -1;
    memset(e, 0, sizeof(*e));
    e->seq = store__col_i64(*c++);
#define LEDGER_GET(name, type) GET_##type(e->name, *c++);
    STORE_LEDGER_COLUMNS(LEDGER_GET, )
#undef LEDGER_GET
    return 0;
}

struct ledger_scan {
    store_ledger_fn fn;
    void *ctx;
};

static int ledger_row(void *ctx, const char *const *c, const size_t *lens, int n)
{
    (void)lens;
    struct ledger_scan *sc = ctx;
    struct store_ledger_entry e;
    if (ledger_from_row(&e, c, n) != 0)
        return 1;
    return sc->fn(sc->ctx, &e);
}

ts_status store_ledger_scan(struct store *st, store_ledger_fn fn, void *ctx, struct ts_error *err)
{
    struct ledger_scan sc = {fn, ctx};
    return st->ops->run(st->db, STORE_ST_SCAN_LEDGER, NULL, 0, ledger_row, &sc, NULL, err);
}

struct ledger_last {
    struct store *st;
    struct store_ledger_entry *out;
    int found;
    int nomem;
};

/* Keep copies of the strings in st->last: the row dies with the statement. */
static int last_row(void *ctx, const char *const *c, const size_t *lens, int n)
{
    (void)lens;
    struct ledger_last *l = ctx;
    if (ledger_from_row(l->out, c, n) != 0)
        return 1;
#define TEXT_REF(name, type) REF_##type(name)
#define REF_TEXT(name) &l->out->name,
#define REF_INT(name)
#define REF_HEX(name)
    const char **str[LEDGER_NTEXT] = {STORE_LEDGER_COLUMNS(TEXT_REF, )};
#undef TEXT_REF
#undef REF_TEXT
#undef REF_INT
#undef REF_HEX
    for (int i = 0; i < LEDGER_NTEXT; i++) {
        free(l->st->last[i]);
        l->st->last[i] = strdup(*str[i]);
        l->nomem |= !l->st->last[i];
        *str[i] = l->st->last[i] ? l->st->last[i] : "";
    }
    l->found = 1;
    return 1;
}

ts_status store_ledger_last(struct store *st, struct store_ledger_entry *out, int *found,
                            struct ts_error *err)
{
    struct ledger_last l = {st, out, 0, 0};
    *found = 0;
    ts_status rc = st->ops->run(st->db, STORE_ST_LAST_LEDGER, NULL, 0, last_row, &l, NULL, err);
    if (rc == TS_OK && l.nomem)
        return ts_err(err, TS_NOMEM, "out of memory");
    if (rc == TS_OK)
        *found = l.found;
    return rc;
}

/* ---- expositions ------------------------------------------------------- */

ts_status store_put_exposition(struct store *st, const char *source, int64_t ts_ms,
                               const char *text, size_t len, struct ts_error *err)
{
    if (!source || (!text && len))
        return ts_err(err, TS_INVALID, "%s: exposition without a source or text", st->ops->name);
    if (len > STORE_EXPOSITION_MAX)
        return ts_err(err, TS_TOO_LARGE, "%s: exposition of %s is %zu bytes, at most %d",
                      st->ops->name, source, len, STORE_EXPOSITION_MAX);
    _Static_assert(STORE_EXPO_NCOLS == 3, "binds source, ts_ms, body");
    struct store_param p[] = {store__str(source), store__int(ts_ms),
                              store__blob(text ? text : "", len)};
    return st->ops->run(st->db, STORE_ST_PUT_EXPO, p, STORE_EXPO_NCOLS, NULL, NULL, NULL, err);
}

struct expo_scan {
    store_exposition_fn fn;
    void *ctx;
};

static int expo_row(void *ctx, const char *const *c, const size_t *lens, int n)
{
    struct expo_scan *sc = ctx;
    if (n < STORE_EXPO_NCOLS) /* source, ts_ms, body */
        return 1;
    return sc->fn(sc->ctx, store__col_str(c[0]), store__col_i64(c[1]), c[2] ? c[2] : "",
                  c[2] ? lens[2] : 0);
}

ts_status store_scan_expositions(struct store *st, store_exposition_fn fn, void *ctx,
                                 struct ts_error *err)
{
    struct expo_scan sc = {fn, ctx};
    return st->ops->run(st->db, STORE_ST_SCAN_EXPO, NULL, 0, expo_row, &sc, NULL, err);
}
