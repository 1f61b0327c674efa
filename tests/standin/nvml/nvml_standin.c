/*
 * nvml_standin.c - a stand-in libnvidia-ml.so.1 for tests on machines
 * without a GPU. It implements the NVML functions the agent uses
 * (AGENT_NVML_FUNCS in src/agent/nvml_abi.h) over a small state file named
 * by $TESSERA_STANDIN_NVML, one record a line, fields "key=value" split by
 * ';' (format in docs/agent.md, "The stand-in NVML"):
 *   gpu;uuid=..;name=..;pci=..;memory_mib=N;mig=0|1;pending=0|1;compute_mode=N
 *   profile;type=K;id=N;name=MIG 1g.10gb;slices=N;memory_mib=N;sms=N;count=N;size=N;starts=0,1
 *   gi;gpu=N;id=N;profile=ID;start=N
 *   ci;gpu=N;gi=N;id=N;profile=K;uuid=MIG-..
 *   proc;gpu=N;pid=N;name=..[;gi=N][;mps=1][;mem=BYTES]  (gi: its GPU instance;
 *                               mps: an MPS client; mem: its usedGpuMemory,
 *                               default 1 GiB; "na": NVML_VALUE_NOT_AVAILABLE)
 *   seq;n=N                     (counter for new MIG UUIDs)
 * Profiles apply to every GPU (a node of one model). Creates and destroys
 * follow NVML's rules (a placement must be a valid one: INVALID_ARGUMENT;
 * it must not overlap or exceed the counts: INSUFFICIENT_RESOURCES; a GPU
 * instance with compute instances or processes is IN_USE) and rewrite the
 * file. The file is the driver's state shared by every process: when
 * another process (or a test) rewrote it, nvmlDeviceGetCount_v2 (where
 * each read of the node starts) reads it again, as a real driver's answers
 * follow processes starting and instances made by others. Knobs:
 * $TESSERA_STANDIN_NVML_FAIL_CREATE=N makes the Nth create call of the
 * process fail (UNKNOWN); $TESSERA_STANDIN_NVML_KILL_AFTER=N kills the
 * process (SIGKILL) right after its Nth successful mutating call has been
 * written (a crash in the middle of a change); $TESSERA_STANDIN_NVML_LOG
 * names a file that gets one line per mutating call. The clocks,
 * temperature and power the fight reads are fixed values (at the end of
 * the file). Utilisation, the card's and per process, is measured on the
 * stand-in card: nvml_util.c. Test code: plain and short.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "agent/nvml_abi.h"
#include "nvml_util.h"

#define MAXG 8
#define MAXP 24
#define MAXGI 64
#define MAXCI 128
#define MAXPROC 32

struct handle {
    int kind, idx;
}; /* kind 0: GPU, 1: MIG device (idx: CI slot) */
struct sgpu {
    char uuid[96], name[96], pci[32];
    long long mib;
    int mig, pending, cmode;
};
struct sprof {
    int type, id, slices, sms, count, size, starts[16], nstarts;
    long long mib;
    char name[96];
};
struct sgi {
    int used, gpu, id, profile, start;
};
struct sci {
    int used, gpu, gi, id, profile;
    char uuid[96];
};
struct sproc {
    int gpu, pid, gi, mps;
    unsigned long long mem; /* usedGpuMemory, bytes */
    char name[64];
};

static struct sgpu gpus[MAXG];
static struct sprof profs[MAXP];
static struct sgi gis[MAXGI];
static struct sci cis[MAXCI];
static struct sproc procs[MAXPROC];
static int ngpu, nprof, nproc, seq, creates, mutations;
static struct stat seen; /* the state file as last read or written */
static struct handle gpu_h[MAXG], mig_h[MAXCI];
static const int ci_slices[8] = {1, 2, 3, 4, 7, 8, 6, 1};

/* ---- the state file ------------------------------------------------------ */

static char *field(const char *line, const char *key, char *out, size_t n)
{
    char pat[40];
    snprintf(pat, sizeof pat, ";%s=", key);
    const char *p = strstr(line, pat);
    if (!p) {
        out[0] = '\0';
        return out;
    }
    p += strlen(pat);
    size_t len = strcspn(p, ";\n");
    len = len < n - 1 ? len : n - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return out;
}

static long num(const char *line, const char *key)
{
    char b[32];
    return strtol(field(line, key, b, sizeof b), NULL, 10);
}

