/*
 * test_metering.c - the metering part of `tessera serve`'s /metrics
 * (serve/metering.c) against a SQLite store: the incremental GPU-hour totals
 * equal a full integration of the store (meter/usage.h, what `tessera usage`
 * does) after every refresh, while devices interleave, new devices appear,
 * a tenant changes, a gap is capped, a node's scrape arrives late and the
 * pods of a shared card come and go (a pod's last interval billed up to its
 * card's next scrape, before or after a refresh); a
 * broken store gives tessera_metering_up 0 and no stale hours, and the
 * totals are rebuilt right once it is back; the refresh period is honoured;
 * the plan's allocation per tenant and its card counts are there with and
 * without --db.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "meter/usage.h"
#include "meter/usage_report.h"
#include "serve/internal.h"
#include "store/store.h"

static const char *spec =
    "apiVersion: tessera.dev/v1alpha1\n"
    "kind: Fleet\n"
    "metadata: {name: f}\n"
    "spec:\n"
    "  nodes: [{name: n1, gpus: [{model: h100-80gb-sxm, count: 2}]}]\n"
    "---\n"
    "apiVersion: tessera.dev/v1alpha1\n"
    "kind: Tenant\n"
    "metadata: {name: lab}\n"
    "spec:\n"
    "  contract: isolated\n"
    "  namespaces: [lab-prod]\n"
    "  workloads:\n"
    "  - {name: embed, kind: inference, memoryHighWaterGiB: 7.5, trust: untrusted, replicas: 2}\n";

struct env {
    char dir[64], path[128], url[160];
    struct th_job job;
    struct serve_policy policy;
    struct serve_options opt;
    struct serve_state state;
    struct store *st;
};

static void put(struct env *e, const char *device, int64_t s, const char *tenant,
                const char *profile, int64_t share, int64_t util)
{
    struct store_sample x = {"n1",
                             device,
                             1700000000000LL + s * 1000,
                             "NVIDIA H100 80GB HBM3",
                             profile,
                             tenant,
                             "",
                             "",
                             share,
                             util,
                             ""};
    struct ts_error err = {0};
    assert_int_equal(store_put_samples(e->st, &x, 1, NULL, &err), TS_OK);
}

static struct env *start(int with_db)
{
    struct env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    snprintf(e->dir, sizeof(e->dir), "/tmp/tessera-metering-XXXXXX");
    assert_non_null(mkdtemp(e->dir));
    snprintf(e->path, sizeof(e->path), "%s/m.db", e->dir);
    snprintf(e->url, sizeof(e->url), "sqlite:%s", e->path);
    th_run_text(&e->job, spec, PLAN_SOLVER_HEURISTIC);
    assert_non_null(e->job.plan);
    e->policy = (struct serve_policy){
        .cat = e->job.cat, .model = e->job.model, .decisions = e->job.d, .plan = e->job.plan};
    atomic_store(&e->policy.refs, 1); /* the state's; never dropped to 0 here */
    e->opt.db_url = with_db ? e->url : NULL;
    e->opt.meter_interval_ms = 15000;
    e->opt.meter_refresh_ms = 1;
    struct ts_error err = {0};
    struct store *st = NULL;
    assert_int_equal(store_open(e->url, &st, &err), TS_OK);
    e->st = st;
    pthread_mutex_init(&e->state.lock, NULL);
    e->state.opt = &e->opt;
    e->state.policy = &e->policy;
    assert_int_equal(serve_meter_init(&e->state.meter, &e->opt, &err), TS_OK);
    return e;
}

static void done(struct env *e)
{
    serve_meter_release(&e->state.meter);
    pthread_mutex_destroy(&e->state.lock);
    store_close(e->st);
    th_free(&e->job);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
    assert_int_equal(system(cmd), 0);
    free(e);
}

/* The page's metering part after the refresh period has passed. */
static char *page(struct env *e)
{
    struct timespec pause = {0, 3000000};
    nanosleep(&pause, NULL);
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1u << 24);
    serve_meter_text(&e->state.meter, &e->state, &out);
    assert_int_equal(ts_sbuf_status(&out), TS_OK);
    char *text = strdup(ts_sbuf_str(&out));
    ts_sbuf_release(&out);
    return text;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Every total of a full integration of the store is on the page, exactly,
 * and nothing else. */
