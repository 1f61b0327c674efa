/*
 * test_report.c - the report module: the plan's JSON document says what
 * the plan in memory says (every summary number, every decision, every
 * card and instance, read back with jansson), the same spec gives the same
 * bytes whichever solver ran, and the text form names every workload and
 * card with the summary's numbers.
 */
#include "helpers.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report/report.h"
#include "util/sbuf.h"

static json_t *plan_json(const struct th_job *j)
{
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1u << 20);
    assert_int_equal(report_json(j->plan, &out), TS_OK);
    json_error_t e;
    json_t *doc = json_loads(ts_sbuf_str(&out), 0, &e);
    assert_non_null(doc);
    ts_sbuf_release(&out);
    return doc;
}

static void assert_summary(const struct plan_summary *s, json_t *o)
{
    assert_int_equal(json_integer_value(json_object_get(o, "gpusUsed")), s->gpus_used);
    assert_int_equal(json_integer_value(json_object_get(o, "gpusTotal")), s->gpus_total);
    assert_int_equal(json_integer_value(json_object_get(o, "naiveGpus")), s->naive);
    assert_int_equal(json_integer_value(json_object_get(o, "lowerBound")), s->lower_bound);
    assert_int_equal(json_is_true(json_object_get(o, "optimal")), s->optimal);
    assert_string_equal(json_string_value(json_object_get(o, "solver")), s->solver);
    double saving = json_number_value(json_object_get(o, "savingsPercent"));
    assert_true(fabs(saving - s->savings_percent) <= 0.05);
    assert_int_equal(json_integer_value(json_object_get(o, "dedicatedGpus")), s->dedicated);
    assert_true(fabs(json_number_value(json_object_get(o, "costPerHour")) * 1e6 -
                     (double)s->cost_per_hour) < 1);
    saving = json_number_value(json_object_get(o, "savingsVsDedicatedPercent"));
    assert_true(fabs(saving - s->savings_dedicated_percent) <= 0.05);
}

static void assert_decisions(const struct decide_result *d, json_t *arr)
{
    assert_int_equal(json_array_size(arr), d->nrows);
    for (size_t i = 0; i < d->nrows; i++) {
        json_t *o = json_array_get(arr, i);
        const struct decide_row *r = &d->rows[i];
        assert_string_equal(json_string_value(json_object_get(o, "tenant")), r->tenant->name);
        assert_string_equal(json_string_value(json_object_get(o, "workload")), r->workload->name);
        assert_string_equal(json_string_value(json_object_get(o, "mechanism")),
                            decide_mech_names[r->mech]);
        assert_string_equal(json_string_value(json_object_get(o, "rule")), r->rule);
        assert_string_equal(json_string_value(json_object_get(o, "reason")), r->reason);
        json_t *prof = json_object_get(o, "profile");
        if (r->profile)
            assert_string_equal(json_string_value(prof), r->profile->name);
        else
            assert_true(json_is_null(prof));
    }
}

static void assert_instance(const struct plan_gpu *g, const struct plan_inst *in, json_t *o)
{
    json_t *tenant = json_object_get(o, "tenant");
    if (in->row)
        assert_string_equal(json_string_value(tenant), in->row->tenant->name);
    else
        assert_true(json_is_null(tenant));
    assert_int_equal(json_is_true(json_object_get(o, "canary")), in->row == NULL);
    assert_int_equal(json_integer_value(json_object_get(o, "replica")), in->replica);
    if (g->mode == PLAN_MIG) {
        assert_int_equal(json_integer_value(json_object_get(o, "start")), in->start);
        assert_int_equal(json_integer_value(json_object_get(o, "size")), in->size);
    } else {
        assert_true(json_is_null(json_object_get(o, "start")));
    }
}

static void assert_gpus(const struct plan *p, json_t *arr)
{
    assert_int_equal(json_array_size(arr), p->ngpus);
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        json_t *o = json_array_get(arr, i);
        assert_string_equal(json_string_value(json_object_get(o, "node")), g->node->name);
        assert_int_equal(json_integer_value(json_object_get(o, "index")), g->index);
        assert_string_equal(json_string_value(json_object_get(o, "mode")),
                            plan_mode_names[g->mode]);
        json_t *insts = json_object_get(o, "instances");
        assert_int_equal(json_array_size(insts), g->ninst);
        for (size_t k = 0; k < g->ninst; k++)
            assert_instance(g, &g->inst[k], json_array_get(insts, k));
    }
}