static void load_line(const char *l)
{
    char b[96];
    if (!strncmp(l, "gpu;", 4) && ngpu < MAXG) {
        struct sgpu *g = &gpus[ngpu++];
        field(l, "uuid", g->uuid, sizeof g->uuid);
        field(l, "name", g->name, sizeof g->name);
        field(l, "pci", g->pci, sizeof g->pci);
        g->mib = num(l, "memory_mib");
        g->mig = (int)num(l, "mig");
        g->pending = (int)num(l, "pending");
        g->cmode = (int)num(l, "compute_mode");
    } else if (!strncmp(l, "profile;", 8) && nprof < MAXP) {
        struct sprof *p = &profs[nprof++];
        p->type = (int)num(l, "type");
        p->id = (int)num(l, "id");
        field(l, "name", p->name, sizeof p->name);
        p->slices = (int)num(l, "slices");
        p->mib = num(l, "memory_mib");
        p->sms = (int)num(l, "sms");
        p->count = (int)num(l, "count");
        p->size = (int)num(l, "size");
        for (char *s = field(l, "starts", b, sizeof b); *s && p->nstarts < 16; s += *s == ',')
            p->starts[p->nstarts++] = (int)strtol(s, &s, 10);
    } else if (!strncmp(l, "gi;", 3)) {
        for (int i = 0; i < MAXGI; i++)
            if (!gis[i].used) {
                gis[i] = (struct sgi){1, (int)num(l, "gpu"), (int)num(l, "id"),
                                      (int)num(l, "profile"), (int)num(l, "start")};
                break;
            }
    } else if (!strncmp(l, "ci;", 3)) {
        for (int i = 0; i < MAXCI; i++)
            if (!cis[i].used) {
                cis[i] = (struct sci){1,
                                      (int)num(l, "gpu"),
                                      (int)num(l, "gi"),
                                      (int)num(l, "id"),
                                      (int)num(l, "profile"),
                                      ""};
                field(l, "uuid", cis[i].uuid, sizeof cis[i].uuid);
                break;
            }
    } else if (!strncmp(l, "proc;", 5) && nproc < MAXPROC) {
        procs[nproc].gpu = (int)num(l, "gpu");
        procs[nproc].pid = (int)num(l, "pid");
        procs[nproc].gi = strstr(l, ";gi=") ? (int)num(l, "gi") : -1;
        procs[nproc].mps = (int)num(l, "mps");
        field(l, "mem", b, sizeof b);
        procs[nproc].mem = !b[0]              ? 1ull << 30
                           : !strcmp(b, "na") ? 0xFFFFFFFFFFFFFFFFull
                                              : strtoull(b, NULL, 10);
        field(l, "name", procs[nproc++].name, sizeof procs[0].name);
    } else if (!strncmp(l, "seq;", 4)) {
        seq = (int)num(l, "n");
    }
}

static int load(void)
{
    const char *path = getenv("TESSERA_STANDIN_NVML");
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[512];
    if (!f)
        return 0;
    ngpu = nprof = nproc = seq = 0;
    memset(gis, 0, sizeof gis);
    memset(cis, 0, sizeof cis);
    while (fgets(line, sizeof line, f))
        load_line(line);
    fclose(f);
    stat(path, &seen);
    return 1;
}

static void save(void)
{
    const char *path = getenv("TESSERA_STANDIN_NVML");
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "# stand-in NVML state (rewritten by the stand-in)\n");
    for (int i = 0; i < ngpu; i++)
        fprintf(f, "gpu;uuid=%s;name=%s;pci=%s;memory_mib=%lld;mig=%d;pending=%d;compute_mode=%d\n",
                gpus[i].uuid, gpus[i].name, gpus[i].pci, gpus[i].mib, gpus[i].mig, gpus[i].pending,
                gpus[i].cmode);
    for (int i = 0; i < nprof; i++) {
        const struct sprof *p = &profs[i];
        fprintf(f,
                "profile;type=%d;id=%d;name=%s;slices=%d;memory_mib=%lld;sms=%d;count=%d;"
                "size=%d;starts=",
                p->type, p->id, p->name, p->slices, p->mib, p->sms, p->count, p->size);
        for (int k = 0; k < p->nstarts; k++)
            fprintf(f, "%s%d", k ? "," : "", p->starts[k]);
        fprintf(f, "\n");
    }
    for (int i = 0; i < MAXGI; i++)
        if (gis[i].used)
            fprintf(f, "gi;gpu=%d;id=%d;profile=%d;start=%d\n", gis[i].gpu, gis[i].id,
                    gis[i].profile, gis[i].start);
    for (int i = 0; i < MAXCI; i++)
        if (cis[i].used)
            fprintf(f, "ci;gpu=%d;gi=%d;id=%d;profile=%d;uuid=%s\n", cis[i].gpu, cis[i].gi,
                    cis[i].id, cis[i].profile, cis[i].uuid);
    for (int i = 0; i < nproc; i++) {
        fprintf(f, "proc;gpu=%d;pid=%d;name=%s;", procs[i].gpu, procs[i].pid, procs[i].name);
        if (procs[i].gi >= 0)
            fprintf(f, "gi=%d;", procs[i].gi);
        fprintf(f, "mps=%d;mem=%llu\n", procs[i].mps, procs[i].mem);
    }
    fprintf(f, "seq;n=%d\n", seq);
    fclose(f);
    rename(tmp, path);
    stat(path, &seen);
}

