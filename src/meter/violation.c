/*
 * violation.c - a custody violation found by the ingest (ingest.h) as an
 * entry of the custody ledger: the one place `observed` entries are made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ledger/ledger.h"
#include "meter/ingest.h"
#include "util/grow.h"

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

int meter_violation_first(struct meter_violation_log *log, const struct meter_violation *v)
{
    for (size_t i = 0; i < log->n; i++)
        if (!strcmp(log->keys[i].device, v->device) && !strcmp(log->keys[i].observed, v->observed))
            return log->repeats++, 0;
    if (!ts_grow((void **)&log->keys, &log->cap, log->n, sizeof(*log->keys)))
        return -1;
    struct meter_violation_key *k = &log->keys[log->n++];
    snprintf(k->device, sizeof(k->device), "%s", v->device);
    snprintf(k->observed, sizeof(k->observed), "%s", v->observed);
    return 1;
}

void meter_violation_log_free(struct meter_violation_log *log)
{
    free(log->keys);
    memset(log, 0, sizeof(*log));
}
