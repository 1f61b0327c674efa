/*
 * backend.h - what a store backend (a database driver) provides, and the
 * columns of the store's tables; private to src/store/. store.c holds all
 * the logic and all the SQL that both dialects accept (schema.c the
 * migrations); a backend only connects, prepares, binds, steps and reports
 * errors. SQL uses $1, $2, ... placeholders, in order, in both dialects.
 */
#ifndef TS_STORE_BACKEND_H
#define TS_STORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "util/error.h"

/* A bound value: a string (NULL binds SQL NULL), or, when is_int, i, or,
 * when is_blob, the len bytes at s (any bytes, NUL included). */
struct store_param {
    int is_int;
    int64_t i;
    const char *s;
    int is_blob;
    size_t len;
};

/* Called per result row with the columns as text (NULL for SQL NULL) and
 * their lengths in bytes; a BYTEA/BLOB column comes as its raw bytes (not
 * NUL-terminated). Return non-zero to stop reading rows. */
typedef int (*store_row_fn)(void *ctx, const char *const *cols, const size_t *lens, int ncols);

/* The columns each statement names, in order: X(name, type) for each, SEP
 * between two. The names are those of the members of struct store_sample
 * and struct store_ledger_entry; type says how a value is bound and read
 * back: TEXT a string, OPT a string that may be NULL (bound as ""), INT an int64_t, HEX a string kept in a char[65],
 * BLOB bytes with a length. A ledger row's seq is not listed: the database
 * assigns it. schema.c's migrations create these columns; their text never
 * changes, so a migration that adds a column adds it here as well. */
#define STORE_SAMPLE_COLUMNS(X, SEP)  \
    X(node, TEXT) SEP X(device, TEXT) \
    SEP X(ts_ms, INT)                 \
    SEP X(model, TEXT)                \
    SEP X(profile, TEXT)              \
    SEP X(tenant, TEXT)               \
    SEP X(ns, TEXT)                   \
    SEP X(pod, TEXT)                  \
    SEP X(share_ppm, INT)             \
    SEP X(util_ppm, INT)              \
    SEP X(workload, OPT)
/* Since schema v9 a sample is stored as a reading (its device, time and
 * numbers) naming its attribution (the texts many readings share), each
 * attribution stored once; view samples joins them back into the columns
 * above. */
#define STORE_READING_COLUMNS(X, SEP) \
    X(device, TEXT) SEP X(ts_ms, INT) \
    SEP X(attribution, INT)           \
    SEP X(share_ppm, INT)             \
    SEP X(util_ppm, INT)
#define STORE_ATTRIBUTION_COLUMNS(X, SEP) \
    X(node, TEXT) SEP X(model, TEXT)      \
    SEP X(profile, TEXT)                  \
    SEP X(tenant, TEXT)                   \
    SEP X(ns, TEXT)                       \
    SEP X(pod, TEXT)                      \
    SEP X(workload, OPT)
#define STORE_LEDGER_COLUMNS(X, SEP) \
    X(ts_ms, INT) SEP X(node, TEXT)  \
    SEP X(gpu_uuid, TEXT)            \
    SEP X(instance_uuid, TEXT)       \
    SEP X(gi_id, TEXT)               \
    SEP X(profile, TEXT)             \
    SEP X(placement, TEXT)           \
    SEP X(tenant, TEXT)              \
    SEP X(workload, TEXT)            \
    SEP X(source, TEXT)              \
    SEP X(hash, HEX)                 \
    SEP X(prev_hash, HEX)            \
    SEP X(mac, HEX)
#define STORE_EXPO_COLUMNS(X, SEP)    \
    X(source, TEXT) SEP X(ts_ms, INT) \
    SEP X(body, BLOB)

#define STORE_ONE_(name, type) 1
enum {
    STORE_SAMPLE_NCOLS = STORE_SAMPLE_COLUMNS(STORE_ONE_, +),
    STORE_READING_NCOLS = STORE_READING_COLUMNS(STORE_ONE_, +),
    STORE_ATTRIBUTION_NCOLS = STORE_ATTRIBUTION_COLUMNS(STORE_ONE_, +),
    STORE_LEDGER_NCOLS = STORE_LEDGER_COLUMNS(STORE_ONE_, +),
    STORE_EXPO_NCOLS = STORE_EXPO_COLUMNS(STORE_ONE_, +),
};

/* The most columns a backend hands to a row callback: the widest row is a
 * ledger entry with its seq. */
#define STORE_MAX_COLS 16
_Static_assert(1 + STORE_LEDGER_NCOLS <= STORE_MAX_COLS, "ledger rows exceed STORE_MAX_COLS");

/* The statements store.c prepares once per connection, by id.
 * INS_BLOCK inserts STORE_BLOCK readings in one statement; INS_ARRAYS, only
 * where the backend has run_rows, up to STORE_ARRAY_ROWS readings given as
 * one array per column. */
