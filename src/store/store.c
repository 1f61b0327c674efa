/*
 * store.c - the store interface over a backend chosen by URL: migrating
 * (the migrations themselves are in schema.c), the SQL both dialects share,
 * batching, and turning rows into structs. Backends (sqlite.c, pg.c) only
 * talk to their database; see backend.h.
 */
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/backend.h"
#include "util/sbuf.h"

/* Expanders for backend.h's column lists: COL_NAME gives a column's name,
 * IS_TEXT 1 for a string column (else 0); COMMA separates array items. */
#define COMMA ,
#define COL_NAME(name, type) #name
#define IS_TEXT(name, type) IS_TEXT_##type
#define IS_TEXT_TEXT 1
#define IS_TEXT_OPT 1
#define IS_TEXT_INT 0
#define IS_TEXT_HEX 0
/* ARRAY_OF: the array type a column is bound as in INS_ARRAYS */
#define ARRAY_OF(name, type) ARRAY_OF_##type
#define ARRAY_OF_TEXT "text[]"
#define ARRAY_OF_INT "bigint[]"
#define ARRAY_OF_HEX "text[]"
#define ARRAY_OF_OPT "text[]"

/* "node, device, ..." */
#define SAMPLE_COLS STORE_SAMPLE_COLUMNS(COL_NAME, ", ")
#define LEDGER_COLS STORE_LEDGER_COLUMNS(COL_NAME, ", ")
#define EXPO_COLS STORE_EXPO_COLUMNS(COL_NAME, ", ")
/* "$2, $3, ..." : the ledger's columns after the seq ($1) */
#define LEDGER_PARAMS "CAST($2 AS BIGINT), $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14"
_Static_assert(STORE_LEDGER_NCOLS == 13, "LEDGER_PARAMS lists 13 columns after the seq");
/* The ledger's string columns, kept by store_ledger_last. */
enum { LEDGER_NTEXT = STORE_LEDGER_COLUMNS(IS_TEXT, +) };

struct store {
    const struct store_ops *ops;
    void *db;
    char *last[LEDGER_NTEXT];  /* strings of the entry store_ledger_last returned */
    char *sql[STORE_ST_COUNT]; /* the text of each statement, while prepared */
};

/* A statement: sql, then for an INSERT the placeholders of nrows rows of
 * ncols values ($1, $2, ... in order: "($1, $2), ($3, $4)"), or with
 * arrays one array per column ("$1::text[], $2::bigint[]"), then tail. */
struct stmt {
    const char *sql;
    int ncols, nrows;
    const char *tail;
    const char *const *arrays; /* each column's array type */
};

static const char *const sample_arrays[] = {STORE_SAMPLE_COLUMNS(ARRAY_OF, COMMA)};

#define INS_INTO "INSERT INTO samples (" SAMPLE_COLS ") "
#define INS_SAMPLE INS_INTO "VALUES "
#define ON_CONFLICT " ON CONFLICT DO NOTHING"
/* PostgreSQL's bulk load (copy_rows); no ON CONFLICT there */
#define COPY_SAMPLES "COPY samples (" SAMPLE_COLS ") FROM STDIN (FORMAT binary)"

