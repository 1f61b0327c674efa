/*
 * schema.c - the store's schema: each version's migration, in order, and
 * how one is applied (in the backend's dialect, inside the transaction
 * store.c's migrate opens). store.c decides which versions to apply.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "store/backend.h"

/* Migrations, in order; version i+1 is migrations[i]. SERIAL_PK in a
 * statement becomes the backend's serial primary key type. Append only,
 * never edit one that has shipped. */
static const char *const migration_v1[] = {
    "CREATE TABLE samples (node TEXT NOT NULL, device TEXT NOT NULL, ts_ms BIGINT NOT NULL,"
    " model TEXT NOT NULL, profile TEXT NOT NULL, tenant TEXT NOT NULL, ns TEXT NOT NULL,"
    " pod TEXT NOT NULL, share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL,"
    " PRIMARY KEY (device, ts_ms))",
    "CREATE INDEX samples_ts ON samples (ts_ms)",
    "CREATE TABLE ledger (seq SERIAL_PK, ts_ms BIGINT NOT NULL, node TEXT NOT NULL,"
    " gpu_uuid TEXT NOT NULL, instance_uuid TEXT NOT NULL, gi_id TEXT NOT NULL,"
    " profile TEXT NOT NULL, placement TEXT NOT NULL, tenant TEXT NOT NULL,"
    " workload TEXT NOT NULL, source TEXT NOT NULL, hash TEXT NOT NULL,"
    " prev_hash TEXT NOT NULL, mac TEXT NOT NULL)",
    NULL};
/* v2: the latest raw exposition text of each source, for /metrics. BYTEA is
 * PostgreSQL's byte string; SQLite takes any type name and keeps the blob. */
static const char *const migration_v2[] = {
    "CREATE TABLE expositions (source TEXT NOT NULL PRIMARY KEY, ts_ms BIGINT NOT NULL,"
    " body BYTEA NOT NULL)",
    NULL};
/* v3: the workload a sample is charged for, so a workload other tenants use
 * can be split among them (PriceBook sharedSplit); "" in older rows. */
static const char *const migration_v3[] = {
    "ALTER TABLE samples ADD COLUMN workload TEXT NOT NULL DEFAULT ''", NULL};
/* v4: a shared workload's request counter per consumer at each scrape
 * (PriceBook sharedSplit: usage). */
static const char *const migration_v4[] = {
    "CREATE TABLE requests (owner TEXT NOT NULL, workload TEXT NOT NULL, consumer TEXT NOT NULL,"
    " ts_ms BIGINT NOT NULL, total BIGINT NOT NULL, PRIMARY KEY (owner, workload, consumer, "
    "ts_ms))",
    NULL};
/* v5: samples arrive in time order, so where the backend has BRIN indexes
 * (PostgreSQL) samples_ts becomes one: a few bytes per range of pages to
 * keep instead of a B-tree entry per row. A statement starting "BRIN:"
 * runs only there; SQLite kept its B-tree until v8. */
#define BRIN_ONLY "BRIN:"
static const char *const migration_v5[] = {
    BRIN_ONLY "DROP INDEX samples_ts",
    BRIN_ONLY "CREATE INDEX samples_ts ON samples USING brin (ts_ms)", NULL};
/* v6: the request counter per series (its label set, hashed), not summed
 * per consumer: a series that vanishes or restarts must not move requests
 * between consumers. v4's rows (sums) become one series "" each. */
static const char *const migration_v6[] = {
    "CREATE TABLE requests_v6 (owner TEXT NOT NULL, workload TEXT NOT NULL,"
    " consumer TEXT NOT NULL, series TEXT NOT NULL, ts_ms BIGINT NOT NULL,"
    " total BIGINT NOT NULL, PRIMARY KEY (owner, workload, consumer, series, ts_ms))",
    "INSERT INTO requests_v6 (owner, workload, consumer, series, ts_ms, total)"
    " SELECT owner, workload, consumer, '', ts_ms, total FROM requests",
    "DROP TABLE requests", "ALTER TABLE requests_v6 RENAME TO requests", NULL};
/* v7: the usage aggregate (agg.c): the totals of a window [from_ms, to_ms)
 * at one scrape interval as usage integrates them (numerators as decimal
 * text: ms x ppm does not fit 64 bits for a fleet's month), in their order,
 * and the devices whose last interval in it waited for a later scrape. A
 * window is removed by any batch of samples within its reach. */
static const char *const migration_v7[] = {
    "CREATE TABLE agg_periods (interval_ms BIGINT NOT NULL, from_ms BIGINT NOT NULL,"
    " to_ms BIGINT NOT NULL, token BIGINT NOT NULL, done BIGINT NOT NULL,"
    " PRIMARY KEY (interval_ms, from_ms, to_ms))",
    "CREATE TABLE agg_totals (token BIGINT NOT NULL, pos BIGINT NOT NULL, kind BIGINT NOT NULL,"
    " tenant TEXT NOT NULL, workload TEXT NOT NULL, model TEXT NOT NULL, profile TEXT NOT NULL,"
    " alloc_num TEXT NOT NULL, usage_num TEXT NOT NULL, unknown_num TEXT NOT NULL,"
    " PRIMARY KEY (token, pos))",
    "CREATE TABLE agg_tails (token BIGINT NOT NULL, pos BIGINT NOT NULL, family TEXT NOT NULL,"
    " split BIGINT NOT NULL, ts_ms BIGINT NOT NULL, PRIMARY KEY (token, pos))",
    NULL};
