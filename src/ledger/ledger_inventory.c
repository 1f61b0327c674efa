/*
 * ledger_inventory.c - the custody events of a NodeInventory (`tessera
 * agent inventory -o json`), with each device's tenant and workload taken
 * from the plan when there is one (`ledger record --inventory [-f SPEC]`).
 */
#include <stdlib.h>
#include <string.h>
#include "ledger/ledger.h"
#include "util/grow.h"

/* Room for one more event; NULL when out of memory. */
static struct ledger_event *next_event(struct ledger_events *out, struct ts_error *err)
{
    if (!ts_grow((void **)&out->ev, &out->cap, out->n, sizeof(*out->ev))) {
        ts_err(err, TS_NOMEM, "out of memory");
        return NULL;
    }
    return &out->ev[out->n++];
}

/* A whole GPU: the plan's owner of the card ("unassigned" when free). */
static void whole_gpu_tenant(const struct reconf_plan *plan, const char *node, int index,
                             struct ledger_event *t)
{
    const struct reconf_card *card = reconf_plan_card(plan, node, index);
    t->tenant = card && card->owner ? card->owner : "unassigned";
    t->workload = card && card->owner_workload ? card->owner_workload : "";
}

/* A GPU instance: the plan's instance of the same profile and placement
 * ("unassigned" when the plan has none there). */
static void instance_tenant(const struct reconf_plan *plan, const char *node, int index,
                            const struct inv_gi *gi, struct ledger_event *t)
{
    const struct reconf_want *w = reconf_plan_find(plan, node, index, gi->pl.start);
    if (w && (w->size != gi->pl.size || strcmp(w->profile, gi->profile) != 0))
        w = NULL;
    t->tenant = w && w->tenant ? w->tenant : "unassigned";
    t->workload = w && w->workload ? w->workload : "";
}

static ts_status add_instance(const struct inv_gpu *g, const struct inv_gi *gi,
                              const struct ledger_event *t, struct ledger_events *out,
                              struct ts_error *err)
{
    struct ledger_event *ev = next_event(out, err);
    if (!ev)
        return TS_NOMEM;
    *ev = ledger_event_of(t, g->uuid, gi->nci ? gi->ci[0].uuid : "", gi->profile, "inventory");
    ev->gi_id = ts_arena_printf(&out->arena, "%d", gi->id);
    ev->placement = ts_arena_printf(&out->arena, "%d:%d", gi->pl.start, gi->pl.size);
    return ev->gi_id && ev->placement ? TS_OK : ts_err(err, TS_NOMEM, "out of memory");
}

static ts_status add_gpu(const struct inv_gpu *g, const struct reconf_plan *plan,
                         const struct ledger_event *tmpl, struct ledger_events *out,
                         struct ts_error *err)
{
    struct ledger_event t = *tmpl;
    if (g->ngi == 0) {
        if (plan)
            whole_gpu_tenant(plan, t.node, g->index, &t);
        struct ledger_event *ev = next_event(out, err);
        if (ev)
            *ev = ledger_event_of(&t, g->uuid, "", "", "inventory");
        return ev ? TS_OK : TS_NOMEM;
    }
    ts_status st = TS_OK;
    for (int k = 0; k < g->ngi && st == TS_OK; k++) {
        if (plan)
            instance_tenant(plan, t.node, g->index, &g->gi[k], &t);
        st = add_instance(g, &g->gi[k], &t, out, err);
    }
    return st;
}

ts_status ledger_inventory_events(const struct inv_node *inv, const struct reconf_plan *plan,
                                  const struct ledger_event *tmpl, struct ledger_events *out,
                                  struct ts_error *err)
{
    memset(out, 0, sizeof(*out));
    ts_arena_init(&out->arena);
    struct ledger_event t = *tmpl;
    t.node = tmpl->node ? tmpl->node : inv->node;
    ts_status st = TS_OK;
    for (int i = 0; i < inv->ngpu && st == TS_OK; i++)
        st = add_gpu(&inv->gpu[i], plan, &t, out, err);
    if (st != TS_OK)
        ledger_events_release(out);
    return st;
}

void ledger_events_release(struct ledger_events *out)
{
    free(out->ev);
    ts_arena_free(&out->arena);
    memset(out, 0, sizeof(*out));
}
