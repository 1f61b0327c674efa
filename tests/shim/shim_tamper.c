/*
 * shim_tamper.c - a tenant that writes the accounting region instead of
 * asking the shim (tests/cli/shim_region.sh), under LD_PRELOAD on the
 * stand-in driver with a memory limit. Each probe has this process and
 * siblings (this program again, fork + exec, so each has the shim) take
 * what the shim lets them in 64 MiB steps, tampers in between, and prints
 *
 *     probe=NAME held=BYTES limit=BYTES times=X.XX
 *
 * held: what the stand-in held for all of them at once (each process's own
 * counter, tessera_standin_allocated_bytes, summed while all still hold; on
 * a real driver the allocations it granted them).
 * Exit 0 when held <= limit. Probes (REGION: the region file's path):
 *   openclose REGION ROUNDS  open() and close() the region file, then a
 *                            sibling starts and takes, then this one again
 *   remove REGION            remove the region file, then a sibling
 *   zero REGION WAIT_MS      zero this process's slot (found by pid), take
 *                            again, wait WAIT_MS, then a sibling
 *   refill REGION SECS US    launch US-microsecond kernels back to back for
 *                            SECS while a thread fills the SM bucket every
 *                            millisecond; prints busy_ns like shim_probe
 *   sibling                  take, say held=, hold until stdin closes
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/shim.h"
#include "util/cuda_abi.h"

#define STEP (64ull << 20)
#define STEPS_MAX 128 /* 8 GiB: far past any limit the test sets */
#define SIBLINGS_MAX 16

size_t tessera_standin_allocated_bytes(void) __attribute__((weak));
uint64_t tessera_standin_busy_ns(int pid) __attribute__((weak));

static size_t taken; /* what this process's allocations got (never freed) */

/* What the driver holds for this process's allocations: the stand-in's own
 * counter, or on a real driver (scripts/gpu-check) the sum of those it
 * granted. */
static size_t held(void)
{
    return tessera_standin_allocated_bytes ? tessera_standin_allocated_bytes() : taken;
}

/* Allocate STEP at a time until refused; what this process holds now. */
static size_t take_all(void)
{
    CUdeviceptr p;
    for (int i = 0; i < STEPS_MAX && cuMemAlloc_v2(&p, STEP) == CUDA_SUCCESS; i++)
        taken += STEP;
    return held();
}

struct sibling {
    pid_t pid;
    int to, from;
};
static struct sibling sibs[SIBLINGS_MAX];
static int nsibs;

/* Start this program as a sibling; what it holds once it has taken all. */
static size_t sibling(void)
{
    int in[2], out[2];
    if (nsibs == SIBLINGS_MAX || pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl("/proc/self/exe", "shim_tamper", "sibling", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    sibs[nsibs++] = (struct sibling){pid, in[1], out[0]};
    char buf[64] = "";
    ssize_t n = read(out[0], buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    return strncmp(buf, "held=", 5) == 0 ? strtoull(buf + 5, NULL, 10) : 0;
}

static void release_siblings(void)
{
    for (int i = 0; i < nsibs; i++) {
        close(sibs[i].to);
        waitpid(sibs[i].pid, NULL, 0);
    }
}

static size_t limit_now(void)
{
    size_t fr = 0, tot = 0;
    cuMemGetInfo_v2(&fr, &tot);
    return tot;
}

static int report(const char *name, size_t total, size_t limit)
{
    printf("probe=%s held=%zu limit=%zu times=%.2f\n", name, total, limit,
           limit ? (double)total / (double)limit : 0.0);
    release_siblings();
    return total <= limit ? 0 : 1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000l};
    nanosleep(&ts, NULL);
}

static int probe_openclose(const char *region, int rounds)
{
    size_t limit = limit_now(), total = 0;
    take_all();
    for (int i = 0; i < rounds; i++) {
        close(open(region, O_RDWR));
        total += sibling();
        take_all();
    }
    return report("openclose", total + held(), limit);
}

static int probe_remove(const char *region)
{
    size_t limit = limit_now();
    take_all();
    unlink(region);
    size_t total = sibling();
    return report("remove", total + held(), limit);
}

static struct shim_region *map_region(const char *region)
{
    int fd = open(region, O_RDWR);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, sizeof(struct shim_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static int probe_zero(const char *region, long wait_ms)
{
    size_t limit = limit_now();
    take_all();
    struct shim_region *r = map_region(region);
    for (unsigned i = 0; r && i < SHIM_SLOTS; i++)
        if (r->slots[i].pid == getpid())
            memset(&r->slots[i], 0, sizeof(r->slots[i]));
    take_all();
    sleep_ms(wait_ms);
    size_t total = sibling();
    return report("zero", total + held(), limit);
}

/* ---- the SM bucket ------------------------------------------------------ */

static struct shim_region *bucket_region;

static void *refiller(void *unused)
{
    (void)unused;
    for (;;) {
        atomic_store(&bucket_region->sm.balance_ns, 20000000);
        sleep_ms(1);
    }
    return NULL;
}

static int probe_refill(const char *region, int secs, unsigned us)
{
    CUmodule mod;
    CUfunction f;
    if (cuModuleLoadData(&mod, "any image") != CUDA_SUCCESS ||
        cuModuleGetFunction(&f, mod, "tessera_sleep_us") != CUDA_SUCCESS)
        return 2;
    void *args[] = {&us};
    cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL); /* maps the region */
    pthread_t t;
    if ((bucket_region = map_region(region)))
        pthread_create(&t, NULL, refiller, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long n = 0;
    do {
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
        if (++n % 8 == 0)
            cuCtxSynchronize();
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while (t1.tv_sec - t0.tv_sec < secs);
    cuCtxSynchronize();
    printf("launches=%ld busy_ns=%llu\n", n,
           tessera_standin_busy_ns ? (unsigned long long)tessera_standin_busy_ns(getpid()) : 0ull);
    return 0;
}

static int mode_sibling(void)
{
    printf("held=%zu\n", take_all());
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || cuInit(0) != CUDA_SUCCESS)
        return 2;
    const char *m = argv[1];
    if (strcmp(m, "sibling") == 0)
        return mode_sibling();
    if (argc < 3)
        return 2;
    if (strcmp(m, "openclose") == 0)
        return probe_openclose(argv[2], argc > 3 ? atoi(argv[3]) : 3);
    if (strcmp(m, "remove") == 0)
        return probe_remove(argv[2]);
    if (strcmp(m, "zero") == 0)
        return probe_zero(argv[2], argc > 3 ? atol(argv[3]) : 0);
    if (strcmp(m, "refill") == 0 && argc > 4)
        return probe_refill(argv[2], atoi(argv[3]), (unsigned)atoi(argv[4]));
    return 2;
}
