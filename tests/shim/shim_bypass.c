/*
 * shim_bypass.c - one probe per way an application could hold device memory
 * past the shim's limit, run by tests/cli/shim_bypass.sh under
 * LD_PRELOAD=libtessera-cuda.so against the stand-in driver. Each probe
 * tries as hard as the bypass allows, then prints
 *     probe=NAME held=BYTES limit=BYTES times=X.XX
 * where held is the most device memory the driver itself ever held for
 * this process: the stand-in's own counter (tessera_standin_allocated_bytes,
 * not the shim's count), or on a real card (scripts/gpu-check, built
 * without the stand-in) NVML's used memory of device 0 above what it was
 * at the start (other processes on the card count too), and
 * times is held / limit; it exits 0 when held <= limit and every check
 * passed, 1 otherwise ("FAIL:" lines), 2 on usage. The limit is read from
 * cuMemGetInfo_v2's total (what the shim shows).
 *   vmm        cuMemCreate + cuMemMap + cuMemRelease, 8 rounds, unmap last
 *   sparse     a sparse array; 8 rounds of cuMemCreate (7/8 limit), map
 *              into a tile with cuMemMapArrayAsync, cuMemRelease
 *   ctx        32 contexts (cuCtxCreate_v2), the primary one retained twice:
 *              run with TESSERA_STANDIN_CTX_MEM so the stand-in's contexts
 *              hold memory like a real driver's
 *   ctx4       32 contexts, in turn by cuCtxCreate_v4 (CUDA 13.0's
 *              cuCtxCreate, NULL params), cuCtxCreate_v3 (an SM-count
 *              affinity) and what cuGetProcAddress("cuCtxCreate", 13000)
 *              hands out; with TESSERA_STANDIN_CTX_MEM as for ctx
 *   ctxlegacy  32 contexts, in turn by the unversioned cuCtxCreate and
 *              what cuGetProcAddress("cuCtxCreate", 3000) hands out
 *              (destroyed by cuCtxDestroy); with TESSERA_STANDIN_CTX_MEM as
 *              for ctx
 *   green      32 green contexts (cuGreenCtxCreate on all of device 0's
 *              SMs), no primary context retained before: each retains
 *              it; with TESSERA_STANDIN_CTX_MEM as for ctx
 *   drift MS   contexts (cuCtxCreate_v2), MS milliseconds apart, until
 *              refused: run with TESSERA_STANDIN_CTX_MEM above the shim's
 *              estimate, so the driver holds more than the shim charged
 *              (what memoryBackstop is for)
 *   legacy     cuMemAlloc / cuMemAllocPitch / cuArrayCreate / cuArray3DCreate
 *              (the unversioned 32-bit entry points) until refused
 *   mipmap     cuMipmappedArrayCreate until refused
 *   heap       cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE) to 4x the limit
 *   pending    cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT)
 *              to 2048 + the limit / 1 KiB launches (4x the limit at the
 *              stand-in's 4 KiB a launch), then 2048 + limit / 8 KiB (half)
 *   stack      cuCtxSetLimit(CU_LIMIT_STACK_SIZE) to 2 KiB a thread (the
 *              driver reserves it for every resident thread: 3.12x a 64 MiB
 *              limit on the stand-in's 100 SMs x 2048 threads), then 1088
 *              bytes (12.5 MiB in all, within the limit)
 *   setlimit   5 rounds: cuMemAlloc_v2 7/8 of the limit, then cuCtxSetLimit
 *              refused (by the shim) for the heap, 2^40 and SIZE_MAX pending
 *              launches, the printf FIFO, a SIZE_MAX heap and the stack: the
 *              charge must be what it was after each (the primary context
 *              retained first); then a heap in the limit, which the card
 *              refuses with TESSERA_STANDIN_CTX_MEM=128M and
 *              TESSERA_STANDIN_TOTAL_MEM at the limit
 *   defpool    cuMemAllocAsync 7/8 of the limit (the device's default pool),
 *              cuMemFreeAsync, then cuMemAlloc_v2 7/8 before any
 *              synchronisation (the pool still holds the first), then after one
 *              (cuCtxSynchronize_v2)
 *   pool       8 pools that keep everything (release threshold UINT64_MAX):
 *              allocate 7/8 of the limit from each, free, synchronise
 *   graph      8 graphs, each one allocation node of 7/8 of the limit,
 *              instantiated and launched (the upload allocates)
 *   graphv2    per instantiate entry point (cuGraphInstantiate, _v2,
 *              cuGraphInstantiateWithParams, its _ptsz and itself with
 *              CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, what cuGetProcAddress
 *              hands out for "cuGraphInstantiate" at 11000, 10000 and 13000
 *              and for "cuGraphInstantiateWithParams" per thread): two graphs
 *              of 7/8 of the limit instantiated and launched, then destroyed
 *   module     per loader (cuModuleLoad, cuModuleLoadData, cuModuleLoadDataEx,
 *              cuModuleLoadFatBinary, cuLibraryLoadData, cuLibraryLoadFromFile):
 *              two loads of a stand-in module image (standin.h) whose
 *              __device__ globals and code take 7/8 of the limit, then unloaded
 *   next       dlsym(RTLD_NEXT, "cuMemAlloc_v2") from shim_nextlib, a
 *              library loaded after the shim and before the driver
 *   gpa        cuGetProcAddress("cuMemAlloc", 12000) and at 3010 (legacy)
 *   table N    N live 64-byte allocations: none refused (limit permitting)
 *   export FILE BYTES  (the other container) two allocations and two VMM
 *              handles of BYTES each, exported: IPC handles and fds written
 *              to FILE, then wait to be killed
 *   import FILE  open both IPC handles, then import both pool pointers:
 *              what is imported is held here, and charged here
 *   share FILE import and map both fds: what is imported is held here
 *              from the import on, and charged here
 *   unmapped FILE  import both fds and hold them, never mapped: the
 *              import alone keeps the exporter's memory alive
 *   fork       hold half the limit, fork, free it in the child: the parent's
 *              charge stays (fork_parent_charged=)
 *   exec       hold 3/4 of the limit, exec this program's "after-exec": the
 *              new image is not charged the old one's memory and can take
 *              3/4 of the limit itself
 */
#include "util/cuda_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../check.h"

/* The stand-in's counter; absent (NULL) when built against a real driver. */
size_t tessera_standin_allocated_bytes(void) __attribute__((weak));

