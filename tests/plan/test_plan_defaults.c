/*
 * test_plan_defaults.c - the layout every verb makes unless told
 * otherwise, written once in plan.h: PLAN_OPTIONS_DEFAULT is the automatic
 * solver with PLAN_TIME_LIMIT_DEFAULT_S seconds, plan_build without options
 * lays the worked example out exactly as with it, and plan_solver_names
 * names enum plan_solver in order.
 */
#include "helpers.h"

#include <string.h>
#include "report/report.h"
#include "util/sbuf.h"

static void test_default_options(void **state)
{
    (void)state;
    const struct plan_options def = PLAN_OPTIONS_DEFAULT;
    assert_int_equal(def.solver, PLAN_SOLVER_AUTO);
    assert_true(def.time_limit_s == 10.0);
    assert_true(def.time_limit_s == PLAN_TIME_LIMIT_DEFAULT_S);
}

static void test_solver_names(void **state)
{
    (void)state;
    assert_string_equal(plan_solver_names[PLAN_SOLVER_AUTO], "auto");
    assert_string_equal(plan_solver_names[PLAN_SOLVER_EXACT], "exact");
    assert_string_equal(plan_solver_names[PLAN_SOLVER_HEURISTIC], "heuristic");
    assert_null(plan_solver_names[PLAN_SOLVER_HEURISTIC + 1]);
}

static void json_of(const struct plan *p, struct ts_sbuf *out)
{
    ts_sbuf_init(out, 16u << 20);
    assert_int_equal(report_json(p, out), TS_OK);
}

static void test_null_options_are_the_default(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    const struct plan_options def = PLAN_OPTIONS_DEFAULT;
    struct plan *a = NULL, *b = NULL;
    struct ts_diag diag = {0};
    assert_int_equal(plan_build(j.model, j.cat, j.d, NULL, &a, &diag), TS_OK);
    assert_int_equal(plan_build(j.model, j.cat, j.d, &def, &b, &diag), TS_OK);
    struct ts_sbuf ja, jb;
    json_of(a, &ja);
    json_of(b, &jb);
    assert_string_equal(ts_sbuf_str(&ja), ts_sbuf_str(&jb));
    assert_string_equal(a->summary.solver, b->summary.solver);
    ts_sbuf_release(&ja);
    ts_sbuf_release(&jb);
    plan_free(a);
    plan_free(b);
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_options),
        cmocka_unit_test(test_solver_names),
        cmocka_unit_test(test_null_options_are_the_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
