/*
 * test_ingest.c - dcgm-exporter bodies become store samples: real scrapes
 * (tests/fixtures/dcgm) keyed by GPU or MIG instance, tenants from
 * namespaces (unattributed kept), devices without pods charged to the
 * plan's tenant, card shares by mechanism and PriceBook basis, custody
 * violations, chunked input, many scrape times in one body, and a store
 * that fails once (nothing lost, nothing twice).
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/ingest.h"
#include "util/file.h"

static const char *spec =
    "apiVersion: tessera.dev/v1alpha1\n"
    "kind: Fleet\n"
    "metadata: {name: f}\n"
    "spec:\n"
    "  nodes: [{name: gsrh100-074, mps: true, gpus: [{model: h100-80gb-sxm, count: 3}]}]\n"
    "---\n"
    "apiVersion: tessera.dev/v1alpha1\n"
    "kind: Tenant\n"
    "metadata: {name: lab}\n"
    "spec:\n"
    "  contract: isolated\n"
    "  namespaces: [model-playground-stg]\n"
    "  workloads:\n"
    "  - {name: big, kind: inference, memoryHighWaterGiB: 30, p99Ms: 100, trust: untrusted}\n"
    "  - {name: small, kind: inference, memoryHighWaterGiB: 8, p99Ms: 100, trust: untrusted}\n"
    "---\n"
    "apiVersion: tessera.dev/v1alpha1\n"
    "kind: Tenant\n"
    "metadata: {name: team}\n"
    "spec:\n"
    "  contract: shared-trusted\n"
    "  namespaces: [team-ns]\n"
    "  workloads:\n"
    "  - {name: a, kind: inference, memoryHighWaterGiB: 20, p99Ms: 100, isolation: mps, smPercent: "
    "30}\n"
    "  - {name: b, kind: inference, memoryHighWaterGiB: 20, p99Ms: 100, isolation: mps, smPercent: "
    "70}\n"
    "---\n"
    "apiVersion: tessera.dev/v1alpha1\n"
    "kind: Tenant\n"
    "metadata: {name: dev}\n"
    "spec:\n"
    "  contract: best-effort\n"
    "  namespaces: [dev-ns]\n"
    "  workloads:\n"
    "  - {name: nb, kind: dev, memoryHighWaterGiB: 10}\n"
    "  - {name: nb2, kind: dev, memoryHighWaterGiB: 10}\n";

#define ROWS_MAX 200000

/* A sink that keeps "device|ts|tenant|share|util|profile" rows; its call
 * number fail_call fails like a store that went away (set before the first
 * feed: with overlap the sink runs on the writer's thread). */
struct sink {
    char *rows[ROWS_MAX];
    size_t n, committed; /* with commit_rows: rows[committed..n) are uncommitted */
    int fail_call, calls, batches, fail_commit, commits;
    int txn; /* used with commit_rows */
};

/* Rows since the last commit dropped, as a transaction rolled back. */
static void roll_back(struct sink *k)
{
    while (k->n > k->committed)
        free(k->rows[--k->n]);
}

/* keep's commit, for a sink used as a transaction: its call number
 * fail_commit fails (and rolls back, as a store's failed COMMIT does). */
static ts_status commit_rows(void *arg, int keep_rows, struct ts_error *err)
{
    struct sink *k = arg;
    if (keep_rows && ++k->commits == k->fail_commit)
        keep_rows = 0, ts_err(err, TS_IO, "commit failed");
    if (!keep_rows) {
        roll_back(k);
        return err && err->code ? err->code : TS_OK;
    }
    k->committed = k->n;
    return TS_OK;
}

static ts_status keep(void *arg, const struct store_sample *s, size_t n, size_t *inserted,
                      struct ts_error *err)
{
    struct sink *k = arg;
    if (++k->calls == k->fail_call) {
        if (k->txn)
            roll_back(k); /* what the transaction held is gone */
        return ts_err(err, TS_IO, "store went away");
    }
    k->batches++;
    for (size_t i = 0; i < n && k->n < ROWS_MAX; i++) {
        char row[512];
        snprintf(row, sizeof(row), "%s|%lld|%s|%lld|%lld|%s", s[i].device, (long long)s[i].ts_ms,
                 s[i].tenant, (long long)s[i].share_ppm, (long long)s[i].util_ppm, s[i].profile);
        k->rows[k->n++] = strdup(row);
    }
    *inserted = n;
    return TS_OK;
}

struct env {
    struct th_job job;
    struct meter_ctx ctx;
    struct ts_diag diag;
    struct sink sink;
    struct meter_ingest *in;
};

