/*
 * sm.c - the SM share: a limiter on every launch path (cuLaunchKernel,
 * cuLaunchKernelEx, cuLaunchCooperativeKernel, cuGraphLaunch and their _ptsz
 * variants) that keeps a container at its smPercent of the card while others
 * want the card, and lets it use idle time when they do not.
 *
 * Design: a token bucket per container (in the region, so all its processes
 * share it), counted in nanoseconds of GPU time.
 *   - refill: allowed x elapsed wall time, capped at a short burst;
 *   - each launch takes the estimated GPU time of one launch; with the
 *     bucket empty, the launching thread sleeps until it refills;
 *   - every tick (20 ms on the stand-in, 100 ms with NVML) the feedback
 *     loop measures the container's real busy time and the card's, gives
 *     back what the estimate charged, takes what was really used (so the
 *     estimate's error never accumulates), updates the per-launch estimate,
 *     and moves `allowed`: with the card saturated (>= 90% busy) it halves
 *     the distance to the configured share; with idle time left it grows by
 *     half of the idle fraction (work-conserving).
 * Busy time comes from the stand-in driver's test hook
 * tessera_standin_busy_ns(pid) when the driver exports it, else from NVML
 * (libnvidia-ml.so.1 through dlopen: nvmlDeviceGetUtilizationRates for the
 * card, nvmlDeviceGetProcessUtilization for the container's pids). With
 * neither, the limit cannot be measured and is not enforced (said once on
 * stderr). The launch path takes no lock: atomics on the bucket, a nanosleep
 * when throttled.
 */
#include "shim/shim.h"

#include <dlfcn.h>
#include <sys/time.h>
#include <time.h>

#define MILLION 1000000ull
#define SATURATED_PPM 900000ull /* card busy enough to hold to shares */
#define BURST_NS 20000000ull    /* the bucket holds 20 ms x allowed */
#define DEBT_NS 1000000000ll    /* ... and owes at most 1 s */
#define SLEEP_MIN_NS 50000ull
#define SLEEP_MAX_NS 5000000ull
#define PIDS_MAX 256 /* the region's processes sampled a tick */

/* NVML's ABI, the part used here (nvml.h). */
typedef struct nvmlDevice_st *nvml_device;
typedef struct {
    unsigned int gpu, memory;
} nvml_utilization;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU time stamp, microseconds */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvml_process_sample;

static struct {
    int on;
    uint64_t share_ppm, tick_ns;
    uint64_t (*standin)(int pid);
    nvml_device dev;
    int (*utilization)(nvml_device, nvml_utilization *);
    int (*process_util)(nvml_device, nvml_process_sample *, unsigned int *, unsigned long long);
} sm;

static int nvml_open(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
    if (!h)
        return -1;
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*get)(unsigned, nvml_device *) = (int (*)(unsigned, nvml_device *))dlsym(
        h, "nvmlDeviceGetHandleByIndex_v2");
    sm.utilization = (__typeof__(sm.utilization))dlsym(h, "nvmlDeviceGetUtilizationRates");
    sm.process_util = (__typeof__(sm.process_util))dlsym(h, "nvmlDeviceGetProcessUtilization");
    if (!init || !get || !sm.utilization || init() != 0 || get(0, &sm.dev) != 0)
        return -1;
    return 0;
}

void shim__sm_init(unsigned sm_percent)
{
    struct shim_sm_state *st = &shim__region()->sm;
    sm.share_ppm = sm_percent * 10000ull;
    sm.standin = (uint64_t(*)(int))shim__driver_sym("tessera_standin_busy_ns");
    if (sm.standin)
        sm.tick_ns = 20000000ull;
    else if (nvml_open() == 0)
        sm.tick_ns = 100000000ull;
    else {
        shim__log("smPercent=%u: no utilisation source (NVML or stand-in): not enforced",
                  sm_percent);
        return;
    }
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&st->allowed_ppm, &zero, sm.share_ppm);
    sm.on = 1;
}