static size_t peak;

#define MAXN 64

/* NVML's used bytes of device 0 (real cards): 0 when NVML is missing. The
 * memory struct is nvmlMemory_t {total, free, used} (unsigned long long). */
static size_t nvml_used(void)
{
    static int (*get)(void *, unsigned long long *), tried;
    static void *dev;
    if (!tried) {
        tried = 1;
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "nvmlInit_v2") : NULL;
        int (*by_index)(unsigned, void **) = h ? (int (*)(unsigned, void **))dlsym(
                                                     h, "nvmlDeviceGetHandleByIndex_v2")
                                               : NULL;
        if (init && by_index && init() == 0 && by_index(0, &dev) == 0)
            get = (int (*)(void *, unsigned long long *))dlsym(h, "nvmlDeviceGetMemoryInfo");
    }
    unsigned long long m[3] = {0, 0, 0};
    return get && get(dev, m) == 0 ? (size_t)m[2] : 0;
}

static size_t base_used;

static size_t driver_held(void)
{
    if (tessera_standin_allocated_bytes)
        return tessera_standin_allocated_bytes();
    size_t u = nvml_used();
    return u > base_used ? u - base_used : 0;
}

static void sample(void)
{
    size_t now = driver_held();
    if (now > peak)
        peak = now;
}

static size_t limit_now(void)
{
    size_t fr = 0, tot = 0;
    cuMemGetInfo_v2(&fr, &tot);
    return tot;
}

static size_t charged(void)
{
    size_t fr = 0, tot = 0;
    cuMemGetInfo_v2(&fr, &tot);
    return tot - fr;
}

static int report(const char *name, size_t limit)
{
    printf("probe=%s held=%zu limit=%zu times=%.2f\n", name, peak, limit,
           limit ? (double)peak / (double)limit : 0.0);
    CHECK(peak <= limit, "%s: the driver held %zu bytes, limit %zu", name, peak, limit);
    return failures ? 1 : 0;
}

/* ---- VMM: released while mapped ----------------------------------------- */

/* Pinned device memory on device 0 (what a real driver requires). */
static void device_props(CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof(*prop));
    prop->type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
    prop->location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
    prop->location.id = 0;
}

static int probe_vmm(size_t limit)
{
    CUmemAllocationProp prop;
    CUdeviceptr va[8];
    size_t chunk = (limit * 7 / 8) & ~(size_t)0x1fffff; /* 2 MiB granularity */
    int mapped = 0;
    device_props(&prop);
    for (int i = 0; i < 8; i++) {
        CUmemGenericAllocationHandle h;
        if (cuMemCreate(&h, chunk, &prop, 0) != CUDA_SUCCESS)
            continue;
        CHECK(cuMemAddressReserve(&va[mapped], chunk, 0, 0, 0) == CUDA_SUCCESS, "reserve %d", i);
        CHECK(cuMemMap(va[mapped], chunk, 0, h, 0) == CUDA_SUCCESS, "map %d", i);
        mapped++;
        CHECK(cuMemRelease(h) == CUDA_SUCCESS, "release %d", i);
        sample();
    }
    printf("vmm_mapped=%d charged_while_mapped=%zu\n", mapped, charged());
    CHECK(mapped == 0 || charged() >= chunk, "a mapped allocation is not charged");
    for (int i = 0; i < mapped; i++) {
        CHECK(cuMemUnmap(va[i], chunk) == CUDA_SUCCESS, "unmap %d", i);
        cuMemAddressFree(va[i], chunk);
    }
    CHECK(charged() == 0, "%zu bytes still charged after the unmaps", charged());
    CHECK(!tessera_standin_allocated_bytes || tessera_standin_allocated_bytes() == 0,
          "the driver still holds memory");
    return report("vmm", limit);
}

static CUarrayMapInfo tile(CUarray a, unsigned i, int op, CUmemGenericAllocationHandle h)
{
    CUarrayMapInfo m;
    memset(&m, 0, sizeof(m));
    m.resourceType = CU_RESOURCE_TYPE_ARRAY;
    m.resource.array = a;
    m.subresource.sparseLevel.offsetX = i * 64;
    m.subresource.sparseLevel.extentWidth = 64;
    m.subresource.sparseLevel.extentHeight = 64;
    m.subresource.sparseLevel.extentDepth = 1;
    m.memOperationType = op;
    m.memHandle.memHandle = h;
    m.deviceBitMask = 1;
    return m;
}

static int probe_sparse(size_t limit)
{
    CUmemAllocationProp prop;
    CUarray a;
    CUDA_ARRAY3D_DESCRIPTOR d = {64 * 8, 64, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SPARSE};
    size_t chunk = (limit * 7 / 8) & ~(size_t)0x1fffff;
    unsigned mapped = 0;
    device_props(&prop);
    CHECK(cuArray3DCreate_v2(&a, &d) == CUDA_SUCCESS, "sparse array");
    CHECK(charged() == 0, "a sparse array charged %zu", charged());
    for (unsigned i = 0; i < 8; i++) {
        CUmemGenericAllocationHandle h;
        if (cuMemCreate(&h, chunk, &prop, 0) != CUDA_SUCCESS)
            continue;
        CUarrayMapInfo m = tile(a, mapped, CU_MEM_OPERATION_TYPE_MAP, h);
        CHECK(cuMemMapArrayAsync(&m, 1, NULL) == CUDA_SUCCESS, "map tile %u", i);
        mapped++;
        CHECK(cuMemRelease(h) == CUDA_SUCCESS, "release %u", i);
        sample();
    }
    printf("tiles_mapped=%u charged_while_mapped=%zu\n", mapped, charged());
    for (unsigned i = 0; i < mapped; i++) {
        CUarrayMapInfo m = tile(a, i, CU_MEM_OPERATION_TYPE_UNMAP, 0);
        CHECK(cuMemMapArrayAsync(&m, 1, NULL) == CUDA_SUCCESS, "unmap tile %u", i);
    }
    CHECK(cuArrayDestroy(a) == CUDA_SUCCESS, "destroy");
    CHECK(charged() == 0, "%zu bytes still charged after the unmaps", charged());
    CHECK(!tessera_standin_allocated_bytes || tessera_standin_allocated_bytes() == 0,
          "the driver still holds memory");
    return report("sparse", limit);
}

