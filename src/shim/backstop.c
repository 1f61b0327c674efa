/*
 * backstop.c - memoryBackstop: every backstopIntervalMs a thread of the
 * shim compares what the driver says the container's processes hold (NVML's
 * per-process usedGpuMemory, nvmlDeviceGetComputeRunningProcesses_v3 on
 * every device, for the region's pids) with what the shim charged them. When
 * the driver shows more than the charge plus backstopTolerance per process, something
 * got past the hooks (an entry point the shim does not know, the driver's
 * own memory beyond an estimate): `report` says so on stderr (once when it
 * starts, once when it ends), `refuse` also refuses every allocation until
 * the driver's figure is back within the tolerance. What the driver shows
 * comes from the stand-in driver's test hook tessera_standin_mem_bytes(pid)
 * (pids as the processes see them) when the driver exports it, else NVML,
 * which names processes by host pid: hostpid.c's shim__host_pids (the pid
 * map the node agent writes); a tick whose host pids are unknown is
 * skipped (hostpid.c says why) and changes nothing. The allocation path only
 * reads one atomic; the thread is not inherited by a forked child, which
 * starts unrefused and unchecked (an exec'd image starts its own).
 */
#include "shim/shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#define DEVICES_MAX 64
#define PROCS_MAX 256 /* processes NVML lists on one device a query */
#define NVML_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull

/* NVML's ABI, the part used here (nvml.h, nvmlProcessInfo_v2_t). */
typedef struct nvmlDevice_st *nvml_device;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvml_process;

static struct {
    const struct shim_config *c;
    uint64_t (*standin)(int pid);
    int (*procs)(nvml_device, unsigned int *, nvml_process *);
    nvml_device dev[DEVICES_MAX];
    unsigned ndev;
    _Atomic int over, refusing;
} bs;

int shim__backstop_refusing(void)
{
    return atomic_load_explicit(&bs.refusing, memory_order_relaxed);
}

static int nvml_open(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
    if (!h)
        return -1;
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*count)(unsigned *) = (int (*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
    int (*get)(unsigned, nvml_device *) = (int (*)(unsigned, nvml_device *))dlsym(
        h, "nvmlDeviceGetHandleByIndex_v2");
    bs.procs = (__typeof__(bs.procs))dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
    unsigned n = 0;
    if (!init || !count || !get || !bs.procs || init() != 0 || count(&n) != 0)
        return -1;
    for (unsigned i = 0; i < n && bs.ndev < DEVICES_MAX; i++)
        if (get(i, &bs.dev[bs.ndev]) == 0)
            bs.ndev++;
    return 0;
}

static int is_ours(unsigned pid, const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++)
        if ((unsigned)pids[i] == pid)
            return 1;
    return 0;
}

/* What the driver says the container's n processes hold, bytes; -1 when
 * their host pids are unknown. */
static int64_t driver_bytes(int *n)
{
    static pid_t pids[SHIM_SLOTS];
    static nvml_process p[PROCS_MAX];
    uint64_t sum = 0;
    if (bs.standin) {
        *n = shim__region_pids(pids, SHIM_SLOTS);
        for (int i = 0; i < *n; i++)
            sum += bs.standin(pids[i]);
        return (int64_t)sum;
    }
    if ((*n = shim__host_pids(pids, SHIM_HOSTPID_MAX)) < 0)
        return -1;
    for (unsigned d = 0; d < bs.ndev; d++) {
        unsigned count = PROCS_MAX;
        if (bs.procs(bs.dev[d], &count, p) != 0)
            continue;
        for (unsigned i = 0; i < count && i < PROCS_MAX; i++)
            if (p[i].usedGpuMemory != NVML_NOT_AVAILABLE && is_ours(p[i].pid, pids, *n))
                sum += p[i].usedGpuMemory;
    }
    return (int64_t)sum;
}

static void check(void)
{
    int n = 0;
    int64_t got = driver_bytes(&n);
    if (got < 0)
        return;
    uint64_t held = (uint64_t)got, charged = shim__used();
    /* each process's context is charged an estimate: the tolerance is per process */
    uint64_t tol = bs.c->backstop_tolerance * (uint64_t)(n > 1 ? n : 1);
    int over = held > charged && held - charged > tol;
    int refuse = bs.c->backstop == SHIM_BACKSTOP_REFUSE;
    if (over && !atomic_exchange(&bs.over, 1))
        shim__log("memoryBackstop: the driver shows %llu bytes for the container's %d "
                  "processes, the shim charged %llu (over by %llu, tolerance %llu)%s",
                  (unsigned long long)held, n, (unsigned long long)charged,
                  (unsigned long long)(held - charged), (unsigned long long)tol,
                  refuse ? ": refusing allocations" : "");
    else if (!over && atomic_exchange(&bs.over, 0))
        shim__log("memoryBackstop: back within tolerance (driver %llu bytes, charged %llu)",
                  (unsigned long long)held, (unsigned long long)charged);
    atomic_store(&bs.refusing, refuse && over);
}

static void *run(void *arg)
{
    (void)arg;
    unsigned ms = bs.c->backstop_interval_ms;
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000l};
    for (;;) {
        check();
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void forked_child(void)
{
    atomic_store(&bs.over, 0);
    atomic_store(&bs.refusing, 0);
}

void shim__backstop_init(const struct shim_config *c)
{
    bs.c = c;
    bs.standin = (uint64_t(*)(int))shim__driver_sym("tessera_standin_mem_bytes");
    if (!bs.standin && nvml_open() != 0) {
        shim__log("memoryBackstop: NVML unavailable: not checked");
        return;
    }
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, run, NULL) != 0)
        shim__log("memoryBackstop: cannot start its thread: not checked");
    else
        pthread_atfork(NULL, NULL, forked_child);
    pthread_attr_destroy(&a);
}
