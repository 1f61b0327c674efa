/*
 * enforce.c - `agent watch`'s enforcement round: the node agent as the
 * authority over each container's device memory, whatever the tenant did
 * to the shim inside it (docs/agent.md, "Enforcement"). Each round:
 *   1. NVML lists every process on the node's cards (compute and MPS
 *      clients, nvmlDeviceGet*RunningProcesses_v3 on each card: for a card
 *      in MIG mode the parent's list holds every instance's processes) with
 *      the driver's usedGpuMemory; at most AGENT_ENFORCE_PROCS_MAX;
 *   2. each host pid's container comes from /proc/PID/cgroup (cgroup.c),
 *      which the kernel writes: nothing the tenant controls (its process
 *      name, environment or root) is read;
 *   3. each pod's limit file from the kubelet's copy of its ConfigMap
 *      (kubelet.c), parsed by the shim's parser, once per pod and round;
 *   4. a container whose processes hold more than memoryLimit plus
 *      backstopTolerance per process (the driver's own memory the shim
 *      charges as estimates) is over; a pod whose limit file does not
 *      parse is judged against a limit of 0 (the shim fails closed on the
 *      same file, so anything past the tolerance got past it) with the
 *      default action; a process in no pod, or in a pod without a limit
 *      file, is not judged (counted as unjudged on the cards the plan
 *      shares, where every tenant should carry one);
 *   5. act.c acts by the file's onMemoryViolation, logs, counts, records.
 * The SM share is judged over a window by sm.c from NVML's samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"
#include "util/log.h"
#include "util/time.h"

#define NO_GI 0xFFFFFFFFu
#define NVML_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull /* usedGpuMemory unknown (nvml.h) */

static int shared_mode(const char *mode)
{
    return mode && (!strcmp(mode, "time-slicing") || !strcmp(mode, "memory-fraction") ||
                    !strcmp(mode, "mps"));
}

/* 1 when the plan shares card gpu of this node between tenants. */
static int card_shared(const struct agent_watch *w, int gpu)
{
    for (int i = 0; w->have_plan && i < w->plan.n; i++)
        if (w->plan.t[i].index == gpu && !strcmp(w->plan.t[i].node, w->node))
            return shared_mode(w->plan.t[i].mode);
    return 0;
}

typedef nvmlReturn_t (*list_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);

/* Append card gpu's processes listed by fn to r. */
static void list(struct agent_watch *w, list_fn fn, nvmlDevice_t d, int gpu, struct agent__round *r)
{
    unsigned int room = AGENT_ENFORCE_PROCS_MAX - (unsigned)r->np, count = room;
    nvmlProcessInfo_t *p = r->buf;
    if (!fn || room == 0) {
        r->overflow |= room == 0;
        return;
    }
    nvmlReturn_t rc = fn(d, &count, p);
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) {
        struct ts_error e = {0};
        agent__nvml_err(w->n, rc, "listing the card's processes", gpu, &e);
        snprintf(r->error, sizeof r->error, "%s", e.msg);
        return;
    }
    r->overflow |= rc == NVML_ERROR_INSUFFICIENT_SIZE || count > room;
    for (unsigned int i = 0; i < count && i < room; i++) {
        struct agent__proc *q = &r->p[r->np++];
        q->pid = p[i].pid;
        q->gpu = gpu;
        q->mem_known = p[i].usedGpuMemory != NVML_NOT_AVAILABLE;
        q->mem = q->mem_known ? p[i].usedGpuMemory : 0;
        q->shared = card_shared(w, gpu);
    }
}

/* Every process on the node's cards, with each card's UUID. */
static void list_all(struct agent_watch *w, struct agent__round *r)
{
    unsigned int n = 0;
    nvmlReturn_t rc = w->n->nvmlDeviceGetCount_v2(&n);
    if (rc != NVML_SUCCESS) {
        struct ts_error e = {0};
        agent__nvml_err(w->n, rc, "nvmlDeviceGetCount_v2", -1, &e);
        snprintf(r->error, sizeof r->error, "%s", e.msg);
        return;
    }
    for (unsigned int i = 0; i < n && i < INV_GPUS_MAX; i++) {
        nvmlDevice_t d;
        if (w->n->nvmlDeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS)
            continue;
        if (w->n->nvmlDeviceGetUUID(d, r->uuid[i], sizeof r->uuid[i]) != NVML_SUCCESS)
            r->uuid[i][0] = '\0';
        list(w, w->n->nvmlDeviceGetComputeRunningProcesses_v3, d, (int)i, r);
        list(w, w->n->nvmlDeviceGetMPSComputeRunningProcesses_v3, d, (int)i, r);
    }
}