static int probe_ctx(size_t limit)
{
    CUcontext c[32], p1, p2;
    int made = 0;
    CHECK(cuDevicePrimaryCtxRetain(&p1, 0) == CUDA_SUCCESS, "primary");
    CHECK(cuDevicePrimaryCtxRetain(&p2, 0) == CUDA_SUCCESS, "primary again");
    sample();
    size_t primary = charged();
    for (int i = 0; i < 32; i++)
        if (cuCtxCreate_v2(&c[made], 0, 0) == CUDA_SUCCESS)
            made++, sample();
    printf("primary_charged=%zu contexts=%d charged=%zu\n", primary, made, charged());
    for (int i = 0; i < made; i++)
        CHECK(cuCtxDestroy_v2(c[i]) == CUDA_SUCCESS, "destroy %d", i);
    cuDevicePrimaryCtxRelease_v2(0);
    CHECK(charged() == primary, "one release of two: %zu charged, not %zu", charged(), primary);
    cuDevicePrimaryCtxRelease_v2(0);
    CHECK(charged() == 0, "%zu bytes still charged after the releases", charged());
    return report("ctx", limit);
}

typedef CUresult (*ctx_fn)(CUcontext *, unsigned int, CUdevice);

static int probe_ctxlegacy(size_t limit)
{
    CUcontext c[32];
    void *gpa = NULL;
    CHECK(cuGetProcAddress_v2("cuCtxCreate", &gpa, 3000, 0, NULL) == CUDA_SUCCESS && gpa,
          "cuGetProcAddress(cuCtxCreate, 3000)");
    int made = 0;
    for (int i = 0; i < 32; i++) {
        CUresult r = i % 2 == 0 ? cuCtxCreate(&c[made], 0, 0)
                     : gpa      ? ((ctx_fn)gpa)(&c[made], 0, 0)
                                : CUDA_ERROR_NOT_FOUND;
        if (r == CUDA_SUCCESS)
            made++, sample();
    }
    printf("ctxlegacy_contexts=%d charged=%zu\n", made, charged());
    for (int i = 0; i < made; i++)
        CHECK(cuCtxDestroy(c[i]) == CUDA_SUCCESS, "destroy %d", i);
    CHECK(charged() == 0, "%zu bytes still charged after the destroys", charged());
    return report("ctxlegacy", limit);
}

static int probe_green(size_t limit)
{
    _Alignas(16) unsigned char res[CU_DEV_RESOURCE_BYTES_MAX];
    CUdevResourceDesc desc = NULL;
    CUgreenCtx g[32];
    int made = 0;
    CHECK(cuDeviceGetDevResource(0, (CUdevResource *)res, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS,
          "device 0's SMs");
    CHECK(cuDevResourceGenerateDesc(&desc, (CUdevResource *)res, 1) == CUDA_SUCCESS, "desc");
    for (int i = 0; i < 32 && desc; i++)
        if (cuGreenCtxCreate(&g[made], desc, 0, CU_GREEN_CTX_DEFAULT_STREAM) == CUDA_SUCCESS)
            made++, sample();
    printf("green_contexts=%d charged=%zu\n", made, charged());
    for (int i = 0; i < made; i++)
        CHECK(cuGreenCtxDestroy(g[i]) == CUDA_SUCCESS, "destroy %d", i);
    CHECK(charged() == 0, "%zu bytes still charged after the destroys", charged());
    return report("green", limit);
}

typedef CUresult (*ctx4_fn)(CUcontext *, CUctxCreateParams *, unsigned int, CUdevice);

static int probe_ctx4(size_t limit)
{
    CUcontext c[32];
    CUexecAffinityParam aff = {0, {{50}}};
    void *gpa = NULL;
    CHECK(cuGetProcAddress_v2("cuCtxCreate", &gpa, 13000, 0, NULL) == CUDA_SUCCESS && gpa,
          "cuGetProcAddress(cuCtxCreate, 13000)");
    int made = 0;
    for (int i = 0; i < 32; i++) {
        CUresult r = i % 3 == 0   ? cuCtxCreate_v4(&c[made], NULL, 0, 0)
                     : i % 3 == 1 ? cuCtxCreate_v3(&c[made], &aff, 1, 0, 0)
                     : gpa        ? ((ctx4_fn)gpa)(&c[made], NULL, 0, 0)
                                  : CUDA_ERROR_NOT_FOUND;
        if (r == CUDA_SUCCESS)
            made++, sample();
    }
    printf("ctx4_contexts=%d charged=%zu\n", made, charged());
    for (int i = 0; i < made; i++)
        CHECK(cuCtxDestroy_v2(c[i]) == CUDA_SUCCESS, "destroy %d", i);
    CHECK(charged() == 0, "%zu bytes still charged after the destroys", charged());
    return report("ctx4", limit);
}

static int probe_drift(size_t limit, unsigned ms)
{
    CUcontext c[32];
    int made = 0;
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000l};
    for (int i = 0; i < 32; i++) {
        if (cuCtxCreate_v2(&c[made], 0, 0) != CUDA_SUCCESS)
            break;
        made++, sample();
        nanosleep(&ts, NULL);
    }
    printf("drift_contexts=%d\n", made);
    for (int i = 0; i < made; i++)
        CHECK(cuCtxDestroy_v2(c[i]) == CUDA_SUCCESS, "destroy %d", i);
    return report("drift", limit);
}

/* ---- legacy entry points ------------------------------------------------ */

static int probe_legacy(size_t limit)
{
    CUdeviceptr_v1 p[MAXN];
    CUarray a[MAXN];
    int n = 0, k = 0;
    unsigned chunk = (unsigned)(limit / 4), pitch = 0;
    while (n < MAXN && cuMemAlloc(&p[n], chunk) == CUDA_SUCCESS)
        n++, sample();
    while (n < MAXN && cuMemAllocPitch(&p[n], &pitch, chunk / 64, 64, 4) == CUDA_SUCCESS)
        n++, sample();
    CUDA_ARRAY_DESCRIPTOR_v1 d = {chunk / 4, 1, CU_AD_FORMAT_FLOAT, 1};
    while (k < MAXN && cuArrayCreate(&a[k], &d) == CUDA_SUCCESS)
        k++, sample();
    CUDA_ARRAY3D_DESCRIPTOR_v1 d3 = {chunk / 16, 2, 2, CU_AD_FORMAT_FLOAT, 1, 0};
    while (k < MAXN && cuArray3DCreate(&a[k], &d3) == CUDA_SUCCESS)
        k++, sample();
    printf("legacy_allocs=%d arrays=%d\n", n, k);
    CHECK(n >= 1, "no legacy allocation at all (the driver's own limit?)");
    for (int i = 0; i < n; i++)
        CHECK(cuMemFree(p[i]) == CUDA_SUCCESS, "free %d", i);
    for (int i = 0; i < k; i++)
        CHECK(cuArrayDestroy(a[i]) == CUDA_SUCCESS, "destroy %d", i);
    CHECK(charged() == 0, "%zu bytes still charged after the frees", charged());
    return report("legacy", limit);
}

