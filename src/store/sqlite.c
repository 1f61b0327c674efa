/*
 * sqlite.c - the SQLite backend (URL sqlite:PATH): WAL journal, a busy
 * timeout so several handles and processes can write one file, writes in
 * BEGIN IMMEDIATE transactions (a reader never has to upgrade its lock).
 */
#include <sqlite3.h>
#include <stdlib.h>
#include "store/backend.h"

#define BUSY_TIMEOUT_MS 30000
#define WAL_RETRY_MS 10

struct sq {
    sqlite3 *db;
    sqlite3_stmt *st[STORE_ST_COUNT];
};

static ts_status sq_exec(void *db, const char *sql, store_row_fn row, void *ctx,
                         struct ts_error *err);

static ts_status sq_fail(struct sq *q, struct ts_error *err)
{
    return ts_err(err, TS_IO, "sqlite: %s", sqlite3_errmsg(q->db));
}

/* The file into WAL mode. Processes that open a new file at once each read
 * it (a shared lock) and then ask for the exclusive lock the switch needs;
 * SQLite answers all but one SQLITE_BUSY at once, without the busy handler
 * (waiting would deadlock): one of 8 ledger writers failed so under load
 * (tests/cli/ledger_concurrent.sh beside scripts/busy-check). Once one has
 * switched the file, asking again finds it in WAL: so ask again, for at
 * most the busy timeout, then once more to report what is wrong. */
static ts_status sq_wal(struct sq *q, struct ts_error *err)
{
    for (int waited = 0; waited < BUSY_TIMEOUT_MS; waited += WAL_RETRY_MS) {
        int rc = sqlite3_exec(q->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY)
            break;
        sqlite3_sleep(WAL_RETRY_MS);
    }
    return sq_exec(q, "PRAGMA journal_mode=WAL", NULL, NULL, err);
}

static ts_status sq_open(const char *path, int create, void **out, struct ts_error *err)
{
    struct sq *q = calloc(1, sizeof(*q));
    if (!q)
        return ts_err(err, TS_NOMEM, "out of memory");
    *out = q;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int got = sqlite3_open_v2(path, &q->db, flags, NULL);
    if (got == SQLITE_CANTOPEN && !create)
        return ts_err(err, TS_NOT_FOUND,
                      "sqlite: %s: no such database (this verb only reads one; "
                      "meter import or ledger record creates it)",
                      path);
    if (got != SQLITE_OK) {
        ts_status rc = q->db ? ts_err(err, TS_IO, "sqlite: %s: %s", path, sqlite3_errmsg(q->db))
                             : ts_err(err, TS_NOMEM, "sqlite: out of memory");
        return rc; /* the caller closes */
    }
    sqlite3_busy_timeout(q->db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(q->db, 1);
    ts_status rc = sq_wal(q, err);
    if (rc == TS_OK)
        rc = sq_exec(q, "PRAGMA synchronous=NORMAL", NULL, NULL, err);
    /* A block INSERT of many rows keeps a statement journal (to undo it
     * alone); in a temporary file that was 34,000 writes of a page per hour
     * of 512 GPUs: in memory it is a few pages a statement, and 25% less
     * system time for the import. */
    if (rc == TS_OK)
        rc = sq_exec(q, "PRAGMA temp_store=MEMORY", NULL, NULL, err);
    /* An import holds up to METER_COMMIT_BATCHES batches a transaction
     * (meter/batch.h): at 512 GPUs that dirties ~5,000 pages, which the
     * default 2 MiB cache spilled into the WAL mid-transaction and read
     * back: per hour of 512 GPUs 46,000 page writes and 31,000 reads; with
     * 16 MiB 36,000 and 20,000 (32 MiB: 27,000 and 11,000, for the same
     * time within noise, and an import's peak RSS 75 MiB instead of 60). */
    if (rc == TS_OK)
        rc = sq_exec(q, "PRAGMA cache_size=-16384", NULL, NULL, err);
    if (rc == TS_OK)
        rc = sq_exec(q, "PRAGMA foreign_keys=ON", NULL, NULL, err);
    return rc;
}

static void sq_close(void *db)
{
    struct sq *q = db;
    for (int i = 0; i < STORE_ST_COUNT; i++)
        sqlite3_finalize(q->st[i]);
    sqlite3_close(q->db);
    free(q);
}

static ts_status sq_bind(struct sq *q, sqlite3_stmt *s, const struct store_param *p, int np,
                         struct ts_error *err)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    for (int i = 0; i < np; i++) {
        int rc = p[i].is_int    ? sqlite3_bind_int64(s, i + 1, p[i].i)
                 : !p[i].s      ? sqlite3_bind_null(s, i + 1)
                 : p[i].is_blob ? sqlite3_bind_blob64(s, i + 1, p[i].s, p[i].len, SQLITE_STATIC)
                                : sqlite3_bind_text(s, i + 1, p[i].s, -1, SQLITE_STATIC);
        if (rc != SQLITE_OK)
            return sq_fail(q, err);
    }
    return TS_OK;
}