static void start(struct env *e, const char *yaml)
{
    memset(e, 0, sizeof(*e));
    th_run_text(&e->job, yaml ? yaml : spec, PLAN_SOLVER_HEURISTIC);
    assert_non_null(e->job.plan);
    e->ctx = (struct meter_ctx){e->job.model, e->job.cat, e->job.plan, NULL, 0, 0, 0, 0};
    assert_int_equal(meter_ingest_new(&e->ctx, NULL, 1700000000000LL, "t.prom", &e->diag, &e->in),
                     TS_OK);
    meter_ingest_set_sink(e->in, keep, NULL, &e->sink);
}

static void feed(struct env *e, const char *text, size_t chunk)
{
    struct ts_error err = {0};
    size_t len = strlen(text);
    for (size_t off = 0; off < len; off += chunk)
        assert_int_equal(
            meter_ingest_feed(e->in, text + off, len - off < chunk ? len - off : chunk, &err),
            TS_OK);
    assert_int_equal(meter_ingest_finish(e->in, &err), TS_OK);
}

static void feed_fixture(struct env *e, const char *file)
{
    char path[1024], *text;
    size_t len;
    struct ts_error err;
    snprintf(path, sizeof(path), "%s/tests/fixtures/dcgm/%s", getenv("TESSERA_SRC"), file);
    assert_int_equal(ts_file_read(path, TS_INPUT_MAX, &text, &len, &err), TS_OK);
    feed(e, text, 4096);
    free(text);
}

static void done(struct env *e)
{
    for (size_t i = 0; i < e->sink.n; i++)
        free(e->sink.rows[i]);
    meter_ingest_free(e->in);
    th_free(&e->job);
}

/* The row of device at ts, or fail. */
static const char *row(const struct env *e, const char *device, long long ts)
{
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "%s|%lld|", device, ts);
    for (size_t i = 0; i < e->sink.n; i++)
        if (strncmp(e->sink.rows[i], prefix, strlen(prefix)) == 0)
            return e->sink.rows[i];
    fail_msg("no row for %s", prefix);
    return NULL;
}

static void test_mig_pods(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    feed_fixture(&e, "nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom");
    assert_int_equal(e.sink.n, 3);
    const char *uuid = "GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77";
    char key[128];
    for (int gi = 7; gi <= 9; gi++) {
        snprintf(key, sizeof(key), "%s/%d", uuid, gi);
        char want[256];
        /* 7 and 9 by their pods' namespace, 8 (no pod) by the plan, which gives
         * lab's 1g.10gb on this card; 1 of 8 memory units each */
        snprintf(want, sizeof(want), "%s|1700000000000|lab|125000|0|1g.10gb", key);
        assert_string_equal(row(&e, key, 1700000000000LL), want);
    }
    done(&e);
}

static void test_whole_and_redacted(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    feed_fixture(&e, "nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-3g40gb-and-full-gpus.prom");
    assert_int_equal(e.sink.n, 5); /* two 3g.40gb instances on GPU 0, GPUs 1-3 whole */
    int mig = 0, whole = 0;
    for (size_t i = 0; i < e.sink.n; i++) {
        mig += strstr(e.sink.rows[i], "|500000|") && strstr(e.sink.rows[i], "|3g.40gb");
        whole += strstr(e.sink.rows[i], "|1000000|") != NULL;
        assert_non_null(strstr(e.sink.rows[i], "|unattributed|"));
    }
    assert_int_equal(mig, 2);
    assert_int_equal(whole, 3);
    done(&e);
}

static void test_old_profile_name(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    feed_fixture(&e, "nvidia-gpu-operator-issue687_a100-80gb-pcie_mig-7g79gb-profile-name.prom");
    assert_int_equal(e.sink.n, 1);
    /* 7g.79gb = the full 8-unit profile; this scrape has no engine metric */
    assert_string_equal(e.sink.rows[0],
                        "GPU-06357e72-c3ee-614b-775f-a89e18e8cc08/0|1700000000000|unattributed|"
                        "1000000|-1|7g.79gb");
    assert_int_equal(e.diag.count, 0);
    done(&e);
}

#define H100 "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gsrh100-074\""

/* No pod labels: the plan's tenant; MIG shares by memory units. */
static void test_plan_attribution(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    feed(&e,
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\"," H100 ",GPU_I_PROFILE=\"3g.40gb\","
         "GPU_I_ID=\"2\"} 50\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\"," H100 ",GPU_I_PROFILE=\"1g.10gb\","
         "GPU_I_ID=\"9\"} 0\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"7\",UUID=\"GPU-7\"," H100 "} 0\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"8\",UUID=\"GPU-8\"," H100 ",namespace=\"kube-system\","
         "pod=\"x\"} 0\n",
         7);
    assert_string_equal(row(&e, "GPU-0/2", 1700000000000LL),
                        "GPU-0/2|1700000000000|lab|500000|500000|3g.40gb");
    assert_string_equal(row(&e, "GPU-0/9", 1700000000000LL),
                        "GPU-0/9|1700000000000|lab|125000|0|1g.10gb");
    /* a card the plan does not have stays unattributed, billed whole */
    assert_string_equal(row(&e, "GPU-7", 1700000000000LL),
                        "GPU-7|1700000000000|unattributed|1000000|0|");
    /* a namespace of no tenant: kept as unattributed, never dropped */
    assert_string_equal(row(&e, "GPU-8", 1700000000000LL),
                        "GPU-8|1700000000000|unattributed|1000000|0|");
    assert_int_equal(e.sink.n, 4);
    done(&e);
}

