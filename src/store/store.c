/*
 * store.c - the store interface over a backend chosen by URL: migrating
 * (the migrations themselves are in schema.c), the SQL both dialects share,
 * and the samples: batching, scanning, turning rows into structs. The other
 * tables are in records.c, the usage aggregate in agg.c. Backends (sqlite.c,
 * pg.c) only talk to their database; see backend.h.
 */
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/internal.h"
#include "util/sbuf.h"

/* ARRAY_OF: the array type a column is bound as in INS_ARRAYS */
#define ARRAY_OF(name, type) ARRAY_OF_##type
#define ARRAY_OF_TEXT "text[]"
#define ARRAY_OF_INT "bigint[]"
#define ARRAY_OF_HEX "text[]"
#define ARRAY_OF_OPT "text[]"

/* "$2, $3, ..." : the ledger's columns after the seq ($1) */
#define LEDGER_PARAMS "CAST($2 AS BIGINT), $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14"
_Static_assert(STORE_LEDGER_NCOLS == 13, "LEDGER_PARAMS lists 13 columns after the seq");
/* A statement: sql, then for an INSERT the placeholders of nrows rows of
 * ncols values ($1, $2, ... in order: "($1, $2), ($3, $4)"), or with
 * arrays one array per column ("$1::text[], $2::bigint[]"), then tail. */
struct stmt {
    const char *sql;
    int ncols, nrows;
    const char *tail;
    const char *const *arrays; /* each column's array type */
};

static const char *const reading_arrays[] = {STORE_READING_COLUMNS(ARRAY_OF, COMMA)};
static const char *const attribution_arrays[] = {STORE_ATTRIBUTION_COLUMNS(ARRAY_OF, COMMA)};

/* samples are written as readings and attributions (schema v9), and read
 * back whole from view samples */
#define INS_INTO "INSERT INTO readings (" READING_COLS ") "
#define INS_SAMPLE INS_INTO "VALUES "
#define ON_CONFLICT " ON CONFLICT DO NOTHING"
/* A sample's columns from readings r and attributions a (view samples). */
#define SAMPLE_FROM                                                                       \
    "a.node, r.device, r.ts_ms, a.model, a.profile, a.tenant, a.ns, a.pod, r.share_ppm, " \
    "r.util_ppm, a.workload FROM "
#define SAMPLE_JOIN "r JOIN attributions a ON a.id = r.attribution"
_Static_assert(STORE_SAMPLE_NCOLS == 11, "SAMPLE_FROM names 11 columns");
/* PostgreSQL's bulk load (copy_rows); no ON CONFLICT there */
#define COPY_SAMPLES "COPY readings (" READING_COLS ") FROM STDIN (FORMAT binary)"
/* an attribution's texts, $1 .. $7 */
#define ATTR_IS                                                                           \
    "node = $1 AND model = $2 AND profile = $3 AND tenant = $4 AND ns = $5 AND pod = $6 " \
    "AND workload = $7"
#define COL_OF_A(name, type) "a." #name
#define ATTR_OF_A STORE_ATTRIBUTION_COLUMNS(COL_OF_A, ", ")
_Static_assert(STORE_ATTRIBUTION_NCOLS == 7, "ATTR_IS names 7 columns");

