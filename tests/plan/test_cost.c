/*
 * test_cost.c - cost-aware model choice (issue 12) on a fleet the other
 * tests do not contain: one H100 (4.00/h), two A100 80GB (2.00/h), two L40S
 * (1.00/h). A workload goes to the model where its memory costs least; when
 * that model is full it spills to the next sufficient one instead of
 * failing; without a PriceBook the choice minimises cards (the model with
 * the most memory per card first); the plan's cost is the used cards at
 * PriceBook prices. th_run_text checks every plan with th_check_plan.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include "util/units.h"

#define DOC "---\napiVersion: tessera.dev/v1alpha1\n"
#define FLEET                                                         \
    DOC "kind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n"         \
        "  - name: h\n    gpus: [{model: h100-80gb-sxm, count: 1}]\n" \
        "  - name: a\n    gpus: [{model: a100-80gb, count: 2}]\n"     \
        "  - name: l\n    gpus: [{model: l40s, count: 2}]\n"
#define PRICES                                                                      \
    DOC "kind: PriceBook\nmetadata: {name: p}\nspec:\n  currency: EUR\n  prices:\n" \
        "  - {model: h100-80gb-sxm, perGpuHour: \"4.00\"}\n"                        \
        "  - {model: a100-80gb, perGpuHour: \"2.00\"}\n"                            \
        "  - {model: l40s, perGpuHour: \"1.00\"}\n"

static char *spec(const char *extra, const char *workloads)
{
    static char buf[8192];
    snprintf(buf, sizeof(buf),
             FLEET "%s" DOC "kind: Tenant\nmetadata: {name: t}\nspec:\n  contract: shared-trusted\n"
                   "  namespaces: [t]\n  workloads:\n%s",
             extra, workloads);
    return buf;
}

static void run_ok(struct th_job *j, const char *yaml)
{
    th_run_text(j, yaml, PLAN_SOLVER_AUTO);
    if (j->st != TS_OK)
        fail_msg("%s", th_first_error(j));
}

/* A 10 GiB fraction: 1.00/45 GiB is the cheapest memory, so an L40S (the
 * fleet lists the H100 first); the plan costs one L40S hour. */
static void test_cheapest_model(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, spec(PRICES, "  - {name: w, kind: batch, memoryHighWaterGiB: 10}\n"));
    assert_string_equal(th_row(&j, "t", "w")->model->name, "l40s");
    assert_int_equal(j.plan->summary.gpus_used, 1);
    assert_int_equal(j.plan->summary.cost_per_hour, 1 * TS_MICRO);
    th_free(&j);
}

/* Three 40 GiB fractions: the two L40S hold two (one each), so the
 * workload spills to the A100s (two per card) instead of failing; the
 * reason says so. Before, the first model in the fleet (one H100, one
 * fraction per card) was chosen and the plan failed. */
static void test_spill_when_full(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, spec(PRICES, "  - {name: w, kind: batch, memoryHighWaterGiB: 40, replicas: 3, "
                            "spread: none}\n"));
    const struct decide_row *r = th_row(&j, "t", "w");
    assert_string_equal(r->model->name, "a100-80gb");
    if (!strstr(r->reason, "spilled from l40s (full)"))
        fail_msg("reason: %s", r->reason);
    assert_int_equal(j.plan->summary.gpus_used, 2);
    assert_int_equal(j.plan->summary.cost_per_hour, 4 * TS_MICRO);
    th_free(&j);
    /* two workloads: the first fills the L40S, the second spills */
    run_ok(&j, spec(PRICES, "  - {name: x, kind: batch, memoryHighWaterGiB: 40, replicas: 2}\n"
                            "  - {name: y, kind: batch, memoryHighWaterGiB: 40, replicas: 2}\n"));
    assert_string_equal(th_row(&j, "t", "x")->model->name, "l40s");
    assert_string_equal(th_row(&j, "t", "y")->model->name, "a100-80gb");
    th_free(&j);
}

/* Without prices, cost is card count: the model with the most memory per
 * card first (A100 80GB, 80 GiB, over the H100's 79.6); no cost printed. */
static void test_no_prices_counts_cards(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, spec("", "  - {name: w, kind: batch, memoryHighWaterGiB: 30, replicas: 4, "
                        "spread: none}\n"));
    assert_string_equal(th_row(&j, "t", "w")->model->name, "a100-80gb");
    assert_int_equal(j.plan->summary.gpus_used, 2);
    assert_int_equal(j.plan->summary.cost_per_hour, -1);
    th_free(&j);
}

