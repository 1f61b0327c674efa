/*
 * test_ledger_inventory.c - ledger_inventory_events: a NodeInventory that
 * holds exactly the plan of tests/fixtures/agent/spec.yaml gives one event
 * per GPU instance with the plan's tenant and workload, its GI id,
 * placement, MIG device UUID and source "inventory"; an instance of
 * another profile or size at a planned start, or on a card the plan does
 * not have, is "unassigned"; without a plan the template's tenant (or
 * "unassigned") and node (or the inventory's) are kept; a full inventory
 * (every GPU and GI the limits allow) grows the list to the end.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ledger/ledger.h"
#include "reconf/reconf.h"

struct fixture {
    struct th_job job;
    struct reconf_plan plan;
    struct inv_node *inv;
};

/* A GPU instance of g as the plan wants it. */
static void add_gi(struct inv_gpu *g, const struct reconf_want *w)
{
    struct inv_gi *gi = &g->gi[g->ngi];
    gi->id = 10 + g->ngi;
    snprintf(gi->profile, sizeof(gi->profile), "%s", w->profile);
    gi->pl = (struct inv_placement){w->start, w->size};
    gi->nci = 1;
    snprintf(gi->ci[0].uuid, sizeof(gi->ci[0].uuid), "MIG-%d-%d", g->index, g->ngi);
    g->ngi++;
}

/* The node of the plan, holding what the plan wants. */
static struct inv_node *node_of_plan(const struct reconf_plan *p)
{
    struct inv_node *inv = calloc(1, sizeof(*inv));
    assert_non_null(inv);
    snprintf(inv->node, sizeof(inv->node), "gpu-node-1");
    for (int i = 0; i < p->n; i++) {
        struct inv_gpu *g = &inv->gpu[inv->ngpu++];
        g->index = p->t[i].index;
        snprintf(g->uuid, sizeof(g->uuid), "GPU-%d", g->index);
        for (int k = 0; k < p->t[i].nwant; k++)
            add_gi(g, &p->t[i].want[k]);
    }
    return inv;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct ts_error e = {0};
    th_run_file(&f->job, th_src_path("tests/fixtures/agent/spec.yaml"), PLAN_SOLVER_HEURISTIC);
    assert_int_equal(f->job.st, TS_OK);
    assert_int_equal(reconf_plan_from_plan(f->job.plan, &f->plan, &e), TS_OK);
    f->inv = node_of_plan(&f->plan);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    reconf_plan_release(&f->plan);
    th_free(&f->job);
    free(f->inv);
    free(f);
    return 0;
}

static const struct ledger_event TMPL = {.ts_ms = 1796032800000LL};

static void test_plan_attribution(void **state)
{
    struct fixture *f = *state;
    struct ledger_events evs;
    assert_int_equal(ledger_inventory_events(f->inv, &f->plan, &TMPL, &evs, NULL), TS_OK);
    size_t n = 0, tenants = 0;
    for (int i = 0; i < f->plan.n; i++) {
        const struct reconf_card *c = &f->plan.t[i];
        if (c->nwant == 0) { /* a card without instances: its owner's */
            assert_string_equal(evs.ev[n].tenant, c->owner ? c->owner : "unassigned");
            assert_string_equal(evs.ev[n++].instance_uuid, "");
        }
        for (int k = 0; k < c->nwant; k++, n++) {
            const struct ledger_event *ev = &evs.ev[n];
            char placement[32], mig[32];
            snprintf(placement, sizeof(placement), "%d:%d", c->want[k].start, c->want[k].size);
            snprintf(mig, sizeof(mig), "MIG-%d-%d", c->index, k);
            assert_string_equal(ev->tenant, c->want[k].tenant ? c->want[k].tenant : "unassigned");
            assert_string_equal(ev->workload, c->want[k].workload ? c->want[k].workload : "");
            assert_string_equal(ev->placement, placement);
            assert_string_equal(ev->instance_uuid, mig);
            assert_string_equal(ev->profile, c->want[k].profile);
            assert_string_equal(ev->source, "inventory");
            assert_string_equal(ev->node, "gpu-node-1");
            assert_int_equal(ev->ts_ms, TMPL.ts_ms);
            tenants += c->want[k].tenant != NULL;
        }
    }
    assert_int_equal(evs.n, n);
    assert_true(tenants >= 3); /* alpha, beta, gamma each got theirs */
    assert_string_equal(evs.ev[0].gi_id, "10");
    ledger_events_release(&evs);
}

