/*
 * internal.h - what the fight's files share and nobody else needs: the
 * driver table (cuda.c), the embedded kernels (ptx.c), one tenant process
 * (tenant.c) and the synthetic timings the stand-in driver gets.
 */
#ifndef FIGHT_INTERNAL_H
#define FIGHT_INTERNAL_H

#include <sys/types.h>
#include "fight/fight.h"
#include "util/cuda_abi.h"

/* Every entry point the harness calls: X(name as exported). */
// clang-format off
#define FIGHT_CUDA_FUNCS(X) \
    X(cuInit) \
    X(cuDeviceGet) \
    X(cuDeviceGetName) \
    X(cuDeviceGetAttribute) \
    X(cuDeviceTotalMem_v2) \
    X(cuCtxCreate_v2) \
    X(cuCtxDestroy_v2) \
    X(cuCtxSynchronize) \
    X(cuModuleLoadData) \
    X(cuModuleUnload) \
    X(cuModuleGetFunction) \
    X(cuLaunchKernel) \
    X(cuStreamCreate) \
    X(cuStreamDestroy_v2) \
    X(cuStreamSynchronize) \
    X(cuEventCreate) \
    X(cuEventDestroy_v2) \
    X(cuEventRecord) \
    X(cuEventSynchronize) \
    X(cuEventElapsedTime) \
    X(cuMemAlloc_v2) \
    X(cuMemFree_v2) \
    X(cuGetErrorString)
// clang-format on

#define FIGHT__MEMBER(name) __typeof__(&name) name;
struct fight_cuda {
    void *lib;
    FIGHT_CUDA_FUNCS(FIGHT__MEMBER)
};
#undef FIGHT__MEMBER

/* dlopen the driver (path or soname) and resolve every entry point through
 * the global scope first, so an LD_PRELOADed shim's are the ones called.
 * TS_NOT_FOUND naming the library or the symbol that is missing. */
ts_status fight__cuda_open(struct fight_cuda *c, const char *path, struct ts_error *err);
void fight__cuda_close(struct fight_cuda *c);
/* TS_IO "what: CUDA error N (text)" when r is not CUDA_SUCCESS. */
ts_status fight__cuda_check(const struct fight_cuda *c, CUresult r, const char *what,
                            struct ts_error *err);

/* The device name the stand-in driver reports (synthetic timings follow). */
#define FIGHT_STANDIN_NAME "Stand-in GPU"
/* The embedded PTX (NUL-terminated), same kernels as kernels.cu. */
extern const char fight__ptx[];

/* Synthetic timings (microseconds of tessera_sleep_us): one SLA request,
 * and one noisy operation per kind (burst = FIGHT_SYN_BURST_N launches). */
#define FIGHT_SYN_SLA_US 100u
#define FIGHT_SYN_MATMUL_US 2000u
#define FIGHT_SYN_STREAM_US 1000u
#define FIGHT_SYN_BURST_US 100u
#define FIGHT_SYN_BURST_N 20

/* NVML, read only (nvml.c): the card's SM clock, temperature, power. */
struct fight_nvml {
    void *lib, *dev;
    void *clock, *temp, *power, *shutdown; /* entry points, NULL when absent */
    int inited;
};
/* 1 when NVML loaded and device index was found, else 0 (n is then empty). */
int fight__nvml_open(struct fight_nvml *n, unsigned int index);
/* Each reading or -1 when NVML lacks it; 1 when any was read. */
int fight__nvml_read(const struct fight_nvml *n, double *sm_mhz, double *temp_c, double *power_w);
void fight__nvml_close(struct fight_nvml *n);

/* One tenant process and what it reported. */
struct fight_tenant {
    pid_t pid;
    int fd; /* read end of its pipe; -1 at EOF */
    struct fight_series s;
    struct fight_reader rd;
    int status; /* waitpid status once reaped */
    int reaped;
};
/* Start argv (exec'd as is) or, when cmd is set, `/bin/sh -c cmd`, with
 * env (NAME=VALUE strings, NULL-terminated) added, stdout to stderr, and
 * TESSERA_FIGHT_FD naming the pipe's write end. */
ts_status fight__tenant_start(struct fight_tenant *t, const char *name, char *const argv[],
                              const char *cmd, char *const env[], struct ts_error *err);
/* Read what is there (non-blocking); EOF closes fd. */
ts_status fight__tenant_pump(struct fight_tenant *t, struct ts_error *err);
/* SIGTERM, drain until EOF, reap (SIGKILL after 3 s). */
void fight__tenant_stop(struct fight_tenant *t, int sig);
void fight__tenant_release(struct fight_tenant *t);

/* splitmix64 (stats.c): small, seedable, the same everywhere. */
uint64_t fight__rand(uint64_t *state);

/* A malloc'd copy of x[0..n) sorted ascending; NULL when out of memory
 * (stats.c; the summary and the SVG's tail curves both need one). */
double *fight__sorted_copy(const double *x, size_t n);
/* The phase ph is judged against (run.c): aa-alone for the A/A control,
 * each mechanism's own "alone" phase for it, baseline (the whole card) for
 * time-slicing and for the cost of each "alone" phase; -1 for the rest. */
int fight__baseline_of(int ph);
/* The mechanism whose set-up phase ph runs under, -1 for none. */
int fight__mech_of(int ph);

#endif