/* Read the state again when someone else rewrote the file. */
static void refresh(void)
{
    struct stat now;
    const char *path = getenv("TESSERA_STANDIN_NVML");
    if (!path || stat(path, &now) != 0)
        return;
    if (now.st_ino != seen.st_ino || now.st_size != seen.st_size ||
        now.st_mtim.tv_sec != seen.st_mtim.tv_sec || now.st_mtim.tv_nsec != seen.st_mtim.tv_nsec)
        load();
}

static nvmlReturn_t logged(nvmlReturn_t r, const char *call, int gpu, int a, int b)
{
    const char *path = getenv("TESSERA_STANDIN_NVML_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%s gpu=%d %d %d -> %d\n", call, gpu, a, b, r);
        fclose(f);
    }
    const char *kill_after = getenv("TESSERA_STANDIN_NVML_KILL_AFTER");
    if (r == NVML_SUCCESS)
        save();
    if (r == NVML_SUCCESS && kill_after && atoi(kill_after) == ++mutations)
        raise(SIGKILL);
    return r;
}

/* 1 when this create call is the one $TESSERA_STANDIN_NVML_FAIL_CREATE names. */
static int injected_failure(void)
{
    const char *n = getenv("TESSERA_STANDIN_NVML_FAIL_CREATE");
    return n && atoi(n) == ++creates;
}

/* ---- lookups -------------------------------------------------------------- */

static int gpu_of(nvmlDevice_t d)
{
    const struct handle *h = (const struct handle *)d;
    return h && h >= gpu_h && h < gpu_h + ngpu ? h->idx : -1;
}

int standin_nvml_gpu(nvmlDevice_t device, int *mig)
{
    int g = gpu_of(device);
    *mig = g >= 0 ? gpus[g].mig : 0;
    return g;
}

static int mig_of(nvmlDevice_t d)
{
    const struct handle *h = (const struct handle *)d;
    return h && h >= mig_h && h < mig_h + MAXCI && cis[h->idx].used ? h->idx : -1;
}

static const struct sprof *prof_by_id(int id)
{
    for (int i = 0; i < nprof; i++)
        if (profs[i].id == id)
            return &profs[i];
    return NULL;
}

static struct sgi *gi_of(nvmlGpuInstance_t h)
{
    struct sgi *g = (struct sgi *)h;
    return g && g >= gis && g < gis + MAXGI && g->used ? g : NULL;
}

static struct sci *ci_of(nvmlComputeInstance_t h)
{
    struct sci *c = (struct sci *)h;
    return c && c >= cis && c < cis + MAXCI && c->used ? c : NULL;
}

static int gi_slices(const struct sgi *g)
{
    const struct sprof *p = prof_by_id(g->profile);
    return p ? p->slices : 0;
}

/* ---- NVML ------------------------------------------------------------------ */

nvmlReturn_t nvmlInit_v2(void)
{
    if (!load())
        return NVML_ERROR_DRIVER_NOT_LOADED;
    for (int i = 0; i < MAXG; i++)
        gpu_h[i] = (struct handle){0, i};
    for (int i = 0; i < MAXCI; i++)
        mig_h[i] = (struct handle){1, i};
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    refresh();
    *count = (unsigned)ngpu;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (index >= (unsigned)ngpu)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = (nvmlDevice_t)(void *)&gpu_h[index];
    return NVML_SUCCESS;
}

