/*
 * attrib.c - a sample's attribution (node, model, profile, tenant,
 * namespace, pod, workload: the texts every scrape of a device repeats),
 * stored once in table attributions and named by its id in each reading
 * (schema v9). Each connection keeps the ids it has seen; a batch's new
 * ones are looked up, else added, in its own transaction, so an id is
 * only ever used in the transaction that added it or after its commit:
 * when a transaction of samples is rolled back, every id is forgotten.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/internal.h"

/* At most this many ids are kept (about 40 MiB at most: a fleet of 70,000
 * MIG instances fits); past it the cache starts over, at a look-up per
 * attribution (in arrays where the backend has them). An empty cache is
 * first filled with the newest half as many (STORE_ST_ATTR_RECENT). */
#define ATTR_CACHE_MAX ((size_t)1 << 18)
_Static_assert(ATTR_CACHE_MAX / 2 == STORE_ATTR_RECENT, "the cache holds what is preloaded");

/* The attribution's columns of s, in backend.h's order. */
#define ATTR_FIELD(name, type) s->name
/* Whether a column may be NULL in a struct store_sample (bound as ""). */
#define ATTR_NULLABLE(name, type) ATTR_NULLABLE_##type
#define ATTR_NULLABLE_TEXT 0
#define ATTR_NULLABLE_OPT 1

/* Text i of s's attribution ("" for NULL). */
static const char *attr_text(const struct store_sample *s, int i)
{
    const char *t[] = {STORE_ATTRIBUTION_COLUMNS(ATTR_FIELD, COMMA)};
    return t[i] ? t[i] : "";
}

/* FNV-1a over the texts, each with its terminating NUL. */
static uint64_t attr_hash(const struct store_sample *s)
{
    uint64_t h = 14695981039346656037u;
    for (int i = 0; i < STORE_ATTRIBUTION_NCOLS; i++) {
        const unsigned char *p = (const unsigned char *)attr_text(s, i);
        do
            h = (h ^ *p) * 1099511628211u;
        while (*p++);
    }
    return h;
}

/* Whether key (texts each ending in NUL, len bytes) holds s's texts. */
static int attr_key_is(const char *key, size_t len, const struct store_sample *s)
{
    const char *end = key + len;
    for (int i = 0; i < STORE_ATTRIBUTION_NCOLS; i++) {
        size_t n = strlen(attr_text(s, i)) + 1;
        if ((size_t)(end - key) < n || memcmp(key, attr_text(s, i), n) != 0)
            return 0;
        key += n;
    }
    return key == end;
}

static struct store_attr_slot *attr_find(struct store_attr_cache *c, uint64_t h,
                                         const struct store_sample *s)
{
    if (!c->cap)
        return NULL;
    for (size_t i = h & (c->cap - 1); c->slot[i].key; i = (i + 1) & (c->cap - 1))
        if (c->slot[i].hash == h && attr_key_is(c->slot[i].key, c->slot[i].len, s))
            return &c->slot[i];
    return NULL;
}

void store__attributions_forget(struct store *st)
{
    struct store_attr_cache *c = &st->attrs;
    for (size_t i = 0; i < c->cap; i++)
        free(c->slot[i].key);
    free(c->slot);
    *c = (struct store_attr_cache){.generation = c->generation};
}

/* Room for one more id: the table doubled at half full, emptied at
 * ATTR_CACHE_MAX. 0 when out of memory (the cache is then empty). */
static int attr_room(struct store *st)
{
    struct store_attr_cache *c = &st->attrs;
    if (c->n >= ATTR_CACHE_MAX)
        store__attributions_forget(st);
    if (2 * (c->n + 1) <= c->cap)
        return 1;
    size_t cap = c->cap ? 2 * c->cap : 64;
    struct store_attr_slot *slot = calloc(cap, sizeof(*slot));
    if (!slot)
        return 0;
    for (size_t i = 0; i < c->cap; i++) {
        size_t j = c->slot[i].hash & (cap - 1);
        while (c->slot[i].key && slot[j].key)
            j = (j + 1) & (cap - 1);
        if (c->slot[i].key)
            slot[j] = c->slot[i];
    }
    free(c->slot);
    c->slot = slot;
    c->cap = cap;
    return 1;
}

/* Keep s's id (a cache that cannot grow just forgets). */
static void attr_keep(struct store *st, uint64_t h, const struct store_sample *s, int64_t id)
{
    size_t len = 0;
    for (int i = 0; i < STORE_ATTRIBUTION_NCOLS; i++)
        len += strlen(attr_text(s, i)) + 1;
    char *key = malloc(len);
    if (!key || !attr_room(st)) {
        free(key);
        return;
    }
    char *at = key;
    for (int i = 0; i < STORE_ATTRIBUTION_NCOLS; i++) {
        size_t n = strlen(attr_text(s, i)) + 1;
        memcpy(at, attr_text(s, i), n);
        at += n;
    }
    struct store_attr_cache *c = &st->attrs;
    size_t j = h & (c->cap - 1);
    while (c->slot[j].key)
        j = (j + 1) & (c->cap - 1);
    c->slot[j] = (struct store_attr_slot){h, id, key, len};
    c->n++;
}

