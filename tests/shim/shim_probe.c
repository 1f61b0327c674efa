/*
 * shim_probe.c - the program tests/cli/shim.sh runs under
 * LD_PRELOAD=libtessera-cuda.so against the stand-in driver. It links the
 * stand-in (so direct calls go through the dynamic linker like a real
 * application's) and reaches the driver the other ways with dlopen, dlsym
 * and cuGetProcAddress. Each mode prints key=value lines and exits 0 when
 * its own checks held, 1 when one failed (with a "FAIL:" line), 2 on usage.
 *   paths CHUNK          allocate CHUNK bytes until refused, through each of
 *                        direct / dlsym / cuGetProcAddress / _v2 / _ptsz
 *   kinds                every allocation kind: charged and credited exactly
 *   info                 cuMemGetInfo_v2 and cuDeviceTotalMem_v2
 *   try BYTES            one cuMemAlloc_v2: prints rc
 *   hold BYTES FILE      allocate, write FILE, then wait to be killed
 *   threads T N BYTES    T threads x N alloc/free; the stand-in's live bytes
 *                        never pass the limit; 0 at the end
 *   launch SECS US MIX   back-to-back tessera_sleep_us kernels for SECS;
 *                        MIX=all rotates the four launch paths, MIX=legacy
 *                        the four legacy ones (cuLaunch, cuLaunchGrid,
 *                        cuLaunchGridAsync, ...MultiDevice: set
 *                        TESSERA_STANDIN_KERNEL_US=US, they pass no
 *                        parameters); LAUNCH_DEPTH (8) in flight (an event each, the
 *                        oldest waited for), all waited for at the end;
 *                        busy_ns is the card time of this process, by its
 *                        host pid as the stand-in counts, dry_ns the time
 *                        its queue stood empty (it left the card to others)
 *   bench N [BYTES]      ns per cuMemAlloc_v2 + cuMemFree_v2 pair (of 4096
 *                        bytes, or BYTES)
 *   queue SECS US MAX [card|ctx|idle]
 *                        US-microsecond kernels never waited for, for SECS
 *                        or MAX launches: the most pending at once (the
 *                        stand-in's count; with "card", every process's),
 *                        busy_ns after a final wait; with "ctx", in a
 *                        context of its own, destroyed before that wait
 *                        (prints the kernels still pending then); with
 *                        "idle", 3 s idle before that wait
 *   launch-bench N       ns per launch of an empty kernel
 */
#include "util/cuda_abi.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../check.h"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*proc_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*proc2_fn)(const char *, void **, int, cuuint64_t,
                             CUdriverProcAddressQueryResult *);

static void *driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        exit(2);
    }
    return h;
}

