/*
 * shim_track_bench.c - the shim's allocation table (src/shim/track.c) alone:
 * ns per put + take pair, the shim's bookkeeping for one cuMemAlloc_v2 +
 * cuMemFree_v2, with the address reused each time (a malloc-like driver)
 * and with addresses never reused (each pair a new one), each with LIVE
 * other allocations held in the table. Built by bench/shim_bench.sh with
 * cc -O2 against a track.c (this tree's, or another's with TRACK_C).
 * Usage: shim_track_bench N LIVE
 */
#include "shim/shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ns per pair over n pairs; key i is base + (reuse ? 0 : i) * 256. */
static double pairs(long n, uint64_t base, int reuse)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        uint64_t key = base + (reuse ? 0 : (uint64_t)i) * 256;
        if (shim__track_put(SHIM_TRACK_PTR, key, 4096, 0) != 0 ||
            shim__track_take(SHIM_TRACK_PTR, key, NULL) != 4096) {
            fprintf(stderr, "table fault at %ld\n", i);
            exit(1);
        }
    }
    return (double)(now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long n = atol(argv[1]), live = atol(argv[2]);
    for (long i = 0; i < live; i++)
        shim__track_put(SHIM_TRACK_PTR, 0x7f0000000000ull + (uint64_t)i * 4096, 4096, 0);
    double reuse = pairs(n, 0x500000000000ull, 1);
    double fresh = pairs(n, 0x600000000000ull, 0);
    printf("reuse_ns=%.1f fresh_ns=%.1f\n", reuse, fresh);
    return 0;
}