/* ---- mipmapped arrays, the device heap ---------------------------------- */

static int probe_mipmap(size_t limit)
{
    CUmipmappedArray m[MAXN];
    int n = 0;
    /* 4 levels of w x 16 x 4-byte texels: 16w * (4 + 1 + 1/4 + 1/16) bytes */
    CUDA_ARRAY3D_DESCRIPTOR d = {limit / 64 / 4, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    while (n < MAXN && cuMipmappedArrayCreate(&m[n], &d, 4) == CUDA_SUCCESS)
        n++, sample();
    printf("mipmaps=%d\n", n);
    CHECK(n >= 1, "no mipmapped array at all");
    for (int i = 0; i < n; i++)
        CHECK(cuMipmappedArrayDestroy(m[i]) == CUDA_SUCCESS, "destroy %d", i);
    CHECK(charged() == 0, "%zu bytes still charged after the destroys", charged());
    return report("mipmap", limit);
}

static int probe_heap(size_t limit)
{
    size_t want = (8u << 20) + limit * 4, got = 0;
    CUresult r = cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, want);
    sample();
    cuCtxGetLimit(&got, CU_LIMIT_MALLOC_HEAP_SIZE);
    printf("heap_rc=%d heap=%zu\n", r, got);
    CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, limit / 2) == CUDA_SUCCESS, "a heap in limit");
    sample();
    CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8u << 20) == CUDA_SUCCESS, "back to 8 MiB");
    return report("heap", limit);
}

static int probe_pending(size_t limit)
{
    size_t got = 0;
    CUresult r = cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, 2048 + limit / 1024);
    sample();
    cuCtxGetLimit(&got, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT);
    printf("pending_rc=%d pending=%zu\n", r, got);
    CHECK(cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, 2048 + limit / 8192) ==
              CUDA_SUCCESS,
          "pending launches in limit");
    sample();
    printf("pending_in_limit_charged=%zu\n", charged());
    CHECK(cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, 2048) == CUDA_SUCCESS,
          "back to 2048");
    CHECK(charged() == 0, "%zu bytes still charged at the default count", charged());
    return report("pending", limit);
}

static int probe_stack(size_t limit)
{
    size_t got = 0;
    CUresult r = cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2048);
    sample();
    cuCtxGetLimit(&got, CU_LIMIT_STACK_SIZE);
    printf("stack_rc=%d stack=%zu\n", r, got);
    CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1088) == CUDA_SUCCESS, "a stack in limit");
    sample();
    printf("stack_in_limit_charged=%zu\n", charged());
    CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024) == CUDA_SUCCESS, "back to 1 KiB");
    CHECK(charged() == 0, "%zu bytes still charged at the default stack", charged());
    return report("stack", limit);
}

/* One refused cuCtxSetLimit(l, v): the charge must be what it was. */
static void refused_keeps(CUlimit l, size_t v, const char *what)
{
    size_t c0 = charged();
    CUresult r = cuCtxSetLimit(l, v);
    sample();
    CHECK(r != CUDA_SUCCESS, "%s was granted", what);
    CHECK(charged() == c0, "%s refused (rc %d): charged %zu, was %zu", what, r, charged(), c0);
}

static int probe_setlimit(size_t limit)
{
    size_t chunk = limit / 8 * 7;
    int allocs = 0;
    CUcontext primary;
    CHECK(cuDevicePrimaryCtxRetain(&primary, 0) == CUDA_SUCCESS, "primary context");
    for (int round = 0; round < 5; round++) {
        CUdeviceptr d;
        if (cuMemAlloc_v2(&d, chunk) == CUDA_SUCCESS)
            allocs++;
        sample();
        refused_keeps(CU_LIMIT_MALLOC_HEAP_SIZE, (8u << 20) + chunk, "the heap");
        refused_keeps(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, (size_t)1 << 40,
                      "2^40 pending launches");
        refused_keeps(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, SIZE_MAX, "SIZE_MAX launches");
        refused_keeps(CU_LIMIT_PRINTF_FIFO_SIZE, (1u << 20) + chunk, "the printf FIFO");
        refused_keeps(CU_LIMIT_MALLOC_HEAP_SIZE, SIZE_MAX, "a SIZE_MAX heap");
        refused_keeps(CU_LIMIT_STACK_SIZE, 2048, "a 2 KiB stack");
    }
    /* In the limit but past what the card has left (with TESSERA_STANDIN_
     * CTX_MEM above the context estimate and TESSERA_STANDIN_TOTAL_MEM at the
     * limit): the driver refuses, the shim gives back its charge. */
    size_t more = limit / 32;
    CUresult r = cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, (8u << 20) + more);
    sample();
    cuDevicePrimaryCtxRelease_v2(0); /* the card has room again: charged() is the shim's */
    size_t want = (size_t)allocs * chunk + (r == CUDA_SUCCESS ? more : 0);
    CHECK(charged() == want, "heap rc %d: charged %zu, want %zu", r, charged(), want);
    printf("setlimit_allocs=%d heap_in_limit_rc=%d charged=%zu\n", allocs, r, charged());
    cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8u << 20);
    return report("setlimit", limit);
}

/* ---- pools keeping their reserve --------------------------------------- */

static int probe_defpool(size_t limit)
{
    CUdeviceptr a, b = 0;
    size_t chunk = limit / 8 * 7;
    CHECK(cuMemAllocAsync(&a, chunk, NULL) == CUDA_SUCCESS, "async alloc");
    sample();
    CHECK(cuMemFreeAsync(a, NULL) == CUDA_SUCCESS, "async free");
    CUresult before = cuMemAlloc_v2(&b, chunk);
    sample();
    if (before == CUDA_SUCCESS)
        cuMemFree_v2(b);
    cuCtxSynchronize_v2(NULL); /* CUDA 13.0's synchronisation of one context */
    CUresult after = cuMemAlloc_v2(&b, chunk);
    sample();
    printf("defpool_before_sync_rc=%d after_sync_rc=%d\n", before, after);
    CHECK(after == CUDA_SUCCESS, "refused after the sync: rc %d", after);
    if (after == CUDA_SUCCESS)
        cuMemFree_v2(b);
    CHECK(charged() == 0, "%zu bytes still charged", charged());
    return report("defpool", limit);
}