#define GPU_OR_FAIL(d, g) \
    int g = gpu_of(d);    \
    if (g < 0)            \
    return NVML_ERROR_INVALID_ARGUMENT

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    GPU_OR_FAIL(device, g);
    snprintf(name, length, "%s", gpus[g].name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    int m = mig_of(device), g = gpu_of(device);
    if (m < 0 && g < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(uuid, length, "%s", m >= 0 ? cis[m].uuid : gpus[g].uuid);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    GPU_OR_FAIL(device, g);
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%s", gpus[g].pci);
    pci->pciDeviceId = 0x233010de;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    GPU_OR_FAIL(device, g);
    memory->total = (unsigned long long)gpus[g].mib << 20;
    memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending)
{
    GPU_OR_FAIL(device, g);
    *current = (unsigned)gpus[g].mig;
    *pending = (unsigned)gpus[g].pending;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    GPU_OR_FAIL(device, g);
    *mode = gpus[g].cmode;
    return NVML_SUCCESS;
}

static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos,
                              int mps)
{
    GPU_OR_FAIL(device, g);
    unsigned int n = 0, room = *count;
    for (int i = 0; i < nproc; i++)
        if (procs[i].gpu == g && procs[i].mps == mps) {
            unsigned int gi = procs[i].gi < 0 ? 0xFFFFFFFFu : (unsigned)procs[i].gi;
            if (n < room && infos)
                infos[n] = (nvmlProcessInfo_t){(unsigned)procs[i].pid, procs[i].mem, gi,
                                               procs[i].gi < 0 ? 0xFFFFFFFFu : 0};
            n++;
        }
    *count = n;
    return n > room ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                     nvmlProcessInfo_t *infos)
{
    return processes(device, count, infos, 0);
}

#ifndef STANDIN_NO_MPS
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                        nvmlProcessInfo_t *infos)
{
    return processes(device, count, infos, 1);
}
#endif

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    for (int i = 0; i < nproc; i++)
        if ((unsigned)procs[i].pid == pid) {
            snprintf(name, length, "%s", procs[i].name);
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t *info)
{
    GPU_OR_FAIL(device, g);
    if (info->version != nvmlGpuInstanceProfileInfo_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!gpus[g].mig)
        return NVML_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < nprof; i++)
        if (profs[i].type == (int)profile) {
            const struct sprof *p = &profs[i];
            info->id = (unsigned)p->id;
            info->sliceCount = (unsigned)p->slices;
            info->instanceCount = (unsigned)p->count;
            info->multiprocessorCount = (unsigned)p->sms;
            info->memorySizeMB = (unsigned long long)p->mib;
            snprintf(info->name, sizeof info->name, "%s", p->name);
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t *placements,
                                                           unsigned int *count)
{
    GPU_OR_FAIL(device, g);
    const struct sprof *p = prof_by_id((int)profileId);
    if (!p || !gpus[g].mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (placements && *count < (unsigned)p->nstarts)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    for (int i = 0; placements && i < p->nstarts; i++)
        placements[i] = (nvmlGpuInstancePlacement_t){(unsigned)p->starts[i], (unsigned)p->size};
    *count = (unsigned)p->nstarts;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t *instances, unsigned int *count)
{
    GPU_OR_FAIL(device, g);
    unsigned int n = 0;
    if (!prof_by_id((int)profileId))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < MAXGI; i++)
        if (gis[i].used && gis[i].gpu == g && gis[i].profile == (int)profileId) {
            if (n >= *count)
                return NVML_ERROR_INSUFFICIENT_SIZE;
            instances[n++] = (nvmlGpuInstance_t)(void *)&gis[i];
        }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *info)
{
    const struct sgi *g = gi_of(gi);
    const struct sprof *p = g ? prof_by_id(g->profile) : NULL;
    if (!p)
        return NVML_ERROR_INVALID_ARGUMENT;
    info->device = (nvmlDevice_t)(void *)&gpu_h[g->gpu];
    info->id = (unsigned)g->id;
    info->profileId = (unsigned)g->profile;
    info->placement = (nvmlGpuInstancePlacement_t){(unsigned)g->start, (unsigned)p->size};
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t *info)
{
    const struct sgi *g = gi_of(gi);
    if (!g || engProfile != 0 || profile >= 8)
        return NVML_ERROR_INVALID_ARGUMENT;
    int s = ci_slices[profile], all = gi_slices(g);
    if (s > all || profile >= 5)
        return NVML_ERROR_NOT_SUPPORTED;
    const struct sprof *p = prof_by_id(g->profile);
    memset(info, 0, sizeof *info);
    info->id = profile;
    info->sliceCount = (unsigned)s;
    info->instanceCount = (unsigned)(all / s);
    info->multiprocessorCount = (unsigned)(p->sms * s / all);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gi, unsigned int profileId,
                                                nvmlComputeInstance_t *instances,
                                                unsigned int *count)
{
    const struct sgi *g = gi_of(gi);
    unsigned int n = 0;
    if (!g)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < MAXCI; i++)
        if (cis[i].used && cis[i].gpu == g->gpu && cis[i].gi == g->id &&
            cis[i].profile == (int)profileId) {
            if (n >= *count)
                return NVML_ERROR_INSUFFICIENT_SIZE;
            instances[n++] = (nvmlComputeInstance_t)(void *)&cis[i];
        }
    *count = n;
    return NVML_SUCCESS;
}