/* Shared cards: MPS by thread %, time-slicing 1/N, one row per client. */
static void test_sharing_shares(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    feed(&e,
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\"," H100 "} 100\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-2\"," H100 ",namespace=\"dev-ns\","
         "pod=\"nb-0\"} 20\n",
         1 << 16);
    assert_string_equal(row(&e, "GPU-1#team/a/0", 1700000000000LL),
                        "GPU-1#team/a/0|1700000000000|team|300000|1000000|");
    assert_string_equal(row(&e, "GPU-1#team/b/0", 1700000000000LL),
                        "GPU-1#team/b/0|1700000000000|team|700000|1000000|");
    assert_string_equal(row(&e, "GPU-2#dev-ns/nb-0", 1700000000000LL),
                        "GPU-2#dev-ns/nb-0|1700000000000|dev|500000|200000|");
    assert_int_equal(e.sink.n, 3);
    size_t nv;
    meter_ingest_violations(e.in, &nv);
    assert_int_equal(nv, 0);
    done(&e);
}

/* A pod of another tenant on lab's instance: billed to who used it, and
 * reported once however many scrapes show it. */
static void test_violation(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    feed(&e,
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\"," H100 ",GPU_I_PROFILE=\"3g.40gb\","
         "GPU_I_ID=\"2\",namespace=\"team-ns\",pod=\"intruder\"} 90 1700000000000\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\"," H100 ",GPU_I_PROFILE=\"3g.40gb\","
         "GPU_I_ID=\"2\",namespace=\"team-ns\",pod=\"intruder\"} 90 1700000015000\n",
         64);
    assert_string_equal(row(&e, "GPU-0/2", 1700000015000LL),
                        "GPU-0/2|1700000015000|team|500000|900000|3g.40gb");
    size_t nv;
    const struct meter_violation *v = meter_ingest_violations(e.in, &nv);
    assert_int_equal(nv, 1);
    assert_string_equal(v[0].observed, "team");
    assert_string_equal(v[0].planned, "lab");
    assert_string_equal(v[0].pod, "intruder");
    assert_string_equal(v[0].gi_id, "2");
    assert_int_equal(v[0].ts_ms, 1700000000000LL);
    done(&e);
}

static const char *basis_spec(const char *basis)
{
    static char text[4096];
    snprintf(text, sizeof(text),
             "%s\n---\napiVersion: tessera.dev/v1alpha1\nkind: PriceBook\n"
             "metadata: {name: p}\nspec:\n  currency: EUR\n  migShareBasis: %s\n"
             "  prices: [{model: h100-80gb-sxm, perGpuHour: \"2.00\"}]\n",
             spec, basis);
    return text;
}

/* 3g.40gb is 4 of 8 memory units and 3 of 7 compute slices. */
static void test_share_basis(void **state)
{
    (void)state;
    static const struct {
        const char *basis;
        const char *want;
    } cases[] = {
        {"memory", "GPU-0/2|1700000000000|lab|500000|-1|3g.40gb"},
        {"compute", "GPU-0/2|1700000000000|lab|428571|-1|3g.40gb"},
        {"max", "GPU-0/2|1700000000000|lab|500000|-1|3g.40gb"},
    };
    for (size_t i = 0; i < 3; i++) {
        struct env e;
        start(&e, basis_spec(cases[i].basis));
        feed(&e,
             "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-0\"," H100 ","
             "GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\"} 1\n",
             100);
        assert_string_equal(row(&e, "GPU-0/2", 1700000000000LL), cases[i].want);
        done(&e);
    }
    /* 1g.10gb: 1 of 8 memory units, 1 of 7 compute slices: max picks compute */
    struct env e;
    start(&e, basis_spec("max"));
    feed(&e,
         "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-0\"," H100 ",GPU_I_PROFILE=\"1g.10gb\","
         "GPU_I_ID=\"9\"} 1\n",
         100);
    assert_string_equal(row(&e, "GPU-0/9", 1700000000000LL),
                        "GPU-0/9|1700000000000|lab|142857|-1|1g.10gb");
    done(&e);
}

/* Every pod the exporter lists on a device is charged. The MPS card of
 * team (clients a 30%, b 70%): both team pods are charged the average of
 * team's clients (50% each, 100% together), an intruder listed after them
 * its share and reported. A MIG instance of lab with two pods: 1/2 each,
 * the other tenant's pod reported, whichever comes first in the scrape. */