static const struct stmt stmts[STORE_ST_COUNT] = {
    [STORE_ST_INS_SAMPLE] = {.sql = INS_SAMPLE,
                             .ncols = STORE_SAMPLE_NCOLS,
                             .nrows = 1,
                             .tail = ON_CONFLICT},
    [STORE_ST_INS_BLOCK] = {.sql = INS_SAMPLE,
                            .ncols = STORE_SAMPLE_NCOLS,
                            .nrows = STORE_BLOCK,
                            .tail = ON_CONFLICT},
    /* rows in array order, as sorted: concurrent writers lock alike */
    [STORE_ST_INS_ARRAYS] = {.sql = INS_INTO "SELECT * FROM unnest(",
                             .ncols = STORE_SAMPLE_NCOLS,
                             .arrays = sample_arrays,
                             .tail = ")" ON_CONFLICT},
    [STORE_ST_SCAN_SAMPLES] = {.sql = "SELECT " SAMPLE_COLS " FROM samples WHERE ts_ms >= $1 "
                                      "AND ts_ms < $2 ORDER BY DEVICE_ORDER, ts_ms"},
    [STORE_ST_FIRST_DEVICE] = {.sql = "SELECT device FROM samples ORDER BY DEVICE_ORDER LIMIT 1"},
    [STORE_ST_NEXT_DEVICE] = {.sql = "SELECT device FROM samples WHERE device > $1 "
                                     "ORDER BY DEVICE_ORDER LIMIT 1"},
    [STORE_ST_SCAN_DEVICE] = {.sql = "SELECT " SAMPLE_COLS " FROM samples WHERE device = $1 "
                                     "AND ts_ms >= $2 AND ts_ms < $3 ORDER BY ts_ms"},
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
     * of any key "DEVICE#..." (by time: the rare split device) */
    [STORE_ST_DEVICE_AFTER] = {.sql = "SELECT ts_ms FROM samples WHERE device = $1 AND ts_ms > $2 "
                                      "ORDER BY ts_ms LIMIT 1"},
    /* $1 first: SQLite numbers the parameters in the order they appear */
    [STORE_ST_SPLIT_AFTER] = {.sql = "SELECT ts_ms FROM samples WHERE substr(device, 1, "
                                     "length(CAST($1 AS TEXT))) = CAST($1 AS TEXT) AND "
                                     "ts_ms > $2 LIMIT 1"},
};

/* ---- small helpers ---------------------------------------------------- */

static struct store_param p_str(const char *s) { return (struct store_param){.s = s}; }
static struct store_param p_int(int64_t i) { return (struct store_param){.is_int = 1, .i = i}; }
static struct store_param p_blob(const char *s, size_t len)
{
    return (struct store_param){.s = s, .is_blob = 1, .len = len};
}

static int64_t col_i64(const char *s) { return s ? strtoll(s, NULL, 10) : 0; }
static const char *col_str(const char *s) { return s ? s : ""; }
static void copy_hex(char dst[65], const char *src) { snprintf(dst, 65, "%s", col_str(src)); }

/* How a column of each type is bound (PARAM_) and read back (GET_). */
#define PARAM_TEXT(v) p_str(v)
#define PARAM_OPT(v) p_str(col_str(v)) /* NULL is "" */
#define PARAM_INT(v) p_int(v)
#define PARAM_HEX(v) p_str(v)
#define GET_TEXT(dst, v) ((dst) = col_str(v))
#define GET_OPT GET_TEXT
#define GET_INT(dst, v) ((dst) = col_i64(v))
#define GET_HEX(dst, v) copy_hex(dst, v)

static int row_first_i64(void *ctx, const char *const *cols, const size_t *lens, int n)
{
    (void)lens;
    *(int64_t *)ctx = n > 0 ? col_i64(cols[0]) : 0;
    return 1;
}

static ts_status exec(struct store *st, const char *sql, struct ts_error *err)
{
    return st->ops->exec(st->db, sql, NULL, NULL, err);
}

static void rollback(struct store *st) { st->ops->exec(st->db, "ROLLBACK", NULL, NULL, NULL); }

/* ---- open, migrate, close --------------------------------------------- */