static void check_against_full(struct env *e)
{
    struct meter_usage u;
    struct ts_error err = {0};
    meter_usage_init(&u, 15000);
    assert_int_equal(meter_usage_scan(e->st, 0, INT64_MAX, &u, &err), TS_OK);
    char *text = page(e);
    assert_non_null(strstr(text, "tessera_metering_up 1\n"));
    assert_true(u.ntotals > 0);
    for (size_t i = 0; i < u.ntotals; i++) {
        const struct meter_total *t = &u.totals[i];
        int64_t v[2] = {meter_alloc_uh(t), meter_usage_uh(t)};
        for (int b = 0; b < 2; b++) {
            char want[2048];
            snprintf(want, sizeof(want),
                     "tessera_gpu_hours_total{tenant=\"%s\",model=\"h100-80gb-sxm\","
                     "profile=\"%s\",basis=\"%s\",model_name=\"NVIDIA H100 80GB SXM5\"} "
                     "%lld.%06lld\n",
                     t->tenant, t->profile[0] ? t->profile : "whole", b ? "usage" : "allocation",
                     (long long)(v[b] / 1000000), (long long)(v[b] % 1000000));
            if (!strstr(text, want))
                fail_msg("missing %s in\n%s", want, text);
        }
    }
    assert_int_equal(count(text, "\ntessera_gpu_hours_total{"), (int)(2 * u.ntotals));
    free(text);
    meter_usage_release(&u);
}

static void test_incremental_equals_full(void **state)
{
    (void)state;
    struct env *e = start(1);
    for (int s = 0; s <= 60; s += 15) {
        put(e, "GPU-A/1", s, "lab", "1g.10gb", 125000, 500000);
        put(e, "GPU-B/2", s, "lab", "1g.10gb", 125000, -1);
        put(e, "GPU-C", s, "unattributed", "", 1000000, 250000);
    }
    check_against_full(e);
    /* A goes on, B changes tenant, a new device D appears, C is silent */
    put(e, "GPU-A/1", 75, "lab", "1g.10gb", 125000, 500000);
    put(e, "GPU-A/1", 90, "lab", "1g.10gb", 125000, 1000000);
    put(e, "GPU-B/2", 75, "other", "1g.10gb", 125000, 0);
    put(e, "GPU-D", 80, "lab", "", 1000000, 100000);
    put(e, "GPU-D", 95, "lab", "", 1000000, 100000);
    check_against_full(e);
    /* C's node reports late (older than the newest sample seen), then after
     * a gap that is capped at twice the interval */
    put(e, "GPU-C", 70, "unattributed", "", 1000000, 250000);
    put(e, "GPU-C", 400, "unattributed", "", 1000000, 250000);
    check_against_full(e);
    check_against_full(e); /* a refresh with nothing new changes nothing */
    done(e);
}

/* A shared card's pods come and go: each pod's last point is billed up to
 * the card's next scrape, whether that comes in the same refresh or later. */
static void test_pods_come_and_go(void **state)
{
    (void)state;
    struct env *e = start(1);
    for (int s = 0; s <= 30; s += 15) {
        put(e, "GPU-S", s, "lab", "", 500000, 500000);
        put(e, "GPU-S#lab-prod/a", s, "lab", "", 500000, 250000);
    }
    put(e, "GPU-S#x/b", 15, "other", "", 500000, 0);
    check_against_full(e);
    /* a leaves at 30 (billed to 45 when 45 comes), b is back at 60 */
    put(e, "GPU-S", 45, "lab", "", 500000, 500000);
    check_against_full(e);
    put(e, "GPU-S", 60, "lab", "", 500000, 500000);
    put(e, "GPU-S#x/b", 60, "other", "", 500000, 0);
    put(e, "GPU-S#x/b", 75, "other", "", 500000, 0);
    put(e, "GPU-S/3#x/c", 75, "other", "1g.10gb", 125000, 0);
    check_against_full(e);
    put(e, "GPU-S", 90, "lab", "", 500000, 500000);
    put(e, "GPU-S/3#x/c", 90, "other", "1g.10gb", 125000, 0);
    check_against_full(e);
    /* other: b 15-30 and 60-90 (its last closed by the card's 90) = 45 s x 1/2,
     * c 75-90 = 15 s x 1/8: 6250 + 521 micro-GPU-hours */
    char *text = page(e);
    assert_non_null(strstr(text, "tessera_gpu_hours_total{tenant=\"other\",model=\"h100-80gb-sxm\","
                                 "profile=\"whole\",basis=\"allocation\","
                                 "model_name=\"NVIDIA H100 80GB SXM5\"} 0.006250\n"));
    free(text);
    done(e);
}