/* Busy ns of the container and of the card in the last dt ns. */
static void sample_standin(struct shim_sm_state *st, uint64_t *own, uint64_t *card)
{
    pid_t pids[PIDS_MAX];
    int n = shim__region_pids(pids, PIDS_MAX);
    uint64_t o = 0, c = sm.standin(0);
    for (int i = 0; i < n; i++)
        o += sm.standin(pids[i]);
    uint64_t po = atomic_exchange(&st->own_prev, o), pc = atomic_exchange(&st->card_prev, c);
    *own = o > po ? o - po : 0;
    *card = c > pc ? c - pc : 0;
}

static void sample_nvml(uint64_t dt, uint64_t *own, uint64_t *card)
{
    nvml_utilization u = {0, 0};
    *card = sm.utilization(sm.dev, &u) == 0 ? u.gpu * dt / 100 : 0;
    *own = 0;
    nvml_process_sample s[64];
    unsigned int count = 64;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    unsigned long long since = (unsigned long long)tv.tv_sec * MILLION +
                               (unsigned long long)tv.tv_usec - dt / 1000;
    if (!sm.process_util || sm.process_util(sm.dev, s, &count, since) != 0)
        return;
    pid_t pids[PIDS_MAX];
    int n = shim__region_pids(pids, PIDS_MAX);
    uint64_t sum = 0, k = 0;
    for (unsigned i = 0; i < count && i < 64; i++)
        for (int j = 0; j < n; j++)
            if ((pid_t)s[i].pid == pids[j]) {
                sum += s[i].smUtil;
                k++;
            }
    *own = k ? sum * dt / (100 * k) : 0;
}

/* Move `allowed` by the card's utilisation over the last tick. */
static void steer(struct shim_sm_state *st, uint64_t card, uint64_t dt)
{
    uint64_t util = dt ? card * MILLION / dt : 0;
    uint64_t a = atomic_load(&st->allowed_ppm);
    if (util >= SATURATED_PPM)
        a = a > sm.share_ppm ? sm.share_ppm + (a - sm.share_ppm) / 2 : sm.share_ppm;
    else
        a += (MILLION - (util > MILLION ? MILLION : util)) / 2;
    atomic_store(&st->allowed_ppm, a > MILLION ? MILLION : a);
}

/* The feedback loop, run by whichever launch first finds a tick due. */
static void tick(struct shim_sm_state *st, uint64_t now)
{
    uint64_t last = atomic_load(&st->tick_at);
    if ((last && now - last < sm.tick_ns) ||
        !atomic_compare_exchange_strong(&st->tick_at, &last, now))
        return;
    uint64_t own = 0, card = 0, dt = now - last;
    if (sm.standin)
        sample_standin(st, &own, &card);
    else
        sample_nvml(dt, &own, &card);
    if (last == 0)
        return; /* the first tick only primes the counters */
    uint64_t n = atomic_exchange(&st->launches, 0), est = atomic_load(&st->est_cost_ns);
    atomic_fetch_add(&st->balance_ns, (int64_t)(n * est) - (int64_t)own);
    if (n)
        atomic_store(&st->est_cost_ns, est ? (3 * est + own / n) / 4 : own / n);
    steer(st, card, dt);
}

static void refill(struct shim_sm_state *st, uint64_t now)
{
    uint64_t last = atomic_load(&st->refill_at);
    if (now <= last || !atomic_compare_exchange_strong(&st->refill_at, &last, now))
        return;
    uint64_t a = atomic_load(&st->allowed_ppm);
    int64_t add = last ? (int64_t)((now - last) * a / MILLION) : 0;
    int64_t cap = (int64_t)(BURST_NS * a / MILLION), cur = atomic_fetch_add(&st->balance_ns, add);
    cur += add;
    while ((cur > cap || cur < -DEBT_NS) &&
           !atomic_compare_exchange_weak(&st->balance_ns, &cur, cur > cap ? cap : -DEBT_NS))
        ;
}