/* The JSON says what the plan in memory says, field by field. */
static void test_json_matches_plan(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    json_t *doc = plan_json(&j);
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "Plan");
    assert_non_null(json_string_value(json_object_get(doc, "apiVersion")));
    assert_summary(&j.plan->summary, json_object_get(doc, "summary"));
    assert_decisions(j.plan->decisions, json_object_get(doc, "decisions"));
    assert_gpus(j.plan, json_object_get(doc, "gpus"));
    json_decref(doc);
    th_free(&j);
}

/* Same spec, same bytes: JSON is deterministic across runs and solvers
 * (only the solver's name may differ). */
static void test_json_deterministic(void **state)
{
    (void)state;
    struct ts_sbuf out[2];
    for (int i = 0; i < 2; i++) {
        struct th_job j;
        th_run_file(&j, th_src_path("examples/four-h100.yaml"),
                    i ? PLAN_SOLVER_EXACT : PLAN_SOLVER_HEURISTIC);
        assert_int_equal(j.st, TS_OK);
        ts_sbuf_init(&out[i], 1u << 20);
        assert_int_equal(report_json(j.plan, &out[i]), TS_OK);
        th_free(&j);
    }
    /* the worked example's totals (docs: 4 GPUs against 7 naive, 43% less) */
    assert_non_null(strstr(ts_sbuf_str(&out[0]), "\"gpusUsed\": 4"));
    assert_non_null(strstr(ts_sbuf_str(&out[0]), "\"naiveGpus\": 7"));
    assert_non_null(strstr(ts_sbuf_str(&out[0]), "\"savingsPercent\": 42.9"));
    assert_non_null(strstr(ts_sbuf_str(&out[0]), "\"decisions\": ["));
    const char *ga = strstr(ts_sbuf_str(&out[0]), "\"gpus\": [");
    const char *gb = strstr(ts_sbuf_str(&out[1]), "\"gpus\": [");
    assert_non_null(ga);
    assert_non_null(gb);
    const char *ea = strstr(ga, "\"kind\"");
    const char *eb = strstr(gb, "\"kind\"");
    assert_non_null(ea);
    assert_int_equal(ea - ga, eb - gb);
    assert_memory_equal(ga, gb, (size_t)(ea - ga));
    ts_sbuf_release(&out[0]);
    ts_sbuf_release(&out[1]);
}

/* The text names every workload, every used card, and the totals. */
static void test_text(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1u << 20);
    report_text(j.plan, &out);
    const char *text = ts_sbuf_str(&out);
    for (size_t i = 0; i < j.d->nrows; i++)
        assert_non_null(strstr(text, j.d->rows[i].workload->name));
    char line[160];
    for (size_t i = 0; i < j.plan->ngpus; i++) {
        const struct plan_gpu *g = &j.plan->gpus[i];
        snprintf(line, sizeof line, "%s gpu %d  %s", g->node->name, g->index, g->model->name);
        assert_non_null(strstr(text, line));
    }
    const struct plan_summary *s = &j.plan->summary;
    snprintf(line, sizeof line, "GPUs used          %d of %d", s->gpus_used, s->gpus_total);
    assert_non_null(strstr(text, line));
    ts_sbuf_release(&out);
    th_free(&j);
}

/* Four replicas that must sit on distinct cards use more cards than the
 * naive count (which counts them once): the text says what the negative
 * saving means instead of printing "-3 GPUs"; against one card per replica
 * the plan saves nothing and says 0. */
static void test_negative_saving_explained(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j,
                "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
                "  nodes:\n  - name: n1\n    gpus: [{model: l40s, count: 4}]\n---\n"
                "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t}\nspec:\n"
                "  contract: shared-trusted\n  namespaces: [t]\n  workloads:\n"
                "  - {name: w, kind: batch, memoryHighWaterGiB: 30, replicas: 4}\n",
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    const struct plan_summary *s = &j.plan->summary;
    assert_int_equal(s->gpus_used, 4);
    assert_int_equal(s->naive, 1);
    assert_int_equal(s->dedicated, 4);
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1u << 20);
    report_text(j.plan, &out);
    const char *text = ts_sbuf_str(&out);
    assert_null(strstr(text, "-3 GPU"));
    assert_non_null(strstr(text, "saving             none: the plan uses 3 GPUs more (naive counts "
                                 "a workload's replicas once"));
    assert_non_null(strstr(text, "saving, dedicated  0 GPUs, 0% less hardware"));
    ts_sbuf_release(&out);
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_matches_plan),
        cmocka_unit_test(test_json_deterministic),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_negative_saving_explained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
