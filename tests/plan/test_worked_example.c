/*
 * test_worked_example.c - the first acceptance test: examples/four-h100.yaml
 * (README.md's worked example) must plan exactly so: cards 0 and 1 each hold
 * 2g.20gb@0 + 1g.10gb@2 + 1g.10gb@3 + 3g.40gb@4 (one replica of each
 * production client, mirrored), card 2 seven 1g.10gb for the embedding
 * pool, card 3 whole for the nightly fine-tune with dev time-sliced as a
 * guest; 4 GPUs against 7 naive, 43% less hardware, lower bound 4.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

struct want {
    const char *profile;
    int start, size;
    const char *tenant, *workload;
    int replica;
};

static void assert_card(const struct plan_gpu *g, int index, int mode, const struct want *w,
                        size_t n)
{
    assert_int_equal(g->index, index);
    assert_int_equal(g->mode, mode);
    assert_int_equal(g->ninst, n);
    for (size_t i = 0; i < n; i++) {
        const struct plan_inst *in = NULL;
        for (size_t k = 0; k < g->ninst; k++)
            if (g->inst[k].start == w[i].start && mode == PLAN_MIG)
                in = &g->inst[k];
        assert_non_null(in);
        assert_string_equal(in->profile->name, w[i].profile);
        assert_int_equal(in->size, w[i].size);
        assert_string_equal(in->row->tenant->name, w[i].tenant);
        assert_string_equal(in->row->workload->name, w[i].workload);
        assert_int_equal(in->replica, w[i].replica);
    }
}

static void check_layout(int solver)
{
    struct th_job j;
    th_run_file(&j, th_src_path("examples/four-h100.yaml"), solver);
    assert_string_equal(th_first_error(&j), "");
    assert_int_equal(j.st, TS_OK);
    const struct plan *p = j.plan;
    assert_int_equal(p->ngpus, 4);
    for (int r = 0; r < 2; r++) {
        const struct want prod[] = {{"2g.20gb", 0, 2, "client-b", "code-7b", r},
                                    {"1g.10gb", 2, 1, "client-c", "support-7b-int8", r},
                                    {"1g.10gb", 3, 1, "client-d", "summarise-7b-awq", r},
                                    {"3g.40gb", 4, 4, "client-a", "chat-13b", r}};
        assert_card(&p->gpus[r], r, PLAN_MIG, prod, 4);
    }
    struct want pool[7];
    for (int i = 0; i < 7; i++)
        pool[i] = (struct want){"1g.10gb", i, 1, "provider", "embedding", i};
    assert_card(&p->gpus[2], 2, PLAN_MIG, pool, 7);
    const struct plan_gpu *g3 = &p->gpus[3];
    assert_int_equal(g3->index, 3);
    assert_int_equal(g3->mode, PLAN_WHOLE);
    assert_int_equal(g3->sharing, 1);
    assert_int_equal(g3->ninst, 2);
    assert_string_equal(g3->inst[0].row->workload->name, "finetune");
    assert_int_equal(g3->inst[0].guest, 0);
    assert_string_equal(g3->inst[1].row->workload->name, "notebooks");
    assert_int_equal(g3->inst[1].guest, 1);
    assert_int_equal(p->summary.gpus_used, 4);
    assert_int_equal(p->summary.naive, 7);
    assert_int_equal(p->summary.lower_bound, 4);
    assert_true(p->summary.optimal);
    assert_int_equal((int)lround(p->summary.savings_percent), 43);
    /* one card per replica: chat 2 + code 2 + support 2 + summarise 2 +
     * embedding 7 + finetune 1 + notebooks 1 */
    assert_int_equal(p->summary.dedicated, 17);
    assert_int_equal((int)lround(p->summary.savings_dedicated_percent), 76);
    struct ts_error e;
    assert_int_equal(plan_verify(p, &e), TS_OK);
    th_free(&j);
}

static void test_layout_auto(void **state)
{
    (void)state;
    check_layout(PLAN_SOLVER_AUTO);
}

static void test_layout_exact(void **state)
{
    (void)state;
    check_layout(PLAN_SOLVER_EXACT);
}

static void test_layout_heuristic(void **state)
{
    (void)state;
    check_layout(PLAN_SOLVER_HEURISTIC);
}

/* Every decision of the example, with its rule. */
static void test_decisions(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    static const struct {
        const char *tenant, *workload, *mech, *profile, *rule;
    } want[] = {
        {"client-a", "chat-13b", "mig", "3g.40gb", "R3"},
        {"client-b", "code-7b", "mig", "2g.20gb", "R3"},
        {"client-c", "support-7b-int8", "mig", "1g.10gb", "R3"},
        {"client-d", "summarise-7b-awq", "mig", "1g.10gb", "R3"},
        {"provider", "embedding", "mig", "1g.10gb", "R3"},
        {"provider", "finetune", "whole", NULL, "R2"},
        {"platform-dev", "notebooks", "time-slicing", NULL, "R6"},
    };
    assert_int_equal(j.d->nrows, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct decide_row *r = th_row(&j, want[i].tenant, want[i].workload);
        assert_non_null(r);
        assert_string_equal(decide_mech_names[r->mech], want[i].mech);
        if (want[i].profile)
            assert_string_equal(r->profile->name, want[i].profile);
        else
            assert_null(r->profile);
        assert_string_equal(r->rule, want[i].rule);
        assert_true(strncmp(r->reason, want[i].rule, 2) == 0);
    }
    const struct decide_row *a = th_row(&j, "client-a", "chat-13b");
    assert_non_null(strstr(a->reason, "28 GiB + 8 GiB KV cache = 36 GiB -> 3g.40gb"));
    assert_non_null(strstr(a->reason, "untrusted data with a 250 ms p99"));
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_auto),
        cmocka_unit_test(test_layout_exact),
        cmocka_unit_test(test_layout_heuristic),
        cmocka_unit_test(test_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
