/*
 * test_replan.c - replanning (issue 12, bullet 6) from the worked example
 * (examples/four-h100.yaml, with its node given spare cards where a change
 * needs room): what runs is the previous plan's JSON, read back as
 * `plan --current` reads it. Every plan goes through the independent
 * checker (th_check_plan), and drains are counted here from the two plans
 * themselves (a card is drained when a running instance of a workload the
 * spec still has is not at the same place in the new plan), not from the
 * steps reconf printed.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>
#include "reconf/reconf.h"
#include "report/report.h"
#include "util/file.h"

#define CLIENT_X                                                                              \
    "---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: client-x}\n"       \
    "spec:\n  contract: isolated\n  dataClass: confidential\n  namespaces: [client-x-prod]\n" \
    "  workloads:\n  - name: chat-x\n    kind: inference\n    memoryHighWaterGiB: 30\n"       \
    "    kvCacheGiB: 6\n    p99Ms: 250\n    trust: untrusted\n    replicas: %d\n"             \
    "    spread: gpu\n"

/* The worked example with cards H100s on its node, without tenant drop
 * (NULL: none), with extra appended (static buffer per slot). */
static const char *worked(int slot, int cards, const char *drop, const char *extra)
{
    static char out[2][65536];
    char *text = NULL, *p;
    size_t len = 0;
    struct ts_error e = {0};
    assert_int_equal(ts_file_read(th_src_path("examples/four-h100.yaml"), 1 << 20, &text, &len, &e),
                     TS_OK);
    p = strstr(text, "count: 4}");
    assert_non_null(p);
    p[7] = (char)('0' + cards);
    if (drop) {
        char key[128];
        snprintf(key, sizeof key,
                 "---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\n"
                 "metadata: {name: %s}",
                 drop);
        char *a = strstr(text, key), *b = a ? strstr(a + 4, "\n---\n") : NULL;
        assert_non_null(b);
        memmove(a, b + 1, strlen(b + 1) + 1);
    }
    snprintf(out[slot], sizeof out[slot], "%s%s", text, extra ? extra : "");
    free(text);
    return out[slot];
}

struct run {
    struct th_job old, neu;
    struct reconf_plan cur;
    struct reconf_replan r;
    struct ts_error e;
    ts_status st;
    int skipped; /* the fleet cannot hold the old or the new spec at all */
};

/* x->st: the replan's status (x->skipped: no plan to replan). */
static void replan_any(struct run *x, const char *old_yaml, const char *new_yaml, int max,
                       int prefer)
{
    memset(x, 0, sizeof *x);
    th_run_text(&x->old, old_yaml, PLAN_SOLVER_HEURISTIC);
    th_run_text(&x->neu, new_yaml, PLAN_SOLVER_HEURISTIC);
    x->skipped = x->old.st == TS_INFEASIBLE || x->neu.st == TS_INFEASIBLE;
    if (x->skipped)
        return;
    assert_int_equal(x->old.st, TS_OK);
    assert_int_equal(x->neu.st, TS_OK);
    struct ts_sbuf js;
    ts_sbuf_init(&js, 1 << 24);
    assert_int_equal(report_json(x->old.plan, &js), TS_OK);
    struct ts_error e = {0};
    assert_int_equal(reconf_plan_parse(js.data, js.len, "old.json", &x->cur, &e), TS_OK);
    ts_sbuf_release(&js);
    struct reconf_replan_opts o = {.max_drains = max, .prefer = prefer};
    x->st = reconf_replan(&x->neu.plan, &x->cur, &o, &x->r, &x->e);
    if (x->st == TS_OK) {
        const char *bad = th_check_plan(x->neu.plan);
        if (bad)
            fail_msg("th_check_plan: %s", bad);
    }
}

/* The same where both specs must fit the fleet. */
static void replan(struct run *x, const char *old_yaml, const char *new_yaml, int max, int prefer)
{
    replan_any(x, old_yaml, new_yaml, max, prefer);
    assert_false(x->skipped);
}

