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
 * when throttled. After the bucket, the in-flight bound (inflight.c): a
 * launch waits while the container's launches not yet run pass the share's
 * worth of GPU time (that path takes a process mutex).
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
#define NVML_SAMPLES 256               /* process samples read a tick */
#define NVML_PERIOD_MAX_US 1000000ull  /* NVML samples at most 1 s apart */
#define NVML_ERROR_NOT_FOUND 6         /* nvml.h: no sample since lastSeen */
#define NVML_ERROR_INSUFFICIENT_SIZE 7 /* nvml.h: more samples than the buffer holds */

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
    shim__inflight_init(sm_percent);
}

/* What a tick learned: the container's busy ns (own) and the card's. */
enum sample { SAMPLE_OK, SAMPLE_NONE /* no new data yet */, SAMPLE_UNKNOWN /* own unknown */ };

/* The stand-in's counters, by host pid like NVML's. */
static enum sample sample_standin(struct shim_sm_state *st, uint64_t *own, uint64_t *card)
{
    pid_t pids[SHIM_HOSTPID_MAX];
    int n = shim__host_pids(pids, SHIM_HOSTPID_MAX);
    uint64_t c = sm.standin(0), pc = atomic_exchange(&st->card_prev, c);
    *card = c > pc ? c - pc : 0;
    if (n < 0)
        return SAMPLE_UNKNOWN;
    uint64_t o = 0;
    for (int i = 0; i < n; i++)
        o += sm.standin(pids[i]);
    uint64_t po = atomic_exchange(&st->own_prev, o);
    *own = o > po ? o - po : 0;
    return SAMPLE_OK;
}

/* NVML's sample clock: CPU time in microseconds since the epoch. */
static uint64_t realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int is_ours(unsigned pid, const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++)
        if ((unsigned)pids[i] == pid)
            return 1;
    return 0;
}

/* NVML's process samples newer than st->seen_us, of the container's host
 * pids: each sample's smUtil holds over the time since that process's
 * previous sample (or the last one consumed), capped at NVML_PERIOD_MAX_US;
 * the processes' busy time is added. */
static enum sample sample_nvml(struct shim_sm_state *st, uint64_t dt, uint64_t *own, uint64_t *card)
{
    nvml_utilization u = {0, 0};
    *card = sm.utilization(sm.dev, &u) == 0 ? u.gpu * dt / 100 : 0;
    pid_t pids[SHIM_HOSTPID_MAX];
    int n = shim__host_pids(pids, SHIM_HOSTPID_MAX);
    if (n < 0 || !sm.process_util)
        return SAMPLE_UNKNOWN;
    nvml_process_sample s[NVML_SAMPLES];
    unsigned int count = NVML_SAMPLES;
    uint64_t seen = atomic_load(&st->seen_us);
    if (!seen) /* 0 would ask for NVML's whole buffer: start one tick back */
        seen = realtime_us() - dt / 1000;
    int rc = sm.process_util(sm.dev, s, &count, seen);
    if (rc == NVML_ERROR_NOT_FOUND)
        return SAMPLE_NONE;
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE || (rc == 0 && count > NVML_SAMPLES)) {
        /* a backlog beyond the buffer: this tick is unknown, the next starts
         * one tick back instead of asking for the same backlog forever */
        atomic_store(&st->seen_us, realtime_us() - dt / 1000);
        return SAMPLE_UNKNOWN;
    }
    if (rc != 0)
        return SAMPLE_UNKNOWN;
    uint64_t newest = seen, busy_us = 0;
    for (unsigned i = 0; i < count; i++) {
        if (s[i].timeStamp <= seen || !is_ours(s[i].pid, pids, n))
            continue;
        uint64_t from = seen;
        for (unsigned j = 0; j < count; j++) /* this process's previous sample */
            if (s[j].pid == s[i].pid && s[j].timeStamp < s[i].timeStamp && s[j].timeStamp > from)
                from = s[j].timeStamp;
        uint64_t span = s[i].timeStamp - from;
        busy_us += (span < NVML_PERIOD_MAX_US ? span : NVML_PERIOD_MAX_US) * s[i].smUtil / 100;
        newest = s[i].timeStamp > newest ? s[i].timeStamp : newest;
    }
    for (unsigned i = 0; i < count; i++) /* others' samples count as seen too */
        newest = s[i].timeStamp > newest ? s[i].timeStamp : newest;
    if (newest == seen)
        return SAMPLE_NONE;
    atomic_store(&st->seen_us, newest);
    *own = busy_us * 1000;
    return SAMPLE_OK;
}

