/*
 * test_store.c - one conformance suite for every store backend: SQLite on a
 * temporary file always, PostgreSQL when TESSERA_TEST_PG_URL names a
 * database this suite may wipe (tests/cli/store_pg.sh starts one). Each case
 * starts from an empty database.
 */
#include "helpers.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/store.h"

struct fx {
    char url[512];
    char dir[64];
};

/* ---- fixtures ---------------------------------------------------------- */

static int sqlite_setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/tessera-store-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    snprintf(f->url, sizeof(f->url), "sqlite:%s/t.db", f->dir);
    *state = f;
    return 0;
}

static int sqlite_teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static int pg_setup(void **state)
{
    const char *url = getenv("TESSERA_TEST_PG_URL");
    if (!url || !*url) {
        *state = NULL;
        return 0;
    }
    PGconn *c = PQconnectdb(url);
    PQsetNoticeProcessor(c, quiet, NULL);
    PGresult *r = PQexec(
        c, "DROP TABLE IF EXISTS samples, ledger, expositions, requests, schema_version, "
           "agg_periods, agg_totals, agg_tails");
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

static int pg_teardown(void **state)
{
    free(*state);
    return 0;
}

/* The store of this case's backend; skips when the backend is absent. */
static struct store *open_or_skip(void **state)
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

static struct store_sample sample(const char *dev, int64_t ts)
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

static void keep_first(struct scan *sc, const struct store_sample *s)
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

static int collect(void *ctx, const struct store_sample *s)
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

static struct scan scan_all(struct store *st, int64_t from, int64_t to)
{
    struct scan sc = {.ordered = 1};
    struct ts_error err = {0};
    ts_status rc = store_scan_samples(st, from, to, collect, &sc, &err);
    if (rc != TS_OK)
        print_message("scan: %s\n", err.msg);
    assert_int_equal(rc, TS_OK);
    return sc;
}

static size_t put(struct store *st, const struct store_sample *s, size_t n)
{
    size_t ins = 0;
    struct ts_error err = {0};
    ts_status rc = store_put_samples(st, s, n, &ins, &err);
    if (rc != TS_OK)
        print_message("put: %s\n", err.msg);
    assert_int_equal(rc, TS_OK);
    return ins;
}

/* ---- cases ------------------------------------------------------------- */

static void test_migrations_idempotent(void **state)
{
    struct store *a = open_or_skip(state);
    struct store_sample s = sample("GPU-1", 1000);
    assert_int_equal(put(a, &s, 1), 1);
    struct store *b = open_or_skip(state); /* a second handle, same database */
    store_close(a);
    store_close(b);
    struct store *c = open_or_skip(state);
    assert_int_equal(scan_all(c, 0, 2000).n, 1);
    store_close(c);
}

static void test_round_trip(void **state)
{
    struct store *st = open_or_skip(state);
    struct store_sample s[3] = {sample("GPU-b", 20), sample("GPU-a/3", 10), sample("GPU-a/3", 5)};
    s[1] = (struct store_sample){"node-7",      "GPU-a/3", 10,      "A100", "", "unattributed",
                                 "kube-system", "",        1000000, -1,     ""};
    assert_int_equal(put(st, s, 3), 3);
    struct scan sc = scan_all(st, 0, 100);
    assert_int_equal(sc.n, 3);
    assert_true(sc.ordered);
    assert_int_equal(sc.sum_ts, 35);
    /* the first row is GPU-a/3 at 5: the default sample */
    assert_string_equal(sc.device, "GPU-a/3");
    assert_int_equal(sc.ts_ms, 5);
    assert_string_equal(sc.node, "node-1");
    assert_string_equal(sc.model, "NVIDIA H100 80GB HBM3");
    assert_string_equal(sc.profile, "1g.10gb");
    assert_string_equal(sc.tenant, "client-a");
    assert_string_equal(sc.ns, "ns-a");
    assert_string_equal(sc.pod, "pod-a");
    assert_int_equal(sc.share_ppm, 142857);
    assert_int_equal(sc.util_ppm, 500000);
    sc = scan_all(st, 10, 11); /* the odd one: empty strings, -1 */
    assert_int_equal(sc.n, 1);
    assert_string_equal(sc.node, "node-7");
    assert_string_equal(sc.profile, "");
    assert_string_equal(sc.pod, "");
    assert_string_equal(sc.tenant, "unattributed");
    assert_int_equal(sc.share_ppm, 1000000);
    assert_int_equal(sc.util_ppm, -1);
    store_close(st);
}

/* Text that array literals and SQL quoting must carry as it is (pg.c binds
 * many rows as one array per column). */
static void test_awkward_text(void **state)
{
    static const char *const text[] = {"a\"b",
                                       "back\\slash",
                                       "{x,y}",
                                       "NULL",
                                       "null",
                                       " lead and trail ",
                                       "",
                                       "comma,",
                                       "'quote'",
                                       "\\\"",
                                       "caf\xc3\xa9 \xe2\x82\xac",
                                       "(1,2)",
                                       "tab\there"};
    enum { N = sizeof(text) / sizeof(text[0]) };
    struct store *st = open_or_skip(state);
    struct store_sample s[N];
    for (int i = 0; i < N; i++) {
        s[i] = sample(text[i], i);
        s[i].node = s[i].tenant = s[i].ns = s[i].pod = s[i].model = s[i].profile = text[i];
    }
    assert_int_equal(put(st, s, N), N);
    for (int i = 0; i < N; i++) {
        struct scan sc = scan_all(st, i, i + 1);
        assert_int_equal(sc.n, 1);
        assert_string_equal(sc.device, text[i]);
        assert_string_equal(sc.node, text[i]);
        assert_string_equal(sc.tenant, text[i]);
        assert_string_equal(sc.pod, text[i]);
    }
    store_close(st);
}

static void test_idempotent(void **state)
{
    struct store *st = open_or_skip(state);
    struct store_sample s[50];
    for (int i = 0; i < 50; i++)
        s[i] = sample(i % 2 ? "GPU-x" : "GPU-y", 1000 + i / 2 * 15000);
    assert_int_equal(put(st, s, 50), 50);
    struct scan before = scan_all(st, 0, INT64_MAX);
    assert_int_equal(put(st, s, 50), 0);
    assert_int_equal(put(st, s + 10, 5), 0);
    struct store_sample dup[2] = {sample("GPU-z", 1), sample("GPU-z", 1)};
    assert_int_equal(put(st, dup, 2), 1); /* a duplicate inside one batch */
    struct scan after = scan_all(st, 0, INT64_MAX);
    assert_int_equal(after.n, before.n + 1);
    assert_int_equal(after.sum_ts, before.sum_ts + 1);
    store_close(st);
}

/* A batch partly stored already (a re-import that goes further than the
 * last, a writer overlapping another): only the new samples are stored and
 * counted, the old ones stay as they were; PostgreSQL's COPY meets the old
 * keys and the batch goes again skipping them. */
static void test_partly_stored(void **state)
{
    struct store *st = open_or_skip(state);
    enum { N = 9000 }; /* more than one COPY (STORE_ARRAY_ROWS) */
    struct store_sample *s = calloc(N, sizeof(*s));
    assert_non_null(s);
    for (int i = 0; i < N; i++)
        s[i] = sample(i % 2 ? "GPU-x" : "GPU-y", 1000 + i / 2 * 15000);
    assert_int_equal(put(st, s + 4000, 10), 10);
    assert_int_equal(put(st, s + N - 3, 3), 3); /* in the last COPY only */
    s[4001].tenant = "other";                   /* not stored: the stored sample stays */
    assert_int_equal(put(st, s, N), N - 13);
    struct scan sc = scan_all(st, 0, INT64_MAX);
    assert_int_equal(sc.n, N);
    struct scan one = scan_all(st, s[4001].ts_ms, s[4001].ts_ms + 1);
    assert_int_equal(one.n, 2);
    assert_string_equal(one.tenant, "client-a");
    assert_int_equal(put(st, s, N), 0);
    free(s);
    store_close(st);
}

static int64_t last_sample(struct store *st, int *found)
{
    int64_t ms = -1;
    struct ts_error err = {0};
    assert_int_equal(store_last_sample(st, &ms, found, &err), TS_OK);
    return ms;
}

/* The newest sample of any device: not the last device's, not the last
 * stored; none in an empty store. */
static void test_last_sample(void **state)
{
    struct store *st = open_or_skip(state);
    int found = 1;
    assert_int_equal(last_sample(st, &found), 0);
    assert_int_equal(found, 0);
    struct store_sample s[5] = {sample("GPU-a", 10), sample("GPU-b", 70), sample("GPU-b", 30),
                                sample("GPU-c", 40), sample("", 20)};
    assert_int_equal(put(st, s, 5), 5);
    struct store_sample old = sample("GPU-d", 5);
    assert_int_equal(put(st, &old, 1), 1);
    assert_int_equal(last_sample(st, &found), 70);
    assert_int_equal(found, 1);
    store_close(st);
}

static int scraped_after(struct store *st, const char *dev, int split, int64_t after)
{
    int found = -1;
    struct ts_error err = {0};
    assert_int_equal(store_device_scraped_after(st, dev, split, after, &found, &err), TS_OK);
    return found;
}

/* A device's next scrape after a time; with split, also of its keys
 * "DEVICE#...", never of another device sharing a prefix ("GPU-ab",
 * "GPU-a!": before and after "GPU-a#" in byte order). */
static void test_scraped_after(void **state)
{
    struct store *st = open_or_skip(state);
    struct store_sample s[6] = {sample("GPU-a", 10),      sample("GPU-a#t1/x", 50),
                                sample("GPU-a#t2/y", 30), sample("GPU-ab", 90),
                                sample("GPU-a!", 95),     sample("GPU-a$", 97)};
    assert_int_equal(put(st, s, 6), 6);
    assert_int_equal(scraped_after(st, "GPU-a", 0, 5), 1);
    assert_int_equal(scraped_after(st, "GPU-a", 0, 10), 0);
    assert_int_equal(scraped_after(st, "GPU-a", 1, 10), 1);
    assert_int_equal(scraped_after(st, "GPU-a", 1, 30), 1);
    assert_int_equal(scraped_after(st, "GPU-a", 1, 50), 0);
    assert_int_equal(scraped_after(st, "GPU-a#t2/y", 0, 29), 1);
    assert_int_equal(scraped_after(st, "GPU-z", 1, 0), 0);
    store_close(st);
}

static void test_out_of_order(void **state)
{
    struct store *st = open_or_skip(state);
    int64_t ts[] = {90, 10, 50, 30, 70};
    for (int i = 0; i < 5; i++) {
        struct store_sample s[2] = {sample("GPU-2", ts[i]), sample("GPU-1", ts[i] + 1)};
        assert_int_equal(put(st, s, 2), 2);
    }
    struct scan sc = scan_all(st, 0, 1000);
    assert_int_equal(sc.n, 10);
    assert_true(sc.ordered);
    assert_string_equal(sc.device, "GPU-1");
    assert_int_equal(sc.ts_ms, 11);
    store_close(st);
}

static int stop_at_three(void *ctx, const struct store_sample *s)
{
    (void)s;
    return ++*(int *)ctx == 3;
}

/* Devices with nothing in the range (before, between and after those that
 * have), the empty name, and a callback that stops in the middle. */
static void test_devices(void **state)
{
    struct store *st = open_or_skip(state);
    const char *dev[] = {"", "GPU-a", "GPU-b", "GPU-c", "GPU-d"};
    struct store_sample s[10];
    for (int i = 0; i < 5; i++) {
        int in = i != 0 && i != 2 && i != 4; /* GPU-a and GPU-c only */
        s[2 * i] = sample(dev[i], in ? 150 : 50);
        s[2 * i + 1] = sample(dev[i], in ? 160 : 250);
    }
    put(st, s, 10);
    struct scan sc = scan_all(st, 100, 200);
    assert_int_equal(sc.n, 4);
    assert_true(sc.ordered);
    assert_string_equal(sc.device, "GPU-a");
    assert_string_equal(sc.prev_dev, "GPU-c");
    assert_int_equal(scan_all(st, 0, 300).n, 10);
    assert_true(scan_all(st, 0, 300).ordered);
    int calls = 0;
    struct ts_error err = {0};
    assert_int_equal(store_scan_samples(st, 0, 300, stop_at_three, &calls, &err), TS_OK);
    assert_int_equal(calls, 3);
    store_close(st);
}

static void test_bounds(void **state)
{
    struct store *st = open_or_skip(state);
    struct store_sample s[5];
    for (int i = 0; i < 5; i++)
        s[i] = sample("GPU-1", 100 * i); /* 0 100 200 300 400 */
    put(st, s, 5);
    assert_int_equal(scan_all(st, 100, 300).n, 2); /* 100, 200: to excluded */
    assert_int_equal(scan_all(st, 101, 300).n, 1);
    assert_int_equal(scan_all(st, 100, 301).n, 3);
    assert_int_equal(scan_all(st, 400, 400).n, 0);
    assert_int_equal(scan_all(st, -1000, 0).n, 0);
    assert_int_equal(scan_all(st, INT64_MIN, INT64_MAX).n, 5);
    store_close(st);
}

static void test_big_batch(void **state)
{
    struct store *st = open_or_skip(state);
    enum { N = 10000 };
    struct store_sample *s = calloc(N, sizeof(*s));
    char(*dev)[16] = calloc(64, sizeof(*dev));
    assert_non_null(s);
    for (int g = 0; g < 64; g++)
        snprintf(dev[g], sizeof(dev[g]), "GPU-%02d", g);
    for (int i = 0; i < N; i++)
        s[i] = sample(dev[i % 64], (int64_t)(N - i) * 15000); /* newest first */
    assert_int_equal(put(st, s, N), N);
    struct scan sc = scan_all(st, 0, INT64_MAX);
    assert_int_equal(sc.n, N);
    assert_true(sc.ordered);
    assert_int_equal(put(st, s, N), 0);
    free(s);
    free(dev);
    store_close(st);
}

static void test_failed_batch(void **state)
{
    struct store *st = open_or_skip(state);
    struct store_sample ok = sample("GPU-0", 1);
    put(st, &ok, 1);
    struct store_sample s[4] = {sample("GPU-1", 1), sample("GPU-1", 2), sample("GPU-1", 3),
                                sample("GPU-1", 4)};
    s[2].device = NULL;
    size_t ins = 99;
    struct ts_error err = {0};
    assert_int_equal(store_put_samples(st, s, 4, &ins, &err), TS_IO);
    assert_int_equal(ins, 0);
    assert_non_null(strstr(err.msg, store_backend(st)));
    assert_non_null(strcasestr(err.msg, "null")); /* the database's own words */
    assert_int_equal(scan_all(st, 0, 100).n, 1);
    s[2].device = "GPU-1"; /* the store is usable after a failure */
    assert_int_equal(put(st, s, 4), 4);
    store_close(st);
}

static struct store_ledger_entry entry(const char *tenant, const char *prev)
{
    struct store_ledger_entry e = {
        0,   1700000000000, "node-1", "GPU-aaa", "MIG-bbb", "3", "1g.10gb",
        "6", tenant,        "llm",    "plan",    "",        "",  ""};
    memset(e.hash, tenant[strlen(tenant) - 1], 64);
    snprintf(e.prev_hash, sizeof(e.prev_hash), "%s", prev);
    return e;
}

static int ledger_collect(void *ctx, const struct store_ledger_entry *e)
{
    char *out = ctx;
    size_t len = strlen(out);
    snprintf(out + len, 256 - len, "%lld:%s:%.1s:%s;", (long long)e->seq, e->tenant, e->hash,
             e->mac);
    return 0;
}

static void test_ledger(void **state)
{
    struct store *st = open_or_skip(state);
    struct store_ledger_entry last;
    int found = 1;
    struct ts_error err = {0};
    assert_int_equal(store_ledger_last(st, &last, &found, &err), TS_OK);
    assert_int_equal(found, 0);
    int64_t seq[3];
    const char *tenants[3] = {"client-1", "client-2", "client-3"};
    for (int i = 0; i < 3; i++) {
        struct store_ledger_entry e = entry(tenants[i], i ? "11" : "");
        if (i == 2)
            snprintf(e.mac, sizeof(e.mac), "%064d", 7);
        assert_int_equal(store_ledger_append(st, &e, &seq[i], &err), TS_OK);
        assert_true(i == 0 || seq[i] > seq[i - 1]);
    }
    assert_int_equal(store_ledger_last(st, &last, &found, &err), TS_OK);
    assert_int_equal(found, 1);
    assert_int_equal(last.seq, seq[2]);
    assert_int_equal(last.ts_ms, 1700000000000);
    assert_string_equal(last.tenant, "client-3");
    assert_string_equal(last.instance_uuid, "MIG-bbb");
    assert_string_equal(last.gi_id, "3");
    assert_string_equal(last.placement, "6");
    assert_string_equal(last.source, "plan");
    assert_int_equal(strlen(last.hash), 64);
    assert_string_equal(last.prev_hash, "11");
    assert_int_equal(strlen(last.mac), 64);
    char out[256] = "";
    assert_int_equal(store_ledger_scan(st, ledger_collect, out, &err), TS_OK);
    char want[256];
    snprintf(want, sizeof(want), "%lld:client-1:1:;%lld:client-2:2:;%lld:client-3:3:%064d;",
             (long long)seq[0], (long long)seq[1], (long long)seq[2], 7);
    assert_string_equal(out, want);
    store_close(st);
}

struct writer {
    const char *url;
    int reverse; /* write the same keys from the other end */
    size_t inserted;
    ts_status rc;
    char msg[TS_MSG_MAX];
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct store *st = NULL;
    struct ts_error err = {0};
    w->rc = store_open(w->url, &st, &err);
    for (int b = 0; w->rc == TS_OK && b < 20; b++) {
        struct store_sample s[100];
        for (int i = 0; i < 100; i++) {
            int64_t k = b * 100 + i, ts = w->reverse ? 1999 - k : k;
            s[i] = sample(ts % 2 ? "GPU-odd" : "GPU-even", ts);
        }
        size_t ins = 0;
        w->rc = store_put_samples(st, s, 100, &ins, &err);
        w->inserted += ins;
    }
    if (w->rc != TS_OK)
        snprintf(w->msg, sizeof(w->msg), "%s", err.msg);
    store_close(st);
    return NULL;
}

static void test_concurrent_writers(void **state)
{
    struct store *st = open_or_skip(state); /* migrated before the race */
    struct fx *f = *state;
    struct writer w[2] = {{f->url, 0, 0, TS_OK, ""}, {f->url, 1, 0, TS_OK, ""}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        if (w[i].rc != TS_OK)
            print_message("writer %d: %s\n", i, w[i].msg);
        assert_int_equal(w[i].rc, TS_OK);
    }
    assert_int_equal(w[0].inserted + w[1].inserted, 2000); /* each key once */
    struct scan sc = scan_all(st, 0, INT64_MAX);
    assert_int_equal(sc.n, 2000);
    assert_true(sc.ordered);
    store_close(st);
}

static void expect_open_fails(const char *url, ts_status want, const char *part)
{
    struct store *st = (struct store *)1;
    struct ts_error err = {0};
    assert_int_equal(store_open(url, &st, &err), want);
    assert_null(st);
    if (!strstr(err.msg, part))
        print_message("'%s' not in '%s'\n", part, err.msg);
    assert_non_null(strstr(err.msg, part));
}

static void test_bad_urls(void **state)
{
    (void)state;
    expect_open_fails(NULL, TS_USAGE, "sqlite:PATH");
    expect_open_fails("", TS_USAGE, "unsupported database URL");
    expect_open_fails("sqlite:", TS_USAGE, "unsupported database URL");
    expect_open_fails("mysql://u:secret@h/db", TS_USAGE, "postgres://");
    expect_open_fails("/tmp/x.db", TS_USAGE, "unsupported");
    expect_open_fails("sqlite:/nonexistent-dir/x/y.db", TS_IO, "sqlite: /nonexistent-dir");
    expect_open_fails("postgres://nobody:secret@127.0.0.1:1/none?connect_timeout=2", TS_IO,
                      "postgresql: ");
    struct ts_error err = {0};
    struct store *st = NULL;
    store_open("mysql://u:secret@h/db", &st, &err);
    assert_null(strstr(err.msg, "secret")); /* never echo credentials */
}

static int64_t sqlite_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Migrations are recorded once, and a database from a newer tessera is
 * refused rather than written with an older schema's assumptions. */
static void test_schema_versions(void **state)
{
    assert_int_equal(sqlite_setup(state), 0);
    struct fx *f = *state;
    for (int i = 0; i < 3; i++)
        store_close(open_or_skip(state));
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM schema_version"), 8);
    assert_int_equal(sqlite_int(db, "SELECT max(version) FROM schema_version"), 8);
    /* v8: no index on time beside the primary key */
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                                    "AND tbl_name = 'samples' AND sql IS NOT NULL"),
                     0);
    sqlite3_stmt *s = NULL;
    sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO schema_version VALUES (99)", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    struct store *st = NULL;
    struct ts_error err = {0};
    assert_int_equal(store_open(f->url, &st, &err), TS_INVALID);
    assert_non_null(strstr(err.msg, "newer"));
    assert_int_equal(sqlite_teardown(state), 0);
}