/* v8: where samples_ts is still a B-tree (no BRIN: SQLite) it goes: it was
 * one of three B-trees every sample is inserted into, a third of the
 * insert's work at 512 GPUs. What read it reads the primary key (device,
 * ts_ms) instead, a few look-ups per device (store.c: the newest sample,
 * a split device's next scrape). A statement starting "BTREE:" runs only
 * where "BRIN:" ones do not. */
#define BTREE_ONLY "BTREE:"
static const char *const migration_v8[] = {BTREE_ONLY "DROP INDEX IF EXISTS samples_ts", NULL};
/* v9: a sample's texts other than its device (node, model, profile,
 * tenant, namespace, pod, workload) are the same scrape after scrape, so
 * they are stored once, as an attribution, and each reading names its
 * attribution's id (attrib.c). A reading is a third of a sample's bytes:
 * at 512 GPUs an hour's insert takes 45% less time in SQLite and 18% less
 * of PostgreSQL's CPU. View samples keeps the columns readers know. */
#define READINGS_TABLE                                                                   \
    "CREATE TABLE readings (device TEXT NOT NULL, ts_ms BIGINT NOT NULL,"                \
    " attribution BIGINT NOT NULL, share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL," \
    " PRIMARY KEY (device, ts_ms))"
static const char *const migration_v9[] = {
    "CREATE TABLE attributions (id SERIAL_PK, node TEXT NOT NULL, model TEXT NOT NULL,"
    " profile TEXT NOT NULL, tenant TEXT NOT NULL, ns TEXT NOT NULL, pod TEXT NOT NULL,"
    " workload TEXT NOT NULL, UNIQUE (node, model, profile, tenant, ns, pod, workload))",
    "INSERT INTO attributions (node, model, profile, tenant, ns, pod, workload)"
    " SELECT DISTINCT node, model, profile, tenant, ns, pod, workload FROM samples",
    BRIN_ONLY READINGS_TABLE,
    BTREE_ONLY READINGS_TABLE " WITHOUT ROWID",
    "INSERT INTO readings (device, ts_ms, attribution, share_ppm, util_ppm)"
    " SELECT s.device, s.ts_ms, a.id, s.share_ppm, s.util_ppm FROM samples s JOIN attributions a"
    " ON a.node = s.node AND a.model = s.model AND a.profile = s.profile AND a.tenant = s.tenant"
    " AND a.ns = s.ns AND a.pod = s.pod AND a.workload = s.workload ORDER BY s.ts_ms, s.device",
    "DROP TABLE samples",
    "CREATE VIEW samples AS SELECT a.node AS node, r.device AS device, r.ts_ms AS ts_ms,"
    " a.model AS model, a.profile AS profile, a.tenant AS tenant, a.ns AS ns, a.pod AS pod,"
    " r.share_ppm AS share_ppm, r.util_ppm AS util_ppm, a.workload AS workload"
    " FROM readings r JOIN attributions a ON a.id = r.attribution",
    BRIN_ONLY "CREATE INDEX readings_ts ON readings USING brin (ts_ms)",
    NULL};
static const char *const *const migrations[] = {migration_v1, migration_v2, migration_v3,
                                                migration_v4, migration_v5, migration_v6,
                                                migration_v7, migration_v8, migration_v9};
#define SCHEMA_VERSION ((int64_t)(sizeof(migrations) / sizeof(migrations[0])))

const int64_t store__schema_version = SCHEMA_VERSION;

/* Copy tmpl into dst (size bytes) with the first SERIAL_PK replaced. */
static void dialect(char *dst, size_t size, const char *tmpl, const char *serial_pk)
{
    const char *at = strstr(tmpl, "SERIAL_PK");
    if (!at)
        snprintf(dst, size, "%s", tmpl);
    else
        snprintf(dst, size, "%.*s%s%s", (int)(at - tmpl), tmpl, serial_pk, at + 9);
}

/* Whether statement m runs on this backend; *skip: the length of its
 * BRIN: or BTREE: prefix, 0 without one. */
static int runs_here(const struct store_ops *ops, const char *m, size_t *skip)
{
    static const struct {
        const char *prefix;
        int brin; /* runs where the backend has BRIN indexes (1) or not (0) */
    } only[] = {{BRIN_ONLY, 1}, {BTREE_ONLY, 0}};
    for (size_t i = 0; i < sizeof(only) / sizeof(only[0]); i++) {
        size_t n = strlen(only[i].prefix);
        if (strncmp(m, only[i].prefix, n) == 0) {
            *skip = n;
            return !ops->brin == !only[i].brin;
        }
    }
    *skip = 0;
    return 1;
}

ts_status store__apply_migration(const struct store_ops *ops, void *db, int64_t v,
                                 struct ts_error *err)
{
    char sql[2048];
    for (const char *const *m = migrations[v - 1]; *m; m++) {
        size_t skip;
        if (!runs_here(ops, *m, &skip))
            continue;
        dialect(sql, sizeof(sql), *m + skip, ops->serial_pk);
        ts_status rc = ops->exec(db, sql, NULL, NULL, err);
        if (rc != TS_OK)
            return rc;
    }
    /* v is a constant of this build, not user data */
    snprintf(sql, sizeof(sql), "INSERT INTO schema_version (version) VALUES (%" PRId64 ")", v);
    return ops->exec(db, sql, NULL, NULL, err);
}
