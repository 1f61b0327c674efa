/*
 * test_plan.c - the planner beyond the worked example: exact vs heuristic,
 * replica spread, canary slices, sharing pools and their caps, trust,
 * guests, multi-GPU, infeasible fleets, and plan_verify catching broken
 * plans. Specs are written inline: a fleet header plus tenants.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOC "---\napiVersion: tessera.dev/v1alpha1\n"

static char *spec(const char *fleet, const char *tenants)
{
    static char buf[16384];
    snprintf(buf, sizeof(buf), DOC "kind: Fleet\nmetadata: {name: f}\nspec:\n%s\n%s", fleet,
             tenants);
    return buf;
}

static int count_mode(const struct plan *p, int mode)
{
    int n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        n += p->gpus[i].mode == mode;
    return n;
}

static void assert_verified(const struct plan *p)
{
    struct ts_error e;
    ts_status st = plan_verify(p, &e);
    if (st != TS_OK)
        fail_msg("plan_verify: %s", e.msg);
}

static void test_exact_beats_heuristic(void **state)
{
    (void)state;
    const char *path = th_src_path("tests/fixtures/plan/exact-beats-heuristic.yaml");
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", path);
    struct th_job h, e;
    th_run_file(&h, copy, PLAN_SOLVER_HEURISTIC);
    th_run_file(&e, copy, PLAN_SOLVER_EXACT);
    assert_int_equal(h.st, TS_OK);
    assert_int_equal(e.st, TS_OK);
    assert_int_equal(h.plan->summary.gpus_used, 8);
    assert_int_equal(e.plan->summary.gpus_used, 7);
    assert_int_equal(e.plan->summary.lower_bound, 7);
    assert_true(e.plan->summary.optimal);
    assert_false(h.plan->summary.optimal);
    assert_string_equal(e.plan->summary.solver, "exact (GLPK)");
    assert_verified(h.plan);
    assert_verified(e.plan);
    th_free(&h);
    th_free(&e);
}

/* The same workloads on 448 cards: GLPK runs on the cards the heuristic
 * needed (interchangeable ones), not on every free card of the fleet, so
 * it proves the optimum instead of stopping at its time limit. */
static void test_exact_on_large_fleet(void **state)
{
    (void)state;
    struct th_job e;
    th_run_file(&e, th_src_path("tests/fixtures/plan/exact-large-fleet.yaml"), PLAN_SOLVER_EXACT);
    assert_int_equal(e.st, TS_OK);
    assert_int_equal(e.plan->summary.gpus_total, 448);
    assert_int_equal(e.plan->summary.gpus_used, 7);
    assert_true(e.plan->summary.optimal);
    assert_string_equal(e.plan->summary.solver, "exact (GLPK)");
    assert_verified(e.plan);
    th_free(&e);
}

static const char *one_node_h100 =
    "  nodes:\n  - name: n1\n    gpus: [{model: h100-80gb-sxm, count: 2}]\n";
static const char *two_nodes_h100 =
    "  nodes:\n  - name: n1\n    gpus: [{model: h100-80gb-sxm, count: 2}]\n"
    "  - name: n2\n    gpus: [{model: h100-80gb-sxm, count: 2}]\n";

static const char *replicated(const char *spread)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             DOC "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: "
                 "isolated\n  namespaces: [a]\n  workloads:\n  - {name: w, kind: inference, "
                 "memoryHighWaterGiB: 9, p99Ms: 100, replicas: 2, spread: %s}\n",
             spread);
    return buf;
}

static void test_spread_node(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j, spec(two_nodes_h100, replicated("node")), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    const struct spec_fleet_node *nodes[2] = {NULL, NULL};
    int n = 0;
    for (size_t i = 0; i < j.plan->ngpus; i++)
        if (j.plan->gpus[i].ninst)
            nodes[n++] = j.plan->gpus[i].node;
    assert_int_equal(n, 2);
    assert_ptr_not_equal(nodes[0], nodes[1]);
    assert_verified(j.plan);
    /* plan_verify notices the two replicas on one node */
    for (size_t i = 0; i < j.plan->ngpus; i++)
        if (j.plan->gpus[i].ninst && j.plan->gpus[i].node == nodes[1])
            j.plan->gpus[i].node = nodes[0];
    struct ts_error e;
    assert_int_equal(plan_verify(j.plan, &e), TS_INTERNAL);
    assert_non_null(strstr(e.msg, "a/w: replicas r0 and r1 share a node"));
    th_free(&j);
    th_run_text(&j, spec(one_node_h100, replicated("node")), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_INFEASIBLE);
    assert_non_null(strstr(th_first_error(&j), "2 replicas spread across nodes need 2 nodes with "
                                               "h100-80gb-sxm cards; the fleet has 1"));
    th_free(&j);
}