static void test_every_pod_charged(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    feed(&e,
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\"," H100 ",namespace=\"team-ns\","
         "pod=\"a-0\"} 40\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\"," H100 ",namespace=\"team-ns\","
         "pod=\"b-0\"} 40\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\"," H100 ",namespace=\"dev-ns\","
         "pod=\"intruder\"} 40\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\"," H100 ",GPU_I_PROFILE=\"3g.40gb\","
         "GPU_I_ID=\"2\",namespace=\"team-ns\",pod=\"first\"} 10\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\"," H100 ",GPU_I_PROFILE=\"3g.40gb\","
         "GPU_I_ID=\"2\",namespace=\"model-playground-stg\",pod=\"owner\"} 10\n",
         13);
    assert_string_equal(row(&e, "GPU-1#team-ns/a-0", 1700000000000LL),
                        "GPU-1#team-ns/a-0|1700000000000|team|500000|400000|");
    assert_string_equal(row(&e, "GPU-1#team-ns/b-0", 1700000000000LL),
                        "GPU-1#team-ns/b-0|1700000000000|team|500000|400000|");
    assert_string_equal(row(&e, "GPU-1#dev-ns/intruder", 1700000000000LL),
                        "GPU-1#dev-ns/intruder|1700000000000|dev|300000|400000|");
    assert_string_equal(row(&e, "GPU-0/2#team-ns/first", 1700000000000LL),
                        "GPU-0/2#team-ns/first|1700000000000|team|250000|100000|3g.40gb");
    assert_string_equal(row(&e, "GPU-0/2#model-playground-stg/owner", 1700000000000LL),
                        "GPU-0/2#model-playground-stg/owner|1700000000000|lab|250000|100000|"
                        "3g.40gb");
    assert_int_equal(e.sink.n, 5);
    size_t nv;
    const struct meter_violation *v = meter_ingest_violations(e.in, &nv);
    assert_int_equal(nv, 2);
    int dev = 0, team = 0;
    for (size_t i = 0; i < nv; i++) {
        dev += !strcmp(v[i].observed, "dev") && !strcmp(v[i].pod, "intruder");
        team += !strcmp(v[i].observed, "team") && !strcmp(v[i].planned, "lab") &&
                !strcmp(v[i].pod, "first");
    }
    assert_int_equal(dev + team, 2);
    done(&e);
}

/* Three pods on a card the plan does not share: thirds that add to one. */
static void test_pods_split_a_card(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    for (int i = 0; i < 3; i++) {
        char line[256];
        snprintf(line, sizeof(line),
                 "DCGM_FI_DEV_FB_USED{gpu=\"9\",UUID=\"GPU-9\"," H100 ",namespace=\"dev-ns\","
                 "pod=\"p%d\"} 1\n",
                 2 - i);
        meter_ingest_feed(e.in, line, strlen(line), NULL);
    }
    feed(&e, "", 1);
    assert_int_equal(e.sink.n, 3);
    assert_string_equal(row(&e, "GPU-9#dev-ns/p0", 1700000000000LL),
                        "GPU-9#dev-ns/p0|1700000000000|dev|333334|-1|");
    assert_string_equal(row(&e, "GPU-9#dev-ns/p1", 1700000000000LL),
                        "GPU-9#dev-ns/p1|1700000000000|dev|333333|-1|");
    assert_string_equal(row(&e, "GPU-9#dev-ns/p2", 1700000000000LL),
                        "GPU-9#dev-ns/p2|1700000000000|dev|333333|-1|");
    done(&e);
}

/* A device whose pods carry some series and whose other series lack pod
 * labels: charged through its pods only, with the unlabelled utilisation. */
static void test_pods_and_unlabelled_lines(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    feed(&e,
         "DCGM_FI_DEV_FB_USED{gpu=\"9\",UUID=\"GPU-9\"," H100 ",namespace=\"dev-ns\","
         "pod=\"p\"} 1\n"
         "DCGM_FI_DEV_GPU_UTIL{gpu=\"9\",UUID=\"GPU-9\"," H100 "} 30\n",
         7);
    assert_int_equal(e.sink.n, 1);
    assert_string_equal(e.sink.rows[0], "GPU-9|1700000000000|dev|1000000|300000|");
    done(&e);
}

static const char *whole_spec =
    "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
    "  nodes: [{name: n1, gpus: [{model: h100-80gb-sxm, count: 2}]}]\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: lab}\nspec:\n"
    "  contract: isolated\n  namespaces: [lab-ns]\n  workloads:\n"
    "  - {name: big, kind: training, memoryHighWaterGiB: 75}\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: team}\nspec:\n"
    "  contract: shared-trusted\n  namespaces: [team-ns]\n  workloads:\n"
    "  - {name: a, kind: inference, memoryHighWaterGiB: 8, p99Ms: 100, trust: untrusted}\n";