struct found_id {
    int64_t id;
    int found;
};

static int row_id(void *ctx, const char *const *cols, const size_t *lens, int n)
{
    (void)lens;
    struct found_id *f = ctx;
    f->found = n > 0 && cols[0];
    f->id = f->found ? store__col_i64(cols[0]) : 0;
    return 1;
}

/* A row of STORE_ST_ATTR_RECENT: id, then the texts, kept; not one with a
 * NUL inside a text (written behind tessera's back: it would be kept as
 * its text up to the NUL, and another attribution's samples named by it). */
static int row_recent(void *ctx, const char *const *c, const size_t *lens, int n)
{
    struct store *st = ctx;
    if (n < 1 + STORE_ATTRIBUTION_NCOLS)
        return 1;
    for (int i = 1; i <= STORE_ATTRIBUTION_NCOLS; i++)
        if (c[i] && strlen(c[i]) != lens[i])
            return 0;
    struct store_sample s = {0};
    const char *const *text = c + 1; /* after the id */
#define ATTR_GET(name, type) GET_##type(s.name, *text++);
    STORE_ATTRIBUTION_COLUMNS(ATTR_GET, )
#undef ATTR_GET
    attr_keep(st, attr_hash(&s), &s, store__col_i64(c[0]));
    return 0;
}

/* s's attribution's id from the database: added, else (there already, or
 * another writer added it meanwhile) looked up. One statement for a new
 * attribution, where looking up first would take two. */
static ts_status attr_fetch(struct store *st, const struct store_sample *s, int64_t *id,
                            struct ts_error *err)
{
    struct store_param p[STORE_ATTRIBUTION_NCOLS];
    for (int i = 0; i < STORE_ATTRIBUTION_NCOLS; i++)
        p[i] = store__str(attr_text(s, i));
    static const int tries[] = {STORE_ST_ATTR_ADD, STORE_ST_ATTR_FIND};
    struct found_id f = {0, 0};
    ts_status rc = TS_OK;
    for (size_t t = 0; rc == TS_OK && !f.found && t < sizeof(tries) / sizeof(tries[0]); t++)
        rc = st->ops->run(st->db, tries[t], p, STORE_ATTRIBUTION_NCOLS, row_id, &f, NULL, err);
    if (rc == TS_OK && !f.found)
        rc = ts_err(err, TS_IO, "%s: the attribution of device '%s' was neither found nor added",
                    st->ops->name, store__col_str(s->device));
    *id = f.id;
    return rc;
}

/* Order of the attribution texts. */
static int attr_cmp(const struct store_sample *x, const struct store_sample *y)
{
    for (int i = 0; i < STORE_ATTRIBUTION_NCOLS; i++) {
        int c = strcmp(attr_text(x, i), attr_text(y, i));
        if (c)
            return c;
    }
    return 0;
}

/* A sample the cache lacks, and where its id goes. */
struct attr_miss {
    const struct store_sample *s;
    int64_t *id;
};

static int miss_cmp(const void *a, const void *b)
{
    return attr_cmp(((const struct attr_miss *)a)->s, ((const struct attr_miss *)b)->s);
}

/* Statement id (an array for each text) on the distinct samples of
 * miss[0..n) whose attribution the cache lacks, STORE_ARRAY_ROWS a
 * statement; the ids and texts that come back are kept. */
static ts_status attr_run_many(struct store *st, int id, const struct attr_miss *miss, size_t n,
                               struct store_param *p, struct ts_error *err)
{
    ts_status rc = TS_OK;
    size_t k = 0;
    for (size_t i = 0; rc == TS_OK && i <= n; i++) {
        if (k == STORE_ARRAY_ROWS || (i == n && k)) {
            rc = st->ops->run_rows(st->db, id, p, STORE_ATTRIBUTION_NCOLS, k, row_recent, st, NULL,
                                   err);
            k = 0;
        }
        if (i == n || (i > 0 && attr_cmp(miss[i - 1].s, miss[i].s) == 0) ||
            attr_find(&st->attrs, attr_hash(miss[i].s), miss[i].s))
            continue;
        for (int c = 0; c < STORE_ATTRIBUTION_NCOLS; c++)
            p[k * STORE_ATTRIBUTION_NCOLS + (size_t)c] = store__str(attr_text(miss[i].s, c));
        k++;
    }
    return rc;
}

/* Where the backend has arrays (PostgreSQL): the ids of miss[0..n) in
 * three statements at most, not one or two an attribution (a batch of
 * new pods took 12 times as long): those there, those added, those
 * another writer added meanwhile. A miss the cache could not keep keeps
 * its -1. */