static void run_free(struct run *x)
{
    reconf_replan_release(&x->r);
    reconf_plan_release(&x->cur);
    th_free(&x->old);
    th_free(&x->neu);
}

/* ---- independent counts from the two plans ------------------------------ */

static int in_spec(const struct plan *p, const char *tenant, const char *workload)
{
    return tenant && th_row(&(struct th_job){.d = (struct decide_result *)p->decisions}, tenant,
                            workload) != NULL;
}

/* 1 when held instance w of old card c is at the same place in p. */
static int still_there(const struct plan *p, const struct reconf_card *c,
                       const struct reconf_want *w)
{
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        if (g->index != c->index || strcmp(g->node->name, c->node))
            continue;
        for (size_t k = 0; k < g->ninst; k++) {
            const struct plan_inst *in = &g->inst[k];
            if (in->row && !strcmp(in->row->tenant->name, w->tenant) &&
                !strcmp(in->row->workload->name, w->workload) &&
                (!w->profile ||
                 (in->profile && !strcmp(in->profile->name, w->profile) && in->start == w->start)))
                return 1;
        }
    }
    return 0;
}

/* Running instances of card c that must move (0: the card needs no drain). */
static int moving(const struct plan *p, const struct reconf_card *c)
{
    int n = 0;
    for (int h = 0; h < c->nheld; h++)
        n += in_spec(p, c->held[h].tenant, c->held[h].workload) && !still_there(p, c, &c->held[h]);
    return n;
}

static int drained_cards(const struct plan *p, const struct reconf_plan *cur)
{
    int n = 0;
    for (int i = 0; i < cur->n; i++)
        n += moving(p, &cur->t[i]) > 0;
    return n;
}

/* No drained card moves every running replica of a workload with two or
 * more (the cards are drained one at a time). */
static void assert_replicas_survive(const struct plan *p, const struct reconf_plan *cur)
{
    for (int i = 0; i < cur->n; i++)
        for (int h = 0; h < cur->t[i].nheld; h++) {
            const struct reconf_want *w = &cur->t[i].held[h];
            int all = 0, here = 0;
            for (int j = 0; j < cur->n; j++)
                for (int x = 0; x < cur->t[j].nheld; x++) {
                    const struct reconf_want *o = &cur->t[j].held[x];
                    if (!w->tenant || !o->tenant || strcmp(o->tenant, w->tenant) ||
                        strcmp(o->workload, w->workload))
                        continue;
                    all++;
                    here += j == i && !still_there(p, &cur->t[j], o);
                }
            if (all >= 2 && here == all && in_spec(p, w->tenant, w->workload))
                fail_msg("every replica of %s/%s moves off card %d at once", w->tenant, w->workload,
                         cur->t[i].index);
        }
}

static int ops_of(const struct reconf_replan *r, int kind)
{
    int n = 0;
    for (size_t i = 0; i < r->nop; i++)
        n += r->op[i].kind == kind;
    return n;
}

/* ---- the cases ---------------------------------------------------------- */

static void test_unchanged_spec_no_step(void **state)
{
    (void)state;
    struct run x;
    const char *s = worked(0, 4, NULL, NULL);
    replan(&x, s, s, -1, RECONF_PREFER_FEWER_DRAINS);
    assert_int_equal(x.st, TS_OK);
    assert_int_equal(x.r.nop, 0);
    assert_int_equal(x.r.drains, 0);
    assert_int_equal(drained_cards(x.neu.plan, &x.cur), 0);
    assert_int_equal(x.neu.plan->summary.gpus_used, 4);
    run_free(&x);
}

/* The fresh plan of the changed spec reshuffles cards 0-2; replanning
 * keeps all but one card's running instances. */