/* The plan: n1 GPU 0 MIG (team's 1g.10gb), GPU 1 whole to lab. A MIG pod
 * of team on lab's whole card is a custody violation. */
static void test_mig_pod_on_whole_card(void **state)
{
    (void)state;
    struct env e;
    start(&e, whole_spec);
    feed(&e,
         "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-1\",modelName=\"NVIDIA H100 80GB HBM3\","
         "Hostname=\"n1\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"9\",namespace=\"team-ns\","
         "pod=\"sneak\"} 1\n",
         64);
    assert_string_equal(row(&e, "GPU-1/9", 1700000000000LL),
                        "GPU-1/9|1700000000000|team|125000|-1|1g.10gb");
    size_t nv;
    const struct meter_violation *v = meter_ingest_violations(e.in, &nv);
    assert_int_equal(nv, 1);
    assert_string_equal(v[0].observed, "team");
    assert_string_equal(v[0].planned, "lab");
    done(&e);
}

/* Without pod labels, the plan bills only a card the scrape agrees on: a
 * whole RTX card where the plan has team's MIG H100, or the plan's MIG card
 * seen whole, is unattributed and reported; an agreeing card is billed. */
static void test_plan_disagrees(void **state)
{
    (void)state;
    struct env e;
    start(&e, whole_spec);
    feed(&e,
         "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-0\",modelName=\"NVIDIA GeForce RTX 4090\","
         "Hostname=\"n1\"} 1 1700000000000\n"
         "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-0\",modelName=\"NVIDIA H100 80GB HBM3\","
         "Hostname=\"n1\"} 1 1700000015000\n"
         "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-1\",modelName=\"NVIDIA H100 80GB HBM3\","
         "Hostname=\"n1\"} 1 1700000000000\n"
         "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-1\",modelName=\"NVIDIA H100 80GB HBM3\","
         "Hostname=\"n1\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"9\"} 1 1700000015000\n",
         64);
    assert_string_equal(row(&e, "GPU-0", 1700000000000LL),
                        "GPU-0|1700000000000|unattributed|1000000|-1|");
    assert_string_equal(row(&e, "GPU-0", 1700000015000LL),
                        "GPU-0|1700000015000|unattributed|1000000|-1|");
    assert_string_equal(row(&e, "GPU-1", 1700000000000LL), "GPU-1|1700000000000|lab|1000000|-1|");
    assert_string_equal(row(&e, "GPU-1/9", 1700000015000LL),
                        "GPU-1/9|1700000015000|unattributed|125000|-1|1g.10gb");
    assert_int_equal(e.diag.count, 3);
    const char *all[] = {"the scrape shows a NVIDIA GeForce RTX 4090, the plan a h100-80gb-sxm on "
                         "node n1 GPU 0",
                         "the scrape shows the card not MIG (profile ''), the plan MIG on node n1 "
                         "GPU 0",
                         "the scrape shows the card MIG (profile '1g.10gb'), the plan not MIG on "
                         "node n1 GPU 1"};
    for (size_t k = 0; k < 3; k++) {
        int found = 0;
        for (int i = 0; i < e.diag.count; i++)
            found += strstr(e.diag.items[i].msg, all[k]) != NULL;
        if (found != 1)
            fail_msg("'%s' found %d times", all[k], found);
    }
    done(&e);
}

/* Utilisation that is missing, unrecognised, negative, infinite or out of
 * range is unknown (-1), never 100% busy. */
static void test_unknown_utilisation(void **state)
{
    (void)state;
    static const char *lines[][2] = {
        {"DCGM_FI_DEV_FB_USED", "1"},
        {"dcgm_fi_dev_gpu_util", "50"},
        {"DCGM_FI_DEV_GPU_UTIL", "-5"},
        {"DCGM_FI_DEV_GPU_UTIL", "+Inf"},
        {"DCGM_FI_DEV_GPU_UTIL", "NaN"},
        {"DCGM_FI_DEV_GPU_UTIL", "250"},
        {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "-0.5"},
        {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "1.5"},
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        struct env e;
        start(&e, NULL);
        char text[512];
        snprintf(
            text, sizeof(text),
            "DCGM_FI_DEV_FB_USED{gpu=\"5\",UUID=\"GPU-5\"} 1\n%s{gpu=\"5\",UUID=\"GPU-5\"} %s\n",
            lines[i][0], lines[i][1]);
        feed(&e, text, 5);
        if (e.sink.n != 1 || strcmp(e.sink.rows[0], "GPU-5|1700000000000|unattributed|1000000|-1|"))
            fail_msg("%s %s: %zu rows, %s", lines[i][0], lines[i][1], e.sink.n,
                     e.sink.n ? e.sink.rows[0] : "");
        done(&e);
    }
}

/* A device whose only values are NaN or +-Inf was there: it is stored
 * (billed on the allocation basis), its use unknown, and counted. */