/* The container of r's index for id, added when new. */
static int container(struct agent__round *r, const struct agent__ctr_id *id)
{
    for (int i = 0; i < r->nc; i++)
        if (!memcmp(&r->c[i].id, id, sizeof *id))
            return i;
    memset(&r->c[r->nc], 0, sizeof r->c[r->nc]);
    r->c[r->nc].id = *id;
    r->c[r->nc].pod = -1;
    return r->nc++;
}

/* The limit file of the pod of c, read once a round. */
static void pod_of(struct agent_watch *w, struct agent__round *r, struct agent__ctr *c)
{
    for (int i = 0; i < r->npod && c->pod < 0; i++)
        if (!strcmp(r->pods[i].uid, c->id.pod))
            c->pod = i;
    if (c->pod >= 0)
        return;
    struct agent__pod *p = &r->pods[r->npod];
    snprintf(p->uid, sizeof p->uid, "%s", c->id.pod);
    agent__pod_limits_read(w->o->kubelet_root, p->uid, &p->lim);
    c->pod = r->npod++;
}

/* Each process to its container (a process gone is dropped). */
static void attribute(struct agent_watch *w, struct agent__round *r)
{
    for (int i = 0; i < r->np; i++) {
        struct agent__proc *q = &r->p[i];
        struct agent__ctr_id id;
        char why[TS_MSG_MAX] = "";
        int k = agent__cgroup_of(q->pid, &id, why, sizeof why);
        q->c = -1;
        if (k == -2)
            continue;
        if (k <= 0) {
            agent__unjudged(w, q, k < 0 ? "unreadable-cgroup" : "no-pod", why);
            continue;
        }
        q->c = container(r, &id);
        struct agent__ctr *c = &r->c[q->c];
        c->mem += q->mem;
        c->nproc++;
        c->unknown_mem += !q->mem_known;
        c->shared |= q->shared;
        pod_of(w, r, c);
    }
}

/* The memory verdict on container c. */
static void judge_memory(struct agent_watch *w, struct agent__round *r, int ci)
{
    struct agent__ctr *c = &r->c[ci];
    const struct agent__pod_limits *pl = &r->pods[c->pod].lim;
    struct agent__verdict v = {.r = r, .ci = ci, .kind = AGENT__KIND_MEMORY, .gpu = -1};
    if (pl->state == AGENT__LIM_NONE || pl->state == AGENT__LIM_UNREADABLE) {
        if (c->shared || pl->state == AGENT__LIM_UNREADABLE)
            agent__unjudged_ctr(w, r, ci,
                                pl->state == AGENT__LIM_NONE ? "no-limits" : "unreadable-limits",
                                pl->why);
        return;
    }
    /* unknown means deny: what the shim does with the same file */
    static const struct shim_limits deny = {.version = 1,
                                            .has_memory = 1,
                                            .memory_bytes = 0,
                                            .sm_percent = 100,
                                            .backstop_tolerance = SHIM_BACKSTOP_TOLERANCE,
                                            .on_memory = SHIM_ACTION_KILL,
                                            .on_sm = SHIM_ACTION_REPORT};
    const struct shim_limits *l = pl->state == AGENT__LIM_BAD ? &deny : &pl->lim;
    v.deny = pl->state == AGENT__LIM_BAD ? pl->why : NULL;
    if (!l->has_memory)
        return;
    v.lim = l;
    v.used = c->mem;
    v.limit = l->memory_bytes;
    v.allowed = l->memory_bytes + l->backstop_tolerance * (uint64_t)c->nproc;
    v.action = (int)l->on_memory;
    if (c->mem > v.allowed)
        agent__violation(w, &v);
    else if (c->unknown_mem) /* what NVML would not tell may be over: said, not assumed */
        agent__unjudged_ctr(w, r, ci, "memory-unknown",
                            "NVML reports no usedGpuMemory for some of its processes");
}

void agent__enforce_round(struct agent_watch *w)
{
    int64_t t0 = ts_clock_ms(CLOCK_MONOTONIC);
    struct agent__round *r = calloc(1, sizeof *r);
    if (!r)
        return;
    agent__episodes_begin(w);
    list_all(w, r);
    if (!r->error[0]) {
        attribute(w, r);
        for (int i = 0; i < r->nc; i++)
            judge_memory(w, r, i);
        agent__sm_round(w, r);
    }
    agent__episodes_end(w, r, ts_clock_ms(CLOCK_MONOTONIC) - t0);
    free(r);
}
