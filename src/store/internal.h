/*
 * internal.h - what the store's own files share (store.c, records.c,
 * agg.c): the connection, the column-list expanders and how a value is
 * bound and read back. Private to src/store/; backends see backend.h only.
 */
#ifndef TS_STORE_INTERNAL_H
#define TS_STORE_INTERNAL_H

#include <stdio.h>
#include <stdlib.h>
#include "store/backend.h"
#include "store/store.h"

/* Expanders for backend.h's column lists: COL_NAME gives a column's name,
 * IS_TEXT 1 for a string column (else 0); COMMA separates array items. */
#define COMMA ,
#define COL_NAME(name, type) #name
#define IS_TEXT(name, type) IS_TEXT_##type
#define IS_TEXT_TEXT 1
#define IS_TEXT_OPT 1
#define IS_TEXT_INT 0
#define IS_TEXT_HEX 0

/* "node, device, ..." */
#define SAMPLE_COLS STORE_SAMPLE_COLUMNS(COL_NAME, ", ")
#define READING_COLS STORE_READING_COLUMNS(COL_NAME, ", ")
#define ATTRIBUTION_COLS STORE_ATTRIBUTION_COLUMNS(COL_NAME, ", ")
#define LEDGER_COLS STORE_LEDGER_COLUMNS(COL_NAME, ", ")
#define EXPO_COLS STORE_EXPO_COLUMNS(COL_NAME, ", ")
/* The ledger's string columns, kept by store_ledger_last. */
enum { LEDGER_NTEXT = STORE_LEDGER_COLUMNS(IS_TEXT, +) };

/* The attributions this connection has seen, by their texts (attrib.c). */
struct store_attr_slot {
    uint64_t hash;
    int64_t id;
    char *key; /* the texts, each ending in NUL; NULL: a free slot */
    size_t len;
};
struct store_attr_cache {
    struct store_attr_slot *slot;
    size_t cap, n;       /* cap a power of two, or 0 */
    unsigned generation; /* the backend's connection the ids are from */
};

struct store {
    const struct store_ops *ops;
    void *db;
    char *last[LEDGER_NTEXT];  /* strings of the entry store_ledger_last returned */
    char *sql[STORE_ST_COUNT]; /* the text of each statement, while prepared */
    int samples_open;          /* a transaction of samples is held open (store_hold_samples) */
    size_t samples_held;       /* the batches stored in it */
    struct store_attr_cache attrs;
};

/* The newest attributions an empty cache is filled with, in one statement. */
#define STORE_ATTR_RECENT 131072
#define STORE_STR_(x) #x
#define STORE_STR(x) STORE_STR_(x)

/* attrib.c: the attribution id of each of order[0..n) into id[], looked
 * up, else added, in the open transaction. */
ts_status store__attributions(struct store *st, const struct store_sample *const *order, size_t n,
                              int64_t *id, struct ts_error *err);
/* Forget every attribution seen: the transaction that added some is gone. */
void store__attributions_forget(struct store *st);
/* store.c: commit the batches the open transaction of samples holds and
 * begin another (attrib.c: a transaction adds attributions before it
 * stores anything, so two writers never wait on each other's). */
ts_status store__samples_afresh(struct store *st, struct ts_error *err);

static inline struct store_param store__str(const char *s) { return (struct store_param){.s = s}; }
static inline struct store_param store__int(int64_t i)
{
    return (struct store_param){.is_int = 1, .i = i};
}
static inline struct store_param store__blob(const char *s, size_t len)
{
    return (struct store_param){.s = s, .is_blob = 1, .len = len};
}

static inline int64_t store__col_i64(const char *s) { return s ? strtoll(s, NULL, 10) : 0; }
static inline const char *store__col_str(const char *s) { return s ? s : ""; }
static inline void store__copy_hex(char dst[65], const char *src)
{
    snprintf(dst, 65, "%s", store__col_str(src));
}

/* How a column of each type is bound (PARAM_) and read back (GET_). */
#define PARAM_TEXT(v) store__str(v)
#define PARAM_OPT(v) store__str(store__col_str(v)) /* NULL is "" */
#define PARAM_INT(v) store__int(v)
#define PARAM_HEX(v) store__str(v)
#define GET_TEXT(dst, v) ((dst) = store__col_str(v))
#define GET_OPT GET_TEXT
#define GET_INT(dst, v) ((dst) = store__col_i64(v))
#define GET_HEX(dst, v) store__copy_hex(dst, v)

/* A row callback keeping the first column as an integer in *(int64_t *)ctx. */
static inline int store__row_first_i64(void *ctx, const char *const *cols, const size_t *lens,
                                       int n)
{
    (void)lens;
    *(int64_t *)ctx = n > 0 ? store__col_i64(cols[0]) : 0;
    return 1;
}

static inline ts_status store__exec(struct store *st, const char *sql, struct ts_error *err)
{
    return st->ops->exec(st->db, sql, NULL, NULL, err);
}

static inline void store__rollback(struct store *st)
{
    st->ops->exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

#endif
