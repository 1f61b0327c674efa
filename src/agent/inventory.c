/*
 * inventory.c - reading a node's GPUs through NVML into struct
 * agent_inventory: identity, memory, MIG and compute modes, and on cards in
 * MIG mode every GPU-instance profile with its possible placements, every
 * GPU instance with its compute instances and their MIG device UUIDs.
 * Profile kinds the card does not know answer NOT_SUPPORTED or
 * INVALID_ARGUMENT and are skipped; any other NVML error stops the read
 * and names the call and the card.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"

#define CALL(n, gpu, err, call, args)                             \
    do {                                                          \
        nvmlReturn_t r_ = (n)->call args;                         \
        if (r_ != NVML_SUCCESS)                                   \
            return agent__nvml_err((n), r_, #call, (gpu), (err)); \
    } while (0)

static int skippable(nvmlReturn_t r)
{
    return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT ||
           r == NVML_ERROR_NOT_FOUND;
}

static const char *compute_mode_name(nvmlComputeMode_t m)
{
    static const char *const names[] = {"default", "exclusive-thread", "prohibited",
                                        "exclusive-process"};
    return m >= 0 && m <= 3 ? names[m] : "unknown";
}

/* "MIG 1g.10gb" -> "1g.10gb". */
static void profile_name(char *dst, size_t size, const char *nvml)
{
    ts_copy(dst, size, strncmp(nvml, "MIG ", 4) == 0 ? nvml + 4 : nvml);
}

static ts_status read_identity(struct agent_nvml *n, nvmlDevice_t d, struct inv_gpu *g,
                               struct ts_error *err)
{
    nvmlPciInfo_t pci;
    nvmlMemory_t mem;
    nvmlComputeMode_t mode;
    unsigned int cur, pend;
    CALL(n, g->index, err, nvmlDeviceGetName, (d, g->name, sizeof g->name));
    CALL(n, g->index, err, nvmlDeviceGetUUID, (d, g->uuid, sizeof g->uuid));
    memset(&pci, 0, sizeof pci);
    CALL(n, g->index, err, nvmlDeviceGetPciInfo_v3, (d, &pci));
    pci.busId[sizeof pci.busId - 1] = '\0';
    ts_copy(g->pci, sizeof g->pci, pci.busId);
    CALL(n, g->index, err, nvmlDeviceGetMemoryInfo, (d, &mem));
    g->memory_mib = (long long)(mem.total >> 20);
    CALL(n, g->index, err, nvmlDeviceGetComputeMode, (d, &mode));
    ts_copy(g->compute_mode, sizeof g->compute_mode, compute_mode_name(mode));
    nvmlReturn_t r = n->nvmlDeviceGetMigMode(d, &cur, &pend);
    if (r == NVML_ERROR_NOT_SUPPORTED) {
        g->mig_current = g->mig_pending = -1;
        return TS_OK;
    }
    if (r != NVML_SUCCESS)
        return agent__nvml_err(n, r, "nvmlDeviceGetMigMode", g->index, err);
    g->mig_current = cur == NVML_DEVICE_MIG_ENABLE;
    g->mig_pending = pend == NVML_DEVICE_MIG_ENABLE;
    return TS_OK;
}

static int have_profile(const struct inv_gpu *g, int id)
{
    for (int i = 0; i < g->nprof; i++)
        if (g->prof[i].id == id)
            return 1;
    return 0;
}

static ts_status read_profile(struct agent_nvml *n, nvmlDevice_t d, struct inv_gpu *g,
                              const nvmlGpuInstanceProfileInfo_v2_t *info, struct ts_error *err)
{
    if (have_profile(g, (int)info->id))
        return TS_OK;
    if (g->nprof == INV_PROFILES_MAX)
        return ts_err(err, TS_TOO_LARGE, "GPU %d offers more than %d MIG profiles", g->index,
                      INV_PROFILES_MAX);
    struct inv_profile *p = &g->prof[g->nprof++];
    nvmlGpuInstancePlacement_t pl[INV_PLACEMENTS_MAX];
    unsigned int count = INV_PLACEMENTS_MAX;
    p->id = (int)info->id;
    char name[sizeof info->name + 1];
    memcpy(name, info->name, sizeof info->name);
    name[sizeof info->name] = '\0';
    profile_name(p->name, sizeof p->name, name);
    p->slices = (int)info->sliceCount;
    p->memory_mib = (long long)info->memorySizeMB;
    p->sms = (int)info->multiprocessorCount;
    p->max_count = (int)info->instanceCount;
    CALL(n, g->index, err, nvmlDeviceGetGpuInstancePossiblePlacements_v2,
         (d, info->id, pl, &count));
    for (unsigned int i = 0; i < count && i < INV_PLACEMENTS_MAX; i++)
        p->pl[p->npl++] = (struct inv_placement){(int)pl[i].start, (int)pl[i].size};
    return TS_OK;
}

