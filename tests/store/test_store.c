/*
 * test_store.c - the store's samples, one conformance suite for every
 * backend (store_suite.h): round trips of any text, batches stored once
 * and in key order, the newest sample, a device's next scrape, scans by
 * time and device, concurrent writers. The schema and the other tables
 * have suites of their own (test_store_schema.c, test_store_records.c).
 */
#include "store_suite.h"

#include <pthread.h>

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
    s[2].device = "GPU-1";
    s[1].node = NULL; /* a text of the attribution: refused as well */
    assert_int_equal(store_put_samples(st, s, 4, &ins, &err), TS_IO);
    assert_non_null(strcasestr(err.msg, "null"));
    assert_int_equal(scan_all(st, 0, 100).n, 1);
    s[1].node = "node-1"; /* the store is usable after a failure */
    assert_int_equal(put(st, s, 4), 4);
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

static size_t hold(struct store *st, const struct store_sample *s, size_t n)
{
    size_t ins = 0;
    struct ts_error err = {0};
    ts_status rc = store_hold_samples(st, s, n, &ins, &err);
    if (rc != TS_OK)
        print_message("hold: %s\n", err.msg);
    assert_int_equal(rc, TS_OK);
    return ins;
}

/* Batches held in one transaction: a second connection sees none of them
 * before the commit and all after; a batch meeting samples already stored
 * (PostgreSQL: COPY fails behind a savepoint) keeps the batches held
 * before it; an abort leaves nothing. */
static void test_held_batches(void **state)
{
    struct store *st = open_or_skip(state);
    struct store *other = open_or_skip(state); /* opening migrates: before the hold */
    enum { N = 600 };
    struct store_sample s[N];
    for (int i = 0; i < N; i++)
        s[i] = sample(i % 3 ? "GPU-x" : "GPU-y", 1000 + i * 15000);
    assert_int_equal(put(st, s + 250, 10), 10);
    assert_int_equal(hold(st, s, 200), 200);
    assert_int_equal(hold(st, s + 200, 100), 90); /* meets the 10 stored */
    assert_int_equal(scan_all(other, 0, INT64_MAX).n, 10);
    struct ts_error err = {0};
    assert_int_equal(store_commit_samples(st, &err), TS_OK);
    assert_int_equal(scan_all(other, 0, INT64_MAX).n, 300);
    assert_int_equal(hold(st, s + 300, 300), 300);
    store_abort_samples(st);
    assert_int_equal(store_commit_samples(st, &err), TS_OK); /* nothing open */
    assert_int_equal(scan_all(other, 0, INT64_MAX).n, 300);
    assert_int_equal(put(st, s, N), 300);
    store_close(other);
    store_close(st);
}

/* The rows of table in the fixture's database (SQLite or PostgreSQL). */
static int64_t count_rows(void **state, const char *table)
{
    const char *url = ((struct fx *)*state)->url;
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
    if (strncmp(url, "sqlite:", 7) == 0) {
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(url + 7, &db), SQLITE_OK);
        int64_t n = sqlite_int(db, sql);
        sqlite3_close(db);
        return n;
    }
    PGconn *c = PQconnectdb(url);
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    int64_t n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return n;
}

/* Every scanned sample has pod want[device's last letter - 'a']. */
struct pods {
    const char *want[3];
    size_t n, bad;
};

static int check_pod(void *ctx, const struct store_sample *s)
{
    struct pods *p = ctx;
    size_t i = (size_t)(s->device[strlen(s->device) - 1] - 'a');
    p->n++;
    if (i >= 3 || strcmp(s->pod, p->want[i]) != 0) {
        print_message("%s at %lld: pod %s\n", s->device, (long long)s->ts_ms, s->pod);
        p->bad++;
    }
    return 0;
}

/* Schema v9: a sample's texts are stored once, as an attribution, for
 * all the readings that share them, whoever adds it. A batch rolled back
 * takes the attributions it added with it, and its writer never names
 * their ids afterwards (SQLite gives a rolled-back id to the next
 * attribution another writer adds: a reading naming it would read back
 * with that one's texts; PostgreSQL's would name none and vanish from
 * scans). A new connection finds the attributions stored. */