static void test_add_3g_client_one_drain(void **state)
{
    (void)state;
    char extra[1024];
    struct run x;
    snprintf(extra, sizeof extra, CLIENT_X, 2);
    replan(&x, worked(0, 5, NULL, NULL), worked(1, 5, NULL, extra), -1, RECONF_PREFER_FEWER_DRAINS);
    assert_int_equal(x.st, TS_OK);
    int drained = drained_cards(x.neu.plan, &x.cur);
    assert_true(drained <= 1);
    assert_int_equal(x.r.drains, drained);
    assert_int_equal(ops_of(&x.r, RECONF_OP_CORDON), drained);
    assert_int_equal(ops_of(&x.r, RECONF_OP_UNCORDON), drained);
    assert_replicas_survive(x.neu.plan, &x.cur);
    assert_int_equal(x.neu.plan->summary.gpus_used, 5);
    run_free(&x);
}

/* With fewer-cards 5 cards of 6 are used, at the fewest drains that frees
 * one: a card emptied into the others' room (the fresh plan drained
 * several before reconf/evac.c searched the order cards are emptied in),
 * one at a time and never every replica at once. */
static void test_fewer_cards_drains_fewest(void **state)
{
    (void)state;
    char extra[1024];
    struct run x;
    snprintf(extra, sizeof extra, CLIENT_X, 2);
    replan(&x, worked(0, 6, NULL, NULL), worked(1, 6, NULL, extra), -1, RECONF_PREFER_FEWER_CARDS);
    assert_int_equal(x.st, TS_OK);
    assert_int_equal(x.neu.plan->summary.gpus_used, 5);
    assert_int_equal(x.r.drains, drained_cards(x.neu.plan, &x.cur));
    assert_int_equal(x.r.drains, 1); /* no card is empty: one drain is the fewest */
    assert_replicas_survive(x.neu.plan, &x.cur);
    assert_null(x.r.unsafe);
    run_free(&x);
    /* the same change preferring fewer drains: two spare cards, no drain */
    replan(&x, worked(0, 6, NULL, NULL), worked(1, 6, NULL, extra), -1, RECONF_PREFER_FEWER_DRAINS);
    assert_int_equal(x.st, TS_OK);
    assert_int_equal(x.r.drains, 0);
    assert_int_equal(drained_cards(x.neu.plan, &x.cur), 0);
    assert_int_equal(x.neu.plan->summary.gpus_used, 6);
    run_free(&x);
}

/* Removing a client drains nothing and destroys its two instances. */
static void test_remove_client_no_drain(void **state)
{
    (void)state;
    struct run x;
    replan(&x, worked(0, 4, NULL, NULL), worked(1, 4, "client-c", NULL), -1,
           RECONF_PREFER_FEWER_DRAINS);
    assert_int_equal(x.st, TS_OK);
    assert_int_equal(drained_cards(x.neu.plan, &x.cur), 0);
    assert_int_equal(ops_of(&x.r, RECONF_OP_DRAIN), 0);
    assert_int_equal(ops_of(&x.r, RECONF_OP_CORDON), 0);
    assert_int_equal(ops_of(&x.r, RECONF_OP_DESTROY), 2);
    assert_int_equal(x.r.nop, 2);
    for (size_t i = 0; i < x.r.nop; i++) {
        assert_non_null(strstr(x.r.op[i].tenants, "client-c/support-7b-int8"));
        assert_string_equal(x.r.op[i].why, "removed from the spec");
    }
    run_free(&x);
}

/* Cards that hold only a removed client's instances, and spare cards that
 * get new ones, need no drain. */
static void test_empty_cards_no_drain(void **state)
{
    (void)state;
    char extra[1024];
    struct run x;
    snprintf(extra, sizeof extra, CLIENT_X, 2);
    replan(&x, worked(0, 6, NULL, extra), worked(1, 6, NULL, NULL), -1, RECONF_PREFER_FEWER_DRAINS);
    assert_int_equal(x.st, TS_OK);
    assert_int_equal(ops_of(&x.r, RECONF_OP_DRAIN), 0);
    assert_int_equal(ops_of(&x.r, RECONF_OP_DESTROY), 2);
    assert_int_equal(x.r.drains, 0);
    run_free(&x);
    snprintf(extra, sizeof extra, CLIENT_X, 1);
    replan(&x, worked(0, 5, NULL, NULL), worked(1, 5, NULL, extra), -1, RECONF_PREFER_FEWER_DRAINS);
    assert_int_equal(x.st, TS_OK);
    assert_int_equal(x.r.nop, 1);
    assert_int_equal(x.r.op[0].kind, RECONF_OP_CREATE);
    assert_int_equal(x.r.op[0].index, 4);
    assert_int_equal(x.r.op[0].wave, 0);
    run_free(&x);
}

