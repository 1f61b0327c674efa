/*
 * pg.c - the PostgreSQL backend (URL postgres://... or postgresql://...)
 * through libpq: named prepared statements, parameters as text, result rows
 * streamed in single-row mode so a long scan never sits in memory whole.
 * A connection found broken between transactions is reset (and its
 * statements prepared again) before the next statement; one lost inside a
 * transaction fails that transaction, which the caller retries whole. A
 * BEGIN that finds the connection dead (the server restarted since the last
 * call) reconnects and begins again at once: nothing had been done yet.
 * BYTEA values travel in binary as parameters and come back unescaped.
 * Many rows go in one statement as one array literal per column (run_rows):
 * one Bind of a few parameters instead of one per value; faster still, in
 * binary COPY (copy_rows), each value as its bytes, no text to parse.
 */
#include <endian.h>
#include <libpq-fe.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/backend.h"
#include "util/sbuf.h"

#define BYTEA_OID 17             /* pg_type.oid of bytea, fixed since PostgreSQL 7 */
#define UNIQUE_VIOLATION "23505" /* SQLSTATE */
/* What COPY's binary format sends in one PQputCopyData: a row is far less. */
#define PQ_COPY_CHUNK ((size_t)64 << 10)
/* One column's array literal: STORE_ARRAY_ROWS values of a few hundred
 * bytes at most, far below PostgreSQL's 1 GB field limit. */
#define PQ_ARRAY_MAX ((size_t)256 << 20)

struct pq {
    PGconn *c;
    const char *sql[STORE_ST_COUNT];
    int in_tx;
    unsigned generation; /* connections made since the first */
};

static ts_status pq_fail(struct pq *q, const PGresult *r, struct ts_error *err)
{
    const char *m = r ? PQresultErrorMessage(r) : "";
    if (!*m)
        m = PQerrorMessage(q->c);
    int len = (int)strlen(m);
    while (len > 0 && (m[len - 1] == '\n' || m[len - 1] == ' '))
        len--;
    return ts_err(err, TS_IO, "postgresql: %.*s", len, m);
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg; /* NOTICEs such as "relation already exists, skipping" */
}

/* create is moot: connecting never creates a PostgreSQL database. */
static ts_status pq_open(const char *url, int create, void **out, struct ts_error *err)
{
    (void)create;
    struct pq *q = calloc(1, sizeof(*q));
    if (!q)
        return ts_err(err, TS_NOMEM, "out of memory");
    *out = q;
    q->c = PQconnectdb(url);
    if (!q->c)
        return ts_err(err, TS_NOMEM, "postgresql: out of memory");
    if (PQstatus(q->c) != CONNECTION_OK)
        return pq_fail(q, NULL, err);
    PQsetNoticeProcessor(q->c, quiet, NULL);
    return TS_OK;
}

static unsigned pq_generation(void *db) { return ((struct pq *)db)->generation; }

static void pq_close(void *db)
{
    struct pq *q = db;
    PQfinish(q->c);
    free(q);
}

static ts_status pq_prepare_now(struct pq *q, int id, struct ts_error *err)
{
    char name[16];
    snprintf(name, sizeof(name), "s%d", id);
    PGresult *r = PQprepare(q->c, name, q->sql[id], 0, NULL);
    ts_status rc = PQresultStatus(r) == PGRES_COMMAND_OK ? TS_OK : pq_fail(q, r, err);
    PQclear(r);
    return rc;
}

static ts_status pq_prepare(void *db, int id, const char *sql, struct ts_error *err)
{
    struct pq *q = db;
    q->sql[id] = sql;
    return pq_prepare_now(q, id, err);
}

/* Reconnect a broken connection, unless a transaction was open on it. */
static ts_status pq_ensure(struct pq *q, struct ts_error *err)
{
    if (PQstatus(q->c) == CONNECTION_OK)
        return TS_OK;
    if (q->in_tx)
        return ts_err(err, TS_IO, "postgresql: connection lost inside a transaction");
    PQreset(q->c);
    if (PQstatus(q->c) != CONNECTION_OK)
        return pq_fail(q, NULL, err);
    q->generation++;
    ts_status rc = TS_OK;
    for (int i = 0; rc == TS_OK && i < STORE_ST_COUNT; i++)
        if (q->sql[i])
            rc = pq_prepare_now(q, i, err);
    return rc;
}

/* Column i of row t: text as it comes, bytea unescaped into *own (freed
 * by the caller with PQfreemem); -1 when out of memory. */
