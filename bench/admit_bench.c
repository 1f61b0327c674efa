/*
 * admit_bench.c - CPU time of one admission review in-process (no server,
 * no TLS): the fast decoder (src/admit/stream.c, what admit_review uses)
 * against the full one (jansson's json_loadb of the whole body), taking
 * turns, best of ROUNDS. Built as admit_bench (tests/admit/CMakeLists.txt);
 * bench/webhook_bench.sh runs it.
 * Usage: admit_bench SPEC REVIEW [N]   (TESSERA_SRC for relative SPEC)
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "admit/admit.h"
#include "admit/internal.h"

#define ROUNDS 5

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU microseconds per review over n reviews of body. */
static double per_review(const struct admit_policy *pol, const char *body, size_t len, long n,
                         int full)
{
    struct ts_sbuf out;
    struct admit_verdict v;
    ts_sbuf_init(&out, 1 << 20);
    double t0 = cpu_s();
    for (long i = 0; i < n; i++) {
        out.len = 0;
        ad_review(pol, body, len, &out, &v, full);
    }
    double t = cpu_s() - t0;
    ts_sbuf_release(&out);
    return t * 1e6 / (double)n;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0)
        return NULL;
    long n = ftell(f);
    rewind(f);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: admit_bench SPEC REVIEW [N]\n");
        return 2;
    }
    struct th_job j;
    th_run_file(&j, argv[1], PLAN_SOLVER_HEURISTIC);
    struct admit_options opt = {NULL, NULL};
    struct admit_policy *pol = NULL;
    struct ts_error err = {0};
    size_t len;
    char *body = slurp(argv[2], &len);
    if (j.st != TS_OK || !body || admit_policy_build(j.plan, &opt, &pol, &err) != TS_OK) {
        fprintf(stderr, "admit_bench: cannot build the policy or read %s\n", argv[2]);
        return 1;
    }
    long n = argc > 3 ? atol(argv[3]) : 20000;
    double fast = 1e9, full = 1e9;
    for (int r = 0; r < ROUNDS; r++) {
        double a = per_review(pol, body, len, n, 0), b = per_review(pol, body, len, n, 1);
        fast = a < fast ? a : fast;
        full = b < full ? b : full;
    }
    printf("admit-inprocess bytes=%zu reviews=%ld fast_us=%.1f full_us=%.1f\n", len, n * ROUNDS,
           fast, full);
    admit_policy_free(pol);
    th_free(&j);
    free(body);
    return 0;
}