/* ---- expositions ------------------------------------------------------- */

/* What a scan of expositions saw, concatenated as "source@ts=len:" + bytes. */
struct expo_seen {
    char buf[4096];
    size_t len, calls, stop_after;
    const char *big; /* when a text is this long, compare it to big */
    size_t big_len;
    int big_ok;
};

static int expo_collect(void *ctx, const char *source, int64_t ts_ms, const char *text, size_t len)
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

static ts_status put_expo(struct store *st, const char *src, int64_t ts, const char *t, size_t len)
{
    struct ts_error err = {0};
    ts_status rc = store_put_exposition(st, src, ts, t, len, &err);
    if (rc != TS_OK)
        print_message("put_exposition: %s\n", err.msg);
    return rc;
}

static struct expo_seen *scan_expo(struct store *st, struct expo_seen *e)
{
    struct ts_error err = {0};
    ts_status rc = store_scan_expositions(st, expo_collect, e, &err);
    if (rc != TS_OK)
        print_message("scan_expositions: %s\n", err.msg);
    assert_int_equal(rc, TS_OK);
    return e;
}

/* Any bytes survive (NUL, invalid UTF-8, quotes, newlines); one row per
 * source, sources in order; a newer text replaces, an older one does not. */
static void test_expositions(void **state)
{
    struct store *st = open_or_skip(state);
    struct expo_seen e0 = {0};
    assert_int_equal(scan_expo(st, &e0)->calls, 0);
    static const char odd[] = "m{a=\"q\\\"x\\n\"} 1\n\0\xff\xfe\x80 end";
    const char *b = "http://10.0.0.2:9400/metrics", *a = "http://10.0.0.1:9400/metrics";
    assert_int_equal(put_expo(st, b, 200, "B1\n", 3), TS_OK);
    assert_int_equal(put_expo(st, a, 100, odd, sizeof(odd) - 1), TS_OK);
    struct expo_seen e1 = {0};
    scan_expo(st, &e1);
    char want[512];
    int n = snprintf(want, sizeof(want), "%s@100=%zu:", a, sizeof(odd) - 1);
    memcpy(want + n, odd, sizeof(odd) - 1);
    n += (int)sizeof(odd) - 1;
    n += snprintf(want + n, sizeof(want) - (size_t)n, "%s@200=3:B1\n", b);
    assert_int_equal(e1.len, (size_t)n);
    assert_memory_equal(e1.buf, want, (size_t)n);
    assert_int_equal(put_expo(st, a, 300, "A2", 2), TS_OK);         /* newer: replaces */
    assert_int_equal(put_expo(st, b, 199, "old", 3), TS_OK);        /* older: ignored */
    assert_int_equal(put_expo(st, "file.prom", 5, NULL, 0), TS_OK); /* empty text */
    struct expo_seen e2 = {0};
    scan_expo(st, &e2);
    snprintf(want, sizeof(want), "file.prom@5=0:%s@300=2:A2%s@200=3:B1\n", a, b);
    assert_int_equal(e2.calls, 3);
    assert_int_equal(e2.len, strlen(want));
    assert_memory_equal(e2.buf, want, e2.len);
    struct expo_seen e3 = {.stop_after = 1};
    assert_int_equal(scan_expo(st, &e3)->calls, 1); /* the callback stops the scan */
    store_close(st);
}