static int pq_column(const PGresult *r, int t, int i, const char **v, size_t *len,
                     unsigned char **own)
{
    *own = NULL;
    *v = PQgetisnull(r, t, i) ? NULL : PQgetvalue(r, t, i);
    *len = *v ? (size_t)PQgetlength(r, t, i) : 0;
    if (!*v || PQftype(r, i) != BYTEA_OID)
        return 0;
    *own = PQunescapeBytea((const unsigned char *)*v, len);
    *v = *own ? (const char *)*own : NULL;
    return *own ? 0 : -1;
}

/* Hand every row of r to row; returns 1 when row asked to stop, -1 when
 * out of memory, else 0. */
static int pq_rows(const PGresult *r, store_row_fn row, void *ctx)
{
    const char *cols[STORE_MAX_COLS];
    size_t lens[STORE_MAX_COLS];
    unsigned char *own[STORE_MAX_COLS];
    int n = PQnfields(r) > STORE_MAX_COLS ? STORE_MAX_COLS : PQnfields(r);
    for (int t = 0; row && t < PQntuples(r); t++) {
        int stop = 0;
        for (int i = 0; i < n; i++)
            stop |= pq_column(r, t, i, &cols[i], &lens[i], &own[i]);
        if (!stop)
            stop = row(ctx, cols, lens, n) ? 1 : 0;
        for (int i = 0; i < n; i++)
            PQfreemem(own[i]);
        if (stop)
            return stop;
    }
    return 0;
}

/* Read every result of the query in flight; the first error wins. */
static ts_status pq_drain(struct pq *q, store_row_fn row, void *ctx, int64_t *changes,
                          struct ts_error *err)
{
    ts_status rc = TS_OK;
    int stop = 0;
    PGresult *r;
    while ((r = PQgetResult(q->c)) != NULL) {
        ExecStatusType s = PQresultStatus(r);
        if (s == PGRES_SINGLE_TUPLE || s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
            if (!stop && rc == TS_OK)
                stop = pq_rows(r, row, ctx);
            if (stop < 0 && rc == TS_OK)
                rc = ts_err(err, TS_NOMEM, "postgresql: out of memory");
            if (s != PGRES_SINGLE_TUPLE && changes)
                *changes = strtoll(PQcmdTuples(r), NULL, 10);
        } else if (rc == TS_OK) {
            rc = pq_fail(q, r, err);
        }
        PQclear(r);
    }
    return rc;
}

static ts_status pq_send(struct pq *q, int id, int np, const char *const *vals, const int *lens,
                         const int *fmt, store_row_fn row, void *ctx, int64_t *changes,
                         struct ts_error *err)
{
    char name[16];
    snprintf(name, sizeof(name), "s%d", id);
    if (!PQsendQueryPrepared(q->c, name, np, vals, lens, fmt, 0))
        return pq_fail(q, NULL, err);
    PQsetSingleRowMode(q->c);
    return pq_drain(q, row, ctx, changes, err);
}

static ts_status pq_run(void *db, int id, const struct store_param *p, int np, store_row_fn row,
                        void *ctx, int64_t *changes, struct ts_error *err)
{
    struct pq *q = db;
    char num[STORE_MAX_PARAMS][24];
    const char *vals[STORE_MAX_PARAMS];
    int fmt[STORE_MAX_PARAMS], lens[STORE_MAX_PARAMS];
    if (np > STORE_MAX_PARAMS)
        return ts_err(err, TS_INTERNAL, "postgresql: %d parameters, at most %d", np,
                      STORE_MAX_PARAMS);
    ts_status rc = pq_ensure(q, err);
    if (rc != TS_OK)
        return rc;
    for (int i = 0; i < np; i++) {
        snprintf(num[i], sizeof(num[i]), "%lld", (long long)p[i].i);
        vals[i] = p[i].is_int ? num[i] : p[i].s;
        fmt[i] = p[i].is_blob && !p[i].is_int; /* 1: binary */
        if (fmt[i] && p[i].len > INT_MAX)
            return ts_err(err, TS_TOO_LARGE, "postgresql: a value of %zu bytes", p[i].len);
        lens[i] = fmt[i] ? (int)p[i].len : 0;
    }
    return pq_send(q, id, np, vals, lens, fmt, row, ctx, changes, err);
}

/* One value as an element of an array literal: NULL, a number, or a
 * string in double quotes with its quotes and backslashes escaped. */
