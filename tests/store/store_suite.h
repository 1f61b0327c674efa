/*
 * store_suite.h - what the store's conformance suites share (test_store.c:
 * samples; test_store_schema.c: URLs, migrations, reconnecting;
 * test_store_records.c: the ledger, expositions, request counters, the
 * usage aggregate): a case's database, SQLite on a temporary file always,
 * PostgreSQL when TESSERA_TEST_PG_URL names a database a suite may wipe
 * (tests/cli/store_pg.sh starts one); each case starts from an empty one.
 * Static inline: each suite uses some of them.
 */
#ifndef TESTS_STORE_SUITE_H
#define TESTS_STORE_SUITE_H

#include "helpers.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/store.h"

/* ---- fixtures ---------------------------------------------------------- */

struct fx {
    char url[512];
    char dir[64];
};

static inline int sqlite_setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/tessera-store-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    snprintf(f->url, sizeof(f->url), "sqlite:%s/t.db", f->dir);
    *state = f;
    return 0;
}

static inline int sqlite_teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

static inline void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static inline int pg_setup(void **state)
{
    const char *url = getenv("TESSERA_TEST_PG_URL");
    if (!url || !*url) {
        *state = NULL;
        return 0;
    }
    PGconn *c = PQconnectdb(url);
    PQsetNoticeProcessor(c, quiet, NULL);
    /* every table and view of any schema version */
    PGresult *r = PQexec(c, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "pg_setup: %s", PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    struct fx *f = calloc(1, sizeof(*f));
    snprintf(f->url, sizeof(f->url), "%s", url);
    *state = f;
    return ok ? 0 : -1;
}

static inline int pg_teardown(void **state)
{
    free(*state);
    return 0;
}

/* The store of this case's backend; skips when the backend is absent. */
static inline struct store *open_or_skip(void **state)
{
    struct fx *f = *state;
    if (!f) {
        print_message("skipped: TESSERA_TEST_PG_URL not set\n");
        skip();
    }
    struct store *st = NULL;
    struct ts_error err = {0};
    ts_status rc = store_open(f->url, &st, &err);
    if (rc != TS_OK)
        print_message("store_open: %s\n", err.msg);
    assert_int_equal(rc, TS_OK);
    return st;
}

/* ---- helpers ----------------------------------------------------------- */

static inline struct store_sample sample(const char *dev, int64_t ts)
{
    return (struct store_sample){"node-1",  dev,        ts,     "NVIDIA H100 80GB HBM3",
                                 "1g.10gb", "client-a", "ns-a", "pod-a",
                                 142857,    500000,     "chat"};
}

/* What a scan saw: count, order, a checksum and a copy of the first row. */
struct scan {
    size_t n;
    int ordered;
    char prev_dev[128];
    int64_t prev_ts, sum_ts;
    int64_t ts_ms, share_ppm, util_ppm; /* of the first row */
    char node[64], device[64], model[64], profile[64], tenant[64], ns[64], pod[64];
};

static inline void keep_first(struct scan *sc, const struct store_sample *s)
{
    sc->ts_ms = s->ts_ms;
    sc->share_ppm = s->share_ppm;
    sc->util_ppm = s->util_ppm;
    snprintf(sc->node, 64, "%s", s->node);
    snprintf(sc->device, 64, "%s", s->device);
    snprintf(sc->model, 64, "%s", s->model);
    snprintf(sc->profile, 64, "%s", s->profile);
    snprintf(sc->tenant, 64, "%s", s->tenant);
    snprintf(sc->ns, 64, "%s", s->ns);
    snprintf(sc->pod, 64, "%s", s->pod);
}

static inline int collect(void *ctx, const struct store_sample *s)
{
    struct scan *sc = ctx;
    int c = strcmp(sc->prev_dev, s->device);
    if (sc->n > 0 && (c > 0 || (c == 0 && s->ts_ms <= sc->prev_ts)))
        sc->ordered = 0;
    if (sc->n == 0)
        keep_first(sc, s);
    snprintf(sc->prev_dev, sizeof(sc->prev_dev), "%s", s->device);
    sc->prev_ts = s->ts_ms;
    sc->sum_ts += s->ts_ms;
    sc->n++;
    return 0;
}

static inline struct scan scan_all(struct store *st, int64_t from, int64_t to)
{
    struct scan sc = {.ordered = 1};
    struct ts_error err = {0};
    ts_status rc = store_scan_samples(st, from, to, collect, &sc, &err);
    if (rc != TS_OK)
        print_message("scan: %s\n", err.msg);
    assert_int_equal(rc, TS_OK);
    return sc;
}

static inline size_t put(struct store *st, const struct store_sample *s, size_t n)
{
    size_t ins = 0;
    struct ts_error err = {0};
    ts_status rc = store_put_samples(st, s, n, &ins, &err);
    if (rc != TS_OK)
        print_message("put: %s\n", err.msg);
    assert_int_equal(rc, TS_OK);
    return ins;
}

static inline int64_t last_sample(struct store *st, int *found)
{
    int64_t ms = -1;
    struct ts_error err = {0};
    assert_int_equal(store_last_sample(st, &ms, found, &err), TS_OK);
    return ms;
}

static inline int scraped_after(struct store *st, const char *dev, int split, int64_t after)
{
    int found = -1;
    struct ts_error err = {0};
    assert_int_equal(store_device_scraped_after(st, dev, split, after, &found, &err), TS_OK);
    return found;
}

static inline int64_t sqlite_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

static inline ts_status put_expo(struct store *st, const char *src, int64_t ts, const char *t,
                                 size_t len)
{
    struct ts_error err = {0};
    ts_status rc = store_put_exposition(st, src, ts, t, len, &err);
    if (rc != TS_OK)
        print_message("put_exposition: %s\n", err.msg);
    return rc;
}

/* What a scan of expositions saw, concatenated as "source@ts=len:" + bytes. */
struct expo_seen {
    char buf[4096];
    size_t len, calls, stop_after;
    const char *big; /* when a text is this long, compare it to big */
    size_t big_len;
    int big_ok;
};

static inline int expo_collect(void *ctx, const char *source, int64_t ts_ms, const char *text,
                               size_t len)
{
    struct expo_seen *e = ctx;
    e->calls++;
    if (e->big && len == e->big_len) {
        e->big_ok = memcmp(text, e->big, len) == 0;
        text = "<big>";
        len = 5;
    }
    int n = snprintf(e->buf + e->len, sizeof(e->buf) - e->len, "%s@%lld=%zu:", source,
                     (long long)ts_ms, len);
    e->len += (size_t)n;
    if (e->len + len < sizeof(e->buf)) {
        memcpy(e->buf + e->len, text, len);
        e->len += len;
    }
    return e->stop_after && e->calls >= e->stop_after;
}

static inline struct expo_seen *scan_expo(struct store *st, struct expo_seen *e)
{
    struct ts_error err = {0};
    ts_status rc = store_scan_expositions(st, expo_collect, e, &err);
    if (rc != TS_OK)
        print_message("scan_expositions: %s\n", err.msg);
    assert_int_equal(rc, TS_OK);
    return e;
}

/* Runs a suite's groups: NAME_common (cases with SQLite files of their
 * own), NAME_sqlite and NAME_postgresql (the same cases on each backend;
 * skipped, and said so, without TESSERA_TEST_PG_URL); a group with no case
 * is not run. The exit status. */
static inline int store_suite_run(const char *name, const struct CMUnitTest *common, size_t ncommon,
                                  const struct CMUnitTest *sqlite, size_t nsqlite,
                                  const struct CMUnitTest *pg, size_t npg)
{
    char group[64];
    int failed = 0;
    const struct {
        const char *suffix;
        const struct CMUnitTest *cases;
        size_t n;
    } groups[] = {
        {"common", common, ncommon}, {"sqlite", sqlite, nsqlite}, {"postgresql", pg, npg}};
    const char *pg_url = getenv("TESSERA_TEST_PG_URL");
    for (size_t i = 0; i < 3; i++) {
        snprintf(group, sizeof(group), "%s_%s", name, groups[i].suffix);
        if (!groups[i].n)
            continue;
        if (i == 2 && (!pg_url || !*pg_url))
            printf("%s: skipped (TESSERA_TEST_PG_URL not set)\n", group);
        failed += _cmocka_run_group_tests(group, groups[i].cases, groups[i].n, NULL, NULL);
    }
    return failed ? 1 : 0;
}

#define STORE_NCASES(a) (sizeof(a) / sizeof((a)[0]))

#endif