static const struct stmt stmts[STORE_ST_COUNT] = {
    [STORE_ST_INS_SAMPLE] = {.sql = INS_SAMPLE,
                             .ncols = STORE_READING_NCOLS,
                             .nrows = 1,
                             .tail = ON_CONFLICT},
    [STORE_ST_INS_BLOCK] = {.sql = INS_SAMPLE,
                            .ncols = STORE_READING_NCOLS,
                            .nrows = STORE_BLOCK,
                            .tail = ON_CONFLICT},
    /* rows in array order, as sorted: concurrent writers lock alike */
    [STORE_ST_INS_ARRAYS] = {.sql = INS_INTO "SELECT * FROM unnest(",
                             .ncols = STORE_READING_NCOLS,
                             .arrays = reading_arrays,
                             .tail = ")" ON_CONFLICT},
    /* the narrow readings sorted, then each one's attribution joined in
     * that order (PostgreSQL: a memoized look-up by id; 4 hours of 512 GPUs
     * read in 1.23 s, where joining first and sorting the wide rows took
     * 1.47 s) */
    [STORE_ST_SCAN_SAMPLES] = {.sql = "SELECT " SAMPLE_FROM "(SELECT " READING_COLS " FROM "
                                      "readings WHERE ts_ms >= $1 AND ts_ms < $2 ORDER BY "
                                      "DEVICE_ORDER, ts_ms KEEP_ORDER) " SAMPLE_JOIN
                                      " ORDER BY DEVICE_ORDER, ts_ms"},
    [STORE_ST_FIRST_DEVICE] = {.sql = "SELECT device FROM readings ORDER BY DEVICE_ORDER LIMIT 1"},
    [STORE_ST_NEXT_DEVICE] = {.sql = "SELECT device FROM readings WHERE device > $1 "
                                     "ORDER BY DEVICE_ORDER LIMIT 1"},
    [STORE_ST_SCAN_DEVICE] = {.sql = "SELECT " SAMPLE_FROM "readings " SAMPLE_JOIN
                                     " WHERE device = $1 AND ts_ms >= $2 AND ts_ms < $3 "
                                     "ORDER BY ts_ms"},
    /* seq given ($1, the head's + 1 under store_ledger_lock), or NULL: the
     * next after the head. Never the database's counter: PostgreSQL's
     * identity skips the values of rolled-back appends, which would leave
     * every later entry stored under another seq than the one it hashed. */
    [STORE_ST_INS_LEDGER] = {.sql = "INSERT INTO ledger (seq, " LEDGER_COLS ") OVERRIDE_SEQ "
                                    "SELECT COALESCE($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM "
                                    "ledger)), " LEDGER_PARAMS " RETURNING seq"},
    [STORE_ST_LAST_LEDGER] = {.sql = "SELECT seq, " LEDGER_COLS " FROM ledger "
                                     "ORDER BY seq DESC LIMIT 1"},
    [STORE_ST_SCAN_LEDGER] = {.sql = "SELECT seq, " LEDGER_COLS " FROM ledger ORDER BY seq"},
    /* an older text never replaces a newer one (a late import, a slow scrape) */
    [STORE_ST_PUT_EXPO] = {.sql = "INSERT INTO expositions (" EXPO_COLS ") VALUES ",
                           .ncols = STORE_EXPO_NCOLS,
                           .nrows = 1,
                           .tail = " ON CONFLICT (source) DO UPDATE SET "
                                   "ts_ms = excluded.ts_ms, body = excluded.body "
                                   "WHERE excluded.ts_ms >= expositions.ts_ms"},
    [STORE_ST_SCAN_EXPO] = {.sql = "SELECT " EXPO_COLS " FROM expositions ORDER BY source"},
    [STORE_ST_INS_REQUESTS] = {.sql = "INSERT INTO requests (owner, workload, consumer, ts_ms, "
                                      "total, series) VALUES ",
                               .ncols = 6,
                               .nrows = 1,
                               .tail = ON_CONFLICT},
    [STORE_ST_SCAN_REQUESTS] = {.sql = "SELECT owner, workload, consumer, ts_ms, total, series "
                                       "FROM requests WHERE ts_ms >= $1 AND ts_ms < $2 "
                                       "ORDER BY owner, workload, consumer, series, ts_ms"},
    /* a device's next scrape after a time (the primary key's index), and
     * of any key "DEVICE#..." (by time, PostgreSQL's BRIN index: the rare
     * split device; SQLite seeks each such device instead) */
    [STORE_ST_DEVICE_AFTER] = {.sql = "SELECT ts_ms FROM readings WHERE device = $1 AND ts_ms > $2 "
                                      "ORDER BY ts_ms LIMIT 1"},
    /* $1 first: SQLite numbers the parameters in the order they appear */
    [STORE_ST_SPLIT_AFTER] = {.sql = "SELECT ts_ms FROM readings WHERE substr(device, 1, "
                                     "length(CAST($1 AS TEXT))) = CAST($1 AS TEXT) AND "
                                     "ts_ms > $2 LIMIT 1"},
    /* the usage aggregate (agg.c) */
    [STORE_ST_AGG_FIND] = {.sql = "SELECT token FROM agg_periods WHERE interval_ms = $1 AND "
                                  "from_ms = $2 AND to_ms = $3 AND done = 1"},
    [STORE_ST_AGG_DROP] = {.sql = "DELETE FROM agg_periods WHERE interval_ms = $1 AND "
                                  "from_ms = $2 AND to_ms = $3"},
    [STORE_ST_AGG_CLAIM] = {.sql = "INSERT INTO agg_periods (interval_ms, from_ms, to_ms, token, "
                                   "done) VALUES ($1, $2, $3, $4, 0)"},
    [STORE_ST_AGG_GC_TOTALS] = {.sql = "DELETE FROM agg_totals WHERE token NOT IN "
                                       "(SELECT token FROM agg_periods)"},
    [STORE_ST_AGG_GC_TAILS] = {.sql = "DELETE FROM agg_tails WHERE token NOT IN "
                                      "(SELECT token FROM agg_periods)"},
    [STORE_ST_AGG_DONE] = {.sql = "UPDATE agg_periods SET done = 1 WHERE token = $1 AND done = 0"},
    [STORE_ST_AGG_PUT_TOTAL] = {.sql = "INSERT INTO agg_totals (token, pos, kind, tenant, "
                                       "workload, model, profile, alloc_num, usage_num, "
                                       "unknown_num) VALUES ",
                                .ncols = 10,
                                .nrows = 1},
    [STORE_ST_AGG_PUT_TAIL] = {.sql = "INSERT INTO agg_tails (token, pos, family, split, ts_ms) "
                                      "VALUES ",
                               .ncols = 5,
                               .nrows = 1},
    [STORE_ST_AGG_TOTALS] = {.sql = "SELECT kind, tenant, workload, model, profile, alloc_num, "
                                    "usage_num, unknown_num FROM agg_totals WHERE token = $1 "
                                    "ORDER BY pos"},
    [STORE_ST_AGG_TAILS] = {.sql = "SELECT family, split, ts_ms FROM agg_tails WHERE token = $1 "
                                   "ORDER BY pos"},
    /* the windows whose reach (two intervals each side) meets [$2, $1] */
    [STORE_ST_AGG_STALE] = {.sql = "DELETE FROM agg_periods WHERE from_ms - 2 * interval_ms <= $1 "
                                   "AND to_ms + 2 * interval_ms > $2"},
    /* an attribution's id (attrib.c); ADD returns none when it is there;
     * RECENT fills an empty cache */
    [STORE_ST_ATTR_FIND] = {.sql = "SELECT id FROM attributions WHERE " ATTR_IS},
    [STORE_ST_ATTR_ADD] = {.sql = "INSERT INTO attributions (" ATTRIBUTION_COLS ") VALUES ",
                           .ncols = STORE_ATTRIBUTION_NCOLS,
                           .nrows = 1,
                           .tail = ON_CONFLICT " RETURNING id"},
    /* many at once, where the backend has arrays: id and texts of those
     * there, and of those added (in the arrays' order) */
    [STORE_ST_ATTR_FIND_MANY] = {.sql = "SELECT a.id, " ATTR_OF_A " FROM unnest(",
                                 .ncols = STORE_ATTRIBUTION_NCOLS,
                                 .arrays = attribution_arrays,
                                 .tail = ") AS m (" ATTRIBUTION_COLS ") JOIN attributions a "
                                         "USING (" ATTRIBUTION_COLS ")"},
    [STORE_ST_ATTR_ADD_MANY] = {.sql = "INSERT INTO attributions (" ATTRIBUTION_COLS
                                       ") SELECT * FROM unnest(",
                                .ncols = STORE_ATTRIBUTION_NCOLS,
                                .arrays = attribution_arrays,
                                .tail = ")" ON_CONFLICT " RETURNING id, " ATTRIBUTION_COLS},
    [STORE_ST_ATTR_RECENT] = {.sql = "SELECT id, " ATTRIBUTION_COLS " FROM attributions ORDER BY "
                                     "id DESC LIMIT " STORE_STR(STORE_ATTR_RECENT)},
};