static void test_spread_gpu_vs_none(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j, spec(one_node_h100, replicated("gpu")), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    assert_int_equal(j.plan->summary.gpus_used, 2);
    th_free(&j);
    th_run_text(&j, spec(one_node_h100, replicated("none")), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    assert_int_equal(j.plan->summary.gpus_used, 1);
    assert_int_equal(j.plan->gpus[0].ninst, 2);
    th_free(&j);
}

static void test_canary_per_node(void **state)
{
    (void)state;
    const char *fleet = "  canary: 1g.10gb\n  nodes:\n  - name: n1\n    gpus: [{model: "
                        "h100-80gb-sxm, count: 2}]\n  - name: n2\n    gpus: [{model: l40s, "
                        "count: 1}, {model: h100-80gb-sxm, count: 1}]\n";
    struct th_job j;
    th_run_text(&j, spec(fleet, replicated("gpu")), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    int canaries = 0;
    for (size_t i = 0; i < j.plan->ngpus; i++)
        for (size_t k = 0; k < j.plan->gpus[i].ninst; k++)
            if (!j.plan->gpus[i].inst[k].row) {
                canaries++;
                assert_string_equal(j.plan->gpus[i].inst[k].profile->name, "1g.10gb");
                assert_string_equal(j.plan->gpus[i].model->name, "h100-80gb-sxm");
            }
    assert_int_equal(canaries, 2); /* one per node, on its MIG card */
    assert_verified(j.plan);
    th_free(&j);
}

static const char *mps_tenants = DOC
    "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: shared-trusted\n"
    "  namespaces: [a]\n  trusts: [b]\n  workloads:\n"
    "  - {name: w1, kind: inference, memoryHighWaterGiB: 20, p99Ms: 50, smPercent: 40}\n"
    "  - {name: w2, kind: inference, memoryHighWaterGiB: 10, p99Ms: 50, smPercent: 40}\n" DOC
    "kind: Tenant\nmetadata: {name: b}\nspec:\n  contract: shared-trusted\n"
    "  namespaces: [b]\n  trusts: [a]\n  workloads:\n"
    "  - {name: w1, kind: inference, memoryHighWaterGiB: 10, p99Ms: 50}\n";

/* MPS: one server per tenant (never pooled across tenants), caps add up. */
static void test_mps_per_tenant(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j,
                spec("  nodes:\n  - name: n1\n    gpus: [{model: l40s, count: 3}]\n", mps_tenants),
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    const struct decide_row *a = th_row(&j, "a", "w1");
    assert_string_equal(decide_mech_names[a->mech], "mps");
    assert_string_equal(a->rule, "R4");
    assert_int_equal(a->sm_percent, 40);
    assert_false(a->security_boundary);
    assert_int_equal(count_mode(j.plan, PLAN_MPS), 2);
    for (size_t i = 0; i < j.plan->ngpus; i++) {
        const struct plan_gpu *g = &j.plan->gpus[i];
        for (size_t k = 1; k < g->ninst; k++)
            assert_ptr_equal(g->inst[k].row->tenant, g->inst[0].row->tenant);
    }
    assert_verified(j.plan);
    th_free(&j);
}

static void test_named_pool(void **state)
{
    (void)state;
    char tenants[4096];
    snprintf(tenants, sizeof(tenants), "%s", mps_tenants);
    /* put every workload in one named pool: mutual trust lets them share */
    char *p;
    while ((p = strstr(tenants, "p99Ms: 50")))
        memcpy(p, "pool: xx ", 9);
    struct th_job j;
    th_run_text(&j, spec("  nodes:\n  - name: n1\n    gpus: [{model: l40s, count: 3}]\n", tenants),
                PLAN_SOLVER_AUTO);
    /* without p99 these are R5 memory fractions; a pool keeps them on one card */
    assert_int_equal(j.st, TS_OK);
    assert_int_equal(j.plan->summary.gpus_used, 1);
    assert_int_equal(j.plan->gpus[0].ninst, 3);
    assert_verified(j.plan);
    th_free(&j);
}

static void test_untrusting_pool_rejected(void **state)
{
    (void)state;
    const char *t = DOC "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: shared-trusted\n"
                        "  namespaces: [a]\n  workloads:\n  - {name: w, kind: inference, "
                        "memoryHighWaterGiB: 10, p99Ms: 5, pool: p}\n" DOC
                        "kind: Tenant\nmetadata: {name: b}\nspec:\n  contract: shared-trusted\n"
                        "  namespaces: [b]\n  workloads:\n  - {name: w, kind: inference, "
                        "memoryHighWaterGiB: 10, p99Ms: 5, pool: p}\n";
    struct th_job j;
    th_run_text(&j, spec("  nodes:\n  - name: n1\n    gpus: [{model: l40s, count: 2}]\n", t),
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_INVALID);
    assert_non_null(strstr(th_first_error(&j), "do not trust each other"));
    th_free(&j);
}

static void test_mps_client_limit(void **state)
{
    (void)state;
    const char *t = DOC "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: shared-trusted\n"
                        "  namespaces: [a]\n  workloads:\n  - {name: w, kind: inference, "
                        "memoryHighWaterGiB: 0.5, p99Ms: 5, smPercent: 1, replicas: 65, spread: "
                        "none, pool: big}\n";
    struct th_job j;
    th_run_text(&j, spec("  nodes:\n  - name: n1\n    gpus: [{model: l40s, count: 2}]\n", t),
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_INFEASIBLE);
    assert_non_null(strstr(th_first_error(&j), "65 clients (MPS allows 64)"));
    th_free(&j);
}

/* Memory fractions: the driver enforces from CUDA 13.4, the shim below. */
static void test_memory_fraction_enforcement(void **state)
{
    (void)state;
    const char *t = DOC "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: shared-trusted\n"
                        "  namespaces: [a]\n  workloads:\n  - {name: w, kind: batch, "
                        "memoryHighWaterGiB: 12}\n";
    const char *fleets[2] = {
        "  nodes:\n  - name: n1\n    cudaVersion: \"13.4\"\n    gpus: [{model: l40s, count: 1}]\n",
        "  nodes:\n  - name: n1\n    cudaVersion: \"12.8\"\n    gpus: [{model: l40s, count: 1}]\n"};
    for (int i = 0; i < 2; i++) {
        struct th_job j;
        th_run_text(&j, spec(fleets[i], t), PLAN_SOLVER_AUTO);
        assert_int_equal(j.st, TS_OK);
        const struct decide_row *r = th_row(&j, "a", "w");
        assert_string_equal(decide_mech_names[r->mech], "memory-fraction");
        assert_string_equal(r->rule, "R5");
        assert_int_equal(r->enforce, i == 0 ? DECIDE_ENFORCE_DRIVER : DECIDE_ENFORCE_SHIM);
        assert_int_equal(j.plan->gpus[0].mode, PLAN_MEMORY_FRACTION);
        th_free(&j);
    }
}

/* Fractions of tenants that do not trust each other never share a card;
 * caps never add up past the card. */
static void test_fraction_caps_and_trust(void **state)
{
    (void)state;
    const char *t = DOC "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: shared-trusted\n"
                        "  namespaces: [a]\n  workloads:\n  - {name: w, kind: batch, "
                        "memoryHighWaterGiB: 20, replicas: 3, spread: none}\n" DOC
                        "kind: Tenant\nmetadata: {name: b}\nspec:\n  contract: shared-trusted\n"
                        "  namespaces: [b]\n  workloads:\n  - {name: w, kind: batch, "
                        "memoryHighWaterGiB: 4}\n";
    struct th_job j;
    th_run_text(&j, spec("  nodes:\n  - name: n1\n    gpus: [{model: l40s, count: 4}]\n", t),
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    /* a: 3 x 20 GiB on 45 GiB cards -> 2 cards; b alone on a third */
    assert_int_equal(j.plan->summary.gpus_used, 3);
    assert_verified(j.plan);
    th_free(&j);
}

static void test_guest_needs_trust_and_schedule(void **state)
{
    (void)state;
#define GUEST_SPEC                                                                               \
    DOC "kind: Tenant\nmetadata: {name: owner}\nspec:\n  contract: shared-trusted\n"             \
        "  namespaces: [o]\n%s  workloads:\n  - {name: ft, kind: fine-tune, "                    \
        "memoryHighWaterGiB: 60%s}\n" DOC "kind: Tenant\nmetadata: {name: dev}\nspec:\n"         \
        "  contract: best-effort\n  namespaces: [d]\n%s  workloads:\n  - {name: nb, kind: dev, " \
        "memoryHighWaterGiB: 8, bestEffort: true}\n"
    static const struct {
        const char *owner_trusts, *schedule, *dev_trusts;
        int used, sharing;
    } cases[] = {
        {"  trusts: [dev]\n", ", schedule: nightly", "  trusts: [owner]\n", 1, 1},
        {"", ", schedule: nightly", "", 2, 0},                  /* no trust */
        {"  trusts: [dev]\n", "", "  trusts: [owner]\n", 2, 0}, /* always on */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char t[2048];
        snprintf(t, sizeof(t), GUEST_SPEC, cases[i].owner_trusts, cases[i].schedule,
                 cases[i].dev_trusts);
        struct th_job j;
        th_run_text(&j, spec(one_node_h100, t), PLAN_SOLVER_AUTO);
        assert_int_equal(j.st, TS_OK);
        assert_int_equal(j.plan->summary.gpus_used, cases[i].used);
        assert_int_equal(j.plan->gpus[0].sharing, cases[i].sharing);
        assert_verified(j.plan);
        th_free(&j);
    }
}

/* 20 workloads x 5 spread replicas of 3 GiB MPS clients on 45 GiB cards:
 * 15 fit a card, so 7 cards; first fit would strand the last workloads'
 * replicas on 5 fresh cards (10 in all). */
static void test_pool_balancing(void **state)
{
    (void)state;
    char t[8192];
    int n = snprintf(t, sizeof(t),
                     DOC "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: "
                         "shared-trusted\n  namespaces: [a]\n  workloads:\n");
    for (int i = 0; i < 20; i++)
        n += snprintf(t + n, sizeof(t) - (size_t)n,
                      "  - {name: w%d, kind: inference, "
                      "memoryHighWaterGiB: 3, p99Ms: 100, smPercent: 5, replicas: 5}\n",
                      i);
    struct th_job j;
    th_run_text(&j, spec("  nodes:\n  - name: n1\n    gpus: [{model: l40s, count: 12}]\n", t),
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    assert_int_equal(j.plan->summary.gpus_used, 7);
    assert_int_equal(j.plan->summary.lower_bound, 7);
    assert_verified(j.plan);
    th_free(&j);
}

static void test_multi_gpu_same_node(void **state)
{
    (void)state;
    const char *t = DOC "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: dedicated\n"
                        "  namespaces: [a]\n  workloads:\n  - {name: train, kind: training, "
                        "memoryHighWaterGiB: 150, gpus: 2, peerToPeer: true}\n";
    struct th_job j;
    th_run_text(&j,
                spec("  nodes:\n  - name: n1\n    gpus: [{model: h100-80gb-sxm, count: 1}]\n"
                     "  - name: n2\n    gpus: [{model: h100-80gb-sxm, count: 2}]\n",
                     t),
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    assert_int_equal(count_mode(j.plan, PLAN_WHOLE), 2);
    for (size_t i = 0; i < j.plan->ngpus; i++)
        if (j.plan->gpus[i].mode == PLAN_WHOLE)
            assert_string_equal(j.plan->gpus[i].node->name, "n2");
    assert_int_equal(j.plan->summary.naive, 2);
    assert_verified(j.plan);
    /* one of its two cards said to be on n1: plan_verify refuses it */
    struct ts_error e;
    for (size_t i = 0; i < j.plan->ngpus; i++)
        if (j.plan->gpus[i].mode == PLAN_WHOLE) {
            j.plan->gpus[i].node = &j.plan->model->fleet->nodes[0];
            break;
        }
    assert_int_equal(plan_verify(j.plan, &e), TS_INTERNAL);
    assert_non_null(strstr(e.msg, "a/train replica r0: its GPUs are on two nodes"));
    th_free(&j);
}

static void test_fleet_too_small(void **state)
{
    (void)state;
    const char *t = DOC "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: dedicated\n"
                        "  namespaces: [a]\n  workloads:\n  - {name: ft, kind: fine-tune, "
                        "memoryHighWaterGiB: 60, replicas: 3}\n";
    struct th_job j;
    th_run_text(&j, spec(one_node_h100, t), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_INFEASIBLE);
    assert_non_null(strstr(th_first_error(&j), "no node has 1 free h100-80gb-sxm card for "
                                               "replica r2 of a/ft"));
    assert_null(j.plan);
    th_free(&j);
}

/* plan_verify is an independent check: break a good plan, it must notice. */
static void test_verify_catches_corruption(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    struct ts_error e;
    struct plan_gpu *g0 = &j.plan->gpus[0];
    int saved = g0->inst[1].start;
    g0->inst[1].start = 0; /* overlaps the 2g.20gb at 0 */
    assert_int_equal(plan_verify(j.plan, &e), TS_INTERNAL);
    assert_non_null(strstr(e.msg, "overlaps"));
    g0->inst[1].start = saved;
    int rep = g0->inst[0].replica;
    g0->inst[0].replica = 1; /* two replicas of client-b on card 1 now */
    assert_int_equal(plan_verify(j.plan, &e), TS_INTERNAL);
    assert_non_null(strstr(e.msg, "client-b/code-7b replica r0 placed 0 times"));
    g0->inst[0].replica = rep;
    assert_int_equal(plan_verify(j.plan, &e), TS_OK);
    g0->ninst--; /* the card's last instance dropped: its replica is nowhere */
    assert_int_equal(plan_verify(j.plan, &e), TS_INTERNAL);
    assert_non_null(strstr(e.msg, "placed 0 times (expected 1)"));
    g0->ninst++;
    g0->inst[g0->ninst - 1].replica = 7; /* a replica the workload does not have */
    assert_int_equal(plan_verify(j.plan, &e), TS_INTERNAL);
    assert_non_null(strstr(e.msg, "placed 0 times"));
    th_free(&j);
}

/* A MIG instance under its workload's need is refused, unless it is held
 * (a running instance a replan keeps at its old size, issue 30). */
static void test_verify_undersized(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    struct ts_error e;
    struct plan_inst *in = &j.plan->gpus[0].inst[0];
    const struct cat_profile *small = cat_profile_find(j.plan->gpus[0].model, "1g.10gb");
    assert_non_null(small);
    assert_true(in->row->need_gib > small->memory_gib);
    assert_true(plan_profile_holds(in->profile, in->row));
    assert_false(plan_profile_holds(small, in->row));
    in->profile = small; /* at the same start, inside the old slot */
    in->size = small->mem_units;
    assert_int_equal(plan_verify(j.plan, &e), TS_INTERNAL);
    assert_non_null(strstr(e.msg, "1g.10gb (9.75 GiB, compute 1) is under its need"));
    in->held = 1;
    assert_int_equal(plan_verify(j.plan, &e), TS_OK);
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_beats_heuristic),
        cmocka_unit_test(test_exact_on_large_fleet),
        cmocka_unit_test(test_spread_node),
        cmocka_unit_test(test_spread_gpu_vs_none),
        cmocka_unit_test(test_canary_per_node),
        cmocka_unit_test(test_mps_per_tenant),
        cmocka_unit_test(test_named_pool),
        cmocka_unit_test(test_untrusting_pool_rejected),
        cmocka_unit_test(test_mps_client_limit),
        cmocka_unit_test(test_memory_fraction_enforcement),
        cmocka_unit_test(test_fraction_caps_and_trust),
        cmocka_unit_test(test_guest_needs_trust_and_schedule),
        cmocka_unit_test(test_pool_balancing),
        cmocka_unit_test(test_multi_gpu_same_node),
        cmocka_unit_test(test_fleet_too_small),
        cmocka_unit_test(test_verify_catches_corruption),
        cmocka_unit_test(test_verify_undersized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
