/*
 * worker.c - the built-in tenants (`tessera fight --worker sla|noisy`),
 * one process each so the driver sees two clients (see fight.h).
 *
 * The SLA tenant serves warm-up + measured requests: one tessera_fma
 * kernel over 2 blocks per SM. Open loop (--rate with poisson or fixed
 * arrivals), each request has an intended send time on a schedule drawn in
 * advance of the answers, and its latency_us runs from that time to the
 * answer, so a stall delays every request due during it (no coordinated
 * omission); closed loop, from the launch. gpu_us is the kernel between
 * CUDA events. The noisy tenant keeps --noisy-depth operations of its kind
 * in flight until SIGTERM (one event each; it waits for the oldest before
 * submitting another) and reports each one's time from submission to
 * completion: matmul = long FMA kernels filling every SM, stream = a copy
 * between two large buffers, burst = 256 tiny kernels, memory = take the
 * card's memory until refused, then stream; idle = a context and nothing
 * else (the A/A control's neighbour). With --memory, the SLA
 * tenant allocates and frees its working set per request and reports a
 * failed allocation as an "error" line; the noisy one first allocates
 * until the driver refuses, reporting what it holds (mem_mib).
 * On the stand-in driver (or --synthetic), every operation is a
 * tessera_sleep_us launch of the durations in internal.h.
 */
#include "fight/internal.h"

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "util/file.h"
#include "util/time.h"

struct wk {
    const struct fight_worker_opts *o;
    struct fight_cuda cu;
    CUcontext ctx;
    CUmodule mod;
    CUfunction sleep_fn, stream_fn, fma_fn;
    CUstream stream;
    CUevent ev0, ev1;
    int sms, synthetic;
    size_t total_mem;
    CUdeviceptr buf_a, buf_b; /* stream's buffers / fma's output */
    size_t buf_floats;
    CUevent ring[FIGHT_DEPTH_MAX]; /* noisy: one per operation in flight */
    double sent[FIGHT_DEPTH_MAX];  /* ms: when each was submitted */
    int nring;
    uint64_t rng;   /* sla: Poisson gaps */
    char out[4096]; /* sla: latency lines not yet written */
    size_t nout;
    double out_at; /* ms: when out was last written */
};

static volatile sig_atomic_t stop_flag;

static void on_term(int sig)
{
    (void)sig;
    stop_flag = 1;
}

#define CK(w, call, what)                                                     \
    do {                                                                      \
        ts_status st_ = fight__cuda_check(&(w)->cu, (w)->cu.call, what, err); \
        if (st_ != TS_OK)                                                     \
            return st_;                                                       \
    } while (0)

static ts_status write_all(const struct wk *w, const char *buf, size_t len, struct ts_error *err)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(w->o->fd, buf + off, len - off);
        if (n <= 0)
            return ts_err(err, TS_IO, "worker: the latency pipe closed");
        off += (size_t)n;
    }
    return TS_OK;
}

static ts_status flush_out(struct wk *w, struct ts_error *err)
{
    ts_status st = write_all(w, w->out, w->nout, err);
    w->nout = 0;
    w->out_at = ts_clock_msf(CLOCK_MONOTONIC);
    return st;
}

/* One line to the harness. The SLA tenant's latency lines are batched,
 * written every EMIT_EVERY_MS or when the buffer fills (and at its end):
 * a write per request would wake the harness a thousand times a second,
 * on a core the tenant itself may need. The neighbour's lines go at once
 * (the harness waits for its first; it counts its operations per run). */
#define EMIT_EVERY_MS 20.0

static ts_status emit(struct wk *w, const char *line, struct ts_error *err)
{
    size_t len = strlen(line);
    if (strcmp(w->o->role, "sla") != 0 || len > sizeof(w->out))
        return write_all(w, line, len, err);
    if (w->nout + len > sizeof(w->out)) {
        ts_status st = flush_out(w, err);
        if (st != TS_OK)
            return st;
    }
    memcpy(w->out + w->nout, line, len);
    w->nout += len;
    return ts_clock_msf(CLOCK_MONOTONIC) - w->out_at >= EMIT_EVERY_MS ? flush_out(w, err) : TS_OK;
}