/* ---- open, migrate, close --------------------------------------------- */

static ts_status migrate_locked(struct store *st, struct ts_error *err)
{
    ts_status rc = store__exec(st,
                               "CREATE TABLE IF NOT EXISTS schema_version "
                               "(version BIGINT PRIMARY KEY)",
                               err);
    int64_t have = 0;
    if (rc == TS_OK)
        rc = st->ops->exec(st->db, "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                           store__row_first_i64, &have, err);
    if (rc == TS_OK && have > store__schema_version)
        return ts_err(err, TS_INVALID,
                      "%s: database schema version %" PRId64
                      " is newer than this tessera's (%" PRId64 ")",
                      st->ops->name, have, store__schema_version);
    for (int64_t v = have + 1; rc == TS_OK && v <= store__schema_version; v++)
        rc = store__apply_migration(st->ops, st->db, v, err);
    return rc;
}

static ts_status migrate(struct store *st, struct ts_error *err)
{
    ts_status rc = store__exec(st, st->ops->begin_write, err);
    if (rc != TS_OK)
        return rc;
    if (st->ops->lock_schema)
        rc = store__exec(st, st->ops->lock_schema, err);
    if (rc == TS_OK)
        rc = migrate_locked(st, err);
    if (rc == TS_OK)
        return store__exec(st, "COMMIT", err);
    store__rollback(st);
    return rc;
}

/* The text of s (malloc'd), or NULL when out of memory. */
static char *stmt_text(const struct stmt *s)
{
    struct ts_sbuf b;
    ts_sbuf_init(&b, 64 * 1024);
    ts_sbuf_puts(&b, s->sql);
    for (int c = 1; s->arrays && c <= s->ncols; c++)
        ts_sbuf_printf(&b, "%s$%d::%s", c > 1 ? ", " : "", c, s->arrays[c - 1]);
    for (int r = 0; r < s->nrows; r++) {
        ts_sbuf_puts(&b, r ? ", (" : "(");
        for (int c = 1; c <= s->ncols; c++)
            ts_sbuf_printf(&b, "%s$%d", c > 1 ? ", " : "", r * s->ncols + c);
        ts_sbuf_puts(&b, ")");
    }
    if (s->tail)
        ts_sbuf_puts(&b, s->tail);
    if (ts_sbuf_status(&b) == TS_OK)
        return b.data;
    ts_sbuf_release(&b);
    return NULL;
}

/* text with each token replaced by words (malloc'd), or NULL. */
static char *replace_token(char *text, const char *token, const char *words)
{
    const char *at = text ? strstr(text, token) : NULL;
    if (!at)
        return text;
    struct ts_sbuf b;
    ts_sbuf_init(&b, 64 * 1024);
    for (const char *from = text; from; from = at ? at + strlen(token) : NULL) {
        at = strstr(from, token);
        ts_sbuf_printf(&b, "%.*s%s", at ? (int)(at - from) : (int)strlen(from), from,
                       at ? words : "");
    }
    free(text);
    if (ts_sbuf_status(&b) == TS_OK)
        return b.data;
    ts_sbuf_release(&b);
    return NULL;
}

/* text with OVERRIDE_SEQ, DEVICE_ORDER and KEEP_ORDER in the backend's
 * words. */
static char *dialect_text(struct store *st, char *text)
{
    text = replace_token(text, "OVERRIDE_SEQ", st->ops->override_seq);
    text = replace_token(text, "KEEP_ORDER", st->ops->keep_order);
    return replace_token(text, "DEVICE_ORDER", st->ops->device_order);
}

static ts_status prepare_all(struct store *st, struct ts_error *err)
{
    ts_status rc = TS_OK;
    for (int i = 0; rc == TS_OK && i < STORE_ST_COUNT; i++) {
        if (stmts[i].arrays && !st->ops->run_rows)
            continue;
        st->sql[i] = dialect_text(st, stmt_text(&stmts[i]));
        rc = st->sql[i] ? st->ops->prepare(st->db, i, st->sql[i], err)
                        : ts_err(err, TS_NOMEM, "out of memory");
    }
    return rc;
}

#define SQLITE_SCHEME "sqlite:"
#define SQLITE_SCHEME_LEN (sizeof(SQLITE_SCHEME) - 1)

static const struct store_ops *ops_for(const char *url)
{
    if (strncmp(url, SQLITE_SCHEME, SQLITE_SCHEME_LEN) == 0 && url[SQLITE_SCHEME_LEN])
        return &store_sqlite_ops;
    if (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0)
        return &store_pg_ops;
    return NULL;
}

static ts_status open_store(const char *url, int create, struct store **out, struct ts_error *err)
{
    *out = NULL;
    const struct store_ops *ops = url ? ops_for(url) : NULL;
    if (!ops) /* never echo the URL: it may hold a password */
        return ts_err(err, TS_USAGE,
                      "unsupported database URL: use sqlite:PATH or "
                      "postgres://[user@]host[:port]/dbname");
    struct store *st = calloc(1, sizeof(*st));
    if (!st)
        return ts_err(err, TS_NOMEM, "out of memory");
    st->ops = ops;
    const char *target = ops == &store_sqlite_ops ? url + SQLITE_SCHEME_LEN : url;
    ts_status rc = ops->open(target, create, &st->db, err);
    if (rc == TS_OK)
        rc = migrate(st, err);
    if (rc == TS_OK)
        rc = prepare_all(st, err);
    if (rc != TS_OK) {
        store_close(st);
        return rc;
    }
    *out = st;
    return TS_OK;
}

ts_status store_open(const char *url, struct store **out, struct ts_error *err)
{
    return open_store(url, 1, out, err);
}

ts_status store_open_existing(const char *url, struct store **out, struct ts_error *err)
{
    return open_store(url, 0, out, err);
}

void store_close(struct store *st)
{
    if (!st)
        return;
    if (st->db)
        st->ops->close(st->db);
    for (size_t i = 0; i < LEDGER_NTEXT; i++)
        free(st->last[i]);
    for (size_t i = 0; i < STORE_ST_COUNT; i++)
        free(st->sql[i]);
    store__attributions_forget(st);
    free(st);
}

const char *store_backend(const struct store *st) { return st->ops->name; }

/* ---- samples ----------------------------------------------------------- */

/* Key order: device, then time. */
static int sample_cmp(const void *a, const void *b)
{
    const struct store_sample *x = *(const struct store_sample *const *)a;
    const struct store_sample *y = *(const struct store_sample *const *)b;
    int c = strcmp(store__col_str(x->device), store__col_str(y->device));
    if (c)
        return c;
    return (x->ts_ms > y->ts_ms) - (x->ts_ms < y->ts_ms);
}

/* Sort order[0..n) by cmp, unless it is in order already. */
static void sort_samples(const struct store_sample **order, size_t n,
                         int (*cmp)(const void *, const void *))
{
    size_t i = 1;
    while (i < n && cmp(&order[i - 1], &order[i]) <= 0)
        i++;
    if (i < n)
        qsort(order, n, sizeof(*order), cmp);
}

/* The reading of s, whose attribution is attribution. */
static void reading_params(struct store_param *p, const struct store_sample *s, int64_t attribution)
{
    const struct store_param v[] = {PARAM_TEXT(s->device), PARAM_INT(s->ts_ms),
                                    PARAM_INT(attribution), PARAM_INT(s->share_ppm),
                                    PARAM_INT(s->util_ppm)};
    _Static_assert(sizeof(v) / sizeof(v[0]) == STORE_READING_NCOLS, "a reading's columns");
    memcpy(p, v, sizeof(v));
}

/* Insert order[0..k) (attributions attr[0..k)) with one statement (k is
 * 1 or STORE_BLOCK). */
static ts_status put_rows(struct store *st, const struct store_sample **order, const int64_t *attr,
                          size_t k, size_t *total, struct ts_error *err)
{
    struct store_param p[STORE_MAX_PARAMS]; /* 10 KiB of stack */
    for (size_t i = 0; i < k; i++)
        reading_params(p + STORE_READING_NCOLS * i, order[i], attr[i]);
    int64_t changes = 0;
    int id = k == 1 ? STORE_ST_INS_SAMPLE : STORE_ST_INS_BLOCK;
    int np = (int)(STORE_READING_NCOLS * k);
    ts_status rc = st->ops->run(st->db, id, p, np, NULL, NULL, &changes, err);
    *total += (size_t)changes;
    return rc;
}

/* Insert order[0..n) as arrays, STORE_ARRAY_ROWS rows a statement. */
static ts_status put_arrays(struct store *st, const struct store_sample **order,
                            const int64_t *attr, size_t n, size_t *total, struct ts_error *err)
{
    size_t rows = n < STORE_ARRAY_ROWS ? n : STORE_ARRAY_ROWS;
    struct store_param *p = malloc((rows ? rows : 1) * STORE_READING_NCOLS * sizeof(*p));
    if (!p)
        return ts_err(err, TS_NOMEM, "out of memory");
    ts_status rc = TS_OK;
    for (size_t i = 0; rc == TS_OK && i < n; i += rows) {
        size_t k = n - i < rows ? n - i : rows;
        for (size_t j = 0; j < k; j++)
            reading_params(p + STORE_READING_NCOLS * j, order[i + j], attr[i + j]);
        int64_t changes = 0;
        rc = st->ops->run_rows(st->db, STORE_ST_INS_ARRAYS, p, STORE_READING_NCOLS, k, NULL, NULL,
                               &changes, err);
        *total += (size_t)changes;
    }
    free(p);
    return rc;
}

/* Load order[0..n) with COPY, STORE_ARRAY_ROWS rows a statement; stops at
 * the first statement that meets a sample already stored (*conflict). */
static ts_status copy_samples(struct store *st, const struct store_sample **order,
                              const int64_t *attr, size_t n, size_t *total, int *conflict,
                              struct ts_error *err)
{
    size_t rows = n < STORE_ARRAY_ROWS ? n : STORE_ARRAY_ROWS;
    struct store_param *p = malloc((rows ? rows : 1) * STORE_READING_NCOLS * sizeof(*p));
    if (!p)
        return ts_err(err, TS_NOMEM, "out of memory");
    ts_status rc = TS_OK;
    *conflict = 0;
    for (size_t i = 0; rc == TS_OK && !*conflict && i < n; i += rows) {
        size_t k = n - i < rows ? n - i : rows;
        for (size_t j = 0; j < k; j++)
            reading_params(p + STORE_READING_NCOLS * j, order[i + j], attr[i + j]);
        int64_t changes = 0;
        rc = st->ops->copy_rows(st->db, COPY_SAMPLES, p, STORE_READING_NCOLS, k, &changes, conflict,
                                err);
        *total += (size_t)changes;
    }
    free(p);
    return rc;
}

/* The batch in the open transaction, with a statement for each run of rows. */
static ts_status insert_samples(struct store *st, const struct store_sample **order,
                                const int64_t *attr, size_t n, size_t *total, struct ts_error *err)
{
    if (st->ops->run_rows)
        return put_arrays(st, order, attr, n, total, err);
    ts_status rc = TS_OK;
    for (size_t i = 0; rc == TS_OK && i < n;) {
        size_t k = n - i >= STORE_BLOCK ? STORE_BLOCK : 1;
        rc = put_rows(st, order + i, attr + i, k, total, err);
        i += k;
    }
    return rc;
}

/* A write transaction for samples, holding the backend's samples lock. */
static ts_status begin_samples(struct store *st, struct ts_error *err)
{
    ts_status rc = store__exec(st, st->ops->begin_write, err);
    if (rc == TS_OK && st->ops->lock_samples)
        rc = store__exec(st, st->ops->lock_samples, err);
    return rc;
}

/* The earliest and latest time of order[0..n) into *lo and *hi. */
static void time_span(const struct store_sample **order, size_t n, int64_t *lo, int64_t *hi)
{
    *lo = INT64_MAX;
    *hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        *lo = order[i]->ts_ms < *lo ? order[i]->ts_ms : *lo;
        *hi = order[i]->ts_ms > *hi ? order[i]->ts_ms : *hi;
    }
}