/* The cap, bad arguments, and a text near the cap round trip intact. */
static void test_exposition_limits(void **state)
{
    struct store *st = open_or_skip(state);
    size_t big_len = STORE_EXPOSITION_MAX;
    char *big = malloc(big_len + 1);
    assert_non_null(big);
    for (size_t i = 0; i < big_len + 1; i++)
        big[i] = (char)(i * 7 + i / 251); /* every byte value, NUL included */
    struct ts_error err = {0};
    assert_int_equal(store_put_exposition(st, "s", 1, big, big_len + 1, &err), TS_TOO_LARGE);
    assert_non_null(strstr(err.msg, "at most"));
    assert_int_equal(store_put_exposition(st, NULL, 1, "x", 1, &err), TS_INVALID);
    assert_int_equal(store_put_exposition(st, "s", 1, NULL, 3, &err), TS_INVALID);
    struct expo_seen e0 = {0};
    assert_int_equal(scan_expo(st, &e0)->calls, 0); /* nothing stored by the failures */
    assert_int_equal(put_expo(st, "s", 1, big, big_len), TS_OK);
    struct expo_seen e1 = {.big = big, .big_len = big_len};
    scan_expo(st, &e1);
    assert_int_equal(e1.calls, 1);
    assert_true(e1.big_ok);
    free(big);
    store_close(st);
}

