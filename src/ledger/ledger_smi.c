/*
 * ledger_smi.c - custody events from `nvidia-smi -L` output, read by the
 * inventory module's parser (inventory/smi.h): a GPU with MIG devices
 * gives one event per device, a GPU without gives one. Lines of other
 * nvidia-smi output in the same file are skipped; a malformed -L line is
 * an error at its line and column (the CLI adds the file name).
 */
#include <stdlib.h>
#include <string.h>
#include "inventory/smi.h"
#include "ledger/ledger.h"

struct ledger_event ledger_event_of(const struct ledger_event *tmpl, const char *gpu_uuid,
                                    const char *instance_uuid, const char *profile,
                                    const char *source)
{
    struct ledger_event ev = *tmpl;
    ev.gpu_uuid = gpu_uuid;
    ev.instance_uuid = instance_uuid ? instance_uuid : "";
    ev.profile = profile ? profile : "";
    ev.tenant = tmpl->tenant ? tmpl->tenant : "unassigned";
    ev.source = source;
    return ev;
}

/* Events for one GPU: one per MIG device, or one for the whole GPU. */
static size_t gpu_events(const struct inv_smi *smi, const struct inv_smi_gpu *g,
                         const struct ledger_event *tmpl, struct ledger_event *out)
{
    if (g->nmig == 0) {
        out[0] = ledger_event_of(tmpl, g->uuid, "", "", "nvidia-smi");
        return 1;
    }
    for (int k = 0; k < g->nmig; k++) {
        const struct inv_smi_mig *m = &smi->mig[g->first_mig + k];
        out[k] = ledger_event_of(tmpl, g->uuid, m->uuid, m->profile, "nvidia-smi");
    }
    return (size_t)g->nmig;
}

/* All events of smi into *evs (one allocation), in the order listed. */
static ts_status make_events(const struct inv_smi *smi, const struct ledger_event *tmpl,
                             struct ledger_event **evs, size_t *n, struct ts_error *err)
{
    struct ledger_event *out = calloc((size_t)(smi->ngpu + smi->nmig), sizeof(*out));
    if (!out)
        return ts_err(err, TS_NOMEM, "out of memory");
    size_t k = 0;
    for (int i = 0; i < smi->ngpu; i++)
        k += gpu_events(smi, &smi->gpu[i], tmpl, out + k);
    *evs = out;
    *n = k;
    return TS_OK;
}

ts_status ledger_parse_smi(const char *text, const struct ledger_event *tmpl,
                           struct ledger_event **evs, size_t *n, char **arena, struct ts_error *err)
{
    struct inv_smi *smi = malloc(sizeof(*smi));
    if (!smi)
        return ts_err(err, TS_NOMEM, "out of memory");
    ts_status st = inv_smi_parse(text, strlen(text), NULL, INV_SMI_MIXED, smi, err);
    if (st == TS_OK && smi->ngpu == 0)
        st = ts_err(err, TS_INVALID, "no 'GPU n: ... (UUID: ...)' lines (nvidia-smi -L output)");
    if (st == TS_OK)
        st = make_events(smi, tmpl, evs, n, err);
    if (st != TS_OK) {
        free(smi);
        return st;
    }
    *arena = (char *)smi; /* the strings of *evs live in smi */
    return TS_OK;
}