static void test_mismatch_unassigned(void **state)
{
    struct fixture *f = *state;
    struct inv_gpu *g = &f->inv->gpu[0];
    assert_true(g->ngi > 0);
    struct inv_gi saved = g->gi[0];
    snprintf(g->gi[0].profile, sizeof(g->gi[0].profile), "7g.80gb");
    struct inv_gpu *extra = &f->inv->gpu[f->inv->ngpu++];
    memset(extra, 0, sizeof(*extra));
    extra->index = 7; /* a card the plan does not have, without instances */
    snprintf(extra->uuid, sizeof(extra->uuid), "GPU-7");
    struct ledger_events evs;
    assert_int_equal(ledger_inventory_events(f->inv, &f->plan, &TMPL, &evs, NULL), TS_OK);
    assert_string_equal(evs.ev[0].tenant, "unassigned");
    assert_string_equal(evs.ev[0].workload, "");
    const struct ledger_event *last = &evs.ev[evs.n - 1];
    assert_string_equal(last->gpu_uuid, "GPU-7");
    assert_string_equal(last->instance_uuid, "");
    assert_string_equal(last->tenant, "unassigned");
    ledger_events_release(&evs);
    g->gi[0] = saved;
    f->inv->ngpu--;
}

static void test_without_plan(void **state)
{
    struct fixture *f = *state;
    struct ledger_event t = TMPL;
    struct ledger_events evs;
    assert_int_equal(ledger_inventory_events(f->inv, NULL, &t, &evs, NULL), TS_OK);
    assert_true(evs.n > 0);
    for (size_t i = 0; i < evs.n; i++) {
        assert_string_equal(evs.ev[i].tenant, "unassigned");
        assert_string_equal(evs.ev[i].node, "gpu-node-1");
    }
    ledger_events_release(&evs);
    t.tenant = "lab";
    t.node = "renamed";
    assert_int_equal(ledger_inventory_events(f->inv, NULL, &t, &evs, NULL), TS_OK);
    for (size_t i = 0; i < evs.n; i++) {
        assert_string_equal(evs.ev[i].tenant, "lab");
        assert_string_equal(evs.ev[i].node, "renamed");
    }
    ledger_events_release(&evs);
}

static void test_full_inventory(void **state)
{
    (void)state;
    struct inv_node *inv = calloc(1, sizeof(*inv));
    assert_non_null(inv);
    const struct reconf_want w = {.profile = "1g.10gb", .start = 0, .size = 1};
    inv->ngpu = INV_GPUS_MAX;
    for (int i = 0; i < INV_GPUS_MAX; i++) {
        inv->gpu[i].index = i;
        for (int k = 0; k < INV_GIS_MAX; k++)
            add_gi(&inv->gpu[i], &w);
    }
    struct ledger_events evs;
    assert_int_equal(ledger_inventory_events(inv, NULL, &TMPL, &evs, NULL), TS_OK);
    assert_int_equal(evs.n, (size_t)INV_GPUS_MAX * INV_GIS_MAX);
    char last[32];
    snprintf(last, sizeof(last), "MIG-%d-%d", INV_GPUS_MAX - 1, INV_GIS_MAX - 1);
    assert_string_equal(evs.ev[evs.n - 1].instance_uuid, last);
    ledger_events_release(&evs);
    free(inv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plan_attribution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mismatch_unassigned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_plan, setup, teardown),
        cmocka_unit_test(test_full_inventory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
