/*
 * busy.c - before a card's change: which processes run on the MIG
 * instances it would destroy. Two NVML lists: the compute processes and,
 * where the driver has the function (optional: AGENT_NVML_OPTIONAL), the
 * MPS clients. A process NVML places on no GPU instance (or a list longer
 * than the agent reads) holds the whole card. Creating in free slices
 * disturbs nobody, so a process on an instance the change keeps is fine.
 */
#include <stdio.h>
#include <string.h>
#include "agent/internal.h"

#define NO_GI 0xFFFFFFFFu

typedef nvmlReturn_t (*agent__list_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);

struct procs {
    nvmlProcessInfo_t p[2 * AGENT_PROCS_MAX];
    int mps[2 * AGENT_PROCS_MAX];
    int n, overflow;
};

static ts_status list(struct agent_nvml *n, agent__list_fn fn, const char *call, nvmlDevice_t d,
                      int gpu, int mps, struct procs *out, struct ts_error *err)
{
    unsigned int count = AGENT_PROCS_MAX;
    nvmlReturn_t r = fn(d, &count, out->p + out->n);
    if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE)
        return agent__nvml_err(n, r, call, gpu, err);
    out->overflow |= r == NVML_ERROR_INSUFFICIENT_SIZE || count > AGENT_PROCS_MAX;
    count = count > AGENT_PROCS_MAX ? AGENT_PROCS_MAX : count;
    for (unsigned int i = 0; i < count; i++)
        out->mps[out->n + (int)i] = mps;
    out->n += (int)count;
    return TS_OK;
}

static int destroyed(const struct reconf_diff *d, unsigned int gi)
{
    for (int k = 0; k < d->nstep; k++)
        if (d->step[k].kind == RECONF_DESTROY && (unsigned)d->step[k].gi_id == gi)
            return 1;
    return 0;
}

static const struct inv_gi *gi_of(const struct inv_gpu *g, unsigned int id)
{
    for (int i = 0; i < g->ngi; i++)
        if ((unsigned)g->gi[i].id == id)
            return &g->gi[i];
    return NULL;
}

/* " pid 42 (python3, MPS client) on GPU instance 3 (3g.40gb at 0:4)" */
static void name_one(struct agent_nvml *n, const struct inv_gpu *g, const nvmlProcessInfo_t *p,
                     int mps, struct ts_sbuf *log)
{
    char name[256] = "?";
    if (n->nvmlSystemGetProcessName(p->pid, name, sizeof name) != NVML_SUCCESS)
        ts_copy(name, sizeof name, "?");
    ts_sbuf_printf(log, " pid %u (%s%s)", p->pid, name, mps ? ", MPS client" : "");
    const struct inv_gi *gi = p->gpuInstanceId == NO_GI ? NULL : gi_of(g, p->gpuInstanceId);
    if (gi)
        ts_sbuf_printf(log, " on GPU instance %d (%s at %d:%d)", gi->id, gi->profile, gi->pl.start,
                       gi->pl.size);
}

/* How many instances the processes in hit[] make busy: the distinct ones,
 * or every destroyed one (at least the card) when one holds the card. */
static int count_busy(const struct procs *ps, const int *hit, int whole,
                      const struct reconf_diff *d)
{
    unsigned int seen[2 * AGENT_PROCS_MAX];
    int n = 0;
    for (int i = 0; !whole && i < ps->n; i++) {
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= seen[j] == ps->p[i].gpuInstanceId;
        if (hit[i] && !dup && ps->p[i].gpuInstanceId != NO_GI)
            seen[n++] = ps->p[i].gpuInstanceId;
    }
    return whole ? (d->ndestroy > 1 ? d->ndestroy : 1) : n;
}

static void refuse(struct agent_nvml *n, const struct inv_gpu *g, const struct procs *ps,
                   const int *hit, int nhit, int whole, struct ts_sbuf *log)
{
    ts_sbuf_printf(log, "  refused: %d process%s running on GPU %d%s:", nhit, nhit == 1 ? "" : "es",
                   g->index, whole ? "" : " instances this change destroys");
    for (int i = 0, k = 0; i < ps->n; i++)
        if (hit[i]) {
            ts_sbuf_puts(log, k++ ? "," : "");
            name_one(n, g, &ps->p[i], ps->mps[i], log);
        }
    if (ps->overflow)
        ts_sbuf_printf(log, ", and more (over %d listed)", AGENT_PROCS_MAX);
    ts_sbuf_puts(log, whole ? "; drain the card and run again\n"
                            : "; drain them and run again (the other instances stay)\n");
}

int agent__busy(struct agent_nvml *n, nvmlDevice_t d, const struct inv_gpu *g,
                const struct reconf_diff *diff, struct ts_sbuf *log, struct ts_error *err)
{
    struct procs ps;
    int hit[2 * AGENT_PROCS_MAX], nhit = 0, whole = 0;
    memset(&ps, 0, sizeof ps);
    ts_status st = list(n, n->nvmlDeviceGetComputeRunningProcesses_v3,
                        "nvmlDeviceGetComputeRunningProcesses_v3", d, g->index, 0, &ps, err);
    if (st == TS_OK && n->nvmlDeviceGetMPSComputeRunningProcesses_v3)
        st = list(n, n->nvmlDeviceGetMPSComputeRunningProcesses_v3,
                  "nvmlDeviceGetMPSComputeRunningProcesses_v3", d, g->index, 1, &ps, err);
    if (st != TS_OK) {
        ts_sbuf_printf(log, "  refused: %s\n", err ? err->msg : "cannot list processes");
        return -1;
    }
    if (!n->nvmlDeviceGetMPSComputeRunningProcesses_v3)
        ts_sbuf_printf(log, "  note: %s\n", n->unchecked);
    for (int i = 0; i < ps.n; i++) {
        unsigned int gi = ps.p[i].gpuInstanceId;
        hit[i] = ps.overflow || gi == NO_GI || !gi_of(g, gi) || destroyed(diff, gi);
        whole |= hit[i] && (gi == NO_GI || !gi_of(g, gi));
        nhit += hit[i];
    }
    if (nhit == 0 && !ps.overflow)
        return 0;
    whole |= ps.overflow;
    refuse(n, g, &ps, hit, nhit, whole, log);
    return count_busy(&ps, hit, whole, diff);
}