static int probe_pool(size_t limit)
{
    CUmemoryPool pool[8];
    CUmemPoolProps props = {0};
    props.allocType = 1;     /* CU_MEM_ALLOCATION_TYPE_PINNED */
    props.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE, id 0 */
    cuuint64_t keep_all = UINT64_MAX;
    size_t chunk = limit * 7 / 8;
    int got = 0, reused = 0;
    for (int i = 0; i < 8; i++) {
        CUdeviceptr d;
        CHECK(cuMemPoolCreate(&pool[i], &props) == CUDA_SUCCESS, "pool %d", i);
        cuMemPoolSetAttribute(pool[i], CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
        if (cuMemAllocFromPoolAsync(&d, chunk, pool[i], NULL) == CUDA_SUCCESS) {
            got++;
            sample();
            cuMemFreeAsync(d, NULL);
        }
        cuStreamSynchronize(NULL);
        sample();
    }
    /* The pool that kept its reserve serves the next allocation from it. */
    CUdeviceptr d;
    if (cuMemAllocFromPoolAsync(&d, chunk, pool[0], NULL) == CUDA_SUCCESS) {
        reused = 1;
        sample();
        cuMemFreeAsync(d, NULL);
    }
    cuStreamSynchronize(NULL);
    printf("pool_allocs=%d reused=%d charged_after_sync=%zu\n", got, reused, charged());
    CHECK(cuMemPoolTrimTo(pool[0], 0) == CUDA_SUCCESS, "trim");
    CHECK(charged() == 0, "%zu bytes still charged after the trim", charged());
    for (int i = 0; i < 8; i++)
        cuMemPoolDestroy(pool[i]);
    CHECK(!tessera_standin_allocated_bytes || tessera_standin_allocated_bytes() == 0,
          "the driver still holds memory");
    return report("pool", limit);
}

/* ---- graph memory ------------------------------------------------------ */

static int probe_graph(size_t limit)
{
    CUgraph g[8];
    CUgraphExec x[8];
    int launched = 0;
    for (int i = 0; i < 8; i++) {
        CUgraphNode node;
        CUDA_MEM_ALLOC_NODE_PARAMS p;
        memset(&p, 0, sizeof(p));
        p.poolProps.allocType = 1;     /* CU_MEM_ALLOCATION_TYPE_PINNED */
        p.poolProps.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE, id 0 */
        p.bytesize = limit * 7 / 8;
        CHECK(cuGraphCreate(&g[i], 0) == CUDA_SUCCESS, "graph %d", i);
        CHECK(cuGraphAddMemAllocNode(&node, g[i], NULL, 0, &p) == CUDA_SUCCESS, "node %d", i);
        CHECK(cuGraphInstantiateWithFlags(&x[i], g[i], 0) == CUDA_SUCCESS, "instantiate %d", i);
        if (cuGraphLaunch(x[i], NULL) == CUDA_SUCCESS)
            launched++;
        sample();
    }
    printf("graph_launched=%d charged=%zu\n", launched, charged());
    for (int i = 0; i < 8; i++) {
        cuGraphExecDestroy(x[i]);
        cuGraphDestroy(g[i]);
    }
    CHECK(cuDeviceGraphMemTrim(0) == CUDA_SUCCESS, "trim");
    CHECK(charged() == 0, "%zu bytes still charged after the trim", charged());
    CHECK(!tessera_standin_allocated_bytes || tessera_standin_allocated_bytes() == 0,
          "the driver still holds memory");
    return report("graph", limit);
}

/* ---- graph memory through every instantiate entry point ----------------- */

typedef CUresult (*inst5_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*inst3_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*instp_fn)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);
#define INSTANTIATE_WAYS 9

static void *gpa(const char *name, int version, cuuint64_t flags)
{
    void *p = NULL;
    CHECK(cuGetProcAddress(name, &p, version, flags) == CUDA_SUCCESS && p, "gpa %s %d", name,
          version);
    return p;
}

/* Instantiate g the way numbered way: the legacy entry points, the
 * WithParams ones (with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD: allocated at
 * once) and what cuGetProcAddress hands out for each version. */