/* gpuModel still pins the model, full or not: the plan says what fails. */
static void test_gpu_model_pins(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j,
                spec(PRICES, "  - {name: w, kind: batch, memoryHighWaterGiB: 40, replicas: 3, "
                             "gpuModel: l40s}\n"),
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_INFEASIBLE);
    assert_non_null(strstr(th_first_error(&j), "no l40s card left"));
    th_free(&j);
}

/* gpuModels: only the listed models, in the listed order (the H100 first
 * although it is dearest), spilling down the list when one is full. */
static void test_gpu_models_preference(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, spec(PRICES, "  - {name: w, kind: batch, memoryHighWaterGiB: 10, "
                            "gpuModels: [h100-80gb-sxm, a100-80gb]}\n"));
    assert_string_equal(th_row(&j, "t", "w")->model->name, "h100-80gb-sxm");
    th_free(&j);
    /* two 50 GiB fractions, spread on distinct cards: one H100, so the A100s */
    run_ok(&j, spec(PRICES, "  - {name: w, kind: batch, memoryHighWaterGiB: 50, replicas: 2, "
                            "gpuModels: [h100-80gb-sxm, a100-80gb]}\n"));
    const struct decide_row *r = th_row(&j, "t", "w");
    assert_string_equal(r->model->name, "a100-80gb");
    assert_non_null(strstr(r->reason, "spilled from h100-80gb-sxm (full)"));
    th_free(&j);
    /* the L40S, cheapest, is not listed: never used */
    run_ok(&j, spec(PRICES, "  - {name: w, kind: batch, memoryHighWaterGiB: 30, replicas: 3, "
                            "spread: none, gpuModels: [a100-80gb]}\n"));
    assert_string_equal(th_row(&j, "t", "w")->model->name, "a100-80gb");
    th_free(&j);
}

/* MIG and whole cards go where the card share costs least, not where a
 * GiB does: A30 (0.80/h, 24 GiB, 4 slices), A100 80GB (2.00/h), L40S
 * (1.10/h). A 5 GiB boundary workload: 1g.6gb is a quarter of an A30
 * (0.20/h), 1g.10gb a seventh of an A100's compute (0.29/h); a 20 GiB
 * fine-tune: one A30 (0.80/h) beats one L40S (1.10/h), though an L40S GiB
 * is cheaper (two A30s: the MIG instance takes part of one).
 */
static void test_cost_of_the_share(void **state)
{
    (void)state;
    static const char *yaml = DOC
        "kind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n"
        "  - name: a\n    gpus: [{model: a100-80gb, count: 1}, {model: l40s, count: 1}, "
        "{model: a30, count: 2}]\n" DOC
        "kind: PriceBook\nmetadata: {name: p}\nspec:\n  currency: EUR\n  prices:\n"
        "  - {model: a100-80gb, perGpuHour: \"2.00\"}\n"
        "  - {model: l40s, perGpuHour: \"1.10\"}\n  - {model: a30, perGpuHour: \"0.80\"}\n" DOC
        "kind: Tenant\nmetadata: {name: t}\nspec:\n  contract: isolated\n  namespaces: [t]\n"
        "  workloads:\n"
        "  - {name: small, kind: inference, memoryHighWaterGiB: 5, trust: untrusted}\n"
        "  - {name: tune, kind: fine-tune, memoryHighWaterGiB: 20}\n";
    struct th_job j;
    run_ok(&j, yaml);
    const struct decide_row *small = th_row(&j, "t", "small"), *tune = th_row(&j, "t", "tune");
    assert_string_equal(small->model->name, "a30");
    assert_string_equal(small->profile->name, "1g.6gb");
    assert_string_equal(tune->model->name, "a30");
    th_free(&j);
}

/* Decide counts pool work in whole clients per card: three 30 GiB
 * fractions on two L40S (44.99 GiB usable, one such client a card; as
 * fluid shares, 3 x 30/45 = 2 cards, so all three stayed on the L40S and
 * the plan failed "no l40s card left"). The third spills to an A100. */
