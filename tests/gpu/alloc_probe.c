/*
 * alloc_probe.c - what scripts/gpu-check runs on a real GPU, with and
 * without libtessera-cuda.so preloaded. The driver API through dlopen of
 * libcuda.so.1 (prototypes from src/util/cuda_abi.h), so neither nvcc nor
 * NVIDIA's headers are needed; kernels are PTX text loaded with
 * cuModuleLoadData. Prints key=value lines; exit 0 when its checks held,
 * 1 when one failed, 2 on usage or when the driver is unusable.
 *   limit MIB            cuMemGetInfo, then MIB-sized cuMemAlloc_v2 until
 *                        refused (must be CUDA_ERROR_OUT_OF_MEMORY); frees
 *   fill MIB READY       allocate until refused, write READY, wait (killed)
 *   try MIB              one allocation: rc
 *   spin SECS CYCLES     back-to-back clock64 spin kernels (one block per SM,
 *                        each spinning CYCLES clocks), synchronised one by
 *                        one, for SECS: kernels, kernels_per_s
 *   bench N MIB          ns per cuMemAlloc_v2 + cuMemFree_v2 pair
 * Build: cc -O2 -I src tests/gpu/alloc_probe.c -o alloc_probe -ldl
 */
#include "util/cuda_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SYM(name) static __typeof__(&name) p_##name
SYM(cuInit);
SYM(cuDeviceGet);
SYM(cuDevicePrimaryCtxRetain);
SYM(cuCtxSetCurrent);
SYM(cuMemAlloc_v2);
SYM(cuMemFree_v2);
SYM(cuMemGetInfo_v2);
SYM(cuDeviceTotalMem_v2);
SYM(cuModuleLoadData);
SYM(cuModuleGetFunction);
SYM(cuLaunchKernel);
SYM(cuCtxSynchronize);
SYM(cuDeviceGetAttribute);

static const char spin_ptx[] = ".version 7.0\n"
                               ".target sm_70\n"
                               ".address_size 64\n"
                               ".visible .entry tessera_spin(.param .u64 cycles)\n"
                               "{\n"
                               "  .reg .pred %p;\n"
                               "  .reg .b64 %start, %now, %lim, %d;\n"
                               "  ld.param.u64 %lim, [cycles];\n"
                               "  mov.u64 %start, %clock64;\n"
                               "LOOP:\n"
                               "  mov.u64 %now, %clock64;\n"
                               "  sub.s64 %d, %now, %start;\n"
                               "  setp.lt.s64 %p, %d, %lim;\n"
                               "  @%p bra LOOP;\n"
                               "  ret;\n"
                               "}\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        printf("error=\"dlopen libcuda.so.1: %s\"\n", dlerror());
        return -1;
    }
#define LOAD(name) (p_##name = (__typeof__(p_##name))dlsym(h, #name))
    if (!LOAD(cuInit) || !LOAD(cuDeviceGet) || !LOAD(cuDevicePrimaryCtxRetain) ||
        !LOAD(cuCtxSetCurrent) || !LOAD(cuMemAlloc_v2) || !LOAD(cuMemFree_v2) ||
        !LOAD(cuMemGetInfo_v2) || !LOAD(cuDeviceTotalMem_v2) || !LOAD(cuModuleLoadData) ||
        !LOAD(cuModuleGetFunction) || !LOAD(cuLaunchKernel) || !LOAD(cuCtxSynchronize) ||
        !LOAD(cuDeviceGetAttribute))
        return -1;
    CUdevice dev;
    CUcontext ctx;
    if (p_cuInit(0) || p_cuDeviceGet(&dev, 0) || p_cuDevicePrimaryCtxRetain(&ctx, dev) ||
        p_cuCtxSetCurrent(ctx))
        return -1;
    return 0;
}

static int mode_limit(size_t mib, const char *ready)
{
    size_t fr = 0, tot = 0, dev_tot = 0;
    p_cuMemGetInfo_v2(&fr, &tot);
    p_cuDeviceTotalMem_v2(&dev_tot, 0);
    static CUdeviceptr ptrs[100000];
    size_t n = 0;
    CUresult r = CUDA_SUCCESS;
    while (n < 100000 && (r = p_cuMemAlloc_v2(&ptrs[n], mib << 20)) == CUDA_SUCCESS)
        n++;
    printf("total=%zu free=%zu device_total=%zu allocs=%zu allocated=%zu refused_rc=%d\n", tot, fr,
           dev_tot, n, n * (mib << 20), r);
    fflush(stdout);
    if (ready) {
        FILE *f = fopen(ready, "w");
        if (f)
            fclose(f);
        for (;;)
            pause();
    }
    for (size_t i = 0; i < n; i++)
        p_cuMemFree_v2(ptrs[i]);
    size_t fr2 = 0;
    p_cuMemGetInfo_v2(&fr2, &tot);
    printf("free_after=%zu\n", fr2);
    return r == CUDA_ERROR_OUT_OF_MEMORY && n * (mib << 20) <= tot ? 0 : 1;
}

static int mode_try(size_t mib)
{
    CUdeviceptr d;
    CUresult r = p_cuMemAlloc_v2(&d, mib << 20);
    printf("rc=%d\n", r);
    if (r == CUDA_SUCCESS)
        p_cuMemFree_v2(d);
    return r == CUDA_SUCCESS ? 0 : 3;
}

static int mode_spin(double secs, unsigned long long cycles)
{
    CUmodule m;
    CUfunction f;
    int sms = 0;
    if (p_cuModuleLoadData(&m, spin_ptx) || p_cuModuleGetFunction(&f, m, "tessera_spin") ||
        p_cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0)) {
        printf("error=\"cannot load the spin kernel\"\n");
        return 2;
    }
    void *params[] = {&cycles};
    long n = 0;
    double t0 = now_s(), t;
    while ((t = now_s()) - t0 < secs) {
        if (p_cuLaunchKernel(f, (unsigned)sms, 1, 1, 32, 1, 1, 0, NULL, params, NULL) ||
            p_cuCtxSynchronize())
            return 1;
        n++;
    }
    printf("kernels=%ld seconds=%.3f kernels_per_s=%.1f sms=%d\n", n, t - t0, n / (t - t0), sms);
    return 0;
}

static int mode_bench(long n, size_t mib)
{
    CUdeviceptr d;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        if (p_cuMemAlloc_v2(&d, mib << 20))
            return 1;
        p_cuMemFree_v2(d);
    }
    printf("pair_ns=%.1f\n", (now_s() - t0) * 1e9 / (double)n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: alloc_probe limit|fill|try|spin|bench ARGS...\n");
        return 2;
    }
    if (load() != 0)
        return 2;
    const char *m = argv[1];
    if (strcmp(m, "limit") == 0)
        return mode_limit(strtoull(argv[2], NULL, 10), NULL);
    if (strcmp(m, "fill") == 0 && argc > 3)
        return mode_limit(strtoull(argv[2], NULL, 10), argv[3]);
    if (strcmp(m, "try") == 0)
        return mode_try(strtoull(argv[2], NULL, 10));
    if (strcmp(m, "spin") == 0 && argc > 3)
        return mode_spin(atof(argv[2]), strtoull(argv[3], NULL, 10));
    if (strcmp(m, "bench") == 0 && argc > 3)
        return mode_bench(atol(argv[2]), strtoull(argv[3], NULL, 10));
    return 2;
}