/* Drop every other connection to the test database, as a restart does. */
static void pg_kill_others(const char *url)
{
    PGconn *c = PQconnectdb(url);
    PGresult *r = PQexec(c, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE pid <> pg_backend_pid() AND datname = current_database()");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_true(PQntuples(r) >= 1);
    PQclear(r);
    PQfinish(c);
}

/* PostgreSQL only: the server drops the connection (as on a restart). A
 * batch reconnects at once; a scan or an exposition in flight fails with
 * the backend named, the next call works; nothing is lost or doubled. */
static void test_pg_reconnect(void **state)
{
    struct store *st = open_or_skip(state);
    const char *url = ((struct fx *)*state)->url;
    struct store_sample s[3] = {sample("GPU-1", 1), sample("GPU-1", 2), sample("GPU-1", 3)};
    assert_int_equal(put(st, s, 1), 1);
    pg_kill_others(url);
    assert_int_equal(put(st, s, 3), 2); /* BEGIN found it dead and reconnected */
    pg_kill_others(url);
    struct scan sc = {.ordered = 1};
    struct ts_error err = {0};
    assert_int_equal(store_scan_samples(st, 0, 10, collect, &sc, &err), TS_IO);
    assert_non_null(strstr(err.msg, "postgresql: "));
    assert_int_equal(scan_all(st, 0, 10).n, 3); /* the next call reconnected */
    pg_kill_others(url);
    assert_int_equal(store_put_exposition(st, "u", 1, "x", 1, &err), TS_IO);
    assert_int_equal(put_expo(st, "u", 1, "x", 1), TS_OK);
    struct expo_seen e = {0};
    assert_int_equal(scan_expo(st, &e)->calls, 1);
    assert_int_equal(put(st, s, 3), 0);
    store_close(st);
}

static PGresult *pg_ok(PGconn *c, const char *sql, ExecStatusType want)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != want)
        print_message("%s: %s", sql, PQerrorMessage(c));
    assert_int_equal(PQresultStatus(r), want);
    return r;
}