static ts_status attr_fetch_many(struct store *st, struct attr_miss *miss, size_t n,
                                 struct ts_error *err)
{
    static const int steps[] = {STORE_ST_ATTR_FIND_MANY, STORE_ST_ATTR_ADD_MANY,
                                STORE_ST_ATTR_FIND_MANY};
    size_t rows = n < STORE_ARRAY_ROWS ? n : STORE_ARRAY_ROWS;
    struct store_param *p = malloc((rows ? rows : 1) * STORE_ATTRIBUTION_NCOLS * sizeof(*p));
    if (!p)
        return ts_err(err, TS_NOMEM, "out of memory");
    ts_status rc = TS_OK;
    for (size_t t = 0; rc == TS_OK && t < sizeof(steps) / sizeof(steps[0]); t++)
        rc = attr_run_many(st, steps[t], miss, n, p, err);
    free(p);
    for (size_t i = 0; rc == TS_OK && i < n; i++) {
        const struct store_attr_slot *hit = attr_find(&st->attrs, attr_hash(miss[i].s), miss[i].s);
        *miss[i].id = hit ? hit->id : -1;
    }
    return rc;
}

/* The ids of the attributions the cache lacks, miss[0..n), fetched in the
 * texts' order: concurrent writers adding the same ones lock them alike. */
static ts_status attr_fetch_misses(struct store *st, struct attr_miss *miss, size_t n,
                                   struct ts_error *err)
{
    qsort(miss, n, sizeof(*miss), miss_cmp);
    ts_status rc = st->ops->run_rows ? attr_fetch_many(st, miss, n, err) : TS_OK;
    for (size_t i = 0; rc == TS_OK && i < n; i++) {
        if (*miss[i].id >= 0)
            continue;
        if (i > 0 && *miss[i - 1].id >= 0 && attr_cmp(miss[i - 1].s, miss[i].s) == 0) {
            *miss[i].id = *miss[i - 1].id;
            continue;
        }
        rc = attr_fetch(st, miss[i].s, miss[i].id, err);
        if (rc == TS_OK)
            attr_keep(st, attr_hash(miss[i].s), miss[i].s, *miss[i].id);
    }
    return rc;
}

/* A text of s other than its workload that is NULL, or NULL: the schema
 * says NOT NULL, and "" is a value (store.h). */
static const char *attr_null(const struct store_sample *s)
{
    const char *name[] = {STORE_ATTRIBUTION_COLUMNS(COL_NAME, COMMA)};
    const char *t[] = {STORE_ATTRIBUTION_COLUMNS(ATTR_FIELD, COMMA)};
    const int nullable[] = {STORE_ATTRIBUTION_COLUMNS(ATTR_NULLABLE, COMMA)};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!t[i] && !nullable[i])
            return name[i];
    return NULL;
}

/* Whether x and y have the same attribution (their texts often the same
 * strings). */
static int attr_same(const struct store_sample *x, const struct store_sample *y)
{
    for (int i = 0; i < STORE_ATTRIBUTION_NCOLS; i++) {
        const char *a = attr_text(x, i), *b = attr_text(y, i);
        if (a != b && strcmp(a, b) != 0)
            return 0;
    }
    return 1;
}

ts_status store__attributions(struct store *st, const struct store_sample *const *order, size_t n,
                              int64_t *id, struct ts_error *err)
{
    struct attr_miss *miss = malloc((n ? n : 1) * sizeof(*miss));
    if (!miss)
        return ts_err(err, TS_NOMEM, "out of memory");
    ts_status rc = TS_OK;
    unsigned gen = st->ops->generation ? st->ops->generation(st->db) : 0;
    if (gen != st->attrs.generation)
        store__attributions_forget(st); /* another connection: perhaps another database */
    st->attrs.generation = gen;
    if (!st->attrs.n && n)
        rc = st->ops->run(st->db, STORE_ST_ATTR_RECENT, NULL, 0, row_recent, st, NULL, err);
    size_t nmiss = 0;
    for (size_t i = 0; rc == TS_OK && i < n; i++) {
        const char *null = attr_null(order[i]);
        if (null) {
            rc = ts_err(err, TS_IO, "%s: NOT NULL: the %s of device '%s' at %lld is null",
                        st->ops->name, null, store__col_str(order[i]->device),
                        (long long)order[i]->ts_ms);
            break;
        }
        /* sorted by device: a device's scrapes mostly share one */
        if (i && id[i - 1] >= 0 && attr_same(order[i - 1], order[i])) {
            id[i] = id[i - 1];
            continue;
        }
        const struct store_attr_slot *hit = attr_find(&st->attrs, attr_hash(order[i]), order[i]);
        id[i] = hit ? hit->id : -1;
        if (!hit)
            miss[nmiss++] = (struct attr_miss){order[i], &id[i]};
    }
    /* new ones are added first in a transaction: a writer holding batches
     * commits them before it waits for another's additions */
    if (rc == TS_OK && nmiss)
        rc = store__samples_afresh(st, err);
    if (rc == TS_OK)
        rc = attr_fetch_misses(st, miss, nmiss, err);
    free(miss);
    return rc;
}