/* Slices used by the compute instances of GI (gpu, id) before slot `upto`. */
static int ci_used(int gpu, int gi, int upto)
{
    int used = 0;
    for (int i = 0; i < upto; i++)
        if (cis[i].used && cis[i].gpu == gpu && cis[i].gi == gi)
            used += ci_slices[cis[i].profile];
    return used;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t ci,
                                           nvmlComputeInstanceInfo_t *info)
{
    struct sci *c = ci_of(ci);
    if (!c)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < MAXGI; i++)
        if (gis[i].used && gis[i].gpu == c->gpu && gis[i].id == c->gi)
            info->gpuInstance = (nvmlGpuInstance_t)(void *)&gis[i];
    info->device = (nvmlDevice_t)(void *)&gpu_h[c->gpu];
    info->id = (unsigned)c->id;
    info->profileId = (unsigned)c->profile;
    info->placement.start = (unsigned)ci_used(c->gpu, c->gi, (int)(c - cis));
    info->placement.size = (unsigned)ci_slices[c->profile];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    GPU_OR_FAIL(device, g);
    *count = gpus[g].mig ? 7 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *mig)
{
    GPU_OR_FAIL(device, g);
    unsigned int n = 0;
    for (int i = 0; i < MAXCI; i++)
        if (cis[i].used && cis[i].gpu == g && n++ == index) {
            *mig = (nvmlDevice_t)(void *)&mig_h[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t mig, unsigned int *id)
{
    int m = mig_of(mig);
    if (m < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = (unsigned)cis[m].gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t mig, unsigned int *id)
{
    int m = mig_of(mig);
    if (m < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = (unsigned)cis[m].id;
    return NVML_SUCCESS;
}

/* NVML's placement rules for a new GPU instance of p at start on GPU g. */
static nvmlReturn_t placement_check(int g, const struct sprof *p, int start)
{
    int valid = 0, count = 0, slices = p->slices, card = 0;
    for (int i = 0; i < p->nstarts; i++)
        valid |= p->starts[i] == start;
    if (!valid)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < nprof; i++)
        card = profs[i].slices > card ? profs[i].slices : card;
    for (int i = 0; i < MAXGI; i++) {
        const struct sprof *q = gis[i].used && gis[i].gpu == g ? prof_by_id(gis[i].profile) : NULL;
        if (!q)
            continue;
        count += q->id == p->id;
        slices += q->slices;
        if (gis[i].start < start + p->size && start < gis[i].start + q->size)
            return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    return count >= p->count || slices > card ? NVML_ERROR_INSUFFICIENT_RESOURCES : NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *gi)
{
    GPU_OR_FAIL(device, g);
    const char *call = "nvmlDeviceCreateGpuInstanceWithPlacement";
    const struct sprof *p = prof_by_id((int)profileId);
    int start = (int)placement->start;
    if (!gpus[g].mig)
        return logged(NVML_ERROR_NOT_SUPPORTED, call, g, (int)profileId, start);
    if (!p || placement->size != (unsigned)p->size)
        return logged(NVML_ERROR_INVALID_ARGUMENT, call, g, (int)profileId, start);
    nvmlReturn_t r = injected_failure() ? NVML_ERROR_UNKNOWN : placement_check(g, p, start);
    int id = 1, slot = -1;
    for (int i = 0; i < MAXGI; i++)
        slot = slot < 0 && !gis[i].used ? i : slot;
    for (int again = 1; again;) { /* smallest free ID */
        again = 0;
        for (int i = 0; i < MAXGI; i++)
            if (gis[i].used && gis[i].gpu == g && gis[i].id == id)
                id++, again = 1;
    }
    if (r == NVML_SUCCESS && slot < 0)
        r = NVML_ERROR_INSUFFICIENT_RESOURCES;
    if (r == NVML_SUCCESS) {
        gis[slot] = (struct sgi){1, g, id, (int)profileId, start};
        *gi = (nvmlGpuInstance_t)(void *)&gis[slot];
    }
    return logged(r, call, g, (int)profileId, start);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi, unsigned int profileId,
                                                  nvmlComputeInstance_t *ci)
{
    const struct sgi *g = gi_of(gi);
    const char *call = "nvmlGpuInstanceCreateComputeInstance";
    if (!g || profileId >= 5 || ci_slices[profileId] > gi_slices(g))
        return logged(NVML_ERROR_INVALID_ARGUMENT, call, g ? g->gpu : -1, (int)profileId, 0);
    nvmlReturn_t r = injected_failure() ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
    if (r == NVML_SUCCESS && ci_used(g->gpu, g->id, MAXCI) + ci_slices[profileId] > gi_slices(g))
        r = NVML_ERROR_INSUFFICIENT_RESOURCES;
    int slot = -1, id = 0;
    for (int i = MAXCI - 1; i >= 0; i--)
        slot = cis[i].used ? slot : i;
    for (int i = 0; i < MAXCI; i++)
        if (cis[i].used && cis[i].gpu == g->gpu && cis[i].gi == g->id && cis[i].id >= id)
            id = cis[i].id + 1;
    if (r == NVML_SUCCESS && slot < 0)
        r = NVML_ERROR_INSUFFICIENT_RESOURCES;
    if (r == NVML_SUCCESS) {
        cis[slot] = (struct sci){1, g->gpu, g->id, id, (int)profileId, ""};
        snprintf(cis[slot].uuid, sizeof cis[slot].uuid, "MIG-5a0d%04x-0000-4000-8000-%012x", g->gpu,
                 ++seq);
        *ci = (nvmlComputeInstance_t)(void *)&cis[slot];
    }
    return logged(r, call, g->gpu, g->id, (int)profileId);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi)
{
    struct sgi *g = gi_of(gi);
    if (!g)
        return logged(NVML_ERROR_INVALID_ARGUMENT, "nvmlGpuInstanceDestroy", -1, 0, 0);
    nvmlReturn_t r = ci_used(g->gpu, g->id, MAXCI) ? NVML_ERROR_IN_USE : NVML_SUCCESS;
    for (int i = 0; i < nproc; i++)
        r = procs[i].gpu == g->gpu && (procs[i].gi < 0 || procs[i].gi == g->id) ? NVML_ERROR_IN_USE
                                                                                : r;
    int gpu = g->gpu, id = g->id;
    if (r == NVML_SUCCESS)
        g->used = 0;
    return logged(r, "nvmlGpuInstanceDestroy", gpu, id, 0);
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci)
{
    struct sci *c = ci_of(ci);
    if (!c)
        return logged(NVML_ERROR_INVALID_ARGUMENT, "nvmlComputeInstanceDestroy", -1, 0, 0);
    nvmlReturn_t r = NVML_SUCCESS;
    for (int i = 0; i < nproc; i++)
        r = procs[i].gpu == c->gpu && (procs[i].gi < 0 || procs[i].gi == c->gi) ? NVML_ERROR_IN_USE
                                                                                : r;
    if (r == NVML_SUCCESS)
        c->used = 0;
    return logged(r, "nvmlComputeInstanceDestroy", c->gpu, c->gi, c->id);
}

/* ---- what the fight reads per run (src/fight/nvml.c) ------------------------ */
/* Fixed readings of every GPU: SM and graphics clock 1980 MHz, memory 2619,
 * video 1755; 40 C; 120 W. Types and sensors outside NVML's enums, a MIG
 * device or a NULL pointer: INVALID_ARGUMENT (as nvml.h documents). */

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    static const unsigned mhz[] = {1980, 1980, 2619, 1755}; /* graphics, SM, memory, video */
    GPU_OR_FAIL(device, g);
    (void)g;
    if (!clock || type < 0 || type > 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    *clock = mhz[type];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int *temp)
{
    GPU_OR_FAIL(device, g);
    (void)g;
    if (!temp || sensor != 0) /* NVML_TEMPERATURE_GPU */
        return NVML_ERROR_INVALID_ARGUMENT;
    *temp = 40;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    GPU_OR_FAIL(device, g);
    (void)g;
    if (!power)
        return NVML_ERROR_INVALID_ARGUMENT;
    *power = 120000; /* milliwatts */
    return NVML_SUCCESS;
}