/* PostgreSQL only: a database of schema v3 (samples_ts a B-tree) is moved
 * to v5 in place: samples_ts becomes a BRIN index, the rows stay. */
static void test_pg_upgrade_from_v3(void **state)
{
    if (!*state)
        skip();
    PGconn *c = PQconnectdb(((struct fx *)*state)->url);
    PQsetNoticeProcessor(c, quiet, NULL);
    PQclear(pg_ok(c,
                  "CREATE TABLE schema_version (version BIGINT PRIMARY KEY);"
                  "INSERT INTO schema_version VALUES (1), (2), (3);"
                  "CREATE TABLE samples (node TEXT NOT NULL, device TEXT NOT NULL,"
                  " ts_ms BIGINT NOT NULL, model TEXT NOT NULL, profile TEXT NOT NULL,"
                  " tenant TEXT NOT NULL, ns TEXT NOT NULL, pod TEXT NOT NULL,"
                  " share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL,"
                  " workload TEXT NOT NULL DEFAULT '', PRIMARY KEY (device, ts_ms));"
                  "CREATE INDEX samples_ts ON samples (ts_ms);"
                  "CREATE TABLE ledger (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                  " ts_ms BIGINT NOT NULL, node TEXT NOT NULL, gpu_uuid TEXT NOT NULL,"
                  " instance_uuid TEXT NOT NULL, gi_id TEXT NOT NULL, profile TEXT NOT NULL,"
                  " placement TEXT NOT NULL, tenant TEXT NOT NULL, workload TEXT NOT NULL,"
                  " source TEXT NOT NULL, hash TEXT NOT NULL, prev_hash TEXT NOT NULL,"
                  " mac TEXT NOT NULL);"
                  "CREATE TABLE expositions (source TEXT NOT NULL PRIMARY KEY,"
                  " ts_ms BIGINT NOT NULL, body BYTEA NOT NULL);"
                  "INSERT INTO samples VALUES ('n', 'GPU-old', 42, 'm', '', 't', 'ns', '',"
                  " 1000000, -1, 'w')",
                  PGRES_COMMAND_OK));
    struct store *st = open_or_skip(state);
    assert_int_equal(scan_all(st, 0, 100).n, 1);
    struct store_sample s = sample("GPU-old", 57);
    assert_int_equal(put(st, &s, 1), 1);
    store_close(st);
    PGresult *r = pg_ok(c,
                        "SELECT (SELECT max(version) FROM schema_version), "
                        "(SELECT indexdef FROM pg_indexes WHERE indexname = 'samples_ts'), "
                        "(SELECT count(*) FROM samples)",
                        PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "8");
    assert_non_null(strstr(PQgetvalue(r, 0, 1), "USING brin (ts_ms)")); /* v8 keeps it */
    assert_string_equal(PQgetvalue(r, 0, 2), "2");
    PQclear(r);
    PQfinish(c);
}