static void test_attributions(void **state)
{
    struct store *st = open_or_skip(state);
    struct store *other = open_or_skip(state);
    struct store_sample s[6] = {sample("GPU-a", 1), sample("GPU-a", 2), sample("GPU-b", 1),
                                sample("GPU-b", 2), sample("GPU-c", 1), sample("GPU-c", 2)};
    s[2].pod = s[3].pod = "pod-b";
    s[4].pod = s[5].pod = "pod-c";
    assert_int_equal(hold(st, s, 4), 4);
    store_abort_samples(st);
    assert_int_equal(count_rows(state, "attributions"), 0);
    assert_int_equal(put(other, s + 4, 2), 2); /* takes the first id again on SQLite */
    assert_int_equal(put(st, s, 4), 4);
    struct pods p = {{"pod-a", "pod-b", "pod-c"}, 0, 0};
    struct ts_error err = {0};
    assert_int_equal(store_scan_samples(st, 0, 100, check_pod, &p, &err), TS_OK);
    assert_int_equal(p.n, 6);
    assert_int_equal(p.bad, 0);
    assert_int_equal(count_rows(state, "attributions"), 3);
    assert_int_equal(count_rows(state, "readings"), 6);
    store_close(other);
    struct store *fresh = open_or_skip(state); /* fills its cache from the store */
    s[0].ts_ms = s[2].ts_ms = s[4].ts_ms = 3;
    assert_int_equal(put(fresh, s, 5), 3);
    assert_int_equal(count_rows(state, "attributions"), 3);
    store_close(fresh);
    store_close(st);
}

/* SQLite only (PostgreSQL's text holds no NUL): an attribution written
 * behind tessera's back with a NUL inside its pod is not taken for the
 * attribution of its text up to the NUL. */
