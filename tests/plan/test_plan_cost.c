/*
 * test_plan_cost.c - cost as the objective with a PriceBook (plan_choose_models,
 * the cost lower bound in the summary). The figures are worked out by hand
 * in each case's comment (and by enumeration in tests/cli/plan_cost.sh),
 * never taken from what tessera printed; every plan is checked by the
 * helpers' independent th_check_plan.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include "util/units.h"

#define USD(x) ((int64_t)((x)*TS_MICRO + 0.5))

/* Plan d of j's spec; the caller frees it. */
static struct plan *plan_of(struct th_job *j, const struct decide_result *d)
{
    struct plan *p = NULL;
    struct ts_diag diag = {0};
    assert_int_equal(plan_build(j->model, j->cat, d, NULL, &p, &diag), TS_OK);
    const char *bad = th_check_plan(p);
    if (bad)
        fail_msg("th_check_plan: %s", bad);
    return p;
}

static const struct decide_row *row_in(const struct decide_result *d, const char *workload)
{
    for (size_t i = 0; i < d->nrows; i++)
        if (strcmp(d->rows[i].workload->name, workload) == 0)
            return &d->rows[i];
    fail_msg("no row %s", workload);
    return NULL;
}

/* swap.yaml: decide gives small an l40s (1.10) and pair two a100s (3.20):
 * 4.30. The choices are small on l40s/a100 (1 card) and pair on 2 l40s/2
 * a100s; both on l40s needs 3 l40s, both on a100s 3 a100s (2 of each), so
 * the cheapest is pair on the l40s and small on an a100: 2.20 + 1.60 =
 * 3.80. The cost program's LP is 3.80 too: with a the share of small and
 * b of pair on l40s, a + 2b <= 2 and cost 4.80 - 0.5a - b is least at
 * a + 2b = 2, 3.80. */
static void test_first_takes_what_second_needed(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("tests/fixtures/plan-cost/swap.yaml"), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    assert_true(j.plan->summary.cost_per_hour == USD(4.30));
    assert_true(j.plan->summary.cost_lower_bound == USD(3.80));
    struct decide_result *better = NULL;
    assert_int_equal(plan_choose_models(j.model, j.cat, j.d, NULL, &better), TS_OK);
    assert_non_null(better);
    struct plan *p = plan_of(&j, better);
    assert_true(p->summary.cost_per_hour == USD(3.80));
    assert_true(p->summary.cost_lower_bound == USD(3.80));
    assert_true(p->summary.cost_gap_percent == 0);
    assert_string_equal(row_in(better, "small")->model->name, "a100-80gb");
    assert_string_equal(row_in(better, "pair")->model->name, "l40s");
    assert_int_equal(row_in(better, "pair")->gpus, 2);
    assert_non_null(strstr(row_in(better, "small")->reason, "chosen for the fleet's least cost"));
    assert_non_null(strstr(row_in(better, "pair")->reason, "chosen for")); /* off a100s too */
    plan_free(p);
    decide_free(better);
    th_free(&j);
}

/* packs.yaml: one 9 GiB replica behind a boundary: decide picks the A100
 * (1g.10gb, a seventh of 1.60) but one replica takes a card either way:
 * the A30 (2g.12gb, 0.80) is half the price. */
static void test_share_misleads(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("tests/fixtures/plan-cost/packs.yaml"), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    assert_true(j.plan->summary.cost_per_hour == USD(1.60));
    struct decide_result *better = NULL;
    assert_int_equal(plan_choose_models(j.model, j.cat, j.d, NULL, &better), TS_OK);
    assert_non_null(better);
    assert_string_equal(row_in(better, "chat")->model->name, "a30");
    assert_string_equal(row_in(better, "chat")->profile->name, "2g.12gb");
    struct plan *p = plan_of(&j, better);
    assert_true(p->summary.cost_per_hour == USD(0.80));
    plan_free(p);
    decide_free(better);
    /* GLPK given no time: decide's models stand */
    const struct plan_options none = {PLAN_SOLVER_AUTO, 0};
    assert_int_equal(plan_choose_models(j.model, j.cat, j.d, &none, &better), TS_OK);
    assert_null(better);
    th_free(&j);
}

/* An isolated (SLA) contract on trusted data gets MIG on the A100; on an
 * l40s (no MIG) decide would give it a memory fraction, which isolates
 * less, so however cheap the l40s it stays on MIG. Its bound counts only
 * the MIG card: 1.60. */
static const char *sla_spec =
    "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n"
    "  - {name: n1, gpus: [{model: l40s, count: 1}], cudaVersion: \"13.4\"}\n"
    "  - {name: n2, gpus: [{model: a100-80gb, count: 1}]}\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\nspec:\n"
    "  currency: USD\n  prices:\n  - {model: l40s, perGpuHour: \"0.10\"}\n"
    "  - {model: a100-80gb, perGpuHour: \"1.60\"}\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t}\nspec:\n"
    "  contract: isolated\n  namespaces: [t]\n  workloads:\n"
    "  - {name: api, kind: inference, memoryHighWaterGiB: 9, p99Ms: 50}\n";

static void test_isolation_is_kept(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j, sla_spec, PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    assert_int_equal(j.d->rows[0].mech, DECIDE_MIG);
    struct decide_result *better = NULL;
    assert_int_equal(plan_choose_models(j.model, j.cat, j.d, NULL, &better), TS_OK);
    assert_null(better);
    assert_true(j.plan->summary.cost_per_hour == USD(1.60));
    assert_true(j.plan->summary.cost_lower_bound == USD(1.60));
    th_free(&j);
}

/* Without a PriceBook: nothing to choose, no cost bound. */
static void test_no_pricebook(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j, sla_spec, PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    th_free(&j);
    const char *cut = strstr(sla_spec, "---\napiVersion: tessera.dev/v1alpha1\nkind: PriceBook");
    const char *tenant = strstr(sla_spec, "---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant");
    char text[2048];
    snprintf(text, sizeof(text), "%.*s%s", (int)(cut - sla_spec), sla_spec, tenant);
    th_run_text(&j, text, PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    struct decide_result *better = NULL;
    assert_int_equal(plan_choose_models(j.model, j.cat, j.d, NULL, &better), TS_OK);
    assert_null(better);
    assert_true(j.plan->summary.cost_per_hour < 0);
    assert_true(j.plan->summary.cost_lower_bound <= 0);
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_takes_what_second_needed),
        cmocka_unit_test(test_share_misleads),
        cmocka_unit_test(test_isolation_is_kept),
        cmocka_unit_test(test_no_pricebook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
