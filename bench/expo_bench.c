/*
 * expo_bench.c - the Prometheus text parser alone (src/meter/expo.c), for
 * bench/meter_bench.sh: read FILE in 64 KiB chunks with read(2) and feed
 * them to meter_expo_feed; a sample callback that only counts. Prints
 * "bytes lines samples errors seconds MB/s". Built by meter_bench.sh with cc
 * straight from the two sources (no CMake target, no store, no attribution),
 * so the figure is the parser's, with the same read floor `wc -l` has.
 */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "meter/expo.h"

static int count_sample(void *ctx, const struct meter_sample *s)
{
    (*(long *)ctx) += s->nlabels > 0;
    return 0;
}

static void ignore_error(void *ctx, long line, int column, const char *msg)
{
    (void)ctx, (void)line, (void)column, (void)msg;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    static char buf[1 << 16];
    long labelled = 0, lines = 0, samples = 0, errors = 0;
    size_t bytes = 0;
    ssize_t got;
    int fd = argc == 2 ? open(argv[1], O_RDONLY) : -1;
    if (fd < 0) {
        fprintf(stderr, "usage: expo_bench FILE\n");
        return 2;
    }
    struct meter_expo *p = meter_expo_new(count_sample, ignore_error, &labelled);
    double t0 = now_s();
    while (p && (got = read(fd, buf, sizeof(buf))) > 0) {
        bytes += (size_t)got;
        if (meter_expo_feed(p, buf, (size_t)got) != TS_OK)
            break;
    }
    if (p)
        meter_expo_finish(p);
    double dt = now_s() - t0;
    close(fd);
    if (!p)
        return 1;
    meter_expo_counts(p, &lines, &samples, &errors);
    meter_expo_free(p);
    printf("%zu %ld %ld %ld %.3f %.1f\n", bytes, lines, samples, errors, dt,
           (double)bytes / 1e6 / dt);
    return labelled == samples ? 0 : 1;
}
