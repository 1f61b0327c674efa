/*
 * test_store_records.c - the store's tables beside the samples, one
 * conformance suite for every backend (store_suite.h): the ledger's chain,
 * the latest exposition of each source, request counters per series, the
 * usage aggregate's windows and what removes them.
 */
#include "store_suite.h"

/* ---- cases ------------------------------------------------------------- */

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

#define CASES(setup, teardown)                                                    \
    cmocka_unit_test_setup_teardown(test_ledger, setup, teardown),                \
        cmocka_unit_test_setup_teardown(test_expositions, setup, teardown),       \
        cmocka_unit_test_setup_teardown(test_exposition_limits, setup, teardown), \
        cmocka_unit_test_setup_teardown(test_requests, setup, teardown),          \
        cmocka_unit_test_setup_teardown(test_agg, setup, teardown)

int main(void)
{
    const struct CMUnitTest sqlite[] = {CASES(sqlite_setup, sqlite_teardown)};
    const struct CMUnitTest pg[] = {CASES(pg_setup, pg_teardown)};
    return store_suite_run("store_records", NULL, 0, sqlite, STORE_NCASES(sqlite), pg,
                           STORE_NCASES(pg));
}
