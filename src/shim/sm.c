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
 *   - every tick (20 ms on the stand-in's hook, 100 ms with NVML) the
 *     feedback loop reads the container's real busy time and the card's;
 *     when there is something new it gives back exactly the tokens the
 *     launches that ran took, takes what was really used (so the
 *     estimate's error never accumulates), updates the per-launch
 *     estimate, and moves `allowed`: with the card saturated (>= 90% busy,
 *     counting the part of its share the container left unused) it halves
 *     the distance to the configured share; with idle time left it grows
 *     by half of the idle fraction (work-conserving).
 * Busy time comes from NVML (libnvidia-ml.so.1 through dlopen:
 * nvmlDeviceGetUtilizationRates for the card, nvmlDeviceGetProcessUtilization
 * for the container's host pids), the production path; only when NVML
 * cannot be loaded or initialised, from the stand-in driver's test hook
 * tessera_standin_busy_ns(pid). With neither, the limit cannot be measured
 * and is not enforced (said once on stderr). NVML's process samples are
 * integrated by their timestamps (docs/shim.md, "Where busy time comes
 * from"): each says what percent of the driver's sample period (1/6 s to
 * 1 s) one process's kernels ran, so its busy time is smUtil x the time
 * since that process's previous sample, at most 1.5 sample periods (a
 * process with no sample in a period was idle in it); processes are added.
 * The container's samples start after the card's newest utilisation sample
 * when it starts (nvmlDeviceGetSamples); until its first sample, a launch
 * is charged a guess: the wall time per launch so far, never raised. The
 * launch path takes no lock: atomics on the bucket, a nanosleep when
 * throttled. After the bucket, the in-flight bound (inflight.c): a launch
 * waits while the container's launches not yet run pass the share's worth
 * of GPU time (that path takes a process mutex).
 */
#include "shim/shim.h"

#include <dlfcn.h>
#include <sys/time.h>
#include <time.h>

#define MILLION 1000000ull
#define SATURATED_PPM 900000ull /* card busy enough to hold to shares */
#define BURST_NS 20000000ull    /* the bucket holds 20 ms x allowed */
#define DEBT_NS 1000000000ll    /* ... and owes at most 1 s */
#define EST_WEIGHT 4            /* launches the NVML path's per-launch estimate weighs as */
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
typedef struct {
    unsigned long long timeStamp; /* CPU time stamp, microseconds */
    unsigned long long value;     /* nvmlValue_t, a union of 8 bytes */
} nvml_sample;
#define NVML_GPU_UTILIZATION_SAMPLES 1 /* nvmlSamplingType_t */

static struct {
    int on;
    uint64_t share_ppm, tick_ns;
    uint64_t (*standin)(int pid);
    nvml_device dev;
    int (*utilization)(nvml_device, nvml_utilization *);
    int (*process_util)(nvml_device, nvml_process_sample *, unsigned int *, unsigned long long);
    int (*samples)(nvml_device, int, unsigned long long, int *, unsigned int *, nvml_sample *);
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
    sm.samples = (__typeof__(sm.samples))dlsym(h, "nvmlDeviceGetSamples");
    if (!init || !get || !sm.utilization || init() != 0 || get(0, &sm.dev) != 0)
        return -1;
    return 0;
}

void shim__sm_init(unsigned sm_percent)
{
    struct shim_sm_state *st = &shim__region()->sm;
    sm.share_ppm = sm_percent * 10000ull;
    if (nvml_open() == 0)
        sm.tick_ns = 100000000ull;
    else if ((sm.standin = (uint64_t(*)(int))shim__driver_sym("tessera_standin_busy_ns")))
        sm.tick_ns = 20000000ull;
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
enum sample {
    SAMPLE_OK,
    SAMPLE_NONE,   /* no new data yet */
    SAMPLE_UNKNOWN /* own unknown */
};

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

/* The driver's sample period as this process has seen it: the shortest gap
 * between two sample times it read (0 while unknown); last_us: the newest
 * sample time it read. */
static _Atomic uint64_t period_us, last_us;

static void note_gap(uint64_t before, uint64_t t)
{
    uint64_t p = atomic_load(&period_us), gap = before && t > before ? t - before : 0;
    if (gap && (!p || gap < p))
        atomic_store(&period_us, gap);
}

static void learn_period(const nvml_process_sample *s, unsigned count)
{
    uint64_t last = atomic_load(&last_us), newest = last;
    for (unsigned i = 0; i < count; i++) {
        uint64_t before = last; /* the newest sample time before s[i] */
        for (unsigned j = 0; j < count; j++)
            if (s[j].timeStamp < s[i].timeStamp && s[j].timeStamp > before)
                before = s[j].timeStamp;
        note_gap(before, s[i].timeStamp);
        newest = s[i].timeStamp > newest ? s[i].timeStamp : newest;
    }
    atomic_store(&last_us, newest);
}

/* The container's start with NVML: its samples are those after the card's
 * newest utilisation sample (nvmlDeviceGetSamples: one every period, idle or
 * not), so its processes' first samples cover a whole period; the gaps
 * between the card's samples give the period. Without them, the first read
 * looks back instead (sample_nvml). */
static void prime_nvml(struct shim_sm_state *st)
{
    nvml_sample s[NVML_SAMPLES];
    unsigned int count = NVML_SAMPLES;
    int type;
    uint64_t newest = 0, zero = 0;
    if (!sm.samples || sm.samples(sm.dev, NVML_GPU_UTILIZATION_SAMPLES,
                                  realtime_us() - 2 * NVML_PERIOD_MAX_US, &type, &count, s) != 0)
        return;
    for (unsigned i = 0; i < count && i < NVML_SAMPLES; i++) {
        note_gap(newest, s[i].timeStamp);
        newest = s[i].timeStamp > newest ? s[i].timeStamp : newest;
    }
    atomic_compare_exchange_strong(&st->seen_us, &zero, newest);
}

/* What one sample covers: the time since its process's previous sample
 * (or since the last one consumed), at most 1.5 sample periods (a gap of
 * more was time the process was idle) and NVML_PERIOD_MAX_US. */
static uint64_t span_us(const nvml_process_sample *s, unsigned count, unsigned i, uint64_t seen)
{
    uint64_t from = seen, p = atomic_load(&period_us);
    for (unsigned j = 0; j < count; j++) /* this process's previous sample */
        if (s[j].pid == s[i].pid && s[j].timeStamp < s[i].timeStamp && s[j].timeStamp > from)
            from = s[j].timeStamp;
    uint64_t span = s[i].timeStamp - from, cap = p ? p * 3 / 2 : NVML_PERIOD_MAX_US;
    cap = cap < NVML_PERIOD_MAX_US ? cap : NVML_PERIOD_MAX_US;
    return span < cap ? span : cap;
}

/* The busy time (us) of the container's processes in samples newer than
 * seen; *newest: the newest sample time, anyone's. */
static uint64_t integrate(const nvml_process_sample *s, unsigned count, uint64_t seen,
                          uint64_t *newest)
{
    pid_t pids[SHIM_HOSTPID_MAX];
    int n = shim__host_pids(pids, SHIM_HOSTPID_MAX);
    uint64_t busy_us = 0;
    *newest = seen;
    for (unsigned i = 0; i < count; i++) {
        if (s[i].timeStamp <= seen)
            continue;
        *newest = s[i].timeStamp > *newest ? s[i].timeStamp : *newest;
        if (is_ours(s[i].pid, pids, n))
            busy_us += span_us(s, count, i, seen) * (s[i].smUtil > 100 ? 100 : s[i].smUtil) / 100;
    }
    return busy_us;
}

/* NVML's process samples newer than st->seen_us, of the container's host
 * pids (the header says how they are integrated). The container's first
 * read looks back one NVML_PERIOD_MAX_US and only notes the newest sample
 * time: what ran before stays charged at the guessed cost. */
static enum sample sample_nvml(struct shim_sm_state *st, uint64_t dt, uint64_t *own, uint64_t *card,
                               uint64_t *covered, uint64_t *upto)
{
    nvml_utilization u = {0, 0};
    *card = sm.utilization(sm.dev, &u) == 0 ? u.gpu * dt / 100 : 0;
    pid_t pids[SHIM_HOSTPID_MAX];
    if (shim__host_pids(pids, SHIM_HOSTPID_MAX) < 0 || !sm.process_util)
        return SAMPLE_UNKNOWN;
    nvml_process_sample s[NVML_SAMPLES];
    unsigned int count = NVML_SAMPLES;
    uint64_t seen = atomic_load(&st->seen_us),
             ask = seen ? seen : realtime_us() - NVML_PERIOD_MAX_US;
    int rc = sm.process_util(sm.dev, s, &count, ask);
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
    learn_period(s, count);
    uint64_t newest, busy_us = integrate(s, count, ask, &newest);
    if (newest == ask)
        return SAMPLE_NONE;
    atomic_store(&st->seen_us, newest);
    if (!seen)
        return SAMPLE_NONE; /* what ran before stays charged at the guesses */
    *own = busy_us * 1000;
    *covered = (newest - seen) * 1000;
    /* the newest sample's time on the launches' clock (CLOCK_MONOTONIC) */
    uint64_t ago = realtime_us() - newest;
    *upto = shim__now_ns() - (ago < NVML_PERIOD_MAX_US ? ago : NVML_PERIOD_MAX_US) * 1000;
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

/* Move `allowed` by the card's utilisation over the last tick, counting
 * as busy the part of its share the container itself left unused (own_ppm
 * its own rate) and, with NVML, the higher of this sample's rate and the
 * last's: idle time is given away when it is neither the container's own
 * (paying back a debt) nor one period of a neighbour's pacing (a 90%
 * tenant of 16 ms kernels paused by its own bucket leaves such periods
 * while it wants the card). */
static void steer(struct shim_sm_state *st, uint64_t card, uint64_t dt, uint64_t own_ppm)
{
    uint64_t util = dt ? card * MILLION / dt : 0;
    if (own_ppm < sm.share_ppm)
        util += sm.share_ppm - own_ppm;
    if (!sm.standin) { /* card_prev: the last tick's rate, on this path */
        uint64_t prev = atomic_exchange(&st->card_prev, util);
        util = prev > util ? prev : util;
    }
    uint64_t a = atomic_load(&st->allowed_ppm);
    if (util >= SATURATED_PPM)
        a = a > sm.share_ppm ? sm.share_ppm + (a - sm.share_ppm) / 2 : sm.share_ppm;
    else
        a += (MILLION - (util > MILLION ? MILLION : util)) / 2;
    atomic_store(&st->allowed_ppm, a > MILLION ? MILLION : a);
}

/* Before the first measurement, a launch is charged the wall time per
 * launch since the count began (launches paced by the card, synchronous or
 * held by the in-flight bound, take at least their card time), never more
 * than already guessed: a throttled tenant's slower launches do not raise
 * it. The launches stay counted, so the first measurement refunds these
 * guesses for its samples' window and takes what the samples say. */
static void guess(struct shim_sm_state *st, uint64_t now)
{
    uint64_t n = atomic_load(&st->launches), from = atomic_load(&st->counted_at);
    if (!n) /* nothing launched yet: the window starts later */
        atomic_store(&st->counted_at, now);
    if (!n || now <= from)
        return;
    uint64_t g = (now - from) / n, est = atomic_load(&st->est_cost_ns);
    g = g ? g : 1;
    if (!est) { /* the launches so far went at no cost: they take the guess */
        atomic_fetch_sub(&st->balance_ns, (int64_t)(n * g));
        shim__region_ran_add(n * g); /* given back with the first samples */
    }
    if (!est || g < est)
        atomic_store(&st->est_cost_ns, g);
}

/* Charge what a tick learned. A measured tick gives back the tokens the
 * launches that ran took (each process adds its own in its slot, region.c:
 * exactly what was taken, so a launch taken at no cost, or at another
 * estimate, is given back that), the part the samples' window is of the
 * launches' (the windows need not match; the rest waits for the next
 * samples), and takes what the samples say; its per-launch cost is their
 * busy rate over the launch rate. A tick that cannot measure takes the
 * whole time since the last count when the container launched. */
static void charge(struct shim_sm_state *st, enum sample got, uint64_t own, uint64_t covered,
                   uint64_t upto, uint64_t now)
{
    uint64_t n = atomic_exchange(&st->launches, 0), est = atomic_load(&st->est_cost_ns);
    uint64_t counted = atomic_exchange(&st->counted_at, now),
             span = now > counted ? now - counted : 0; /* the launches' window */
    if (got == SAMPLE_UNKNOWN) {
        say_unknown();
        own = n ? span : 0;
    }
    covered = covered ? covered : span;
    uint64_t back = shim__region_ran_take(span ? covered * MILLION / span : MILLION);
    atomic_fetch_add(&st->balance_ns, (int64_t)back - (int64_t)own);
    if (!n || !span)
        return;
    int first = got == SAMPLE_OK && !atomic_exchange(&st->measured, 1);
    /* the first samples hold every launch since the start up to their
     * time (upto), not those that ran after: the launches are taken as
     * evenly spread over their window, and at least an eighth of them */
    double part = upto > counted && upto < now ? (double)(upto - counted) / (double)span : 1;
    part = part < 0.125 ? 0.125 : part;
    double busy = first ? (double)own / part : (double)own * (double)span / (double)covered;
    /* the estimate weighs as EST_WEIGHT launches against this tick's n: a
     * tick of few launches (long kernels, or several processes taking
     * turns), whose samples and launch count cover slightly different
     * windows, moves it little; the hook's exact counters, a quarter */
    uint64_t w = sm.standin ? 3 * n : EST_WEIGHT;
    uint64_t e = first || !est ? (uint64_t)(busy / (double)n)
                               : (uint64_t)(((double)w * (double)est + busy) / (double)(w + n));
    atomic_store(&st->est_cost_ns, e ? e : 1); /* 0: nothing known yet */
}

/* The feedback loop, run by whichever launch first finds a tick due. A
 * tick with no new sample changes nothing (the launches wait for the
 * sample that covers them) but, before the first measurement, the guess. */
static void tick(struct shim_sm_state *st, uint64_t now)
{
    uint64_t last = atomic_load(&st->tick_at);
    if ((last && now - last < sm.tick_ns) ||
        !atomic_compare_exchange_strong(&st->tick_at, &last, now))
        return;
    uint64_t own = 0, card = 0, covered = 0, upto = now, dt = now - last;
    if (!last && !sm.standin)
        prime_nvml(st);
    enum sample got = sm.standin ? sample_standin(st, &own, &card)
                                 : sample_nvml(st, last ? dt : 0, &own, &card, &covered, &upto);
    if (last == 0) { /* the first tick only primes the counters */
        atomic_store(&st->counted_at, now);
        return;
    }
    int m = atomic_load(&st->measured) != 0;
    /* a first sample with no busy time ended before the launches counted
     * ran: it would make the first per-launch cost 0 (free launches) */
    if (got == SAMPLE_OK && !m && !own)
        got = SAMPLE_NONE;
    /* a card rate of this tick's time, not of the guesses' (they held back) */
    if ((got == SAMPLE_OK && m) || got == SAMPLE_UNKNOWN)
        steer(st, card, dt, own * MILLION / (covered ? covered : dt));
    if (got == SAMPLE_NONE && !m)
        guess(st, now);
    if (got != SAMPLE_NONE)
        charge(st, got, own, covered, upto, now);
}

static void refill(struct shim_sm_state *st, uint64_t now)
{
    uint64_t last = atomic_load(&st->refill_at);
    if (now <= last || !atomic_compare_exchange_strong(&st->refill_at, &last, now))
        return;
    uint64_t a = atomic_load(&st->allowed_ppm);
    int64_t add = last ? (int64_t)((now - last) * a / MILLION) : 0;
    int64_t cap = (int64_t)(BURST_NS * a / MILLION), cur = atomic_load(&st->balance_ns), next;
    do { /* refills up to cap; a refund above it is kept for the charge it precedes */
        next = cur >= cap ? cur : cur + add > cap ? cap : cur + add;
        next = next < -DEBT_NS ? -DEBT_NS : next;
    } while (next != cur && !atomic_compare_exchange_weak(&st->balance_ns, &cur, next));
}

static _Thread_local uint64_t taken; /* the tokens this thread's launch took */

/* Take one launch's tokens while the balance is still bal (> 0): of
 * several processes that find the bucket refilled, one launches and the
 * others wait for the next refill, instead of all taking a launch of
 * tokens that were there for one. 0 when another launch took them first. */
static int take_tokens(struct shim_sm_state *st, int64_t bal)
{
    int64_t est = (int64_t)atomic_load(&st->est_cost_ns);
    taken = (uint64_t)est;
    return atomic_compare_exchange_strong(&st->balance_ns, &bal, bal - est);
}

/* A launch the tick counts, whose tokens it gives back (its busy time is
 * charged from the samples instead). */
static void counted(struct shim_sm_state *st)
{
    atomic_fetch_add(&st->launches, 1);
    shim__region_ran_add(taken);
}

/* Take one launch's tokens, sleeping while the bucket is empty. */
static void take_or_sleep(struct shim_sm_state *st)
{
    for (;;) {
        uint64_t now = shim__now_ns();
        tick(st, now);
        refill(st, now);
        int64_t bal = atomic_load(&st->balance_ns);
        if (bal > 0 && take_tokens(st, bal))
            break;
        uint64_t a = atomic_load(&st->allowed_ppm);
        uint64_t wait = a ? (uint64_t)(-bal + 1) * MILLION / a : SLEEP_MAX_NS;
        wait = wait < SLEEP_MIN_NS ? SLEEP_MIN_NS : wait > SLEEP_MAX_NS ? SLEEP_MAX_NS : wait;
        struct timespec ts = {0, (long)wait};
        nanosleep(&ts, NULL);
        shim__inflight_reap(); /* what ran meanwhile: counted, off the bound */
    }
}

void shim__sm_gate(void)
{
    const struct shim_config *c = shim__config();
    if (!sm.on || c->fail_closed)
        return;
    struct shim_sm_state *st = &shim__region()->sm;
    /* a launch that took nothing (no cost known yet) and waited in the
     * in-flight bound until a cost is known takes it: else the launches
     * queued behind the container's first ones all run free */
    do {
        take_or_sleep(st);
        shim__inflight_wait(taken);
    } while (!taken && atomic_load(&st->est_cost_ns));
    if (!shim__inflight_on()) /* else counted once it ran (inflight.c) */
        counted(st);
}

CUresult shim__sm_launched(CUstream stream, CUresult r)
{
    if (!sm.on || shim__config()->fail_closed)
        return r;
    if (r == CUDA_SUCCESS)
        shim__inflight_record(stream, taken);
    else if (shim__inflight_on()) /* the gate charged it: refunded at the tick */
        counted(&shim__region()->sm);
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