static void pq_element(struct ts_sbuf *b, const struct store_param *p)
{
    if (p->is_int) {
        ts_sbuf_printf(b, "%lld", (long long)p->i);
        return;
    }
    if (!p->s) {
        ts_sbuf_puts(b, "NULL");
        return;
    }
    ts_sbuf_puts(b, "\"");
    for (const char *s = p->s; *s;) {
        size_t n = strcspn(s, "\"\\");
        ts_sbuf_add(b, s, n);
        s += n;
        if (*s) {
            char esc[2] = {'\\', *s++};
            ts_sbuf_add(b, esc, 2);
        }
    }
    ts_sbuf_puts(b, "\"");
}

static ts_status pq_run_rows(void *db, int id, const struct store_param *p, int ncols, size_t nrows,
                             store_row_fn row, void *ctx, int64_t *changes, struct ts_error *err)
{
    struct pq *q = db;
    struct ts_sbuf col[STORE_MAX_COLS];
    const char *vals[STORE_MAX_COLS];
    if (ncols > STORE_MAX_COLS)
        return ts_err(err, TS_INTERNAL, "postgresql: %d columns, at most %d", ncols,
                      STORE_MAX_COLS);
    ts_status rc = pq_ensure(q, err);
    for (int c = 0; c < ncols; c++) {
        ts_sbuf_init(&col[c], PQ_ARRAY_MAX);
        ts_sbuf_puts(&col[c], "{");
        for (size_t r = 0; r < nrows; r++) {
            if (r)
                ts_sbuf_puts(&col[c], ",");
            pq_element(&col[c], &p[r * (size_t)ncols + (size_t)c]);
        }
        ts_sbuf_puts(&col[c], "}");
        vals[c] = ts_sbuf_str(&col[c]);
        if (rc == TS_OK && ts_sbuf_status(&col[c]) != TS_OK)
            rc = ts_err(err, TS_TOO_LARGE, "postgresql: an array of %zu rows too large", nrows);
    }
    if (rc == TS_OK)
        rc = pq_send(q, id, ncols, vals, NULL, NULL, row, ctx, changes, err);
    for (int c = 0; c < ncols; c++)
        ts_sbuf_release(&col[c]);
    return rc;
}

/* COPY's binary format (the PostgreSQL manual, "COPY", File Formats): a
 * signature, flags and header extension length, then per row the number of
 * fields and each as a length (-1: NULL) and its bytes, then -1. */
static const char copy_head[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

struct copy_out {
    struct pq *q;
    char buf[PQ_COPY_CHUNK];
    size_t len;
    int failed; /* PQputCopyData refused: the server ended the COPY */
};

static void copy_flush(struct copy_out *o)
{
    if (!o->failed && o->len && PQputCopyData(o->q->c, o->buf, (int)o->len) != 1)
        o->failed = 1;
    o->len = 0;
}

static void copy_bytes(struct copy_out *o, const void *v, size_t n)
{
    while (n) {
        if (o->len == sizeof(o->buf))
            copy_flush(o);
        size_t k = n < sizeof(o->buf) - o->len ? n : sizeof(o->buf) - o->len;
        memcpy(o->buf + o->len, v, k);
        o->len += k;
        v = (const char *)v + k;
        n -= k;
    }
}

static void copy_u32(struct copy_out *o, uint32_t v)
{
    v = htobe32(v);
    copy_bytes(o, &v, 4);
}

/* One field: an int8 as 8 bytes big-endian, a string as its bytes. */
static void copy_field(struct copy_out *o, const struct store_param *p)
{
    if (p->is_int && sizeof(o->buf) - o->len >= 12) { /* the usual case, in place */
        uint32_t n = htobe32(8);
        uint64_t v = htobe64((uint64_t)p->i);
        memcpy(o->buf + o->len, &n, 4);
        memcpy(o->buf + o->len + 4, &v, 8);
        o->len += 12;
    } else if (p->is_int) {
        uint64_t v = htobe64((uint64_t)p->i);
        copy_u32(o, 8);
        copy_bytes(o, &v, 8);
    } else if (!p->s) {
        copy_u32(o, UINT32_MAX); /* -1: NULL */
    } else {
        size_t n = p->is_blob ? p->len : strlen(p->s);
        copy_u32(o, (uint32_t)n);
        copy_bytes(o, p->s, n);
    }
}

static void copy_rows_out(struct copy_out *o, const struct store_param *p, int ncols, size_t nrows)
{
    uint16_t nf = htobe16((uint16_t)ncols), end = UINT16_MAX;
    copy_bytes(o, copy_head, sizeof(copy_head));
    for (size_t r = 0; r < nrows && !o->failed; r++) {
        copy_bytes(o, &nf, 2);
        for (int c = 0; c < ncols; c++)
            copy_field(o, &p[r * (size_t)ncols + (size_t)c]);
    }
    copy_bytes(o, &end, 2);
    copy_flush(o);
}

/* The COPY's result: its row count, or a unique violation (*conflict). */
static ts_status copy_result(struct pq *q, int64_t *changes, int *conflict, struct ts_error *err)
{
    ts_status rc = TS_OK;
    PGresult *r;
    while ((r = PQgetResult(q->c)) != NULL) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (PQresultStatus(r) == PGRES_COMMAND_OK && changes)
            *changes = strtoll(PQcmdTuples(r), NULL, 10);
        else if (PQresultStatus(r) != PGRES_COMMAND_OK && state && !strcmp(state, UNIQUE_VIOLATION))
            *conflict = 1;
        else if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == TS_OK)
            rc = pq_fail(q, r, err);
        PQclear(r);
    }
    return rc;
}

