/*
 * standin_async.c - the stand-in driver is asynchronous as the real one is
 * (test, linked to the stand-in directly, no shim): a launch returns at
 * once; queries answer CUDA_ERROR_NOT_READY until the work ends;
 * synchronisation waits for it; events time device work, not the host; the
 * busy counter counts only elapsed time; a process's queue is bounded.
 * Exits 0 when every check held, 1 with "FAIL:" lines otherwise.
 */
#include "util/cuda_abi.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "../../check.h"

uint64_t tessera_standin_busy_ns(int pid);
unsigned tessera_standin_pending(int pid);

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static CUfunction fn;

static CUresult run_us(uint32_t us, CUstream s)
{
    void *params[] = {&us};
    return cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

/* A 5 ms kernel, then a 20 ms one between two events: each launch returns
 * at once, the stream and the event are not ready, busy counts none of the
 * queued work; after the event's wait all 25 ms, and the events are 20 ms
 * apart exactly (device time: the first was recorded behind the 5 ms
 * kernel, so no host time falls between them). */
static void one_kernel(int pid)
{
    CUevent e0, e1, nt;
    cuEventCreate(&e0, 0);
    cuEventCreate(&e1, 0);
    cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING);
    run_us(1, NULL); /* the first launch maps the card */
    cuCtxSynchronize();
    uint64_t b0 = tessera_standin_busy_ns(pid), t0 = now_ns();
    CHECK(run_us(5000, NULL) == CUDA_SUCCESS, "launch failed");
    cuEventRecord(e0, NULL);
    CHECK(run_us(20000, NULL) == CUDA_SUCCESS, "launch failed");
    uint64_t took = now_ns() - t0;
    CHECK(took < 5000000, "two launches took %llu ns: not asynchronous", (unsigned long long)took);
    cuEventRecord(e1, NULL);
    cuEventRecord(nt, NULL);
    CHECK(cuStreamQuery(NULL) == CUDA_ERROR_NOT_READY, "stream ready while its kernel runs");
    CHECK(cuEventQuery(e1) == CUDA_ERROR_NOT_READY, "event ready while its kernel runs");
    CHECK(tessera_standin_pending(pid) == 2, "pending %u, want 2", tessera_standin_pending(pid));
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, e0, e1) == CUDA_ERROR_NOT_READY, "elapsed time before the end");
    uint64_t mid = tessera_standin_busy_ns(pid) - b0;
    CHECK(mid < 15000000, "busy %llu ns counts queued work", (unsigned long long)mid);
    CHECK(cuEventSynchronize(e1) == CUDA_SUCCESS, "cuEventSynchronize");
    took = now_ns() - t0;
    CHECK(took >= 25000000, "the wait ended after %llu ns, before the kernels",
          (unsigned long long)took);
    CHECK(cuEventQuery(e1) == CUDA_SUCCESS && cuStreamQuery(NULL) == CUDA_SUCCESS,
          "not ready after the wait");
    CHECK(cuEventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS && ms > 19.999f && ms < 20.001f,
          "elapsed %.4f ms, want 20 (device time)", (double)ms);
    CHECK(cuEventElapsedTime(&ms, e0, nt) == CUDA_ERROR_INVALID_HANDLE,
          "elapsed time of a CU_EVENT_DISABLE_TIMING event");
    uint64_t b = tessera_standin_busy_ns(pid) - b0;
    CHECK(b >= 25000000 && b < 25100000, "busy %llu ns, want 25 ms", (unsigned long long)b);
    cuEventDestroy_v2(e0);
    cuEventDestroy_v2(e1);
    cuEventDestroy_v2(nt);
}

/* Streams: a non-blocking stream's synchronisation does not wait for the
 * NULL stream's later work; cuCtxSynchronize waits for everything. */
static void streams(void)
{
    CUstream nb;
    CHECK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "cuStreamCreate");
    uint64_t t0 = now_ns();
    run_us(5000, nb);
    run_us(30000, NULL);
    cuStreamSynchronize(nb);
    uint64_t t1 = now_ns() - t0;
    CHECK(t1 >= 5000000 && t1 < 25000000, "the stream's wait took %llu ns, want 5 ms",
          (unsigned long long)t1);
    CHECK(cuStreamQuery(NULL) == CUDA_ERROR_NOT_READY, "the NULL stream ready early");
    cuCtxSynchronize();
    t1 = now_ns() - t0;
    CHECK(t1 >= 35000000, "cuCtxSynchronize returned after %llu ns, want 35 ms",
          (unsigned long long)t1);
    cuStreamDestroy_v2(nb);
}

/* 1100 kernels of 100 us queued at once: never more than 1024 pending, so
 * the launches block for at least the 76 that did not fit. */
static void bounded_queue(int pid)
{
    uint64_t t0 = now_ns();
    unsigned most = 0;
    for (int i = 0; i < 1100; i++) {
        run_us(100, NULL);
        unsigned p = tessera_standin_pending(pid);
        most = p > most ? p : most;
    }
    uint64_t took = now_ns() - t0;
    CHECK(most <= 1024, "%u kernels pending, more than 1024", most);
    CHECK(took >= 7600000, "1100 launches took %llu ns: the queue did not block",
          (unsigned long long)took);
    cuCtxSynchronize();
    CHECK(tessera_standin_pending(pid) == 0, "pending after cuCtxSynchronize");
}

int main(void)
{
    CUmodule m;
    cuInit(0);
    cuModuleLoadData(&m, "any image");
    cuModuleGetFunction(&fn, m, "tessera_sleep_us");
    int pid = (int)getpid(); /* run in the host's pid namespace */
    one_kernel(pid);
    streams();
    bounded_queue(pid);
    cuModuleUnload(m);
    printf("standin_async: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