static void test_attribution_with_nul(void **state)
{
    const char *url = ((struct fx *)*state)->url;
    struct store *st = open_or_skip(state);
    struct store_sample s = sample("GPU-a", 1);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO attributions (node, model, profile, tenant, ns, "
                                  "pod, workload) VALUES ('node-1', 'NVIDIA H100 80GB HBM3', "
                                  "'1g.10gb', 'client-a', 'ns-a', 'pod-a' || char(0) || 'x', "
                                  "'chat')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    store_close(st);
    st = open_or_skip(state); /* its cache filled from the store */
    assert_int_equal(put(st, &s, 1), 1);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM attributions"), 2);
    assert_int_equal(sqlite_int(db, "SELECT length(CAST(pod AS BLOB)) FROM samples"), 5);
    sqlite3_close(db);
    store_close(st);
}

/* One of two writers holding a batch whose attribution is new, then
 * adding the other's (test_attribution_order). */
struct crossing {
    const char *url;
    const char *mine, *theirs; /* pods */
    int64_t ts;
    pthread_barrier_t *both_held;
    ts_status rc;
    char msg[TS_MSG_MAX];
};

static void *crossing_main(void *arg)
{
    struct crossing *x = arg;
    struct store *st = NULL;
    struct ts_error err = {0};
    x->rc = store_open(x->url, &st, &err);
    struct store_sample s[2] = {sample("GPU-x", x->ts), sample("GPU-x", x->ts + 1)};
    s[0].pod = x->mine;
    s[1].pod = x->theirs;
    size_t ins = 0;
    if (x->rc == TS_OK)
        x->rc = store_hold_samples(st, &s[0], 1, &ins, &err);
    pthread_barrier_wait(x->both_held);
    if (x->rc == TS_OK)
        x->rc = store_hold_samples(st, &s[1], 1, &ins, &err);
    if (x->rc == TS_OK)
        x->rc = store_commit_samples(st, &err);
    if (x->rc != TS_OK)
        snprintf(x->msg, sizeof(x->msg), "%s", err.msg);
    store_close(st);
    return NULL;
}

/* PostgreSQL only (SQLite has one writer at a time): two writers each
 * hold a batch with a new attribution, then each stores a batch with the
 * other's. The second batch commits the first before it adds one, so
 * neither waits on the other while holding what the other waits on (it
 * was "deadlock detected" on the attributions' unique index). */
static void test_attribution_order(void **state)
{
    struct store *st = open_or_skip(state); /* migrated before the race */
    pthread_barrier_t both;
    pthread_barrier_init(&both, NULL, 2);
    const char *url = ((struct fx *)*state)->url;
    struct crossing x[2] = {{url, "pod-x", "pod-y", 10, &both, TS_OK, ""},
                            {url, "pod-y", "pod-x", 20, &both, TS_OK, ""}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, crossing_main, &x[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&both);
    for (int i = 0; i < 2; i++) {
        if (x[i].rc != TS_OK)
            print_message("writer %d: %s\n", i, x[i].msg);
        assert_int_equal(x[i].rc, TS_OK);
    }
    assert_int_equal(scan_all(st, 0, 100).n, 4);
    assert_int_equal(count_rows(state, "attributions"), 2);
    store_close(st);
}

/* PostgreSQL only: the database behind a writer is restored from a
 * backup (its attributions gone, their ids free again) while the writer
 * runs: the connection it had is cut, and the ids it kept must not name
 * the attributions added after the restore. */
static void test_attributions_after_restore(void **state)
{
    struct store *st = open_or_skip(state);
    struct store_sample a = sample("GPU-a", 1), b = sample("GPU-b", 1);
    b.tenant = "client-b";
    assert_int_equal(put(st, &a, 1), 1);
    PGconn *c = PQconnectdb(((struct fx *)*state)->url);
    PQclear(PQexec(c, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> "
                      "pg_backend_pid() AND datname = current_database()"));
    PGresult *r = PQexec(c, "TRUNCATE readings, attributions RESTART IDENTITY");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(c);
    struct store *other = open_or_skip(state);
    assert_int_equal(put(other, &b, 1), 1); /* takes the first id again */
    store_close(other);
    a.ts_ms = 2;
    assert_int_equal(put(st, &a, 1), 1);
    struct scan sc = scan_all(st, 0, 100);
    assert_int_equal(sc.n, 2);
    assert_string_equal(sc.tenant, "client-a"); /* GPU-a's, first in order */
    assert_int_equal(count_rows(state, "attributions"), 2);
    store_close(st);
}

#define CASES(setup, teardown)                                                    \
    cmocka_unit_test_setup_teardown(test_migrations_idempotent, setup, teardown), \
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),        \
        cmocka_unit_test_setup_teardown(test_awkward_text, setup, teardown),      \
        cmocka_unit_test_setup_teardown(test_idempotent, setup, teardown),        \
        cmocka_unit_test_setup_teardown(test_partly_stored, setup, teardown),     \
        cmocka_unit_test_setup_teardown(test_last_sample, setup, teardown),       \
        cmocka_unit_test_setup_teardown(test_scraped_after, setup, teardown),     \
        cmocka_unit_test_setup_teardown(test_out_of_order, setup, teardown),      \
        cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),            \
        cmocka_unit_test_setup_teardown(test_devices, setup, teardown),           \
        cmocka_unit_test_setup_teardown(test_big_batch, setup, teardown),         \
        cmocka_unit_test_setup_teardown(test_failed_batch, setup, teardown),      \
        cmocka_unit_test_setup_teardown(test_held_batches, setup, teardown),      \
        cmocka_unit_test_setup_teardown(test_attributions, setup, teardown),      \
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown)

int main(void)
{
    const struct CMUnitTest sqlite[] = {
        CASES(sqlite_setup, sqlite_teardown),
        cmocka_unit_test_setup_teardown(test_attribution_with_nul, sqlite_setup, sqlite_teardown)};
    const struct CMUnitTest pg[] = {
        CASES(pg_setup, pg_teardown),
        cmocka_unit_test_setup_teardown(test_attribution_order, pg_setup, pg_teardown),
        cmocka_unit_test_setup_teardown(test_attributions_after_restore, pg_setup, pg_teardown)};
    return store_suite_run("store", NULL, 0, sqlite, STORE_NCASES(sqlite), pg, STORE_NCASES(pg));
}