static ts_status read_profiles(struct agent_nvml *n, nvmlDevice_t d, struct inv_gpu *g,
                               struct ts_error *err)
{
    for (unsigned int k = 0; k < NVML_GPU_INSTANCE_PROFILE_COUNT; k++) {
        nvmlGpuInstanceProfileInfo_v2_t info;
        memset(&info, 0, sizeof info);
        info.version = nvmlGpuInstanceProfileInfo_v2;
        nvmlReturn_t r = n->nvmlDeviceGetGpuInstanceProfileInfoV(d, k, &info);
        if (skippable(r))
            continue;
        if (r != NVML_SUCCESS)
            return agent__nvml_err(n, r, "nvmlDeviceGetGpuInstanceProfileInfoV", g->index, err);
        ts_status st = read_profile(n, d, g, &info, err);
        if (st != TS_OK)
            return st;
    }
    return TS_OK;
}

static ts_status add_ci(struct agent_nvml *n, struct inv_gpu *g, struct inv_gi *gi,
                        const nvmlComputeInstanceProfileInfo_t *cp, nvmlComputeInstance_t h,
                        struct ts_error *err)
{
    nvmlComputeInstanceInfo_t info;
    memset(&info, 0, sizeof info);
    CALL(n, g->index, err, nvmlComputeInstanceGetInfo_v2, (h, &info));
    if (gi->nci == INV_CIS_MAX)
        return ts_err(err, TS_TOO_LARGE, "GPU %d instance %d has more than %d compute instances",
                      g->index, gi->id, INV_CIS_MAX);
    struct inv_ci *c = &gi->ci[gi->nci++];
    c->id = (int)info.id;
    c->profile_id = (int)cp->id;
    c->slices = (int)cp->sliceCount;
    c->pl = (struct inv_placement){(int)info.placement.start, (int)info.placement.size};
    if (c->slices == gi->slices)
        ts_copy(c->profile, sizeof c->profile, gi->profile);
    else {
        char name[sizeof c->profile];
        int k = snprintf(name, sizeof name, "%dc.%s", c->slices, gi->profile);
        ts_copy(c->profile, sizeof c->profile, k > 0 ? name : "");
    }
    return TS_OK;
}

static ts_status read_cis(struct agent_nvml *n, struct inv_gpu *g, struct inv_gi *gi,
                          nvmlGpuInstance_t h, struct ts_error *err)
{
    for (unsigned int k = 0; k < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; k++) {
        nvmlComputeInstanceProfileInfo_t cp;
        memset(&cp, 0, sizeof cp);
        nvmlReturn_t r = n->nvmlGpuInstanceGetComputeInstanceProfileInfo(
            h, k, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cp);
        if (skippable(r))
            continue;
        if (r != NVML_SUCCESS)
            return agent__nvml_err(n, r, "nvmlGpuInstanceGetComputeInstanceProfileInfo", g->index,
                                   err);
        nvmlComputeInstance_t cis[INV_CIS_MAX];
        unsigned int count = INV_CIS_MAX;
        CALL(n, g->index, err, nvmlGpuInstanceGetComputeInstances, (h, cp.id, cis, &count));
        for (unsigned int i = 0; i < count && i < INV_CIS_MAX; i++) {
            ts_status st = add_ci(n, g, gi, &cp, cis[i], err);
            if (st != TS_OK)
                return st;
        }
    }
    return TS_OK;
}