static void test_store_breaks_and_returns(void **state)
{
    (void)state;
    struct env *e = start(1);
    for (int s = 0; s <= 45; s += 15)
        put(e, "GPU-A/1", s, "lab", "1g.10gb", 125000, 500000);
    check_against_full(e);
    /* the store goes away: our connection closes (SQLite folds its WAL back
     * into the file), the file moves aside, garbage takes its place */
    char moved[200];
    snprintf(moved, sizeof(moved), "%s.away", e->path);
    store_close(e->st);
    e->st = NULL;
    assert_int_equal(rename(e->path, moved), 0);
    FILE *f = fopen(e->path, "w");
    assert_non_null(f);
    fputs("this is not a database", f);
    fclose(f);
    char *text = page(e);
    assert_non_null(strstr(text, "tessera_metering_up 0\n"));
    assert_non_null(strstr(text, "tessera_metering_refreshes_total{result=\"failed\"} 1\n"));
    assert_null(strstr(text, "\ntessera_gpu_hours_total{"));
    assert_non_null(strstr(text, "tessera_tenant_allocation_gpus{tenant=\"lab\","
                                 "model=\"h100-80gb-sxm\",profile=\"1g.10gb\","
                                 "model_name=\"NVIDIA H100 80GB SXM5\"} 0.25\n"));
    free(text);
    assert_int_equal(rename(moved, e->path), 0);
    struct ts_error err = {0};
    assert_int_equal(store_open(e->url, &e->st, &err), TS_OK);
    put(e, "GPU-A/1", 60, "lab", "1g.10gb", 125000, 500000);
    check_against_full(e);
    done(e);
}

/* Within the refresh period a scrape reuses what was read. */
static void test_refresh_period(void **state)
{
    (void)state;
    struct env *e = start(1);
    e->state.meter.refresh_ms = 60000;
    put(e, "GPU-A/1", 0, "lab", "1g.10gb", 125000, 500000);
    put(e, "GPU-A/1", 15, "lab", "1g.10gb", 125000, 500000);
    char *first = page(e);
    put(e, "GPU-A/1", 30, "lab", "1g.10gb", 125000, 500000);
    char *second = page(e);
    assert_string_equal(first, second);
    assert_non_null(
        strstr(second, "basis=\"allocation\",model_name=\"NVIDIA H100 80GB SXM5\"} 0.000521\n"));
    assert_non_null(strstr(second, "tessera_metering_refreshes_total{result=\"ok\"} 1\n"));
    free(first);
    free(second);
    done(e);
}

/* Without --db: the plan's allocation only, no metering families. */
static void test_without_db(void **state)
{
    (void)state;
    struct env *e = start(0);
    char *text = page(e);
    assert_non_null(strstr(text, "# TYPE tessera_tenant_allocation_gpus gauge\n"
                                 "tessera_tenant_allocation_gpus{tenant=\"lab\","
                                 "model=\"h100-80gb-sxm\",profile=\"1g.10gb\","
                                 "model_name=\"NVIDIA H100 80GB SXM5\"} 0.25\n"));
    assert_null(strstr(text, "tessera_metering_up"));
    assert_null(strstr(text, "tessera_gpu_hours_total"));
    /* the spec's two cards; lab's two untrusted 1g.10gb replicas on
     * distinct cards (both used, the bound); one workload is one naive
     * card, two replicas two dedicated ones */
    assert_non_null(strstr(text, "# TYPE tessera_plan_gpus gauge\n"
                                 "tessera_plan_gpus{kind=\"used\"} 2\n"
                                 "tessera_plan_gpus{kind=\"fleet\"} 2\n"
                                 "tessera_plan_gpus{kind=\"naive\"} 1\n"
                                 "tessera_plan_gpus{kind=\"dedicated\"} 2\n"
                                 "tessera_plan_gpus{kind=\"lower_bound\"} 2\n"));
    free(text);
    done(e);
}

/* A bad URL is refused at start (TS_USAGE, exit 2); a database that is
 * not reachable at start is not (the webhook must come up). */
static void test_bad_url(void **state)
{
    (void)state;
    struct serve_meter m;
    struct serve_options o = {0};
    struct ts_error err = {0};
    o.db_url = "mysql://x";
    assert_int_equal(serve_meter_init(&m, &o, &err), TS_USAGE);
    assert_non_null(strstr(err.msg, "--db: unsupported database URL"));
    serve_meter_release(&m);
    o.db_url = "sqlite:/nonexistent-dir/x.db";
    assert_int_equal(serve_meter_init(&m, &o, &err), TS_OK);
    serve_meter_release(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incremental_equals_full),
        cmocka_unit_test(test_pods_come_and_go),
        cmocka_unit_test(test_store_breaks_and_returns),
        cmocka_unit_test(test_refresh_period),
        cmocka_unit_test(test_without_db),
        cmocka_unit_test(test_bad_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