/* In the batch's transaction, once it stored a sample: the usage
 * aggregate's windows whose reach holds one of its times are no longer
 * exact, and go (agg.c). */
static ts_status drop_stale(struct store *st, const struct store_sample **order, size_t n,
                            struct ts_error *err)
{
    int64_t lo, hi;
    time_span(order, n, &lo, &hi);
    struct store_param p[2] = {store__int(hi), store__int(lo)};
    return st->ops->run(st->db, STORE_ST_AGG_STALE, p, 2, NULL, NULL, NULL, err);
}

/* A transaction for samples, unless one is held open (store_hold_samples). */
static ts_status open_samples(struct store *st, struct ts_error *err)
{
    if (st->samples_open)
        return TS_OK;
    ts_status rc = begin_samples(st, err);
    st->samples_open = rc == TS_OK;
    st->samples_held = 0;
    return rc;
}

/* Roll the open transaction back, and with it the attributions it added. */
static void abort_samples(struct store *st)
{
    if (st->samples_open)
        store__rollback(st);
    st->samples_open = 0;
    store__attributions_forget(st);
}

/* The batch in the open transaction: by COPY where the backend has it,
 * behind a savepoint; when that meets a sample already stored (a
 * re-import, an overlapping writer), back to the savepoint and the batch
 * inserted again skipping what is there. */