static ts_status migrate_locked(struct store *st, struct ts_error *err)
{
    ts_status rc = exec(st,
                        "CREATE TABLE IF NOT EXISTS schema_version "
                        "(version BIGINT PRIMARY KEY)",
                        err);
    int64_t have = 0;
    if (rc == TS_OK)
        rc = st->ops->exec(st->db, "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                           row_first_i64, &have, err);
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
    ts_status rc = exec(st, st->ops->begin_write, err);
    if (rc != TS_OK)
        return rc;
    if (st->ops->lock_schema)
        rc = exec(st, st->ops->lock_schema, err);
    if (rc == TS_OK)
        rc = migrate_locked(st, err);
    if (rc == TS_OK)
        return exec(st, "COMMIT", err);
    rollback(st);
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

/* text with token replaced by words (malloc'd), or NULL. */
static char *replace_token(char *text, const char *token, const char *words)
{
    const char *at = text ? strstr(text, token) : NULL;
    if (!at)
        return text;
    struct ts_sbuf b;
    ts_sbuf_init(&b, 64 * 1024);
    ts_sbuf_printf(&b, "%.*s%s%s", (int)(at - text), text, words, at + strlen(token));
    free(text);
    if (ts_sbuf_status(&b) == TS_OK)
        return b.data;
    ts_sbuf_release(&b);
    return NULL;
}

/* text with OVERRIDE_SEQ and DEVICE_ORDER in the backend's words. */
static char *dialect_text(struct store *st, char *text)
{
    text = replace_token(text, "OVERRIDE_SEQ", st->ops->override_seq);
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
    free(st);
}

const char *store_backend(const struct store *st) { return st->ops->name; }

/* ---- samples ----------------------------------------------------------- */

/* Key order: device, then time. */
static int sample_cmp(const void *a, const void *b)
{
    const struct store_sample *x = *(const struct store_sample *const *)a;
    const struct store_sample *y = *(const struct store_sample *const *)b;
    int c = strcmp(col_str(x->device), col_str(y->device));
    if (c)
        return c;
    return (x->ts_ms > y->ts_ms) - (x->ts_ms < y->ts_ms);
}

/* Time order: time, then device (the order an ingest flushes in). */
static int sample_cmp_time(const void *a, const void *b)
{
    const struct store_sample *x = *(const struct store_sample *const *)a;
    const struct store_sample *y = *(const struct store_sample *const *)b;
    if (x->ts_ms != y->ts_ms)
        return (x->ts_ms > y->ts_ms) - (x->ts_ms < y->ts_ms);
    return strcmp(col_str(x->device), col_str(y->device));
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

static void sample_params(struct store_param *p, const struct store_sample *s)
{
#define SAMPLE_PARAM(name, type) PARAM_##type(s->name)
    const struct store_param v[] = {STORE_SAMPLE_COLUMNS(SAMPLE_PARAM, COMMA)};
#undef SAMPLE_PARAM
    memcpy(p, v, sizeof(v));
}

/* Insert order[0..k) with one statement (k is 1 or STORE_BLOCK). */
static ts_status put_rows(struct store *st, const struct store_sample **order, size_t k,
                          size_t *total, struct ts_error *err)
{
    struct store_param p[STORE_MAX_PARAMS]; /* 15 KiB of stack */
    for (size_t i = 0; i < k; i++)
        sample_params(p + STORE_SAMPLE_NCOLS * i, order[i]);
    int64_t changes = 0;
    int id = k == 1 ? STORE_ST_INS_SAMPLE : STORE_ST_INS_BLOCK;
    int np = (int)(STORE_SAMPLE_NCOLS * k);
    ts_status rc = st->ops->run(st->db, id, p, np, NULL, NULL, &changes, err);
    *total += (size_t)changes;
    return rc;
}

/* Insert order[0..n) as arrays, STORE_ARRAY_ROWS rows a statement. */
static ts_status put_arrays(struct store *st, const struct store_sample **order, size_t n,
                            size_t *total, struct ts_error *err)
{
    size_t rows = n < STORE_ARRAY_ROWS ? n : STORE_ARRAY_ROWS;
    struct store_param *p = malloc((rows ? rows : 1) * STORE_SAMPLE_NCOLS * sizeof(*p));
    if (!p)
        return ts_err(err, TS_NOMEM, "out of memory");
    ts_status rc = TS_OK;
    for (size_t i = 0; rc == TS_OK && i < n; i += rows) {
        size_t k = n - i < rows ? n - i : rows;
        for (size_t j = 0; j < k; j++)
            sample_params(p + STORE_SAMPLE_NCOLS * j, order[i + j]);
        int64_t changes = 0;
        rc = st->ops->run_rows(st->db, STORE_ST_INS_ARRAYS, p, STORE_SAMPLE_NCOLS, k, &changes,
                               err);
        *total += (size_t)changes;
    }
    free(p);
    return rc;
}

/* Load order[0..n) with COPY, STORE_ARRAY_ROWS rows a statement; stops at
 * the first statement that meets a sample already stored (*conflict). */
static ts_status copy_samples(struct store *st, const struct store_sample **order, size_t n,
                              size_t *total, int *conflict, struct ts_error *err)
{
    size_t rows = n < STORE_ARRAY_ROWS ? n : STORE_ARRAY_ROWS;
    struct store_param *p = malloc((rows ? rows : 1) * STORE_SAMPLE_NCOLS * sizeof(*p));
    if (!p)
        return ts_err(err, TS_NOMEM, "out of memory");
    ts_status rc = TS_OK;
    *conflict = 0;
    for (size_t i = 0; rc == TS_OK && !*conflict && i < n; i += rows) {
        size_t k = n - i < rows ? n - i : rows;
        for (size_t j = 0; j < k; j++)
            sample_params(p + STORE_SAMPLE_NCOLS * j, order[i + j]);
        int64_t changes = 0;
        rc = st->ops->copy_rows(st->db, COPY_SAMPLES, p, STORE_SAMPLE_NCOLS, k, &changes, conflict,
                                err);
        *total += (size_t)changes;
    }
    free(p);
    return rc;
}

/* The batch in the open transaction, with a statement for each run of rows. */
static ts_status insert_samples(struct store *st, const struct store_sample **order, size_t n,
                                size_t *total, struct ts_error *err)
{
    if (st->ops->run_rows)
        return put_arrays(st, order, n, total, err);
    ts_status rc = TS_OK;
    for (size_t i = 0; rc == TS_OK && i < n;) {
        size_t k = n - i >= STORE_BLOCK ? STORE_BLOCK : 1;
        rc = put_rows(st, order + i, k, total, err);
        i += k;
    }
    return rc;
}

/* The batch in one transaction: by COPY where the backend has it; when
 * that meets a sample already stored (a re-import, an overlapping writer),
 * the transaction is rolled back and the batch inserted again skipping
 * what is there. */
static ts_status put_sorted(struct store *st, const struct store_sample **order, size_t n,
                            size_t *total, struct ts_error *err)
{
    int conflict = 0;
    ts_status rc = exec(st, st->ops->begin_write, err);
    if (rc == TS_OK && st->ops->copy_rows)
        rc = copy_samples(st, order, n, total, &conflict, err);
    if (rc == TS_OK && conflict) {
        rollback(st);
        *total = 0;
        rc = exec(st, st->ops->begin_write, err);
    }
    if (rc == TS_OK && (!st->ops->copy_rows || conflict))
        rc = insert_samples(st, order, n, total, err);
    if (rc == TS_OK)
        return exec(st, "COMMIT", err);
    rollback(st);
    return rc;
}

/* Rows go in one order (key order; time order where the backend has BRIN
 * indexes) so that concurrent writers of overlapping batches take their
 * row locks in the same order and never deadlock. */
ts_status store_put_samples(struct store *st, const struct store_sample *s, size_t n,
                            size_t *inserted, struct ts_error *err)
{
    if (inserted)
        *inserted = 0;
    const struct store_sample **order = malloc((n ? n : 1) * sizeof(*order));
    if (!order)
        return ts_err(err, TS_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        order[i] = &s[i];
    sort_samples(order, n, st->ops->brin ? sample_cmp_time : sample_cmp);
    size_t total = 0;
    ts_status rc = put_sorted(st, order, n, &total, err);
    free(order);
    if (rc == TS_OK && inserted)
        *inserted = total;
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
    l->ms = l->found ? col_i64(cols[0]) : 0;
    return 1;
}

/* A BRIN index cannot give MAX(ts_ms) (it would read the whole table):
 * there each device's newest sample is read from the primary key instead,
 * skipping from one device to the next, a few index probes per device. */
#define LAST_SAMPLE "SELECT MAX(ts_ms) FROM samples"
#define LAST_SAMPLE_SKIP                                                                  \
    "WITH RECURSIVE d (device) AS ((SELECT device FROM samples ORDER BY device LIMIT 1) " \
    "UNION ALL SELECT (SELECT s.device FROM samples s WHERE s.device > d.device "         \
    "ORDER BY s.device LIMIT 1) FROM d WHERE d.device IS NOT NULL) "                      \
    "SELECT MAX((SELECT s.ts_ms FROM samples s WHERE s.device = d.device "                \
    "ORDER BY s.ts_ms DESC LIMIT 1)) FROM d"

ts_status store_last_sample(struct store *st, int64_t *ms, int *found, struct ts_error *err)
{
    struct last_ts l = {0, 0};
    const char *sql = st->ops->brin ? LAST_SAMPLE_SKIP : LAST_SAMPLE;
    ts_status rc = st->ops->exec(st->db, sql, row_last_ts, &l, err);
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

ts_status store_device_scraped_after(struct store *st, const char *device, int split,
                                     int64_t after_ms, int *found, struct ts_error *err)
{
    struct store_param p[2] = {p_str(device), p_int(after_ms)};
    *found = 0;
    ts_status rc = st->ops->run(st->db, STORE_ST_DEVICE_AFTER, p, 2, row_found, found, NULL, err);
    if (rc != TS_OK || *found || !split)
        return rc;
    char prefix[STORE_DEVICE_PREFIX_MAX];
    if ((size_t)snprintf(prefix, sizeof(prefix), "%s#", device) >= sizeof(prefix))
        return ts_err(err, TS_TOO_LARGE, "device '%s' is too long", device);
    p[0] = p_str(prefix);
    return st->ops->run(st->db, STORE_ST_SPLIT_AFTER, p, 2, row_found, found, NULL, err);
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
    struct store_param p[1] = {p_str(prev)};
    ts_status rc = st->ops->run(st->db, prev ? STORE_ST_NEXT_DEVICE : STORE_ST_FIRST_DEVICE, p,
                                prev ? 1 : 0, device_row, &d, NULL, err);
    if (rc == TS_OK && d.nomem)
        rc = ts_err(err, TS_NOMEM, "%s: out of memory", st->ops->name);
    *next = d.name;
    return rc;
}

/* SQLite sorts a range's samples by device in a temporary B-tree, which
 * for a month of a fleet costs more than integrating them; seeking each
 * device in the primary key (device, ts_ms) reads them in order. One read
 * transaction, so the devices are one snapshot as a single SELECT's. */
static ts_status scan_by_device(struct store *st, int64_t from_ms, int64_t to_ms,
                                struct sample_scan *sc, struct ts_error *err)
{
    char *dev = NULL;
    ts_status rc = exec(st, "BEGIN", err);
    if (rc != TS_OK)
        return rc;
    rc = next_device(st, NULL, &dev, err);
    while (rc == TS_OK && dev && !sc->stopped) {
        struct store_param p[3] = {p_str(dev), p_int(from_ms), p_int(to_ms)};
        char *next = NULL;
        rc = st->ops->run(st->db, STORE_ST_SCAN_DEVICE, p, 3, sample_row, sc, NULL, err);
        if (rc == TS_OK && !sc->stopped)
            rc = next_device(st, dev, &next, err);
        free(dev);
        dev = next;
    }
    free(dev);
    rollback(st); /* read only: nothing to keep */
    return rc;
}

ts_status store_scan_samples(struct store *st, int64_t from_ms, int64_t to_ms, store_sample_fn fn,
                             void *ctx, struct ts_error *err)
{
    struct store_param p[2] = {p_int(from_ms), p_int(to_ms)};
    struct sample_scan sc = {fn, ctx, 0};
    if (st->ops->seek_devices)
        return scan_by_device(st, from_ms, to_ms, &sc, err);
    return st->ops->run(st->db, STORE_ST_SCAN_SAMPLES, p, 2, sample_row, &sc, NULL, err);
}

/* ---- requests --------------------------------------------------------- */

ts_status store_put_requests(struct store *st, const struct store_request *r, size_t n,
                             struct ts_error *err)
{
    ts_status rc = n ? exec(st, st->ops->begin_write, err) : TS_OK;
    for (size_t i = 0; rc == TS_OK && i < n; i++) {
        struct store_param p[6] = {p_str(r[i].owner),    p_str(r[i].workload),
                                   p_str(r[i].consumer), p_int(r[i].ts_ms),
                                   p_int(r[i].count),    p_str(r[i].series ? r[i].series : "")};
        rc = st->ops->run(st->db, STORE_ST_INS_REQUESTS, p, 6, NULL, NULL, NULL, err);
    }
    if (n && rc == TS_OK)
        return exec(st, "COMMIT", err);
    if (n)
        rollback(st);
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
    struct store_request r = {col_str(c[0]), col_str(c[1]), col_str(c[2]),
                              col_i64(c[3]), col_i64(c[4]), col_str(c[5])};
    return sc->fn(sc->ctx, &r);
}

ts_status store_scan_requests(struct store *st, int64_t from_ms, int64_t to_ms, store_request_fn fn,
                              void *ctx, struct ts_error *err)
{
    struct store_param p[2] = {p_int(from_ms), p_int(to_ms)};
    struct request_scan sc = {fn, ctx};
    return st->ops->run(st->db, STORE_ST_SCAN_REQUESTS, p, 2, request_row, &sc, NULL, err);
}

/* ---- ledger ------------------------------------------------------------ */

ts_status store_ledger_append(struct store *st, const struct store_ledger_entry *e,
                              int64_t *seq_out, struct ts_error *err)
{
#define LEDGER_PARAM(name, type) PARAM_##type(e->name)
    struct store_param p[] = {e->seq > 0 ? p_int(e->seq) : p_str(NULL),
                              STORE_LEDGER_COLUMNS(LEDGER_PARAM, COMMA)};
#undef LEDGER_PARAM
    int64_t seq = 0;
    ts_status rc = st->ops->run(st->db, STORE_ST_INS_LEDGER, p, 1 + STORE_LEDGER_NCOLS,
                                row_first_i64, &seq, NULL, err);
    if (rc == TS_OK && seq_out)
        *seq_out = seq;
    return rc;
}

ts_status store_ledger_lock(struct store *st, struct ts_error *err)
{
    ts_status rc = exec(st, st->ops->begin_write, err);
    if (rc != TS_OK || !st->ops->lock_ledger)
        return rc;
    rc = exec(st, st->ops->lock_ledger, err);
    if (rc != TS_OK)
        rollback(st);
    return rc;
}

ts_status store_ledger_unlock(struct store *st, int commit, struct ts_error *err)
{
    if (commit)
        return exec(st, "COMMIT", err);
    rollback(st);
    return TS_OK;
}

/* Fill e from a row of "seq, LEDGER_COLS"; strings point into cols. */
static int ledger_from_row(struct store_ledger_entry *e, const char *const *c, int n)
{
    if (n < 1 + STORE_LEDGER_NCOLS)
        return -1;
    memset(e, 0, sizeof(*e));
    e->seq = col_i64(*c++);
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
    struct store_param p[] = {p_str(source), p_int(ts_ms), p_blob(text ? text : "", len)};
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
    return sc->fn(sc->ctx, col_str(c[0]), col_i64(c[1]), c[2] ? c[2] : "", c[2] ? lens[2] : 0);
}

ts_status store_scan_expositions(struct store *st, store_exposition_fn fn, void *ctx,
                                 struct ts_error *err)
{
    struct expo_scan sc = {fn, ctx};
    return st->ops->run(st->db, STORE_ST_SCAN_EXPO, NULL, 0, expo_row, &sc, NULL, err);
}