/* Said once: the limiter cannot see what the container used. */
static void say_unknown(void)
{
    static _Atomic int said;
    if (!atomic_exchange(&said, 1))
        shim__log("smPercent=%u: the container's GPU time cannot be measured: every tick with "
                  "a launch is charged as fully busy (no refund) until it can",
                  (unsigned)(sm.share_ppm / 10000));
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

/* The feedback loop, run by whichever launch first finds a tick due. A
 * tick with no new sample changes nothing (the launches wait for the
 * sample that covers them); one that cannot measure the container charges
 * it the whole interval when it launched in it, as if busy throughout, and
 * never refunds. */
static void tick(struct shim_sm_state *st, uint64_t now)
{
    uint64_t last = atomic_load(&st->tick_at);
    if ((last && now - last < sm.tick_ns) ||
        !atomic_compare_exchange_strong(&st->tick_at, &last, now))
        return;
    uint64_t own = 0, card = 0, dt = now - last;
    enum sample got = sm.standin ? sample_standin(st, &own, &card)
                                 : sample_nvml(st, last ? dt : 0, &own, &card);
    if (last == 0)
        return; /* the first tick only primes the counters */
    steer(st, card, dt);
    if (got == SAMPLE_NONE)
        return;
    uint64_t n = atomic_exchange(&st->launches, 0), est = atomic_load(&st->est_cost_ns);
    if (got == SAMPLE_UNKNOWN) {
        say_unknown();
        own = n ? dt : 0;
    }
    atomic_fetch_add(&st->balance_ns, (int64_t)(n * est) - (int64_t)own);
    if (n)
        atomic_store(&st->est_cost_ns, est ? (3 * est + own / n) / 4 : own / n);
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

void shim__sm_gate(void)
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
    uint64_t est = atomic_load(&st->est_cost_ns);
    atomic_fetch_sub(&st->balance_ns, (int64_t)est);
    if (!shim__inflight_on()) /* else counted once it ran (inflight.c) */
        atomic_fetch_add(&st->launches, 1);
    shim__inflight_wait(est);
}

CUresult shim__sm_launched(CUstream stream, CUresult r)
{
    if (!sm.on || shim__config()->fail_closed)
        return r;
    if (r == CUDA_SUCCESS)
        shim__inflight_record(stream);
    else if (shim__inflight_on()) /* the gate charged it: refunded at the tick */
        atomic_fetch_add(&shim__region()->sm.launches, 1);
    return r;
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
    shim__sm_gate();
    return shim__sm_launched(stream, fn(LAUNCH_ARGS, kernelParams, extra));
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
    shim__sm_gate();
    return shim__sm_launched(SHIM_PTSZ(stream), fn(LAUNCH_ARGS, kernelParams, extra));
}

SHIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    __typeof__(&cuLaunchKernelEx) fn = SHIM_REAL(cuLaunchKernelEx);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    shim__sm_gate();
    CUresult r = fn(config, f, kernelParams, extra);
    return config ? shim__sm_launched(config->hStream, r) : r;
}

SHIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                           void **kernelParams, void **extra)
{
    __typeof__(&cuLaunchKernelEx_ptsz) fn = SHIM_REAL(cuLaunchKernelEx_ptsz);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    shim__sm_gate();
    CUresult r = fn(config, f, kernelParams, extra);
    return config ? shim__sm_launched(SHIM_PTSZ(config->hStream), r) : r;
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
    shim__sm_gate();
    return shim__sm_launched(stream, fn(LAUNCH_ARGS, kernelParams));
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
    shim__sm_gate();
    return shim__sm_launched(SHIM_PTSZ(stream), fn(LAUNCH_ARGS, kernelParams));
}

SHIM_EXPORT CUresult cuGraphLaunch(CUgraphExec graph, CUstream stream)
{
    __typeof__(&cuGraphLaunch) fn = SHIM_REAL(cuGraphLaunch);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__graph_before_launch(graph, stream, 0);
    if (r != CUDA_SUCCESS)
        return r;
    shim__sm_gate();
    return shim__sm_launched(stream, fn(graph, stream));
}

SHIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream)
{
    __typeof__(&cuGraphLaunch_ptsz) fn = SHIM_REAL(cuGraphLaunch_ptsz);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__graph_before_launch(graph, stream, 1);
    if (r != CUDA_SUCCESS)
        return r;
    shim__sm_gate();
    return shim__sm_launched(SHIM_PTSZ(stream), fn(graph, stream));
}
