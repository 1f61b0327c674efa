/*
 * test_ingest_oom.c - an ingest that runs out of memory fails: it never
 * answers TS_OK with a line left out. Every growth of a list (ts_grow, the
 * one way tessera grows its arrays: this file's copy stands in for
 * util/grow.c's and fails the call it is told to) is made to fail in turn,
 * on a body of exporter lines and request counters, into a real SQLite
 * store; whatever the ingest answers TS_OK to must hold everything.
 */
#include "helpers.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "meter/ingest.h"
#include "store/store.h"
#include "util/grow.h"
#include "util/sbuf.h"

static long grow_calls, fail_at; /* fail_at: the allocating call that fails (0: none) */

int ts_grow(void **items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 1;
    if (++grow_calls == fail_at)
        return 0;
    size_t want = *cap ? *cap * 2 : 16;
    if (want > SIZE_MAX / size)
        return 0;
    void *p = realloc(*items, want * size);
    if (!p)
        return 0;
    *items = p;
    *cap = want;
    return 1;
}

enum { TIMES = 120, GPUS = 12 };
static const int64_t T0 = 1793577600000LL; /* 2026-11-02T00:00:00Z */

/* Exporter lines of GPUS cards, and one request counter of a consumer of
 * the example's shared embedding pool, every 15 s. */
static void body_of(struct ts_sbuf *b)
{
    ts_sbuf_init(b, 16u << 20);
    for (int t = 0; t < TIMES; t++) {
        long long ts = T0 + t * 15000LL;
        for (int g = 0; g < GPUS; g++)
            ts_sbuf_printf(b, "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-oom%d\"} %d %lld\n", g, g,
                           (g * 7 + t) % 100, ts);
        ts_sbuf_printf(b,
                       "istio_requests_total{destination_workload_namespace=\"platform-embedding\","
                       "destination_workload=\"embedding\",source_workload_namespace=\"rag-e\","
                       "response_code=\"200\"} %d %lld\n",
                       t * 3, ts);
    }
}

struct tally {
    size_t n;
    int64_t sum;
};

static int add_sample(void *ctx, const struct store_sample *s)
{
    struct tally *t = ctx;
    t->n++;
    t->sum += s->ts_ms % 1000003 + s->util_ppm + s->share_ppm;
    return 0;
}

static int add_request(void *ctx, const struct store_request *r)
{
    struct tally *t = ctx;
    t->n++;
    t->sum += r->count + r->ts_ms % 1000003;
    return 0;
}

/* What the store holds: samples and request counts, each as a tally. */
static void stored(struct store *st, struct tally *samples, struct tally *requests)
{
    struct ts_error err = {0};
    *samples = *requests = (struct tally){0};
    assert_int_equal(store_scan_samples(st, 0, INT64_MAX, add_sample, samples, &err), TS_OK);
    assert_int_equal(store_scan_requests(st, 0, INT64_MAX, add_request, requests, &err), TS_OK);
}

/* One import with call fail_at of ts_grow failing: 1 when that call came. */
static int import_failing(const struct meter_ctx *ctx, const struct ts_sbuf *body, long fail,
                          struct tally *samples, struct tally *requests)
{
    char url[64];
    snprintf(url, sizeof(url), "sqlite:/tmp/tessera-oom-%d.db", (int)getpid());
    unlink(url + 7);
    struct store *st = NULL;
    struct ts_error err = {0};
    assert_int_equal(store_open(url, &st, &err), TS_OK);
    struct ts_diag diag = {0};
    struct meter_ingest *in = NULL;
    assert_int_equal(meter_ingest_new(ctx, st, T0, "oom.prom", &diag, &in), TS_OK);
    grow_calls = 0;
    fail_at = fail;
    ts_status rc = TS_OK;
    for (size_t off = 0; rc == TS_OK && off < body->len; off += 4096) {
        size_t len = body->len - off < 4096 ? body->len - off : 4096;
        rc = meter_ingest_feed(in, body->data + off, len, &err);
    }
    if (rc == TS_OK)
        rc = meter_ingest_finish(in, &err);
    int came = grow_calls >= fail && fail > 0;
    fail_at = 0;
    if (rc != TS_OK) /* a retry (memory is back) may answer OK only if nothing was lost */
        rc = meter_ingest_finish(in, &err);
    meter_ingest_free(in);
    if (rc == TS_OK)
        stored(st, samples, requests);
    else
        *samples = *requests = (struct tally){(size_t)-1, 0}; /* failed: nothing claimed */
    store_close(st);
    unlink(url + 7);
    return came;
}

static void test_every_growth_failing(void **state)
{
    (void)state;
    struct th_job job;
    th_run_file(&job, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_HEURISTIC);
    assert_non_null(job.plan);
    struct meter_ctx ctx = {job.model, job.cat, job.plan, NULL, 0, 0, 0, 0};
    struct ts_sbuf body;
    body_of(&body);
    struct tally want_s, want_r, got_s, got_r;
    assert_false(import_failing(&ctx, &body, 0, &want_s, &want_r));
    assert_int_equal(want_s.n, (size_t)TIMES * GPUS);
    assert_int_equal(want_r.n, TIMES);
    int failed = 0;
    long fail = 1;
    for (; import_failing(&ctx, &body, fail, &got_s, &got_r); fail++) {
        if (got_s.n == (size_t)-1) {
            failed++;
            continue;
        }
        if (got_s.n != want_s.n || got_s.sum != want_s.sum || got_r.n != want_r.n ||
            got_r.sum != want_r.sum)
            fail_msg("growth %ld failing: TS_OK with %zu samples, %zu requests (want %zu, %zu)",
                     fail, got_s.n, got_r.n, want_s.n, want_r.n);
    }
    print_message("%ld growths made to fail in turn: %d failed the import, the rest were "
                  "retried whole\n",
                  fail - 1, failed);
    assert_true(fail > 5);
    assert_true(failed > 0);
    ts_sbuf_release(&body);
    th_free(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_growth_failing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