/* --max-drains 0: more cards when spare ones exist, else the reason. */
static void test_max_drains_zero(void **state)
{
    (void)state;
    char extra[1024];
    struct run x;
    snprintf(extra, sizeof extra, CLIENT_X, 2);
    replan(&x, worked(0, 6, NULL, NULL), worked(1, 6, NULL, extra), 0, RECONF_PREFER_FEWER_CARDS);
    assert_int_equal(x.st, TS_OK);
    assert_int_equal(x.r.drains, 0);
    assert_int_equal(drained_cards(x.neu.plan, &x.cur), 0);
    assert_int_equal(x.neu.plan->summary.gpus_used, 6);
    assert_non_null(strstr(x.r.note, "over --max-drains 0"));
    run_free(&x);
    /* five cards: one free, and no free 3g.40gb slice on the four running
     * ones; spread: gpu puts one replica on the free card, the other needs a
     * drain. --max-drains 0 keeps everything (issue 30) and names the one
     * replica of client-x/chat-x that does not fit (before: refused). */
    replan(&x, worked(0, 5, NULL, NULL), worked(1, 5, NULL, extra), 0, RECONF_PREFER_FEWER_DRAINS);
    assert_int_equal(x.st, TS_OK);
    assert_int_equal(x.r.drains, 0);
    assert_int_equal(drained_cards(x.neu.plan, &x.cur), 0);
    assert_int_equal(x.r.nunplaced, 1);
    assert_string_equal(x.r.unplaced[0].workload, "chat-x");
    assert_int_equal(x.r.unplaced[0].replicas, 1);
    assert_int_equal(x.neu.plan->summary.gpus_used, 5);
    run_free(&x);
}

/* A spec the fleet cannot hold whole (issue 30): client-c grows past its
 * 1g.10gb on the worked example's four cards, which hold everything else
 * but not client-c at its new size; replanned, as `plan --current` does,
 * from the plan of what fits (running work first), client-c left out.
 * Drains are counted here from the two plans: a card is drained when a
 * running instance of a workload the spec still has (in the plan or left
 * out of it) is not at the same place. --max-drains 0 keeps client-c's two
 * instances where they run, held at 1g.10gb (0 drains, named with its new
 * profile); without a limit they stop: a drain each (before: 0 drains, and
 * --max-drains 0 destroyed them too). */
static int spec_has(const struct spec_model *m, const char *tenant, const char *workload)
{
    const struct spec_tenant *t = tenant ? spec_tenant_find(m, tenant) : NULL;
    for (size_t i = 0; t && i < t->nworkloads; i++)
        if (!strcmp(t->workloads[i].name, workload))
            return 1;
    return 0;
}

static int drained_in_spec(const struct plan *p, const struct reconf_plan *cur)
{
    int n = 0;
    for (int i = 0; i < cur->n; i++) {
        int moves = 0;
        for (int h = 0; h < cur->t[i].nheld; h++)
            moves += spec_has(p->model, cur->t[i].held[h].tenant, cur->t[i].held[h].workload) &&
                     !still_there(p, &cur->t[i], &cur->t[i].held[h]);
        n += moves > 0;
    }
    return n;
}