static ts_status put_sorted(struct store *st, const struct store_sample **order, int64_t *attr,
                            size_t n, size_t *total, struct ts_error *err)
{
    int conflict = 0;
    ts_status rc = open_samples(st, err);
    if (rc == TS_OK)
        rc = store__attributions(st, order, n, attr, err);
    if (rc == TS_OK && st->ops->copy_rows) {
        rc = store__exec(st, "SAVEPOINT copy_samples", err);
        if (rc == TS_OK)
            rc = copy_samples(st, order, attr, n, total, &conflict, err);
        if (rc == TS_OK && conflict) {
            *total = 0;
            rc = store__exec(st, "ROLLBACK TO SAVEPOINT copy_samples", err);
        }
    }
    if (rc == TS_OK && (!st->ops->copy_rows || conflict))
        rc = insert_samples(st, order, attr, n, total, err);
    if (rc == TS_OK && *total)
        rc = drop_stale(st, order, n, err);
    if (rc != TS_OK)
        abort_samples(st);
    st->samples_held += rc == TS_OK;
    return rc;
}

ts_status store__samples_afresh(struct store *st, struct ts_error *err)
{
    if (!st->samples_held)
        return TS_OK;
    ts_status rc = store_commit_samples(st, err);
    return rc == TS_OK ? open_samples(st, err) : rc;
}