static ts_status load_module(struct wk *w, struct ts_error *err)
{
    char *image = NULL;
    size_t len;
    if (w->o->kernels) {
        ts_status st = ts_file_read(w->o->kernels, FIGHT_KERNELS_FILE_MAX, &image, &len, err);
        if (st != TS_OK)
            return st;
    }
    CUresult r = w->cu.cuModuleLoadData(&w->mod, image ? image : fight__ptx);
    free(image);
    ts_status st = fight__cuda_check(&w->cu, r, "cuModuleLoadData", err);
    if (st != TS_OK)
        return st;
    CK(w, cuModuleGetFunction(&w->sleep_fn, w->mod, "tessera_sleep_us"), "tessera_sleep_us");
    if (w->synthetic)
        return TS_OK;
    CK(w, cuModuleGetFunction(&w->stream_fn, w->mod, "tessera_stream"), "tessera_stream");
    CK(w, cuModuleGetFunction(&w->fma_fn, w->mod, "tessera_fma"), "tessera_fma");
    return TS_OK;
}

static ts_status setup(struct wk *w, struct ts_error *err)
{
    ts_status st = fight__cuda_open(&w->cu, w->o->driver, err);
    if (st != TS_OK)
        return st;
    CUdevice dev;
    char name[128] = "";
    CK(w, cuInit(0), "cuInit");
    CK(w, cuDeviceGet(&dev, 0), "cuDeviceGet");
    CK(w, cuDeviceGetName(name, (int)sizeof(name), dev), "cuDeviceGetName");
    CK(w, cuDeviceGetAttribute(&w->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
       "cuDeviceGetAttribute");
    CK(w, cuDeviceTotalMem_v2(&w->total_mem, dev), "cuDeviceTotalMem");
    w->synthetic = w->o->synthetic || strcmp(name, FIGHT_STANDIN_NAME) == 0;
    if (w->sms < 1)
        w->sms = 1;
    CK(w, cuCtxCreate_v2(&w->ctx, 0, dev), "cuCtxCreate");
    if ((st = load_module(w, err)) != TS_OK)
        return st;
    CK(w, cuStreamCreate(&w->stream, 0), "cuStreamCreate");
    CK(w, cuEventCreate(&w->ev0, 0), "cuEventCreate");
    CK(w, cuEventCreate(&w->ev1, 0), "cuEventCreate");
    int depth = w->o->depth < 1 ? 1 : w->o->depth > FIGHT_DEPTH_MAX ? FIGHT_DEPTH_MAX : w->o->depth;
    for (; strcmp(w->o->role, "noisy") == 0 && w->nring < depth; w->nring++)
        CK(w, cuEventCreate(&w->ring[w->nring], 0), "cuEventCreate");
    if (w->synthetic)
        return TS_OK;
    size_t bytes = w->total_mem / 16;
    if (bytes > (1u << 30))
        bytes = 1u << 30;
    w->buf_floats = strcmp(w->o->role, "noisy") == 0 ? bytes / sizeof(float)
                                                     : (size_t)w->sms * 2 * 256;
    CK(w, cuMemAlloc_v2(&w->buf_a, w->buf_floats * sizeof(float)), "cuMemAlloc");
    CK(w, cuMemAlloc_v2(&w->buf_b, w->buf_floats * sizeof(float)), "cuMemAlloc");
    return TS_OK;
}

static ts_status launch_sleep(struct wk *w, unsigned us, struct ts_error *err)
{
    void *args[] = {&us};
    CK(w, cuLaunchKernel(w->sleep_fn, 1, 1, 1, 1, 1, 1, 0, w->stream, args, NULL),
       "cuLaunchKernel(tessera_sleep_us)");
    return TS_OK;
}

static ts_status launch_fma(struct wk *w, unsigned blocks_per_sm, unsigned threads, unsigned iters,
                            struct ts_error *err)
{
    unsigned blocks = (unsigned)w->sms * blocks_per_sm;
    if ((size_t)blocks * threads > w->buf_floats)
        blocks = (unsigned)(w->buf_floats / threads);
    void *args[] = {&w->buf_a, &iters};
    CK(w, cuLaunchKernel(w->fma_fn, blocks, 1, 1, threads, 1, 1, 0, w->stream, args, NULL),
       "cuLaunchKernel(tessera_fma)");
    return TS_OK;
}

/* One operation of the noisy kind (several launches for burst). */
static ts_status noisy_op(struct wk *w, struct ts_error *err)
{
    int kind = w->o->noisy_kind == FIGHT_NOISY_MEMORY ? FIGHT_NOISY_STREAM : w->o->noisy_kind;
    if (w->synthetic) {
        unsigned us = kind == FIGHT_NOISY_MATMUL   ? FIGHT_SYN_MATMUL_US
                      : kind == FIGHT_NOISY_STREAM ? FIGHT_SYN_STREAM_US
                                                   : FIGHT_SYN_BURST_US;
        int n = kind == FIGHT_NOISY_BURST ? FIGHT_SYN_BURST_N : 1;
        ts_status st = TS_OK;
        for (int i = 0; i < n && st == TS_OK; i++)
            st = launch_sleep(w, us, err);
        return st;
    }
    if (kind == FIGHT_NOISY_MATMUL)
        return launch_fma(w, 16, 256, 1u << 20, err);
    if (kind == FIGHT_NOISY_BURST) {
        ts_status st = TS_OK;
        for (int i = 0; i < 256 && st == TS_OK; i++)
            st = launch_fma(w, 1, 128, 256, err);
        return st;
    }
    unsigned long long n = w->buf_floats;
    void *args[] = {&w->buf_a, &w->buf_b, &n};
    CK(w,
       cuLaunchKernel(w->stream_fn, (unsigned)w->sms * 8, 1, 1, 256, 1, 1, 0, w->stream, args,
                      NULL),
       "cuLaunchKernel(tessera_stream)");
    return TS_OK;
}

/* One SLA request timed between events and on the host clock from due
 * (ms; < 0: now, closed loop); emit the latency line, with host_us (the
 * host's stalls while the tenant waited for due) in open loop. */
static ts_status timed(struct wk *w, double due, double host_us, struct ts_error *err)
{
    double t0 = due >= 0 ? due : ts_clock_msf(CLOCK_MONOTONIC);
    CK(w, cuEventRecord(w->ev0, w->stream), "cuEventRecord");
    ts_status st = w->synthetic ? launch_sleep(w, FIGHT_SYN_SLA_US, err)
                                : launch_fma(w, 2, 256, 16384, err);
    if (st != TS_OK)
        return st;
    CK(w, cuEventRecord(w->ev1, w->stream), "cuEventRecord");
    CK(w, cuEventSynchronize(w->ev1), "cuEventSynchronize");
    double lat_us = (ts_clock_msf(CLOCK_MONOTONIC) - t0) * 1000;
    float ms = 0;
    CK(w, cuEventElapsedTime(&ms, w->ev0, w->ev1), "cuEventElapsedTime");
    char line[128];
    size_t n = (size_t)snprintf(line, sizeof(line), "latency_us %.3f gpu_us %.3f", lat_us,
                                (double)ms * 1000);
    n = n < sizeof(line) ? n : sizeof(line) - 1;
    snprintf(line + n, sizeof(line) - n, due >= 0 ? " host_us %.1f\n" : "\n", host_us);
    return emit(w, line, err);
}

/* SLA, memory fight: allocate the working set around the request. */
static ts_status sla_request(struct wk *w, double due, double host_us, struct ts_error *err)
{
    if (!w->o->memory)
        return timed(w, due, host_us, err);
    CUdeviceptr p;
    size_t bytes = w->synthetic ? (1u << 20) : (64u << 20);
    CUresult r = w->cu.cuMemAlloc_v2(&p, bytes);
    if (r != CUDA_SUCCESS) {
        struct ts_error e;
        fight__cuda_check(&w->cu, r, "cuMemAlloc", &e);
        char line[TS_MSG_MAX + 16];
        snprintf(line, sizeof(line), "error %s\n", e.msg);
        return emit(w, line, err);
    }
    ts_status st = timed(w, due, host_us, err);
    w->cu.cuMemFree_v2(p);
    return st;
}

/* Noisy, memory fight: take device memory until the driver says no, then
 * report what it holds (one line, so the harness starts the SLA tenant
 * only once the card's memory is taken). */
static ts_status grab_memory(struct wk *w, struct ts_error *err)
{
    size_t chunk = w->total_mem / 64 ? w->total_mem / 64 : (1u << 20);
    size_t held = 0;
    char line[TS_MSG_MAX + 64] = "";
    for (int i = 0; i < 128 && !stop_flag; i++) {
        CUdeviceptr p;
        CUresult r = w->cu.cuMemAlloc_v2(&p, chunk);
        if (r != CUDA_SUCCESS) {
            struct ts_error e;
            fight__cuda_check(&w->cu, r, "cuMemAlloc", &e);
            snprintf(line, sizeof(line), "# refused after %.1f MiB: %s\n", (double)held / 1048576,
                     e.msg);
            break;
        }
        held += chunk;
    }
    ts_status st = line[0] ? emit(w, line, err) : TS_OK;
    if (st != TS_OK)
        return st;
    snprintf(line, sizeof(line), "mem_mib %.1f\n", (double)held / 1048576);
    return emit(w, line, err);
}

/* Milliseconds to the next intended send: 1/rate, or exponential. */
static double gap_ms(struct wk *w)
{
    if (w->o->arrival == FIGHT_ARRIVE_FIXED)
        return 1000 / w->o->rate;
    double u = (double)(fight__rand(&w->rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    return -log1p(-u) * 1000 / w->o->rate;
}

/* Sleep until SPIN_MS before t, then spin to t: a timer wake-up is late by
 * tens of microseconds on a busy or virtual host (about 67 us measured on
 * the 2-core CI VMs), which would be counted as the tenant's latency.
 * Returns the microseconds the host took the CPU meanwhile: each gap of
 * more than FIGHT_HOST_GAP_US between two clock reads of the spin, and a
 * timer wake-up that late. */
#define SPIN_MS 5.0

static double wait_until_ms(double t)
{
    double gap = FIGHT_HOST_GAP_US / 1000.0, wake = t - SPIN_MS,
           ms = wake - ts_clock_msf(CLOCK_MONOTONIC);
    if (ms > 0) {
        struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6)};
        while (nanosleep(&ts, &ts) != 0 && !stop_flag)
            ;
    }
    double last = ts_clock_msf(CLOCK_MONOTONIC),
           stalled = ms > 0 && last - wake > gap ? last - wake : 0;
    while (last < t && !stop_flag) {
        double now = ts_clock_msf(CLOCK_MONOTONIC);
        if (now - last > gap)
            stalled += now - last;
        last = now;
    }
    return stalled * 1000;
}

static ts_status sla_loop(struct wk *w, struct ts_error *err)
{
    int open = w->o->arrival != FIGHT_ARRIVE_CLOSED && w->o->rate > 0;
    double next = ts_clock_msf(CLOCK_MONOTONIC);
    w->rng = w->o->seed ^ 0x51a5eedull;
    ts_status st = TS_OK;
    for (size_t i = 0; i < w->o->requests && st == TS_OK && !stop_flag; i++) {
        double due = -1, host_us = 0;
        if (open) { /* the schedule never waits for an answer */
            host_us = wait_until_ms(next);
            due = next;
            next += gap_ms(w);
        }
        st = sla_request(w, due, host_us, err);
    }
    return st;
}

/* Wait for the operation in ring slot i; report its time since submission. */
static ts_status retire(struct wk *w, int i, struct ts_error *err)
{
    CK(w, cuEventSynchronize(w->ring[i]), "cuEventSynchronize");
    char line[64];
    snprintf(line, sizeof(line), "latency_us %.3f\n",
             (ts_clock_msf(CLOCK_MONOTONIC) - w->sent[i]) * 1000);
    return emit(w, line, err);
}

static ts_status noisy_loop(struct wk *w, struct ts_error *err)
{
    int head = 0, n = 0;
    ts_status st = TS_OK;
    while (!stop_flag && st == TS_OK) {
        if (n == w->nring) {
            st = retire(w, head, err);
            head = (head + 1) % w->nring;
            n--;
            continue;
        }
        int slot = (head + n) % w->nring;
        w->sent[slot] = ts_clock_msf(CLOCK_MONOTONIC);
        if ((st = noisy_op(w, err)) == TS_OK)
            st = fight__cuda_check(&w->cu, w->cu.cuEventRecord(w->ring[slot], w->stream),
                                   "cuEventRecord", err);
        n++;
    }
    return stop_flag ? TS_OK : st;
}

/* The idle neighbour: a context (when the driver gives one), no work. */
static ts_status idle(struct wk *w)
{
    struct ts_error e = {0};
    char line[TS_MSG_MAX + 64];
    snprintf(line, sizeof(line), "# idle neighbour%s%.200s\n",
             setup(w, &e) == TS_OK ? ": context held" : ", no context: ", e.msg);
    ts_status st = emit(w, line, &e);
    while (!stop_flag && st == TS_OK)
        poll(NULL, 0, 50);
    return TS_OK;
}

static ts_status work(struct wk *w, struct ts_error *err)
{
    if (strcmp(w->o->role, "noisy") == 0 && w->o->noisy_kind == FIGHT_NOISY_IDLE)
        return idle(w);
    ts_status st = setup(w, err);
    if (st != TS_OK)
        return st;
    if (strcmp(w->o->role, "sla") == 0) {
        struct ts_error lost;
        st = sla_loop(w, err);
        ts_status flushed = flush_out(w, st == TS_OK ? err : &lost);
        return st != TS_OK ? st : flushed;
    }
    if ((w->o->memory || w->o->noisy_kind == FIGHT_NOISY_MEMORY) &&
        (st = grab_memory(w, err)) != TS_OK)
        return st;
    return noisy_loop(w, err);
}

/* Give back what setup took, in reverse (each only if it was made). */
static void teardown(struct wk *w)
{
    if (!w->ctx)
        return;
    for (int i = 0; i < w->nring; i++)
        w->cu.cuEventDestroy_v2(w->ring[i]);
    if (w->buf_b)
        w->cu.cuMemFree_v2(w->buf_b);
    if (w->buf_a)
        w->cu.cuMemFree_v2(w->buf_a);
    if (w->ev1)
        w->cu.cuEventDestroy_v2(w->ev1);
    if (w->ev0)
        w->cu.cuEventDestroy_v2(w->ev0);
    if (w->stream)
        w->cu.cuStreamDestroy_v2(w->stream);
    if (w->mod)
        w->cu.cuModuleUnload(w->mod);
    w->cu.cuCtxDestroy_v2(w->ctx);
}

ts_status fight_worker(const struct fight_worker_opts *o, struct ts_error *err)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Wake at the intended send time, not up to 50 us (the default slack) after. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    struct wk w;
    memset(&w, 0, sizeof(w));
    w.o = o;
    ts_status st = work(&w, err);
    teardown(&w);
    fight__cuda_close(&w.cu);
    return st;
}