static CUresult instantiate(int way, CUgraphExec *x, CUgraph g)
{
    CUDA_GRAPH_INSTANTIATE_PARAMS p;
    char log[64];
    memset(&p, 0, sizeof(p));
    p.flags = way == 3 || way == 4 ? CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD : 0;
    void *f = way == 5   ? gpa("cuGraphInstantiate", 11000, 0)
              : way == 6 ? gpa("cuGraphInstantiate", 10000, 0)
              : way == 7 ? gpa("cuGraphInstantiateWithParams", 12000,
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
              : way == 8 ? gpa("cuGraphInstantiate", 13000, 0)
                         : NULL;
    switch (way) {
    case 0: return cuGraphInstantiate(x, g, NULL, log, sizeof(log));
    case 1: return cuGraphInstantiate_v2(x, g, NULL, log, sizeof(log));
    case 2: return cuGraphInstantiateWithParams(x, g, &p);
    case 3: return cuGraphInstantiateWithParams_ptsz(x, g, &p);
    case 4: return cuGraphInstantiateWithParams(x, g, &p);
    case 5:
    case 6: return f ? ((inst5_fn)f)(x, g, NULL, log, sizeof(log)) : CUDA_ERROR_NOT_FOUND;
    case 7: return f ? ((instp_fn)f)(x, g, &p) : CUDA_ERROR_NOT_FOUND;
    default: return f ? ((inst3_fn)f)(x, g, 0) : CUDA_ERROR_NOT_FOUND;
    }
}

/* Two graphs of 7/8 of the limit each, instantiated one way and launched:
 * how many ran (the second must be refused). Both destroyed after, the
 * pool trimmed. */
static int graphs_run(int way, size_t limit)
{
    CUgraph g[2];
    CUgraphExec x[2] = {NULL, NULL};
    int ran = 0;
    for (int i = 0; i < 2; i++) {
        CUgraphNode node;
        CUDA_MEM_ALLOC_NODE_PARAMS p;
        memset(&p, 0, sizeof(p));
        p.poolProps.allocType = 1;     /* CU_MEM_ALLOCATION_TYPE_PINNED */
        p.poolProps.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE, id 0 */
        p.bytesize = limit * 7 / 8;
        CHECK(cuGraphCreate(&g[i], 0) == CUDA_SUCCESS, "graph %d", i);
        CHECK(cuGraphAddMemAllocNode(&node, g[i], NULL, 0, &p) == CUDA_SUCCESS, "node %d", i);
        if (instantiate(way, &x[i], g[i]) == CUDA_SUCCESS && x[i]) {
            sample();
            if (cuGraphLaunch(x[i], NULL) == CUDA_SUCCESS)
                ran++;
        }
        sample();
    }
    for (int i = 0; i < 2; i++) {
        if (x[i])
            cuGraphExecDestroy(x[i]);
        cuGraphDestroy(g[i]);
    }
    CHECK(cuDeviceGraphMemTrim(0) == CUDA_SUCCESS, "trim");
    CHECK(charged() == 0, "way %d: %zu bytes still charged after the trim", way, charged());
    return ran;
}

static int probe_graphv2(size_t limit)
{
    printf("graphv2_ran=");
    for (int way = 0; way < INSTANTIATE_WAYS; way++)
        printf("%s%d", way ? "," : "", graphs_run(way, limit));
    printf("\n");
    return report("graphv2", limit);
}

/* ---- module globals ------------------------------------------------------ */

#define LOAD_WAYS 6

/* Load image (also written at path) the numbered way: a module (cuModuleLoad,
 * cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary) or a library
 * (cuLibraryLoadData, cuLibraryLoadFromFile); 0 when it loaded. */
static int load_way(int way, const char *image, const char *path, void **h)
{
    CUmodule *m = (CUmodule *)h;
    CUlibrary *l = (CUlibrary *)h;
    CUresult r;
    switch (way) {
    case 0: r = cuModuleLoad(m, path); break;
    case 1: r = cuModuleLoadData(m, image); break;
    case 2: r = cuModuleLoadDataEx(m, image, 0, NULL, NULL); break;
    case 3: r = cuModuleLoadFatBinary(m, image); break;
    case 4: r = cuLibraryLoadData(l, image, NULL, NULL, 0, NULL, NULL, 0); break;
    default: r = cuLibraryLoadFromFile(l, path, NULL, NULL, 0, NULL, NULL, 0); break;
    }
    return r == CUDA_SUCCESS ? 0 : -1;
}

/* Two loads of an image of 7/8 of the limit in globals, one way: how many
 * loaded (the second must be refused); both unloaded after. */
static int modules_loaded(int way, const char *image, const char *path)
{
    void *h[2] = {NULL, NULL};
    int n = 0;
    for (int i = 0; i < 2; i++) {
        if (load_way(way, image, path, &h[i]) == 0)
            n++;
        else
            h[i] = NULL;
        sample();
    }
    for (int i = 0; i < 2; i++)
        if (h[i] && way < 4)
            CHECK(cuModuleUnload((CUmodule)h[i]) == CUDA_SUCCESS, "unload");
        else if (h[i])
            CHECK(cuLibraryUnload((CUlibrary)h[i]) == CUDA_SUCCESS, "library unload");
    CHECK(charged() == 0, "way %d: %zu bytes still charged after the unloads", way, charged());
    return n;
}

/* An image whose __device__ globals take bytes: the stand-in's module format
 * on the stand-in, else PTX (the real driver JIT-compiles it and allocates
 * the global at load, as for any module). */
static void module_image(char *image, size_t cap, size_t bytes)
{
    if (tessera_standin_allocated_bytes)
        snprintf(image, cap, "tessera-standin-module\ncode 4096\nglobal table %zu\n", bytes - 4096);
    else
        snprintf(image, cap,
                 ".version 7.0\n.target sm_52\n.address_size 64\n"
                 ".visible .global .align 8 .b8 table[%zu];\n",
                 bytes);
}

static int probe_module(size_t limit)
{
    char image[256], path[] = "/tmp/shim-bypass-module.XXXXXX";
    module_image(image, sizeof(image), limit / 8 * 7);
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, image, strlen(image)) == (ssize_t)strlen(image), "image file");
    if (fd >= 0)
        close(fd);
    printf("module_loaded=");
    for (int way = 0; way < LOAD_WAYS; way++)
        printf("%s%d", way ? "," : "", modules_loaded(way, image, path));
    printf("\n");
    unlink(path);
    return report("module", limit);
}

/* ---- lookups ------------------------------------------------------------ */

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*alloc1_fn)(CUdeviceptr_v1 *, unsigned);

static int fill(alloc_fn fn, size_t chunk)
{
    CUdeviceptr p[MAXN];
    int n = 0;
    while (n < MAXN && fn(&p[n], chunk) == CUDA_SUCCESS)
        n++, sample();
    for (int i = 0; i < n; i++)
        cuMemFree_v2(p[i]);
    return n;
}

void *shim_nextlib_lookup(const char *name);

static int probe_next(size_t limit)
{
    alloc_fn fn = (alloc_fn)shim_nextlib_lookup("cuMemAlloc_v2");
    CHECK(fn != NULL, "RTLD_NEXT found no cuMemAlloc_v2");
    if (fn)
        printf("next_allocs=%d\n", fill(fn, limit / 4));
    CHECK(charged() == 0, "%zu bytes still charged", charged());
    return report("next", limit);
}

static int probe_gpa(size_t limit)
{
    void *p = NULL, *q = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK(cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 0, &st) == CUDA_SUCCESS, "gpa 12000");
    CHECK(cuGetProcAddress_v2("cuMemAlloc", &q, 3010, 0, &st) == CUDA_SUCCESS, "gpa 3010");
    if (p)
        printf("gpa_allocs=%d\n", fill((alloc_fn)p, limit / 4));
    if (q) {
        CUdeviceptr_v1 v[MAXN];
        int n = 0;
        while (n < MAXN && ((alloc1_fn)q)(&v[n], (unsigned)(limit / 4)) == CUDA_SUCCESS)
            n++, sample();
        printf("gpa_legacy_allocs=%d\n", n);
        for (int i = 0; i < n; i++)
            cuMemFree(v[i]);
    }
    CHECK(charged() == 0, "%zu bytes still charged", charged());
    return report("gpa", limit);
}