/* Wait until the container may launch, then take one launch's tokens. */
static void gate(void)
{
    const struct shim_config *c = shim__config();
    if (!sm.on || c->fail_closed)
        return;
    struct shim_sm_state *st = &shim__region()->sm;
    for (;;) {
        uint64_t now = shim__now_ns();
        tick(st, now);
        refill(st, now);
        int64_t bal = atomic_load(&st->balance_ns);
        if (bal > 0)
            break;
        uint64_t a = atomic_load(&st->allowed_ppm);
        uint64_t wait = a ? (uint64_t)(-bal + 1) * MILLION / a : SLEEP_MAX_NS;
        wait = wait < SLEEP_MIN_NS ? SLEEP_MIN_NS : wait > SLEEP_MAX_NS ? SLEEP_MAX_NS : wait;
        struct timespec ts = {0, (long)wait};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_sub(&st->balance_ns, (int64_t)atomic_load(&st->est_cost_ns));
    atomic_fetch_add(&st->launches, 1);
}

/* ---- the launch hooks ------------------------------------------------- */

#define LAUNCH_ARGS \
    f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream

SHIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream stream,
                                    void **kernelParams, void **extra)
{
    __typeof__(&cuLaunchKernel) fn = SHIM_REAL(cuLaunchKernel);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    gate();
    return fn(LAUNCH_ARGS, kernelParams, extra);
}

SHIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                         unsigned int gridDimZ, unsigned int blockDimX,
                                         unsigned int blockDimY, unsigned int blockDimZ,
                                         unsigned int sharedMemBytes, CUstream stream,
                                         void **kernelParams, void **extra)
{
    __typeof__(&cuLaunchKernel_ptsz) fn = SHIM_REAL(cuLaunchKernel_ptsz);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    gate();
    return fn(LAUNCH_ARGS, kernelParams, extra);
}

SHIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    __typeof__(&cuLaunchKernelEx) fn = SHIM_REAL(cuLaunchKernelEx);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    gate();
    return fn(config, f, kernelParams, extra);
}

SHIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                           void **kernelParams, void **extra)
{
    __typeof__(&cuLaunchKernelEx_ptsz) fn = SHIM_REAL(cuLaunchKernelEx_ptsz);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    gate();
    return fn(config, f, kernelParams, extra);
}

SHIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream stream, void **kernelParams)
{
    __typeof__(&cuLaunchCooperativeKernel) fn = SHIM_REAL(cuLaunchCooperativeKernel);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    gate();
    return fn(LAUNCH_ARGS, kernelParams);
}

SHIM_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                    unsigned int gridDimY, unsigned int gridDimZ,
                                                    unsigned int blockDimX, unsigned int blockDimY,
                                                    unsigned int blockDimZ,
                                                    unsigned int sharedMemBytes, CUstream stream,
                                                    void **kernelParams)
{
    __typeof__(&cuLaunchCooperativeKernel_ptsz) fn = SHIM_REAL(cuLaunchCooperativeKernel_ptsz);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    gate();
    return fn(LAUNCH_ARGS, kernelParams);
}

SHIM_EXPORT CUresult cuGraphLaunch(CUgraphExec graph, CUstream stream)
{
    __typeof__(&cuGraphLaunch) fn = SHIM_REAL(cuGraphLaunch);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__graph_before_launch(graph, stream, 0);
    if (r != CUDA_SUCCESS)
        return r;
    gate();
    return fn(graph, stream);
}

SHIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream)
{
    __typeof__(&cuGraphLaunch_ptsz) fn = SHIM_REAL(cuGraphLaunch_ptsz);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__graph_before_launch(graph, stream, 1);
    if (r != CUDA_SUCCESS)
        return r;
    gate();
    return fn(graph, stream);
}