static void test_pool_spills_by_whole_clients(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, spec(PRICES, "  - {name: x, kind: batch, memoryHighWaterGiB: 30}\n"
                            "  - {name: y, kind: batch, memoryHighWaterGiB: 30}\n"
                            "  - {name: z, kind: batch, memoryHighWaterGiB: 30}\n"));
    assert_string_equal(th_row(&j, "t", "x")->model->name, "l40s");
    assert_string_equal(th_row(&j, "t", "y")->model->name, "l40s");
    const struct decide_row *z = th_row(&j, "t", "z");
    assert_string_equal(z->model->name, "a100-80gb");
    if (!strstr(z->reason, "spilled from l40s (full)"))
        fail_msg("reason: %s", z->reason);
    assert_int_equal(j.plan->summary.gpus_used, 3);
    assert_int_equal(j.plan->summary.cost_per_hour, 4 * TS_MICRO); /* 1 + 1 + 2 */
    th_free(&j);
}

#define TWO_TENANTS_OF(trusts1, trusts2, kind)                                    \
    DOC "kind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n"                     \
        "  - name: h\n    gpus: [{model: h100-80gb-sxm, count: 1}]\n"             \
        "  - name: a\n    gpus: [{model: a100-80gb, count: 1}]\n" PRICES DOC      \
        "kind: Tenant\nmetadata: {name: t1}\nspec:\n  contract: shared-trusted\n" \
        "  namespaces: [t1]\n" trusts1 "  workloads:\n"                           \
        "  - {name: x, " kind ", memoryHighWaterGiB: 40}\n" DOC                   \
        "kind: Tenant\nmetadata: {name: t2}\nspec:\n  contract: shared-trusted\n" \
        "  namespaces: [t2]\n" trusts2 "  workloads:\n"                           \
        "  - {name: y, " kind ", memoryHighWaterGiB: 40}\n"
#define TWO_TENANTS(trusts1, trusts2) TWO_TENANTS_OF(trusts1, trusts2, "kind: batch")

/* Two 40 GiB fractions of tenants that do not trust each other cannot
 * share the one A100 (half a card each by fluid share: both were sent
 * there and the plan failed "no a100-80gb card left"): the second spills
 * to the H100. When they trust each other both fit the A100 (2.00/h). */
static void test_pool_groups_by_trust(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, TWO_TENANTS("", ""));
    assert_string_equal(th_row(&j, "t1", "x")->model->name, "a100-80gb");
    const struct decide_row *y = th_row(&j, "t2", "y");
    assert_string_equal(y->model->name, "h100-80gb-sxm");
    if (!strstr(y->reason, "spilled from a100-80gb (full)"))
        fail_msg("reason: %s", y->reason);
    assert_int_equal(j.plan->summary.gpus_used, 2);
    assert_int_equal(j.plan->summary.cost_per_hour, 6 * TS_MICRO);
    th_free(&j);
    run_ok(&j, TWO_TENANTS("  trusts: [t2]\n", "  trusts: [t1]\n"));
    assert_string_equal(th_row(&j, "t1", "x")->model->name, "a100-80gb");
    assert_string_equal(th_row(&j, "t2", "y")->model->name, "a100-80gb");
    assert_int_equal(j.plan->summary.gpus_used, 1);
    assert_int_equal(j.plan->summary.cost_per_hour, 2 * TS_MICRO);
    th_free(&j);
    /* trust one way only is no trust: the second spills */
    run_ok(&j, TWO_TENANTS("  trusts: [t2]\n", ""));
    assert_string_equal(th_row(&j, "t2", "y")->model->name, "h100-80gb-sxm");
    th_free(&j);
}

/* MPS is one server per tenant: two tenants' 40 GiB MPS clients need a
 * card each even when they trust each other. */
static void test_mps_groups_by_tenant(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, TWO_TENANTS_OF("  trusts: [t2]\n", "  trusts: [t1]\n",
                              "kind: inference, p99Ms: 100, trust: trusted"));
    assert_int_equal(th_row(&j, "t1", "x")->mech, DECIDE_MPS);
    assert_string_equal(th_row(&j, "t1", "x")->model->name, "a100-80gb");
    const struct decide_row *y = th_row(&j, "t2", "y");
    assert_int_equal(y->mech, DECIDE_MPS);
    assert_string_equal(y->model->name, "h100-80gb-sxm");
    assert_int_equal(j.plan->summary.gpus_used, 2);
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cheapest_model),
        cmocka_unit_test(test_spill_when_full),
        cmocka_unit_test(test_no_prices_counts_cards),
        cmocka_unit_test(test_gpu_model_pins),
        cmocka_unit_test(test_gpu_models_preference),
        cmocka_unit_test(test_cost_of_the_share),
        cmocka_unit_test(test_pool_spills_by_whole_clients),
        cmocka_unit_test(test_pool_groups_by_trust),
        cmocka_unit_test(test_mps_groups_by_tenant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