/* A database written by a tessera of schema v1 (samples and ledger only)
 * is upgraded in place: its rows stay, expositions work. */
static void test_upgrade_from_v1(void **state)
{
    assert_int_equal(sqlite_setup(state), 0);
    struct fx *f = *state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    const char *v1 =
        "CREATE TABLE schema_version (version BIGINT PRIMARY KEY);"
        "INSERT INTO schema_version VALUES (1);"
        "CREATE TABLE samples (node TEXT NOT NULL, device TEXT NOT NULL, ts_ms BIGINT NOT NULL,"
        " model TEXT NOT NULL, profile TEXT NOT NULL, tenant TEXT NOT NULL, ns TEXT NOT NULL,"
        " pod TEXT NOT NULL, share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL,"
        " PRIMARY KEY (device, ts_ms));"
        "CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms BIGINT NOT NULL,"
        " node TEXT NOT NULL, gpu_uuid TEXT NOT NULL, instance_uuid TEXT NOT NULL,"
        " gi_id TEXT NOT NULL, profile TEXT NOT NULL, placement TEXT NOT NULL,"
        " tenant TEXT NOT NULL, workload TEXT NOT NULL, source TEXT NOT NULL,"
        " hash TEXT NOT NULL, prev_hash TEXT NOT NULL, mac TEXT NOT NULL);"
        "INSERT INTO samples VALUES ('n', 'GPU-old', 42, 'm', '', 't', 'ns', '', 1000000, -1);";
    assert_int_equal(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct store *st = open_or_skip(state);
    struct scan sc = scan_all(st, 0, 100);
    assert_int_equal(sc.n, 1);
    assert_string_equal(sc.device, "GPU-old");
    assert_int_equal(put_expo(st, "f", 1, "x 1\n", 4), TS_OK);
    store_close(st);
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite_int(db, "SELECT max(version) FROM schema_version"), 8);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM expositions"), 1);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM samples WHERE workload = ''"), 1);
    sqlite3_close(db);
    assert_int_equal(sqlite_teardown(state), 0);
}

