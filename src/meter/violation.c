/*
 * violation.c - a custody violation found by the ingest (ingest.h) as an
 * entry of the custody ledger: the one place `observed` entries are made.
 */
#include <stdio.h>
#include "ledger/ledger.h"
#include "meter/ingest.h"

ts_status meter_violation_record(struct store *st, const void *key, size_t key_len,
                                 const struct meter_violation *v, struct ts_error *err)
{
    char pod[sizeof(v->ns) + sizeof(v->pod)];
    snprintf(pod, sizeof(pod), "%s/%s", v->ns, v->pod);
    struct ledger_event ev = {.ts_ms = v->ts_ms,
                              .node = v->node,
                              .gpu_uuid = v->gpu_uuid,
                              .instance_uuid = "",
                              .gi_id = v->gi_id,
                              .profile = v->profile,
                              .placement = "",
                              .tenant = v->observed,
                              .workload = pod,
                              .source = "observed"};
    return ledger_record(st, key, key_len, &ev, NULL, err);
}
