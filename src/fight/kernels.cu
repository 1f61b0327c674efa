// kernels.cu - the fight's built-in workloads as CUDA C. Compiled only on
// demand (`nvcc -fatbin -o fight.fatbin src/fight/kernels.cu`, then
// `tessera fight --kernels fight.fatbin`); the binary embeds a hand-written
// PTX version of the same three kernels (src/fight/ptx.c) that the driver
// JIT-compiles, so the build never needs nvcc.
//
//   tessera_sleep_us(us)         one thread spins on the global timer for
//                                `us` microseconds (sizing; the stand-in
//                                driver emulates exactly this one)
//   tessera_stream(src, dst, n)  grid-stride copy of n floats (bandwidth)
//   tessera_fma(out, iters)      each thread runs `iters` dependent FMAs
//                                (compute; the SLA request and the "matmul"
//                                noisy load, which it stands in for)
#include <stdint.h>

extern "C" __global__ void tessera_sleep_us(unsigned int us)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < (unsigned long long)us * 1000ull);
}

extern "C" __global__ void tessera_stream(const float *src, float *dst, unsigned long long n)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
        dst[i] = src[i];
}

extern "C" __global__ void tessera_fma(float *out, unsigned int iters)
{
    unsigned int id = blockIdx.x * blockDim.x + threadIdx.x;
    float a = (float)id * 1e-6f, b = 0.999f, c = 1e-3f;
    for (unsigned int i = 0; i < iters; i++)
        a = fmaf(a, b, c);
    out[id] = a;
}
