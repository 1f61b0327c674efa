/*
 * backend.h - what a store backend (a database driver) provides; private to
 * src/store/. store.c holds all the logic and all the SQL that both dialects
 * accept; a backend only connects, prepares, binds, steps and reports errors.
 * SQL uses $1, $2, ... placeholders, in order, in both dialects.
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

/* The statements store.c prepares once per connection, by id.
 * INS_BLOCK inserts STORE_BLOCK samples in one statement. */
#define STORE_BLOCK 64
#define STORE_MAX_PARAMS (STORE_BLOCK * 10)
enum { STORE_ST_INS_SAMPLE, STORE_ST_INS_BLOCK, STORE_ST_SCAN_SAMPLES, STORE_ST_INS_LEDGER,
       STORE_ST_LAST_LEDGER, STORE_ST_SCAN_LEDGER, STORE_ST_PUT_EXPO, STORE_ST_SCAN_EXPO,
       STORE_ST_COUNT };

struct store_ops {
    const char *name;       /* in error messages: "sqlite", "postgresql" */
    const char *serial_pk;  /* DDL of an ever-increasing integer primary key */
    const char *begin_write;/* starts a transaction that will write */
    const char *lock_schema;/* run after begin_write before migrating, or NULL */
    /* url without changes; *db gets the connection. */
    ts_status (*open)(const char *url, void **db, struct ts_error *err);
    void (*close)(void *db);
    /* Prepare sql under id (the text must outlive the connection). */
    ts_status (*prepare)(void *db, int id, const char *sql, struct ts_error *err);
    /* Run statement id; rows go to row (may be NULL); *changes (may be NULL)
     * gets the number of rows written. */
    ts_status (*run)(void *db, int id, const struct store_param *p, int np,
                     store_row_fn row, void *ctx, int64_t *changes, struct ts_error *err);
    /* Run one statement without parameters (DDL, BEGIN, COMMIT...). */
    ts_status (*exec)(void *db, const char *sql, store_row_fn row, void *ctx,
                      struct ts_error *err);
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

#endif