static size_t used_now(void)
{
    size_t fr = 0, tot = 0;
    cuMemGetInfo_v2(&fr, &tot);
    return tot - fr;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- paths --------------------------------------------------------------- */

static alloc_fn path_fn(const char *path)
{
    void *h = driver(), *p = NULL;
    if (strcmp(path, "direct") == 0)
        return cuMemAlloc_v2;
    if (strcmp(path, "dlsym") == 0)
        return (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    if (strcmp(path, "dlsym-default") == 0)
        return (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    proc_fn gpa = (proc_fn)dlsym(h, "cuGetProcAddress");
    proc2_fn gpa2 = (proc2_fn)dlsym(h, "cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (strcmp(path, "gpa") == 0 && gpa)
        gpa("cuMemAlloc", &p, 12000, 0);
    if (strcmp(path, "gpa2") == 0 && gpa2)
        gpa2("cuMemAlloc", &p, 12000, 0, &st);
    if (strcmp(path, "gpa-direct") == 0)
        cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 0, &st);
    return (alloc_fn)p;
}

/* Allocate chunk bytes through fn until refused; free them all. */
static void run_path(const char *path, size_t chunk)
{
    alloc_fn fn = path_fn(path);
    CHECK(fn != NULL, "%s: no function", path);
    if (!fn)
        return;
    CUdeviceptr ptrs[4096];
    int n = 0;
    CUresult r = CUDA_SUCCESS;
    while (n < 4096 && (r = fn(&ptrs[n], chunk)) == CUDA_SUCCESS)
        n++;
    printf("path=%s allocs=%d rc=%d used=%zu\n", path, n, r, used_now());
    CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "%s: refused with %d, not out of memory", path, r);
    for (int i = 0; i < n; i++)
        CHECK(cuMemFree_v2(ptrs[i]) == CUDA_SUCCESS, "%s: free %d", path, i);
    CHECK(used_now() == 0, "%s: %zu bytes still charged after the frees", path, used_now());
    CHECK(fn(&ptrs[0], chunk) == CUDA_SUCCESS, "%s: no room after the frees", path);
    cuMemFree_v2(ptrs[0]);
}

static int mode_paths(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    size_t chunk = strtoull(argv[0], NULL, 10);
    const char *paths[] = {"direct", "dlsym", "dlsym-default", "gpa", "gpa2", "gpa-direct"};
    cuInit(0);
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        run_path(paths[i], chunk);
    /* The per-thread-default-stream variant of an async allocation. */
    void *p = NULL;
    CUdeviceptr d;
    cuGetProcAddress("cuMemAllocAsync", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUresult (*async)(CUdeviceptr *, size_t,
                      CUstream) = (CUresult(*)(CUdeviceptr *, size_t, CUstream))p;
    CHECK(async && async(&d, chunk, NULL) == CUDA_SUCCESS, "ptsz async alloc");
    printf("path=ptsz used=%zu\n", used_now());
    CHECK(used_now() == chunk, "ptsz: charged %zu, expected %zu", used_now(), chunk);
    cuMemFreeAsync(d, NULL);
    /* The default pool keeps what is freed until the next synchronisation. */
    CHECK(used_now() == chunk, "ptsz: %zu charged after the free, expected %zu (pool)", used_now(),
          chunk);
    cuStreamSynchronize(NULL);
    CHECK(used_now() == 0, "ptsz: %zu left after free and sync", used_now());
    return 0;
}

/* ---- kinds --------------------------------------------------------------- */

static size_t total_limit(void)
{
    size_t fr, tot;
    cuMemGetInfo_v2(&fr, &tot);
    return tot;
}

/* One kind: used goes up by want after alloc and back to 0 after free. */
#define KIND(name, want, alloc_call, free_call)                                                 \
    do {                                                                                        \
        CUresult r_ = (alloc_call);                                                             \
        size_t u_ = used_now();                                                                 \
        printf("kind=%s rc=%d charged=%zu\n", name, r_, u_);                                    \
        CHECK(r_ == CUDA_SUCCESS, "%s: rc %d", name, r_);                                       \
        CHECK(u_ == (size_t)(want), "%s: charged %zu, expected %zu", name, u_, (size_t)(want)); \
        CHECK((free_call) == CUDA_SUCCESS, "%s: free failed", name);                            \
        CHECK(used_now() == 0, "%s: %zu left after free", name, used_now());                    \
    } while (0)

static int mode_kinds(void)
{
    CUdeviceptr d;
    size_t pitch = 0, lim = total_limit();
    CUmemoryPool pool = NULL;
    CUmemPoolProps props = {0};
    CHECK(cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS, "no pool");
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    CUarray arr;
    memset(&prop, 0, sizeof(prop));
    cuInit(0);
    KIND("alloc", 1000, cuMemAlloc_v2(&d, 1000), cuMemFree_v2(d));
    KIND("pitch", 1024 * 7, cuMemAllocPitch_v2(&d, &pitch, 600, 7, 4), cuMemFree_v2(d));
    CHECK(pitch == 1024, "pitch %zu", pitch);
    KIND("managed", 4096, cuMemAllocManaged(&d, 4096, CU_MEM_ATTACH_GLOBAL), cuMemFree_v2(d));
    KIND("async", 5000, cuMemAllocAsync(&d, 5000, NULL),
         (cuMemFreeAsync(d, NULL), cuStreamSynchronize(NULL)));
    KIND("pool", 6000, cuMemAllocFromPoolAsync(&d, 6000, pool, NULL),
         (cuMemFreeAsync(d, NULL), cuStreamSynchronize(NULL)));
    KIND(
        "vmm", 256u << 10, cuMemCreate(&h, 256u << 10, &prop, 0),
        (cuMemMap(0x10000, 256u << 10, 0, h, 0), cuMemUnmap(0x10000, 256u << 10), cuMemRelease(h)));
    CUDA_ARRAY_DESCRIPTOR a2 = {100, 50, CU_AD_FORMAT_HALF, 4};
    KIND("array2d", 100 * 50 * 2 * 4, cuArrayCreate_v2(&arr, &a2), cuArrayDestroy(arr));
    CUDA_ARRAY_DESCRIPTOR a1 = {300, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1};
    KIND("array1d", 300, cuArrayCreate_v2(&arr, &a1), cuArrayDestroy(arr));
    CUDA_ARRAY3D_DESCRIPTOR a3 = {16, 8, 4, CU_AD_FORMAT_FLOAT, 2, 0};
    KIND("array3d", 16 * 8 * 4 * 4 * 2, cuArray3DCreate_v2(&arr, &a3), cuArrayDestroy(arr));
    /* Over the limit, each kind is refused with out of memory. */
    CUDA_ARRAY3D_DESCRIPTOR big3 = {lim, 2, 1, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
    CUresult over[] = {
        cuMemAlloc_v2(&d, lim + 1),
        cuMemAllocPitch_v2(&d, &pitch, lim, 2, 4),
        cuMemAllocManaged(&d, lim + 1, 1),
        cuMemAllocAsync(&d, lim + 1, NULL),
        cuMemAllocFromPoolAsync(&d, lim + 1, pool, NULL),
        cuMemCreate(&h, lim + 1, &prop, 0),
        cuArray3DCreate_v2(&arr, &big3),
    };
    for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++)
        CHECK(over[i] == CUDA_ERROR_OUT_OF_MEMORY, "over-limit kind %zu: rc %d", i, over[i]);
    CHECK(used_now() == 0, "refusals left %zu charged", used_now());
    /* Frees of what was never allocated credit nothing. */
    CHECK(cuMemFree_v2(0) != CUDA_SUCCESS, "free of 0 succeeded");
    CHECK(cuMemRelease(12345) != CUDA_SUCCESS, "release of a bad handle succeeded");
    CHECK(used_now() == 0, "bad frees changed the charge to %zu", used_now());
    printf("kinds_checked=1\n");
    return 0;
}

/* ---- info, try, hold ----------------------------------------------------- */

static int mode_info(void)
{
    size_t fr = 0, tot = 0, dev_tot = 0;
    cuInit(0);
    CUresult r = cuMemGetInfo_v2(&fr, &tot);
    cuDeviceTotalMem_v2(&dev_tot, 0);
    printf("rc=%d free=%zu total=%zu device_total=%zu\n", r, fr, tot, dev_tot);
    return 0;
}

/* cuInit, then one cuMemAlloc_v2 of the decimal bytes: prints rc=N. */
static CUresult alloc_once(const char *bytes, CUdeviceptr *d)
{
    cuInit(0);
    CUresult r = cuMemAlloc_v2(d, strtoull(bytes, NULL, 10));
    printf("rc=%d\n", r);
    return r;
}

static int mode_try(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    CUdeviceptr d;
    CUresult r = alloc_once(argv[0], &d);
    if (r == CUDA_SUCCESS)
        cuMemFree_v2(d);
    return r == CUDA_SUCCESS ? 0 : 3;
}

static int mode_hold(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    CUdeviceptr d;
    CUresult r = alloc_once(argv[0], &d);
    fflush(stdout);
    FILE *f = fopen(argv[1], "w");
    if (f) {
        fprintf(f, "%d\n", r);
        fclose(f);
    }
    for (;;)
        pause(); /* until killed */
}

/* ---- threads --------------------------------------------------------------- */

struct worker {
    int n;
    size_t bytes, limit;
    size_t (*live)(void);
    _Atomic int *over, *ok;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < w->n; i++) {
        CUdeviceptr d;
        if (cuMemAlloc_v2(&d, w->bytes) != CUDA_SUCCESS)
            continue;
        atomic_fetch_add(w->ok, 1);
        if (w->live() > w->limit)
            atomic_fetch_add(w->over, 1);
        cuMemFree_v2(d);
    }
    return NULL;
}

static int mode_threads(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int t = atoi(argv[0]);
    _Atomic int over = 0, ok = 0;
    struct worker w = {atoi(argv[1]), strtoull(argv[2], NULL, 10), total_limit(), NULL, &over, &ok};
    w.live = (size_t(*)(void))dlsym(driver(), "tessera_standin_allocated_bytes");
    if (t < 1 || t > 64 || !w.live)
        return 2;
    pthread_t th[64];
    for (int i = 0; i < t; i++)
        pthread_create(&th[i], NULL, work, &w);
    for (int i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    printf("threads=%d ok=%d over=%d used=%zu live=%zu\n", t, atomic_load(&ok), atomic_load(&over),
           used_now(), w.live());
    CHECK(atomic_load(&over) == 0, "the driver held more than the limit %d times",
          atomic_load(&over));
    CHECK(used_now() == 0 && w.live() == 0, "not back to 0");
    CHECK(atomic_load(&ok) > 0, "no allocation succeeded");
    return 0;
}

/* ---- launch, bench --------------------------------------------------------- */

static CUresult launch_one(int path, CUfunction f, uint32_t *us, CUgraphExec g)
{
    void *params[] = {us};
    CUlaunchConfig cfg = {1, 1, 1, 1, 1, 1, 0, NULL, NULL, 0};
    switch (path) {
    case 0: return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    case 1: return cuLaunchKernelEx(&cfg, f, params, NULL);
    case 2: return cuLaunchCooperativeKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params);
    default: return cuGraphLaunch(g, NULL);
    }
}

static CUresult launch_legacy(int path, CUfunction f)
{
    CUDA_LAUNCH_PARAMS p = {f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL};
    switch (path) {
    case 0: return cuLaunch(f);
    case 1: return cuLaunchGrid(f, 1, 1);
    case 2: return cuLaunchGridAsync(f, 1, 1, NULL);
    default: return cuLaunchCooperativeKernelMultiDevice(&p, 1, 0);
    }
}

/* This process's host pid (NSpid's first field), as the stand-in counts. */
static int host_pid(void)
{
    char line[256];
    int pid = (int)getpid();
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "NSpid:", 6) == 0)
            pid = atoi(line + 6);
    if (f)
        fclose(f);
    return pid;
}