static void grown_past(struct run *x, int max, struct decide_result *order, struct plan_partial *pp)
{
    char *grown = (char *)worked(1, 4, NULL, NULL), *at = strstr(grown, "support-7b-int8");
    assert_non_null(at);
    at = strstr(at, "memoryHighWaterGiB: 7.5");
    assert_non_null(at);
    memcpy(at + strlen("memoryHighWaterGiB: "), "12 ", 3);
    memset(x, 0, sizeof *x);
    th_run_text(&x->old, worked(0, 4, NULL, NULL), PLAN_SOLVER_HEURISTIC);
    th_run_text(&x->neu, grown, PLAN_SOLVER_HEURISTIC);
    assert_int_equal(x->old.st, TS_OK);
    assert_int_equal(x->neu.st, TS_INFEASIBLE);
    struct ts_sbuf js;
    ts_sbuf_init(&js, 1 << 24);
    assert_int_equal(report_json(x->old.plan, &js), TS_OK);
    assert_int_equal(reconf_plan_parse(js.data, js.len, "old.json", &x->cur, &x->e), TS_OK);
    ts_sbuf_release(&js);
    struct plan_options heuristic = {PLAN_SOLVER_HEURISTIC, PLAN_TIME_LIMIT_DEFAULT_S};
    assert_int_equal(reconf_running_first(&x->cur, x->neu.d, order), TS_OK);
    assert_int_equal(plan_build_partial(x->neu.model, x->neu.cat, order, &heuristic, pp), TS_OK);
    assert_int_equal(pp->nleft, 1);
    assert_string_equal(pp->left[0]->tenant->name, "client-c");
    struct reconf_replan_opts o = {.max_drains = max,
                                   .prefer = RECONF_PREFER_FEWER_DRAINS,
                                   .left = pp->left,
                                   .nleft = pp->nleft};
    x->neu.plan = pp->plan;
    pp->plan = NULL;
    x->st = reconf_replan(&x->neu.plan, &x->cur, &o, &x->r, &x->e);
    assert_int_equal(x->st, TS_OK);
    assert_int_equal(plan_verify(x->neu.plan, &x->e), TS_OK);
}

static void test_grown_past_fleet(void **state)
{
    (void)state;
    struct run x;
    struct decide_result order;
    struct plan_partial pp;
    int runs = 0, cards = 0;
    grown_past(&x, 0, &order, &pp);
    assert_int_equal(x.r.drains, 0);
    assert_int_equal(x.r.nop, 0);
    assert_int_equal(drained_in_spec(x.neu.plan, &x.cur), 0);
    for (int i = 0; i < x.cur.n; i++) { /* every running instance where it runs */
        int here = 0;
        for (int h = 0; h < x.cur.t[i].nheld; h++) {
            const struct reconf_want *w = &x.cur.t[i].held[h];
            assert_true(!w->tenant || still_there(x.neu.plan, &x.cur.t[i], w));
            here += w->tenant && !strcmp(w->tenant, "client-c");
        }
        runs += here;
        cards += here > 0;
    }
    assert_int_equal(runs, 2);
    assert_int_equal(x.r.nunplaced, 1);
    assert_string_equal(x.r.unplaced[0].tenant, "client-c");
    assert_int_equal(x.r.unplaced[0].kept, 2);
    assert_string_equal(x.r.unplaced[0].kept_profile, "1g.10gb");
    assert_string_equal(x.r.unplaced[0].new_profile, "1g.20gb");
    run_free(&x);
    plan_partial_free(&pp);
    free(order.rows);

    grown_past(&x, -1, &order, &pp);
    assert_int_equal(x.r.drains, cards);
    assert_int_equal(x.r.drains, drained_in_spec(x.neu.plan, &x.cur));
    assert_int_equal(ops_of(&x.r, RECONF_OP_DRAIN), x.r.drains);
    assert_int_equal(x.r.nunplaced, 0); /* named by the caller (plan_partial's left) */
    run_free(&x);
    plan_partial_free(&pp);
    free(order.rows);
}

/* Every tenant removed in turn, client-x added with 1 to 3 replicas, on 4
 * to 6 cards, both preferences: each replan that succeeds passes the
 * checker, drains what the two plans say it drains, and keeps a replica of
 * every workload running through each drain; one that fails names a limit
 * or the reason the keep candidate cannot place. */