ts_status store_commit_samples(struct store *st, struct ts_error *err)
{
    if (!st->samples_open)
        return TS_OK;
    st->samples_open = 0;
    ts_status rc = store__exec(st, "COMMIT", err);
    if (rc != TS_OK) {
        store__rollback(st);
        store__attributions_forget(st);
    }
    return rc;
}

void store_abort_samples(struct store *st) { abort_samples(st); }

/* Rows go in key order: concurrent writers of overlapping batches take
 * their row locks in the same order and never deadlock, and consecutive
 * rows go to the same leaf of the primary key (PostgreSQL at 512 GPUs: 27%
 * less server CPU than in time order, where each row's leaf is another
 * device's). A batch still spans a few minutes of scrapes, so the heap
 * stays in time order at the BRIN index's grain (128 pages). */
ts_status store_hold_samples(struct store *st, const struct store_sample *s, size_t n,
                             size_t *inserted, struct ts_error *err)
{
    if (inserted)
        *inserted = 0;
    const struct store_sample **order = malloc((n ? n : 1) * sizeof(*order));
    int64_t *attr = malloc((n ? n : 1) * sizeof(*attr));
    if (!order || !attr) {
        free(order);
        free(attr);
        abort_samples(st);
        return ts_err(err, TS_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        order[i] = &s[i];
    sort_samples(order, n, sample_cmp);
    size_t total = 0;
    ts_status rc = put_sorted(st, order, attr, n, &total, err);
    free(order);
    free(attr);
    if (rc == TS_OK && inserted)
        *inserted = total;
    return rc;
}

ts_status store_put_samples(struct store *st, const struct store_sample *s, size_t n,
                            size_t *inserted, struct ts_error *err)
{
    ts_status rc = store_hold_samples(st, s, n, inserted, err);
    if (rc == TS_OK)
        rc = store_commit_samples(st, err);
    if (rc != TS_OK && inserted)
        *inserted = 0;
    return rc;
}

struct last_ts {
    int64_t ms;
    int found;
};

static int row_last_ts(void *ctx, const char *const *cols, const size_t *lens, int n)
{
    (void)lens;
    struct last_ts *l = ctx;
    l->found = n > 0 && cols[0];
    l->ms = l->found ? store__col_i64(cols[0]) : 0;
    return 1;
}

/* The newest sample, from the primary key (device, ts_ms): no index on
 * time gives MAX(ts_ms) (PostgreSQL's BRIN would read the whole table,
 * SQLite has none since schema v8), so each device's newest sample is read,
 * skipping from one device to the next, a few index probes per device. */
#define LAST_SAMPLE                                                                         \
    "WITH RECURSIVE d (device) AS (SELECT (SELECT device FROM readings ORDER BY device "    \
    "LIMIT 1) UNION ALL SELECT (SELECT s.device FROM readings s WHERE s.device > d.device " \
    "ORDER BY s.device LIMIT 1) FROM d WHERE d.device IS NOT NULL) "                        \
    "SELECT MAX((SELECT s.ts_ms FROM readings s WHERE s.device = d.device "                 \
    "ORDER BY s.ts_ms DESC LIMIT 1)) FROM d"

ts_status store_last_sample(struct store *st, int64_t *ms, int *found, struct ts_error *err)
{
    struct last_ts l = {0, 0};
    ts_status rc = st->ops->exec(st->db, LAST_SAMPLE, row_last_ts, &l, err);
    *ms = l.ms;
    *found = l.found;
    return rc;
}

static int row_found(void *ctx, const char *const *c, const size_t *lens, int n)
{
    (void)c, (void)lens, (void)n;
    *(int *)ctx = 1;
    return 0;
}

struct sample_scan {
    store_sample_fn fn;
    void *ctx;
    int stopped; /* fn asked to stop, or a row was short */
};

static int sample_row(void *ctx, const char *const *c, const size_t *lens, int n)
{
    (void)lens;
    struct sample_scan *sc = ctx;
    if (n < STORE_SAMPLE_NCOLS)
        return sc->stopped = 1;
    struct store_sample s = {0};
#define SAMPLE_GET(name, type) GET_##type(s.name, *c++);
    STORE_SAMPLE_COLUMNS(SAMPLE_GET, )
#undef SAMPLE_GET
    return sc->stopped = sc->fn(sc->ctx, &s);
}

struct device_row {
    char *name; /* NULL: no row, or no memory (nomem) */
    int nomem;
};

static int device_row(void *ctx, const char *const *c, const size_t *lens, int n)
{
    struct device_row *d = ctx;
    if (n > 0 && c[0] && !(d->name = strndup(c[0], lens[0])))
        d->nomem = 1;
    return 1;
}

/* The device after prev in the primary key's order (the first when prev is
 * NULL) into *next, NULL after the last. */
static ts_status next_device(struct store *st, const char *prev, char **next, struct ts_error *err)
{
    struct device_row d = {NULL, 0};
    struct store_param p[1] = {store__str(prev)};
    ts_status rc = st->ops->run(st->db, prev ? STORE_ST_NEXT_DEVICE : STORE_ST_FIRST_DEVICE, p,
                                prev ? 1 : 0, device_row, &d, NULL, err);
    if (rc == TS_OK && d.nomem)
        rc = ts_err(err, TS_NOMEM, "%s: out of memory", st->ops->name);
    *next = d.name;
    return rc;
}

/* Whether a device scraped after after_ms has a key starting with prefix
 * (a split device's "DEVICE#..."), seeking each such device in the primary
 * key: without an index on time (SQLite since schema v8) the single
 * statement would read the whole table. */
static ts_status split_after_seek(struct store *st, const char *prefix, int64_t after_ms,
                                  int *found, struct ts_error *err)
{
    size_t n = strlen(prefix);
    char *dev = strdup(prefix);
    ts_status rc = dev ? TS_OK : ts_err(err, TS_NOMEM, "%s: out of memory", st->ops->name);
    while (rc == TS_OK && dev && strncmp(dev, prefix, n) == 0 && !*found) {
        struct store_param p[2] = {store__str(dev), store__int(after_ms)};
        char *next = NULL;
        rc = st->ops->run(st->db, STORE_ST_DEVICE_AFTER, p, 2, row_found, found, NULL, err);
        if (rc == TS_OK && !*found)
            rc = next_device(st, dev, &next, err);
        free(dev);
        dev = next;
    }
    free(dev);
    return rc;
}

ts_status store_device_scraped_after(struct store *st, const char *device, int split,
                                     int64_t after_ms, int *found, struct ts_error *err)
{
    struct store_param p[2] = {store__str(device), store__int(after_ms)};
    *found = 0;
    ts_status rc = st->ops->run(st->db, STORE_ST_DEVICE_AFTER, p, 2, row_found, found, NULL, err);
    if (rc != TS_OK || *found || !split)
        return rc;
    char prefix[STORE_DEVICE_PREFIX_MAX];
    if ((size_t)snprintf(prefix, sizeof(prefix), "%s#", device) >= sizeof(prefix))
        return ts_err(err, TS_TOO_LARGE, "device '%s' is too long", device);
    if (st->ops->seek_devices)
        return split_after_seek(st, prefix, after_ms, found, err);
    p[0] = store__str(prefix);
    return st->ops->run(st->db, STORE_ST_SPLIT_AFTER, p, 2, row_found, found, NULL, err);
}

/* SQLite sorts a range's samples by device in a temporary B-tree, which
 * for a month of a fleet costs more than integrating them; seeking each
 * device in the primary key (device, ts_ms) reads them in order. One read
 * transaction, so the devices are one snapshot as a single SELECT's. */
static ts_status scan_by_device(struct store *st, int64_t from_ms, int64_t to_ms,
                                struct sample_scan *sc, struct ts_error *err)
{
    char *dev = NULL;
    ts_status rc = store__exec(st, "BEGIN", err);
    if (rc != TS_OK)
        return rc;
    rc = next_device(st, NULL, &dev, err);
    while (rc == TS_OK && dev && !sc->stopped) {
        struct store_param p[3] = {store__str(dev), store__int(from_ms), store__int(to_ms)};
        char *next = NULL;
        rc = st->ops->run(st->db, STORE_ST_SCAN_DEVICE, p, 3, sample_row, sc, NULL, err);
        if (rc == TS_OK && !sc->stopped)
            rc = next_device(st, dev, &next, err);
        free(dev);
        dev = next;
    }
    free(dev);
    store__rollback(st); /* read only: nothing to keep */
    return rc;
}

ts_status store_scan_samples(struct store *st, int64_t from_ms, int64_t to_ms, store_sample_fn fn,
                             void *ctx, struct ts_error *err)
{
    struct store_param p[2] = {store__int(from_ms), store__int(to_ms)};
    struct sample_scan sc = {fn, ctx, 0};
    if (st->ops->seek_devices)
        return scan_by_device(st, from_ms, to_ms, &sc, err);
    return st->ops->run(st->db, STORE_ST_SCAN_SAMPLES, p, 2, sample_row, &sc, NULL, err);
}