/* A SQLite database of schema v7 (samples_ts a B-tree on time) moves to v8
 * in place: the index goes, the rows stay, the newest sample and a split
 * device's next scrape are still found (from the primary key). */
static void test_upgrade_from_v7(void **state)
{
    assert_int_equal(sqlite_setup(state), 0);
    struct fx *f = *state;
    struct store *st = open_or_skip(state);
    struct store_sample s[3] = {sample("GPU-a", 10), sample("GPU-a#t/p", 70), sample("GPU-b", 40)};
    assert_int_equal(put(st, s, 3), 3);
    store_close(st);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE INDEX samples_ts ON samples (ts_ms);"
                                  "DELETE FROM schema_version WHERE version = 8",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    st = open_or_skip(state);
    int found = 0;
    assert_int_equal(last_sample(st, &found), 70);
    assert_int_equal(scraped_after(st, "GPU-a", 1, 40), 1);
    assert_int_equal(scan_all(st, 0, 100).n, 3);
    store_close(st);
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite_int(db, "SELECT max(version) FROM schema_version"), 8);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'"),
                     0);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM samples"), 3);
    sqlite3_close(db);
    assert_int_equal(sqlite_teardown(state), 0);
}

static int add_req(void *ctx, const struct store_request *r)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 512 - n, "%s/%s<%s%s%s@%lld=%lld;", r->owner, r->workload, r->consumer,
             r->series[0] ? ":" : "", r->series, (long long)r->ts_ms, (long long)r->count);
    return 0;
}

/* Request counters: stored once per (owner, workload, consumer, series,
 * time), read back by owner, workload, consumer, series and time within the
 * window; two series of one consumer at one time are both kept. */
static void test_requests(void **state)
{
    struct store *st = open_or_skip(state);
    struct ts_error err = {0};
    const struct store_request r[] = {
        {"p", "emb", "rag-h", 20, 7, ""}, {"p", "emb", "rag-e", 10, 5, ""},
        {"p", "emb", "rag-e", 5, 1, ""},  {"p", "emb", "rag-e", 10, 99, ""}, /* a repeat: ignored */
        {"p", "emb", "rag-e", 30, 9, ""}, {"p", "emb", "rag-h", 20, 3, "b"},
        {"p", "emb", "rag-h", 20, 4, "b"}}; /* a repeat */
    assert_int_equal(store_put_requests(st, r, 7, &err), TS_OK);
    char out[512] = "";
    assert_int_equal(store_scan_requests(st, 5, 30, add_req, out, &err), TS_OK);
    assert_string_equal(out,
                        "p/emb<rag-e@5=1;p/emb<rag-e@10=5;p/emb<rag-h@20=7;p/emb<rag-h:b@20=3;");
    store_close(st);
}

/* ---- the usage aggregate ----------------------------------------------- */

static int count_total(void *ctx, const struct store_agg_total *t)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%lld:%s/%s/%s/%s=%s,%s,%s;", (long long)t->kind, t->tenant,
             t->workload, t->model, t->profile, t->alloc, t->usage, t->unknown);
    return 0;
}

static int count_tail(void *ctx, const struct store_agg_tail *t)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "tail %s %lld %lld;", t->family, (long long)t->split,
             (long long)t->ts_ms);
    return 0;
}

/* claim [from, to) at 15 s and keep one total and one tail; *kept */
static int64_t agg_keep(struct store *st, int64_t from, int64_t to, int *kept)
{
    struct ts_error err = {0};
    int64_t claim = 0;
    struct store_agg_total t = {0, "a", "", "m", "", "36893488147419103232", "7", "0"};
    struct store_agg_tail tail = {"GPU-1", 1, to - 5000};
    assert_int_equal(store_agg_claim(st, 15000, from, to, &claim, &err), TS_OK);
    assert_true(claim > 0);
    assert_int_equal(store_agg_put(st, claim, &t, 1, &tail, 1, kept, &err), TS_OK);
    return claim;
}