/* Column i of the current row: text, or raw bytes for a BLOB ("" when
 * empty: SQLite gives NULL for a zero-length blob). */
static const char *sq_column(sqlite3_stmt *s, int i, size_t *len)
{
    const char *v;
    if (sqlite3_column_type(s, i) == SQLITE_BLOB) {
        v = sqlite3_column_blob(s, i);
        v = v ? v : "";
    } else {
        v = (const char *)sqlite3_column_text(s, i);
    }
    *len = (size_t)sqlite3_column_bytes(s, i);
    return v;
}

/* Step s to the end, handing each row to row; stops early when row says so. */
static ts_status sq_step_all(struct sq *q, sqlite3_stmt *s, store_row_fn row, void *ctx,
                             struct ts_error *err)
{
    const char *cols[STORE_MAX_COLS];
    size_t lens[STORE_MAX_COLS];
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int n = sqlite3_column_count(s);
        n = n > STORE_MAX_COLS ? STORE_MAX_COLS : n;
        for (int i = 0; row && i < n; i++)
            cols[i] = sq_column(s, i, &lens[i]);
        if (row && row(ctx, cols, lens, n))
            return TS_OK;
    }
    return rc == SQLITE_DONE ? TS_OK : sq_fail(q, err);
}

static ts_status sq_prepare(void *db, int id, const char *sql, struct ts_error *err)
{
    struct sq *q = db;
    if (sqlite3_prepare_v3(q->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &q->st[id], NULL) !=
        SQLITE_OK)
        return sq_fail(q, err);
    return TS_OK;
}

static ts_status sq_run(void *db, int id, const struct store_param *p, int np, store_row_fn row,
                        void *ctx, int64_t *changes, struct ts_error *err)
{
    struct sq *q = db;
    sqlite3_stmt *s = q->st[id];
    ts_status rc = sq_bind(q, s, p, np, err);
    if (rc == TS_OK)
        rc = sq_step_all(q, s, row, ctx, err);
    if (rc == TS_OK && changes)
        *changes = sqlite3_changes64(q->db);
    sqlite3_reset(s); /* release the read snapshot */
    return rc;
}

static ts_status sq_exec(void *db, const char *sql, store_row_fn row, void *ctx,
                         struct ts_error *err)
{
    struct sq *q = db;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(q->db, sql, -1, &s, NULL) != SQLITE_OK)
        return sq_fail(q, err);
    ts_status rc = sq_step_all(q, s, row, ctx, err);
    sqlite3_finalize(s);
    return rc;
}

const struct store_ops store_sqlite_ops = {
    .name = "sqlite",
    .serial_pk = "INTEGER PRIMARY KEY AUTOINCREMENT",
    .begin_write = "BEGIN IMMEDIATE",
    .lock_schema = NULL, /* BEGIN IMMEDIATE already holds the write lock */
    .lock_ledger = NULL, /* the same lock: one writer at a time per file */
    .override_seq = "",
    .lock_samples = NULL, /* BEGIN IMMEDIATE: one writer at a time */
    .lock_agg = NULL,
    .device_order = "device", /* BINARY: byte order */
    .keep_order = "LIMIT -1 OFFSET 0",
    .seek_devices = 1,
    .open = sq_open,
    .close = sq_close,
    .prepare = sq_prepare,
    .run = sq_run,
    .exec = sq_exec,
};