/* ---- the tracking table ------------------------------------------------- */

static int probe_table(size_t limit, long n)
{
    CUdeviceptr *p = calloc((size_t)n, sizeof(*p));
    long got = 0;
    CUresult r = CUDA_SUCCESS;
    if (!p)
        return 2;
    while (got < n && (r = cuMemAlloc_v2(&p[got], 64)) == CUDA_SUCCESS)
        got++;
    sample();
    printf("table_live=%ld rc=%d charged=%zu\n", got, r, charged());
    CHECK(got == n, "allocation %ld of 64 bytes refused (rc %d) with %zu charged", got + 1, r,
          charged());
    CHECK(charged() == (size_t)got * 64, "charged %zu, not %ld x 64", charged(), got);
    for (long i = 0; i < got; i++)
        cuMemFree_v2(p[i]);
    free(p);
    CHECK(charged() == 0, "%zu bytes still charged after the frees", charged());
    return report("table", limit);
}

/* ---- imports ------------------------------------------------------------ */

struct exported {
    CUipcMemHandle ipc[2];
    CUmemPoolPtrExportData pooled[2];
    int pid, fd[2], pool_fd;
};

static int probe_export(const char *file, size_t n)
{
    struct exported x;
    CUmemAllocationProp prop;
    device_props(&prop);
    x.pid = (int)getpid();
    CUmemoryPool pool;
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof(pp));
    pp.allocType = 1; /* pinned */
    pp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    pp.location.type = 1; /* device 0 */
    CHECK(cuMemPoolCreate(&pool, &pp) == CUDA_SUCCESS, "pool");
    CHECK(cuMemPoolExportToShareableHandle(
              &x.pool_fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) == CUDA_SUCCESS,
          "export pool");
    for (int i = 0; i < 2; i++) {
        CUdeviceptr d;
        CHECK(cuMemAllocFromPoolAsync(&d, n, pool, NULL) == CUDA_SUCCESS, "pool alloc %d", i);
        CHECK(cuMemPoolExportPointer(&x.pooled[i], d) == CUDA_SUCCESS, "export ptr %d", i);
    }
    for (int i = 0; i < 2; i++) {
        CUdeviceptr d;
        CUmemGenericAllocationHandle h;
        CHECK(cuMemAlloc_v2(&d, n) == CUDA_SUCCESS, "alloc %d", i);
        CHECK(cuIpcGetMemHandle(&x.ipc[i], d) == CUDA_SUCCESS, "ipc handle %d", i);
        CHECK(cuMemCreate(&h, n, &prop, 0) == CUDA_SUCCESS, "create %d", i);
        CHECK(cuMemExportToShareableHandle(&x.fd[i], h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                           0) == CUDA_SUCCESS,
              "export %d", i);
    }
    FILE *f = fopen(file, "wb");
    if (failures || !f || fwrite(&x, sizeof(x), 1, f) != 1)
        return 1;
    fclose(f);
    pause();
    return 0;
}

static int import_fd(int pid, int fd, CUdeviceptr *va, size_t *size,
                     CUmemGenericAllocationHandle *h)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    int mine = open(path, O_RDONLY | O_CLOEXEC);
    off_t n = mine >= 0 ? lseek(mine, 0, SEEK_END) : -1;
    CUresult r = n > 0 ? cuMemImportFromShareableHandle(h, (void *)(intptr_t)mine,
                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
                       : CUDA_ERROR_INVALID_VALUE;
    if (mine >= 0)
        close(mine);
    sample();
    if (r != CUDA_SUCCESS)
        return r == CUDA_ERROR_OUT_OF_MEMORY ? -2 : -1;
    *size = (size_t)n;
    if (!va)
        return 0; /* held, not mapped */
    cuMemAddressReserve(va, *size, 0, 0, 0);
    r = cuMemMap(*va, *size, 0, *h, 0);
    sample();
    cuMemRelease(*h);
    return r == CUDA_SUCCESS ? 0 : -2;
}