static int64_t agg_token(struct store *st, int64_t from, int64_t to)
{
    struct ts_error err = {0};
    int64_t token = -1;
    assert_int_equal(store_agg_find(st, 15000, from, to, &token, &err), TS_OK);
    return token;
}

/* A window is kept with its rows (a numerator past 64 bits, as text) and
 * found again; a batch of samples within its reach (two intervals each
 * side) removes it, one beyond does not; a claim voided by such a batch
 * before its totals come keeps nothing. */
static void test_agg(void **state)
{
    struct store *st = open_or_skip(state);
    if (!st)
        return;
    struct ts_error err = {0};
    const int64_t from = 3600000, to = 7200000;
    int kept = 0;
    int64_t token = agg_keep(st, from, to, &kept);
    assert_true(kept);
    assert_int_equal(agg_token(st, from, to), token);
    assert_int_equal(agg_token(st, from, to + 1), 0);
    char rows[256] = "";
    assert_int_equal(store_agg_scan(st, token, count_total, count_tail, rows, &err), TS_OK);
    assert_string_equal(rows, "0:a//m/=36893488147419103232,7,0;tail GPU-1 1 7195000;");
    struct store_sample far[2] = {sample("GPU-1", to + 30000), sample("GPU-1", from - 30001)};
    assert_int_equal(store_put_samples(st, &far[0], 1, NULL, &err), TS_OK);
    assert_int_equal(store_put_samples(st, &far[1], 1, NULL, &err), TS_OK);
    assert_int_equal(agg_token(st, from, to), token); /* beyond the reach: kept */
    struct store_sample near = sample("GPU-1", to + 29999);
    assert_int_equal(store_put_samples(st, &near, 1, NULL, &err), TS_OK);
    assert_int_equal(agg_token(st, from, to), 0);
    token = agg_keep(st, from, to, &kept);
    assert_true(kept);
    assert_int_equal(store_put_samples(st, &near, 1, NULL, &err), TS_OK); /* already stored */
    assert_int_equal(agg_token(st, from, to), token);
    int64_t claim = 0;
    assert_int_equal(store_agg_claim(st, 15000, from, to, &claim, &err), TS_OK);
    assert_true(claim > 0 && claim != token); /* never reused */
    struct store_sample inside = sample("GPU-2", from);
    assert_int_equal(store_put_samples(st, &inside, 1, NULL, &err), TS_OK);
    struct store_agg_total t = {0, "b", "", "m", "", "1", "1", "1"};
    assert_int_equal(store_agg_put(st, claim, &t, 1, NULL, 0, &kept, &err), TS_OK);
    assert_false(kept);
    assert_int_equal(agg_token(st, from, to), 0);
    store_close(st);
}

#define CASES(setup, teardown)                                                     \
    cmocka_unit_test_setup_teardown(test_migrations_idempotent, setup, teardown),  \
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),         \
        cmocka_unit_test_setup_teardown(test_awkward_text, setup, teardown),       \
        cmocka_unit_test_setup_teardown(test_idempotent, setup, teardown),         \
        cmocka_unit_test_setup_teardown(test_partly_stored, setup, teardown),      \
        cmocka_unit_test_setup_teardown(test_last_sample, setup, teardown),        \
        cmocka_unit_test_setup_teardown(test_scraped_after, setup, teardown),      \
        cmocka_unit_test_setup_teardown(test_out_of_order, setup, teardown),       \
        cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),             \
        cmocka_unit_test_setup_teardown(test_devices, setup, teardown),            \
        cmocka_unit_test_setup_teardown(test_big_batch, setup, teardown),          \
        cmocka_unit_test_setup_teardown(test_failed_batch, setup, teardown),       \
        cmocka_unit_test_setup_teardown(test_ledger, setup, teardown),             \
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown), \
        cmocka_unit_test_setup_teardown(test_expositions, setup, teardown),        \
        cmocka_unit_test_setup_teardown(test_exposition_limits, setup, teardown),  \
        cmocka_unit_test_setup_teardown(test_requests, setup, teardown),           \
        cmocka_unit_test_setup_teardown(test_agg, setup, teardown)

int main(void)
{
    const struct CMUnitTest common[] = {
        cmocka_unit_test(test_bad_urls), cmocka_unit_test(test_schema_versions),
        cmocka_unit_test(test_upgrade_from_v1), cmocka_unit_test(test_upgrade_from_v7)};
    const struct CMUnitTest sqlite[] = {CASES(sqlite_setup, sqlite_teardown)};
    const struct CMUnitTest pg[] = {
        CASES(pg_setup, pg_teardown),
        cmocka_unit_test_setup_teardown(test_pg_reconnect, pg_setup, pg_teardown),
        cmocka_unit_test_setup_teardown(test_pg_upgrade_from_v3, pg_setup, pg_teardown)};
    int failed = cmocka_run_group_tests_name("store_common", common, NULL, NULL);
    failed += cmocka_run_group_tests_name("store_sqlite", sqlite, NULL, NULL);
    const char *pg_url = getenv("TESSERA_TEST_PG_URL");
    if (!pg_url || !*pg_url)
        printf("store_postgresql: skipped (TESSERA_TEST_PG_URL not set)\n");
    failed += cmocka_run_group_tests_name("store_postgresql", pg, NULL, NULL);
    return failed ? 1 : 0;
}