/* Launches mode launch keeps in flight (double buffering: the card stays
 * busy while the host turns around). */
#define LAUNCH_DEPTH 8

static int mode_launch(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    double secs = atof(argv[0]);
    uint32_t us = (uint32_t)atoi(argv[1]);
    int mix = strcmp(argv[2], "all") == 0, legacy = strcmp(argv[2], "legacy") == 0;
    CUmodule m;
    CUfunction f;
    cuInit(0);
    cuModuleLoadData(&m, "any image");
    cuModuleGetFunction(&f, m, "tessera_sleep_us");
    CUgraphExec (*graph)(uint32_t) = (CUgraphExec(*)(uint32_t))dlsym(
        driver(), "tessera_standin_graph_create");
    CUgraphExec g = graph ? graph(us) : NULL;
    CUevent ev[LAUNCH_DEPTH];
    for (int i = 0; i < LAUNCH_DEPTH; i++)
        cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING);
    uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
    long n = 0;
    while (now_ns() < end) {
        if (n >= LAUNCH_DEPTH) /* launches are asynchronous: wait for the oldest */
            cuEventSynchronize(ev[n % LAUNCH_DEPTH]);
        CUresult r = legacy ? launch_legacy((int)(n % 4), f)
                            : launch_one(mix ? (int)(n % 4) : 0, f, &us, g);
        CHECK(r == CUDA_SUCCESS, "launch %ld: rc %d", n, r);
        if (r != CUDA_SUCCESS)
            break;
        cuEventRecord(ev[n % LAUNCH_DEPTH], NULL);
        n++;
    }
    cuCtxSynchronize();
    for (int i = 0; i < LAUNCH_DEPTH; i++)
        cuEventDestroy_v2(ev[i]);
    uint64_t (*busy)(int) = (uint64_t(*)(int))dlsym(driver(), "tessera_standin_busy_ns");
    uint64_t (*dry)(int) = (uint64_t(*)(int))dlsym(driver(), "tessera_standin_dry_ns");
    printf("launches=%ld busy_ns=%llu dry_ns=%llu\n", n,
           busy ? (unsigned long long)busy(host_pid()) : 0ull,
           dry ? (unsigned long long)dry(host_pid()) : 0ull);
    if (g)
        cuGraphExecDestroy(g);
    cuModuleUnload(m);
    return 0;
}