static void test_only_unreadable(void **state)
{
    (void)state;
    static const char *values[] = {"NaN", "+Inf", "-Inf"};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        struct env e;
        start(&e, NULL);
        char text[512];
        snprintf(text, sizeof(text),
                 "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"5\",UUID=\"GPU-5\"} %s\n"
                 "DCGM_FI_DEV_GPU_UTIL{gpu=\"5\",UUID=\"GPU-5\"} %s\n",
                 values[i], values[i]);
        feed(&e, text, 7);
        if (e.sink.n != 1 || strcmp(e.sink.rows[0], "GPU-5|1700000000000|unattributed|1000000|-1|"))
            fail_msg("%s: %zu rows, %s", values[i], e.sink.n, e.sink.n ? e.sink.rows[0] : "");
        struct meter_ingest_counts c;
        meter_ingest_counts(e.in, &c);
        assert_int_equal(c.devices, 1);
        assert_int_equal(c.unreadable, 1);
        done(&e);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 5,000 devices at each of 3 scrape times, each device with 2 metrics:
 * the lines sorted, reversed, and with a scrape time arriving late (the
 * third before the second) give the same rows. */
static void test_any_order(void **state)
{
    (void)state;
    enum { DEVS = 5000, TIMES = 3, LINES = DEVS * TIMES * 2 };
    char **lines = malloc(LINES * sizeof(*lines));
    for (int t = 0, n = 0; t < TIMES; t++)
        for (int m = 0; m < 2; m++)
            for (int d = 0; d < DEVS; d++) {
                char buf[160];
                snprintf(buf, sizeof(buf), "%s{gpu=\"%d\",UUID=\"GPU-x%d\"} %d %lld\n",
                         m ? "DCGM_FI_DEV_GPU_UTIL" : "DCGM_FI_DEV_FB_USED", d % 8, d,
                         (d + t) % 101, 1700000000000LL + t * 15000LL);
                lines[n++] = strdup(buf);
            }
    char *rows[3][DEVS * TIMES];
    for (int order = 0; order < 3; order++) {
        struct env e;
        start(&e, NULL);
        for (int i = 0; i < LINES; i++) {
            int k = order == 0     ? i
                    : order == 1   ? LINES - 1 - i
                    : i < DEVS * 2 ? i
                    : i < DEVS * 4 ? i + DEVS * 2
                                   : i - DEVS * 2;
            assert_int_equal(meter_ingest_feed(e.in, lines[k], strlen(lines[k]), NULL), TS_OK);
        }
        feed(&e, "", 1);
        assert_int_equal(e.sink.n, DEVS * TIMES);
        assert_int_equal(e.diag.count, 0);
        qsort(e.sink.rows, e.sink.n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < e.sink.n; i++)
            rows[order][i] = strdup(e.sink.rows[i]);
        done(&e);
    }
    for (int i = 0; i < DEVS * TIMES; i++) {
        assert_string_equal(rows[0][i], rows[1][i]);
        assert_string_equal(rows[0][i], rows[2][i]);
        assert_null(strstr(rows[0][i], "|-1|")); /* every device had its utilisation */
        free(rows[0][i]);
        free(rows[1][i]);
        free(rows[2][i]);
    }
    for (int i = 0; i < LINES; i++)
        free(lines[i]);
    free(lines);
}

/* One scrape time of more devices than the gathering window (no time is
 * older to store): every device whole, with its utilisation, once. */
static void test_one_big_scrape(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    struct ts_sbuf body;
    ts_sbuf_init(&body, 64u << 20);
    enum { DEVS = METER_GATHER_MAX + 3000 };
    for (int m = 0; m < 2; m++)
        for (int d = 0; d < DEVS; d++)
            ts_sbuf_printf(&body, "%s{gpu=\"%d\",UUID=\"GPU-w%d\"} %d\n",
                           m ? "DCGM_FI_DEV_GPU_UTIL" : "DCGM_FI_DEV_FB_USED", d % 8, d, d % 101);
    feed(&e, ts_sbuf_str(&body), 1 << 16);
    ts_sbuf_release(&body);
    assert_int_equal(e.sink.n, DEVS);
    assert_int_equal(e.diag.count, 0);
    for (size_t i = 0; i < e.sink.n; i++)
        if (strstr(e.sink.rows[i], "|-1|"))
            fail_msg("a device without its utilisation: %s", e.sink.rows[i]);
    done(&e);
}

/* Out of order by more than the gathering window: the late line is
 * rejected with its line number, never stored as a half sample. */
static void test_too_late(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    struct ts_sbuf body;
    ts_sbuf_init(&body, 64u << 20);
    int times = METER_GATHER_MAX / 40 + 2;
    for (int t = 0; t < times; t++)
        for (int g = 0; g < 40; g++)
            ts_sbuf_printf(&body, "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-x%d\"} 1 %lld\n", g,
                           g, 1700000000000LL + t * 15000LL);
    ts_sbuf_printf(&body, "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-x0\"} 1 1700000000000\n");
    feed(&e, ts_sbuf_str(&body), 1 << 16);
    ts_sbuf_release(&body);
    assert_int_equal(e.diag.count, 1);
    assert_int_equal(e.diag.items[0].line, times * 40 + 1);
    assert_non_null(strstr(e.diag.items[0].msg, "scrape time 1700000000000 ms is already stored"));
    struct meter_ingest_counts c;
    meter_ingest_counts(e.in, &c);
    assert_int_equal(c.rejected_lines, 1);
    assert_int_equal(c.inserted, (size_t)times * 40);
    done(&e);
}

/* A day-like body: more scrape times than the table holds (flushed in
 * batches), GPUS devices every 15 s. */
enum { TIMES = METER_GATHER_MAX / 40 + 300, GPUS = 40 };
static void history_of(struct ts_sbuf *body, int times)
{
    ts_sbuf_init(body, 64u << 20);
    for (int t = 0; t < times; t++)
        for (int g = 0; g < GPUS; g++)
            ts_sbuf_printf(body, "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-x%d\"} %d %lld\n", g,
                           g, g, 1700000000000LL + t * 15000LL);
}
static void history(struct ts_sbuf *body) { history_of(body, TIMES); }

/* Every (device, time) once; a store failure in the middle is retried by
 * finish and loses nothing, whether batches are stored on this thread or
 * the writer's (overlap: the failure is found by the flush after it). */
static void history_and_retry(int overlap)
{
    struct env e;
    start(&e, NULL);
    if (overlap)
        meter_ingest_overlap(e.in);
    struct ts_sbuf body;
    history(&body);
    e.sink.fail_call = 2; /* the second batch fails */
    struct ts_error err = {0};
    ts_status st = meter_ingest_feed(e.in, body.data, body.len, &err);
    if (st == TS_OK)
        st = meter_ingest_finish(e.in, &err);
    assert_int_equal(st, TS_IO);
    assert_string_equal(err.msg, "store went away");
    assert_int_equal(meter_ingest_finish(e.in, &err), TS_OK); /* the retry */
    ts_sbuf_release(&body);
    /* the failure stopped the feed: what was fed before it is all there */
    struct meter_ingest_counts c;
    meter_ingest_counts(e.in, &c);
    assert_int_equal(c.inserted, e.sink.n);
    assert_true(e.sink.batches >= 2);
    for (size_t i = 0; i < e.sink.n; i++)
        for (size_t j = i + 1; j < e.sink.n && j < i + GPUS * 3; j++)
            assert_string_not_equal(e.sink.rows[i], e.sink.rows[j]);
    assert_true(c.inserted >= (size_t)(TIMES * GPUS / 2));
    done(&e);
}

static void test_history_and_retry(void **state)
{
    (void)state;
    history_and_retry(0);
}

static void test_history_and_retry_overlap(void **state)
{
    (void)state;
    history_and_retry(1);
}

/* Batches stored on the writer's thread: the same rows in the same order,
 * the same counts, as stored on this one. */
static void test_overlap_same_rows(void **state)
{
    (void)state;
    struct env a, b;
    start(&a, NULL);
    start(&b, NULL);
    meter_ingest_overlap(b.in);
    struct ts_sbuf body;
    history(&body);
    feed(&a, body.data, 100000);
    feed(&b, body.data, 100000);
    ts_sbuf_release(&body);
    assert_int_equal(a.sink.n, (size_t)TIMES * GPUS);
    assert_int_equal(b.sink.n, a.sink.n);
    assert_true(b.sink.batches >= 2);
    for (size_t i = 0; i < a.sink.n; i++)
        assert_string_equal(a.sink.rows[i], b.sink.rows[i]);
    struct meter_ingest_counts ca, cb;
    meter_ingest_counts(a.in, &ca);
    meter_ingest_counts(b.in, &cb);
    assert_int_equal(ca.inserted, cb.inserted);
    assert_int_equal(ca.devices, cb.devices);
    done(&a);
    done(&b);
}

/* A body of more batches than share one commit. */
enum { LONG_TIMES = METER_GATHER_MAX * (METER_COMMIT_BATCHES + 2) / GPUS + 300 };
static void long_history(struct ts_sbuf *body) { history_of(body, LONG_TIMES); }

/* Batches sharing a commit (overlap, a sink with a commit): a commit that
 * fails loses every batch it held, and the retry stores them all again,
 * in order: the same committed rows and counts as a run without failure. */
static void test_group_commit_retry(void **state)
{
    (void)state;
    struct env a, b;
    start(&a, NULL);
    start(&b, NULL);
    meter_ingest_set_sink(b.in, keep, commit_rows, &b.sink);
    b.sink.txn = 1;
    meter_ingest_overlap(b.in);
    b.sink.fail_commit = 1; /* the first commit: METER_COMMIT_BATCHES batches */
    struct ts_sbuf body;
    long_history(&body);
    feed(&a, body.data, 100000);
    struct ts_error err = {0};
    ts_status st = meter_ingest_feed(b.in, body.data, body.len, &err);
    if (st == TS_OK)
        st = meter_ingest_finish(b.in, &err);
    assert_int_equal(st, TS_IO);
    assert_string_equal(err.msg, "commit failed");
    assert_int_equal(b.sink.committed, 0);
    assert_int_equal(b.sink.batches, METER_COMMIT_BATCHES);
    assert_int_equal(meter_ingest_finish(b.in, &err), TS_OK); /* the retry */
    ts_sbuf_release(&body);
    assert_int_equal(b.sink.n, b.sink.committed);
    assert_int_equal(b.sink.n, (size_t)LONG_TIMES * GPUS);
    assert_int_equal(a.sink.n, b.sink.n);
    for (size_t i = 0; i < a.sink.n; i++)
        assert_string_equal(a.sink.rows[i], b.sink.rows[i]);
    assert_true(b.sink.commits >= 2);
    struct meter_ingest_counts ca, cb;
    meter_ingest_counts(a.in, &ca);
    meter_ingest_counts(b.in, &cb);
    assert_int_equal(cb.inserted, ca.inserted);
    assert_int_equal(cb.inserted, b.sink.n);
    done(&a);
    done(&b);
}

/* An ingest freed before its finish leaves nothing uncommitted: what it
 * held is rolled back. */
static void test_group_commit_abandoned(void **state)
{
    (void)state;
    struct env e;
    start(&e, NULL);
    meter_ingest_set_sink(e.in, keep, commit_rows, &e.sink);
    e.sink.txn = 1;
    meter_ingest_overlap(e.in);
    struct ts_sbuf body;
    long_history(&body);
    struct ts_error err = {0};
    assert_int_equal(meter_ingest_feed(e.in, body.data, body.len, &err), TS_OK);
    ts_sbuf_release(&body);
    meter_ingest_free(e.in); /* no finish */
    e.in = NULL;
    assert_int_equal(e.sink.commits, 1);                /* the first METER_COMMIT_BATCHES batches */
    assert_true(e.sink.batches > METER_COMMIT_BATCHES); /* and one or more after them */
    assert_true(e.sink.committed > 0);
    assert_int_equal(e.sink.n, e.sink.committed);
    assert_true(e.sink.n < (size_t)LONG_TIMES * GPUS);
    done(&e);
}

/* Fed a byte at a time or at once: the same rows. */
static void test_chunking(void **state)
{
    (void)state;
    struct env a, b;
    start(&a, NULL);
    start(&b, NULL);
    feed_fixture(&a, "nvidia-dcgm-exporter-issue317-a30-mig-1g6gb-x4.prom");
    char path[1024], *text;
    size_t len;
    struct ts_error err;
    snprintf(path, sizeof(path), "%s/tests/fixtures/dcgm/%s", getenv("TESSERA_SRC"),
             "nvidia-dcgm-exporter-issue317-a30-mig-1g6gb-x4.prom");
    assert_int_equal(ts_file_read(path, TS_INPUT_MAX, &text, &len, &err), TS_OK);
    feed(&b, text, 1);
    free(text);
    assert_int_equal(a.sink.n, b.sink.n);
    assert_true(a.sink.n > 0);
    for (size_t i = 0; i < a.sink.n; i++)
        assert_string_equal(a.sink.rows[i], b.sink.rows[i]);
    done(&a);
    done(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_pod_charged),
        cmocka_unit_test(test_pods_split_a_card),
        cmocka_unit_test(test_pods_and_unlabelled_lines),
        cmocka_unit_test(test_mig_pod_on_whole_card),
        cmocka_unit_test(test_plan_disagrees),
        cmocka_unit_test(test_unknown_utilisation),
        cmocka_unit_test(test_only_unreadable),
        cmocka_unit_test(test_any_order),
        cmocka_unit_test(test_one_big_scrape),
        cmocka_unit_test(test_too_late),
        cmocka_unit_test(test_mig_pods),
        cmocka_unit_test(test_whole_and_redacted),
        cmocka_unit_test(test_old_profile_name),
        cmocka_unit_test(test_plan_attribution),
        cmocka_unit_test(test_sharing_shares),
        cmocka_unit_test(test_violation),
        cmocka_unit_test(test_share_basis),
        cmocka_unit_test(test_history_and_retry),
        cmocka_unit_test(test_history_and_retry_overlap),
        cmocka_unit_test(test_overlap_same_rows),
        cmocka_unit_test(test_group_commit_retry),
        cmocka_unit_test(test_group_commit_abandoned),
        cmocka_unit_test(test_chunking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