static int checked, refused;

static void check_one(const char *old_yaml, const char *new_yaml, int prefer)
{
    struct run x;
    replan_any(&x, old_yaml, new_yaml, -1, prefer);
    checked += !x.skipped && x.st == TS_OK;
    refused += !x.skipped && x.st == TS_INFEASIBLE;
    if (!x.skipped && x.st == TS_OK) {
        assert_int_equal(x.r.drains, drained_cards(x.neu.plan, &x.cur));
        assert_int_equal(ops_of(&x.r, RECONF_OP_DRAIN), x.r.drains);
        assert_replicas_survive(x.neu.plan, &x.cur);
    } else if (!x.skipped) {
        assert_int_equal(x.st, TS_INFEASIBLE);
        assert_non_null(strstr(x.e.msg, "no plan meets the replanning limits"));
    }
    run_free(&x);
}

/* reconf_replan_unplaced_add relabels the destroys of the workload it names
 * by the tenant and workload they destroy, not by their text: a/w's, never
 * a/w2's or ab/w's, nor one whose text only reads like a/w's. */
static void test_unplaced_relabels_by_name(void **state)
{
    (void)state;
    static const char *const who[][3] = {
        {"a", "w", "a/w r0"}, {"a", "w2", "a/w2 r0"}, {"ab", "w", "ab/w r0"}, {"b", "x", "a/w r1"}};
    struct reconf_replan r = {0};
    ts_arena_init(&r.arena);
    r.op = ts_arena_array(&r.arena, 4, sizeof(*r.op));
    assert_non_null(r.op);
    r.nop = r.cap = 4;
    for (size_t i = 0; i < 4; i++)
        r.op[i] = (struct reconf_op){.kind = RECONF_OP_DESTROY,
                                     .tenants = who[i][2],
                                     .why = "removed from the spec",
                                     .row = -1,
                                     .tenant = who[i][0],
                                     .workload = who[i][1]};
    assert_int_equal(reconf_replan_unplaced_add(&r, "a", "w", 1, "no room"), TS_OK);
    assert_string_equal(r.op[0].why, "left out: the fleet cannot hold it now; see not placed");
    for (size_t i = 1; i < 4; i++)
        assert_string_equal(r.op[i].why, "removed from the spec");
    assert_int_equal(r.nunplaced, 1);
    assert_string_equal(r.unplaced[0].why, "no room");
    reconf_replan_release(&r);
}

static void test_sweep(void **state)
{
    (void)state;
    static const char *const tenants[] = {"client-a", "client-b", "client-c", "client-d", "rag-e"};
    char extra[1024];
    for (int cards = 4; cards <= 6; cards++)
        for (int prefer = 0; prefer < 2; prefer++) {
            for (size_t t = 0; t < sizeof tenants / sizeof *tenants; t++)
                check_one(worked(0, cards, NULL, NULL), worked(1, cards, tenants[t], NULL), prefer);
            for (int reps = 1; reps <= 3 && cards > 4; reps++) {
                snprintf(extra, sizeof extra, CLIENT_X, reps);
                check_one(worked(0, cards, NULL, NULL), worked(1, cards, NULL, extra), prefer);
                check_one(worked(0, cards, NULL, extra), worked(1, cards, "client-b", NULL),
                          prefer);
            }
        }
    /* most changes replan; print the split so a change in it shows */
    print_message("sweep: %d replanned, %d refused\n", checked, refused);
    assert_true(checked >= 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unchanged_spec_no_step),
        cmocka_unit_test(test_add_3g_client_one_drain),
        cmocka_unit_test(test_fewer_cards_drains_fewest),
        cmocka_unit_test(test_remove_client_no_drain),
        cmocka_unit_test(test_empty_cards_no_drain),
        cmocka_unit_test(test_max_drains_zero),
        cmocka_unit_test(test_grown_past_fleet),
        cmocka_unit_test(test_unplaced_relabels_by_name),
        cmocka_unit_test(test_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