static int read_exported(const char *file, struct exported *x)
{
    FILE *f = fopen(file, "rb");
    int ok = f && fread(x, sizeof(*x), 1, f) == 1;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

static int probe_import(size_t limit, const char *file)
{
    struct exported x;
    CUdeviceptr ipc[2];
    int opened = 0;
    if (read_exported(file, &x) != 0)
        return 2;
    /* the first through the current symbol, the second through the v1 one */
    if (cuIpcOpenMemHandle_v2(&ipc[opened], x.ipc[0], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
        CUDA_SUCCESS)
        opened++, sample();
    if (cuIpcOpenMemHandle(&ipc[opened], x.ipc[1], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
        CUDA_SUCCESS)
        opened++, sample();
    printf("ipc_opened=%d charged=%zu\n", opened, charged());
    for (int i = 0; i < opened; i++)
        CHECK(cuIpcCloseMemHandle(ipc[i]) == CUDA_SUCCESS, "close %d", i);
    /* the exporter's pool, imported through its fd, and both pointers */
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", x.pid, x.pool_fd);
    int pfd = open(path, O_RDONLY | O_CLOEXEC);
    CUmemoryPool pool;
    CUdeviceptr p[2];
    int pooled = 0;
    CHECK(pfd >= 0 && cuMemPoolImportFromShareableHandle(&pool, (void *)(intptr_t)pfd,
                                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                         0) == CUDA_SUCCESS,
          "import pool");
    for (int i = 0; i < 2 && pfd >= 0; i++)
        if (cuMemPoolImportPointer(&p[pooled], pool, &x.pooled[i]) == CUDA_SUCCESS)
            pooled++, sample();
    printf("pool_ptrs_imported=%d charged=%zu\n", pooled, charged());
    for (int i = 0; i < pooled; i++)
        CHECK(cuMemFree_v2(p[i]) == CUDA_SUCCESS, "free imported %d", i);
    if (pfd >= 0)
        close(pfd);
    CHECK(charged() == 0, "%zu bytes still charged after the closes", charged());
    CHECK(!tessera_standin_allocated_bytes || tessera_standin_allocated_bytes() == 0,
          "the driver still holds memory");
    return report("import", limit);
}

static int probe_share(size_t limit, const char *file)
{
    struct exported x;
    CUdeviceptr va[2];
    size_t size[2];
    int mapped = 0;
    if (read_exported(file, &x) != 0)
        return 2;
    for (int i = 0; i < 2; i++) {
        CUmemGenericAllocationHandle h;
        int r = import_fd(x.pid, x.fd[i], &va[mapped], &size[mapped], &h);
        CHECK(r != -1, "import %d", i);
        mapped += r == 0;
    }
    printf("imports_mapped=%d charged=%zu\n", mapped, charged());
    for (int i = 0; i < mapped; i++)
        CHECK(cuMemUnmap(va[i], size[i]) == CUDA_SUCCESS, "unmap %d", i);
    CHECK(charged() == 0, "%zu bytes still charged after the unmaps", charged());
    return report("share", limit);
}

static int probe_unmapped(size_t limit, const char *file)
{
    struct exported x;
    CUmemGenericAllocationHandle h[2];
    size_t size;
    int held = 0;
    if (read_exported(file, &x) != 0)
        return 2;
    for (int i = 0; i < 2; i++) {
        int r = import_fd(x.pid, x.fd[i], NULL, &size, &h[held]);
        CHECK(r != -1, "import %d", i);
        held += r == 0;
    }
    printf("imports_held=%d charged=%zu\n", held, charged());
    for (int i = 0; i < held; i++)
        CHECK(cuMemRelease(h[i]) == CUDA_SUCCESS, "release %d", i);
    CHECK(charged() == 0, "%zu bytes still charged after the releases", charged());
    CHECK(!tessera_standin_allocated_bytes || tessera_standin_allocated_bytes() == 0,
          "the driver still holds memory");
    return report("unmapped", limit);
}

/* ---- fork and exec ----------------------------------------------------- */

static int probe_fork(size_t limit)
{
    CUdeviceptr d;
    size_t half = limit / 2;
    CHECK(cuMemAlloc_v2(&d, half) == CUDA_SUCCESS, "half the limit");
    pid_t child = fork();
    if (child == 0) {
        cuMemFree_v2(d);
        _exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    printf("fork_parent_charged=%zu\n", charged());
    CHECK(charged() == half, "the parent's charge is %zu after the child's free, not %zu",
          charged(), half);
    CUdeviceptr e;
    CHECK(cuMemAlloc_v2(&e, half + 1) == CUDA_ERROR_OUT_OF_MEMORY, "over the limit after fork");
    sample();
    cuMemFree_v2(d);
    return report("fork", limit);
}

static int probe_exec(size_t limit, const char *self)
{
    CUdeviceptr d;
    CHECK(cuMemAlloc_v2(&d, limit / 4 * 3) == CUDA_SUCCESS, "3/4 of the limit");
    fflush(stdout);
    execl(self, self, "after-exec", (char *)NULL);
    printf("FAIL: exec %s\n", self);
    return 1;
}

static int after_exec(size_t limit)
{
    CUdeviceptr d;
    CUresult r = cuMemAlloc_v2(&d, limit / 4 * 3);
    sample();
    printf("after_exec_rc=%d charged=%zu\n", r, charged());
    CHECK(r == CUDA_SUCCESS, "the new image was refused (rc %d): charged the old one's memory", r);
    return report("exec", limit);
}

int main(int argc, char **argv)
{
    if (argc < 2 || cuInit(0) != CUDA_SUCCESS)
        return 2;
    size_t limit = limit_now();
    const char *m = argv[1];
    if (!tessera_standin_allocated_bytes)
        base_used = nvml_used();
    if (strcmp(m, "vmm") == 0)
        return probe_vmm(limit);
    if (strcmp(m, "drift") == 0 && argc == 3)
        return probe_drift(limit, (unsigned)strtoul(argv[2], NULL, 10));
    if (strcmp(m, "defpool") == 0)
        return probe_defpool(limit);
    if (strcmp(m, "stack") == 0)
        return probe_stack(limit);
    if (strcmp(m, "ctx4") == 0)
        return probe_ctx4(limit);
    if (strcmp(m, "ctx") == 0)
        return probe_ctx(limit);
    if (strcmp(m, "sparse") == 0)
        return probe_sparse(limit);
    if (strcmp(m, "legacy") == 0)
        return probe_legacy(limit);
    if (strcmp(m, "mipmap") == 0)
        return probe_mipmap(limit);
    if (strcmp(m, "heap") == 0)
        return probe_heap(limit);
    if (strcmp(m, "next") == 0)
        return probe_next(limit);
    if (strcmp(m, "export") == 0 && argc == 4)
        return probe_export(argv[2], strtoull(argv[3], NULL, 10));
    if (strcmp(m, "import") == 0 && argc == 3)
        return probe_import(limit, argv[2]);
    if (strcmp(m, "share") == 0 && argc == 3)
        return probe_share(limit, argv[2]);
    if (strcmp(m, "unmapped") == 0 && argc == 3)
        return probe_unmapped(limit, argv[2]);
    if (strcmp(m, "ctxlegacy") == 0)
        return probe_ctxlegacy(limit);
    if (strcmp(m, "green") == 0)
        return probe_green(limit);
    if (strcmp(m, "pending") == 0)
        return probe_pending(limit);
    if (strcmp(m, "setlimit") == 0)
        return probe_setlimit(limit);
    if (strcmp(m, "fork") == 0)
        return probe_fork(limit);
    if (strcmp(m, "exec") == 0)
        return probe_exec(limit, "/proc/self/exe");
    if (strcmp(m, "after-exec") == 0)
        return after_exec(limit);
    if (strcmp(m, "pool") == 0)
        return probe_pool(limit);
    if (strcmp(m, "graph") == 0)
        return probe_graph(limit);
    if (strcmp(m, "graphv2") == 0)
        return probe_graphv2(limit);
    if (strcmp(m, "module") == 0)
        return probe_module(limit);
    if (strcmp(m, "gpa") == 0)
        return probe_gpa(limit);
    if (strcmp(m, "table") == 0 && argc == 3)
        return probe_table(limit, atol(argv[2]));
    fprintf(stderr,
            "usage: shim_bypass vmm|sparse|ctx|ctx4|ctxlegacy|green|drift MS|legacy|mipmap|heap|"
            "pending|setlimit|stack|defpool|pool|graph|graphv2|module|next|gpa|fork|exec|table "
            "N|export F "
            "B|import F|share "
            "F|unmapped F\n");
    return 2;
}