/* Kernels of us microseconds on the NULL stream, never waited for, until
 * secs pass or max were launched; the most pending at once (the stand-in's
 * count of this process's kernels not yet ended, or with "card" every
 * process's), then all waited for; with "idle", only after 3 s of doing
 * nothing (a process that stopped launching and never synchronised). */
static int mode_queue(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    double secs = atof(argv[0]);
    uint32_t us = (uint32_t)atoi(argv[1]);
    long max = atol(argv[2]), n = 0;
    unsigned (*pending)(int) = (unsigned (*)(int))dlsym(driver(), "tessera_standin_pending");
    uint64_t (*busy)(int) = (uint64_t(*)(int))dlsym(driver(), "tessera_standin_busy_ns");
    CUmodule m;
    CUfunction f;
    if (!pending || !busy)
        return 2;
    cuInit(0);
    cuModuleLoadData(&m, "any image");
    cuModuleGetFunction(&f, m, "tessera_sleep_us");
    uint64_t t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9);
    unsigned most = 0;
    int pid = host_pid(), whom = argc > 3 && strcmp(argv[3], "card") == 0 ? 0 : pid;
    int ctx = argc > 3 && strcmp(argv[3], "ctx") == 0;
    CUcontext c = NULL;
    if (ctx)
        CHECK(cuCtxCreate_v2(&c, 0, 0) == CUDA_SUCCESS, "cuCtxCreate_v2");
    for (; n < max && now_ns() < end; n++) {
        CUresult r = launch_one(0, f, &us, NULL);
        CHECK(r == CUDA_SUCCESS, "launch %ld: rc %d", n, r);
        unsigned p = pending(whom);
        most = p > most ? p : most;
    }
    uint64_t t1 = now_ns();
    if (c) { /* destroyed with kernels queued: the shim's bound waits for its own */
        cuCtxDestroy_v2(c);
        printf("pending_after_destroy=%u\n", pending(pid));
    }
    if (argc > 3 && strcmp(argv[3], "idle") == 0)
        usleep(3000000);
    cuCtxSynchronize();
    printf("launches=%ld max_pending=%u max_outstanding_ns=%llu submit_ns=%llu busy_ns=%llu\n", n,
           most, (unsigned long long)most * us * 1000, (unsigned long long)(t1 - t0),
           (unsigned long long)busy(pid));
    cuModuleUnload(m);
    return 0;
}