#define STORE_BLOCK 64
#define STORE_MAX_PARAMS (STORE_BLOCK * STORE_READING_NCOLS)
#define STORE_ARRAY_ROWS 8192
enum {
    STORE_ST_INS_SAMPLE,
    STORE_ST_INS_BLOCK,
    STORE_ST_INS_ARRAYS,
    STORE_ST_SCAN_SAMPLES,
    STORE_ST_FIRST_DEVICE,
    STORE_ST_NEXT_DEVICE,
    STORE_ST_SCAN_DEVICE,
    STORE_ST_INS_LEDGER,
    STORE_ST_LAST_LEDGER,
    STORE_ST_SCAN_LEDGER,
    STORE_ST_PUT_EXPO,
    STORE_ST_SCAN_EXPO,
    STORE_ST_INS_REQUESTS,
    STORE_ST_SCAN_REQUESTS,
    STORE_ST_DEVICE_AFTER,
    STORE_ST_SPLIT_AFTER,
    STORE_ST_AGG_FIND,
    STORE_ST_AGG_DROP,
    STORE_ST_AGG_CLAIM,
    STORE_ST_AGG_GC_TOTALS,
    STORE_ST_AGG_GC_TAILS,
    STORE_ST_AGG_DONE,
    STORE_ST_AGG_PUT_TOTAL,
    STORE_ST_AGG_PUT_TAIL,
    STORE_ST_AGG_TOTALS,
    STORE_ST_AGG_TAILS,
    STORE_ST_AGG_STALE,
    STORE_ST_ATTR_FIND,
    STORE_ST_ATTR_ADD,
    STORE_ST_ATTR_RECENT,
    STORE_ST_ATTR_FIND_MANY,
    STORE_ST_ATTR_ADD_MANY,
    STORE_ST_COUNT
};

struct store_ops {
    const char *name;         /* in error messages: "sqlite", "postgresql" */
    const char *serial_pk;    /* DDL of an ever-increasing integer primary key */
    const char *begin_write;  /* starts a transaction that will write */
    const char *lock_schema;  /* run after begin_write before migrating, or NULL */
    const char *lock_ledger;  /* run after begin_write before a ledger append, or NULL */
    const char *override_seq; /* what lets an INSERT give the serial key's value */
    /* run after begin_write before storing samples (shared), and before
     * claiming a window of the usage aggregate (exclusive), or NULL: a
     * claim is never made while a batch is between its insert and its
     * commit (agg.c) */
    const char *lock_samples, *lock_agg;
    const char *device_order; /* ORDER BY device in byte order (a device's keys adjacent) */
    const char *keep_order;   /* ends a sorted subquery the planner must not flatten */
    int seek_devices;         /* scan samples one device at a time (store.c) */
    /* url without changes; *db gets the connection. With create 0 a database
     * that does not exist is TS_NOT_FOUND naming it, and none is made. */
    ts_status (*open)(const char *url, int create, void **db, struct ts_error *err);
    void (*close)(void *db);
    /* Prepare sql under id (the text must outlive the connection). */
    ts_status (*prepare)(void *db, int id, const char *sql, struct ts_error *err);
    /* Run statement id; rows go to row (may be NULL); *changes (may be NULL)
     * gets the number of rows written. */
    ts_status (*run)(void *db, int id, const struct store_param *p, int np, store_row_fn row,
                     void *ctx, int64_t *changes, struct ts_error *err);
    /* Run one statement without parameters (DDL, BEGIN, COMMIT...). */
    ts_status (*exec)(void *db, const char *sql, store_row_fn row, void *ctx, struct ts_error *err);
    /* Optional (NULL: the backend has no arrays): run statement id, which
     * takes one array per column, on nrows rows of ncols values, p row after
     * row; rows go to row (may be NULL). */
    ts_status (*run_rows)(void *db, int id, const struct store_param *p, int ncols, size_t nrows,
                          store_row_fn row, void *ctx, int64_t *changes, struct ts_error *err);
    /* Optional (NULL: no bulk load): run copy_sql, a COPY ... FROM STDIN,
     * on nrows rows of ncols values (p row after row) inside the open
     * transaction; *changes gets the rows stored. A row whose key is
     * already taken fails the statement: then *conflict is 1, TS_OK is
     * returned and the transaction must be rolled back. */
    ts_status (*copy_rows)(void *db, const char *copy_sql, const struct store_param *p, int ncols,
                           size_t nrows, int64_t *changes, int *conflict, struct ts_error *err);
    int brin; /* has BRIN indexes: runs the migrations' "BRIN:" statements, not "BTREE:" */
    /* Optional (NULL: the connection is never remade): a number that
     * changes each time the backend connects again (a restart, a
     * failover, a restored database), so what the store cached of the
     * database it talked to goes. */
    unsigned (*generation)(void *db);
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

/* schema.c: the newest schema version this build knows (the number of
 * migrations), and applying migration v (1 .. store__schema_version) on db,
 * recording v in schema_version; the caller holds the write transaction. */
extern const int64_t store__schema_version;
ts_status store__apply_migration(const struct store_ops *ops, void *db, int64_t v,
                                 struct ts_error *err);

#endif