static ts_status add_gi(struct agent_nvml *n, struct inv_gpu *g, const struct inv_profile *p,
                        nvmlGpuInstance_t h, struct ts_error *err)
{
    nvmlGpuInstanceInfo_t info;
    memset(&info, 0, sizeof info);
    CALL(n, g->index, err, nvmlGpuInstanceGetInfo, (h, &info));
    if (g->ngi == INV_GIS_MAX)
        return ts_err(err, TS_TOO_LARGE, "GPU %d has more than %d GPU instances", g->index,
                      INV_GIS_MAX);
    int k = g->ngi++;
    while (k > 0 && g->gi[k - 1].pl.start > (int)info.placement.start) {
        g->gi[k] = g->gi[k - 1];
        k--;
    }
    struct inv_gi *gi = &g->gi[k];
    memset(gi, 0, sizeof *gi);
    gi->id = (int)info.id;
    gi->profile_id = p->id;
    gi->slices = p->slices;
    ts_copy(gi->profile, sizeof gi->profile, p->name);
    gi->pl = (struct inv_placement){(int)info.placement.start, (int)info.placement.size};
    return read_cis(n, g, gi, h, err);
}

static ts_status read_gis(struct agent_nvml *n, nvmlDevice_t d, struct inv_gpu *g,
                          struct ts_error *err)
{
    for (int i = 0; i < g->nprof; i++) {
        nvmlGpuInstance_t gis[INV_GIS_MAX];
        unsigned int count = INV_GIS_MAX;
        CALL(n, g->index, err, nvmlDeviceGetGpuInstances,
             (d, (unsigned)g->prof[i].id, gis, &count));
        for (unsigned int k = 0; k < count && k < INV_GIS_MAX; k++) {
            ts_status st = add_gi(n, g, &g->prof[i], gis[k], err);
            if (st != TS_OK)
                return st;
        }
    }
    return TS_OK;
}

static struct inv_ci *find_ci(struct inv_gpu *g, int gi_id, int ci_id)
{
    for (int i = 0; i < g->ngi; i++)
        for (int k = 0; g->gi[i].id == gi_id && k < g->gi[i].nci; k++)
            if (g->gi[i].ci[k].id == ci_id)
                return &g->gi[i].ci[k];
    return NULL;
}

/* MIG device handles carry the UUIDs; they map to (GI id, CI id). */
static ts_status read_uuids(struct agent_nvml *n, nvmlDevice_t d, struct inv_gpu *g,
                            struct ts_error *err)
{
    unsigned int max = 0;
    CALL(n, g->index, err, nvmlDeviceGetMaxMigDeviceCount, (d, &max));
    for (unsigned int m = 0; m < max; m++) {
        nvmlDevice_t mig;
        unsigned int gid, cid;
        nvmlReturn_t r = n->nvmlDeviceGetMigDeviceHandleByIndex(d, m, &mig);
        if (skippable(r))
            continue;
        if (r != NVML_SUCCESS)
            return agent__nvml_err(n, r, "nvmlDeviceGetMigDeviceHandleByIndex", g->index, err);
        CALL(n, g->index, err, nvmlDeviceGetGpuInstanceId, (mig, &gid));
        CALL(n, g->index, err, nvmlDeviceGetComputeInstanceId, (mig, &cid));
        struct inv_ci *c = find_ci(g, (int)gid, (int)cid);
        if (c)
            CALL(n, g->index, err, nvmlDeviceGetUUID, (mig, c->uuid, sizeof c->uuid));
    }
    return TS_OK;
}

ts_status agent__gpu_read(struct agent_nvml *n, unsigned int i, struct inv_gpu *g,
                          struct ts_error *err)
{
    nvmlDevice_t d;
    memset(g, 0, sizeof *g);
    g->index = (int)i;
    CALL(n, g->index, err, nvmlDeviceGetHandleByIndex_v2, (i, &d));
    ts_status st = read_identity(n, d, g, err);
    if (st != TS_OK || g->mig_current != 1)
        return st;
    st = read_profiles(n, d, g, err);
    if (st == TS_OK)
        st = read_gis(n, d, g, err);
    if (st == TS_OK)
        st = read_uuids(n, d, g, err);
    return st;
}

ts_status agent_inventory_read(struct agent_nvml *n, const char *node, struct inv_node *inv,
                               struct ts_error *err)
{
    unsigned int count = 0;
    memset(inv, 0, sizeof *inv);
    ts_copy(inv->node, sizeof inv->node, node);
    CALL(n, -1, err, nvmlDeviceGetCount_v2, (&count));
    if (count > INV_GPUS_MAX)
        return ts_err(err, TS_TOO_LARGE, "%u GPUs: tessera reads at most %d a node", count,
                      INV_GPUS_MAX);
    for (unsigned int i = 0; i < count; i++) {
        ts_status st = agent__gpu_read(n, i, &inv->gpu[i], err);
        if (st != TS_OK)
            return st;
        inv->ngpu++;
    }
    return TS_OK;
}