static ts_status pq_copy_rows(void *db, const char *copy_sql, const struct store_param *p,
                              int ncols, size_t nrows, int64_t *changes, int *conflict,
                              struct ts_error *err)
{
    struct pq *q = db;
    *conflict = 0;
    ts_status rc = pq_ensure(q, err);
    if (rc != TS_OK)
        return rc;
    PGresult *r = PQexec(q->c, copy_sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        rc = pq_fail(q, r, err);
        PQclear(r);
        return rc;
    }
    PQclear(r);
    struct copy_out *o = malloc(sizeof(*o));
    int nomem = !o;
    if (o) {
        *o = (struct copy_out){.q = q};
        copy_rows_out(o, p, ncols, nrows);
        free(o);
    }
    PQputCopyEnd(q->c, nomem ? "out of memory" : NULL); /* the result tells */
    rc = copy_result(q, changes, conflict, err);
    return nomem ? ts_err(err, TS_NOMEM, "postgresql: out of memory") : rc;
}

static ts_status pq_exec_once(struct pq *q, const char *sql, store_row_fn row, void *ctx,
                              struct ts_error *err)
{
    ts_status rc = pq_ensure(q, err);
    if (rc != TS_OK)
        return rc;
    if (!PQsendQueryParams(q->c, sql, 0, NULL, NULL, NULL, NULL, 0))
        return pq_fail(q, NULL, err);
    return pq_drain(q, row, ctx, NULL, err);
}

static ts_status pq_exec(void *db, const char *sql, store_row_fn row, void *ctx,
                         struct ts_error *err)
{
    struct pq *q = db;
    int ending = strcmp(sql, "COMMIT") == 0 || strcmp(sql, "ROLLBACK") == 0;
    int begin = strncmp(sql, "BEGIN", 5) == 0;
    if (ending && PQstatus(q->c) != CONNECTION_OK) {
        q->in_tx = 0;
        return strcmp(sql, "COMMIT") == 0 ? pq_fail(q, NULL, err) : TS_OK;
    }
    ts_status rc = pq_exec_once(q, sql, row, ctx, err);
    if (rc != TS_OK && begin && !q->in_tx && PQstatus(q->c) != CONNECTION_OK)
        rc = pq_exec_once(q, sql, row, ctx, err); /* the server went away since last time */
    q->in_tx = ending ? 0 : begin ? rc == TS_OK : q->in_tx;
    return rc;
}

const struct store_ops store_pg_ops = {
    .name = "postgresql",
    .serial_pk = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    .begin_write = "BEGIN",
    /* concurrent openers of a fresh database would race on CREATE TABLE */
    .lock_schema = "SELECT pg_advisory_xact_lock(7598452147)",
    /* appends read the head, hash on it and insert: one appender at a time;
     * READ COMMITTED gives the head read after the lock a fresh snapshot */
    .lock_ledger = "SELECT pg_advisory_xact_lock(7598452148)",
    .override_seq = "OVERRIDING SYSTEM VALUE", /* the seq is GENERATED ALWAYS */
    .lock_samples = "SELECT pg_advisory_xact_lock_shared(7598452149)",
    .lock_agg = "SELECT pg_advisory_xact_lock(7598452149)",
    .device_order = "device COLLATE \"C\"", /* not the database's locale */
    .keep_order = "OFFSET 0",
    .open = pq_open,
    .close = pq_close,
    .prepare = pq_prepare,
    .run = pq_run,
    .exec = pq_exec,
    .run_rows = pq_run_rows,
    .generation = pq_generation,
    .copy_rows = pq_copy_rows,
    .brin = 1,
};