/* ns per launch of an empty kernel (tessera_sleep_us(0)) on the NULL
 * stream, n of them back to back, then one wait. */
static int mode_launch_bench(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    long n = atol(argv[0]);
    uint32_t us = 0;
    CUmodule m;
    CUfunction f;
    cuInit(0);
    cuModuleLoadData(&m, "any image");
    cuModuleGetFunction(&f, m, "tessera_sleep_us");
    launch_one(0, f, &us, NULL); /* maps the card */
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        launch_one(0, f, &us, NULL);
    uint64_t t1 = now_ns();
    cuCtxSynchronize();
    printf("launch_ns=%.1f\n", (double)(t1 - t0) / (double)n);
    cuModuleUnload(m);
    return 0;
}

static int mode_bench(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    long n = atol(argv[0]);
    size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096;
    CUdeviceptr d;
    cuInit(0);
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        cuMemAlloc_v2(&d, bytes);
        cuMemFree_v2(d);
    }
    printf("pair_ns=%.1f\n", (double)(now_ns() - t0) / (double)n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: shim_probe MODE ARGS...\n");
        return 2;
    }
    const char *m = argv[1];
    int rc = strcmp(m, "paths") == 0          ? mode_paths(argc - 2, argv + 2)
             : strcmp(m, "kinds") == 0        ? mode_kinds()
             : strcmp(m, "info") == 0         ? mode_info()
             : strcmp(m, "try") == 0          ? mode_try(argc - 2, argv + 2)
             : strcmp(m, "hold") == 0         ? mode_hold(argc - 2, argv + 2)
             : strcmp(m, "threads") == 0      ? mode_threads(argc - 2, argv + 2)
             : strcmp(m, "launch") == 0       ? mode_launch(argc - 2, argv + 2)
             : strcmp(m, "bench") == 0        ? mode_bench(argc - 2, argv + 2)
             : strcmp(m, "queue") == 0        ? mode_queue(argc - 2, argv + 2)
             : strcmp(m, "launch-bench") == 0 ? mode_launch_bench(argc - 2, argv + 2)
                                              : 2;
    if (rc == 2)
        fprintf(stderr, "shim_probe: bad usage of mode '%s'\n", m);
    return rc != 0 ? rc : failures ? 1 : 0;
}
