/*
 * custody.c - `agent watch --db`: custody events in the ledger when the
 * watch creates or destroys GPU instances. After a change the node's cards
 * before and after are compared by MIG device UUID (a GPU instance's UUID
 * is its first compute instance's, as ledger_inventory_events makes them):
 * an instance only in "after" was created and is recorded with the plan's
 * tenant and workload for its card, profile and placement; one only in
 * "before" was destroyed and is recorded as held by "unassigned" from now
 * on (the ledger's way of saying nobody holds it). Source "inventory".
 */
#include <string.h>
#include "agent/internal.h"
#include "ledger/ledger.h"
#include "util/time.h"

static int holds(const struct inv_node *inv, const char *uuid)
{
    for (int g = 0; g < inv->ngpu; g++)
        for (int i = 0; i < inv->gpu[g].ngi; i++)
            if (inv->gpu[g].gi[i].nci > 0 && strcmp(inv->gpu[g].gi[i].ci[0].uuid, uuid) == 0)
                return 1;
    return 0;
}

/* Record the events of from whose instance other does not hold. */
static ts_status record_missing(const struct agent_watch_opts *o, const struct inv_node *from,
                                const struct inv_node *other, const struct reconf_plan *plan,
                                int *recorded, struct ts_error *err)
{
    struct ledger_event tmpl = {.ts_ms = ts_clock_ms(CLOCK_REALTIME),
                                .node = o->node,
                                .tenant = plan ? NULL : "unassigned"};
    struct ledger_events evs = {0};
    ts_status st = ledger_inventory_events(from, plan, &tmpl, &evs, err);
    if (st != TS_OK)
        return st; /* released already */
    for (size_t i = 0; st == TS_OK && i < evs.n; i++) {
        const char *uuid = evs.ev[i].instance_uuid;
        int64_t seq = 0;
        if (!uuid || !*uuid || holds(other, uuid))
            continue;
        st = ledger_record(o->store, o->key, o->key_len, &evs.ev[i], &seq, err);
        *recorded += st == TS_OK;
    }
    ledger_events_release(&evs);
    return st;
}

ts_status agent__custody(const struct agent_watch_opts *o, const struct inv_node *before,
                         const struct inv_node *after, const struct reconf_plan *plan,
                         int *recorded, struct ts_error *err)
{
    *recorded = 0;
    if (!o->store)
        return TS_OK;
    ts_status st = record_missing(o, before, after, NULL, recorded, err);
    return st == TS_OK ? record_missing(o, after, before, plan, recorded, err) : st;
}
