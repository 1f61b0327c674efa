/*
 * test_stats.c - the fight's statistics on recorded latency series
 * (the .lat files in tests/fixtures/fight: the SLA worker on the stand-in driver, alone
 * and beside a noisy worker; origin in tests/fixtures/fight/README.md):
 * percentiles against Python's statistics.quantiles(method="inclusive"),
 * an independent type-7 implementation run from the test; the p99 ranks
 * against an exact binomial in Python's integers (math.comb), and by hand
 * at the smallest n; the interval's coverage on simulated exponential
 * draws; the verdict at the tolerance boundary; refused inputs.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fight/fight.h"
#include "util/file.h"

/* Load a recorded .lat fixture through the pipe reader. */
static void load(const char *name, struct fight_series *s)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "tests/fixtures/fight/%s", name);
    char *text;
    size_t len;
    struct ts_error e = {0};
    assert_int_equal(ts_file_read(th_src_path(rel), 1u << 24, &text, &len, &e), TS_OK);
    struct fight_reader r;
    memset(s, 0, sizeof(*s));
    fight_reader_init(&r, name, s);
    assert_int_equal(fight_reader_feed(&r, text, len, &e), TS_OK);
    assert_int_equal(fight_reader_finish(&r, &e), TS_OK);
    free(text);
}

/* Run python3 on script with the series on stdin; read back doubles. */
static int python(const char *script, const struct fight_series *s, double *out, int nout)
{
    char path[] = "/tmp/test_stats_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (size_t i = 0; s && i < s->n; i++)
        fprintf(f, "%.17g\n", s->lat_us[i]);
    fclose(f);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "python3 -c '%s' < %s", script, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int n = 0;
    while (n < nout && fscanf(p, "%lf", &out[n]) == 1)
        n++;
    pclose(p);
    remove(path);
    return n;
}

static void percentiles_match_python(void **state)
{
    (void)state;
    static const char *const files[] = {"sla-alone.lat", "sla-timesliced.lat"};
    const char *script = "import sys, statistics as st\n"
                         "x = [float(l) for l in sys.stdin]\n"
                         "q = lambda n, i: st.quantiles(x, n=n, method=\"inclusive\")[i]\n"
                         "print(q(2, 0), q(100, 98), q(1000, 998))\n";
    for (size_t f = 0; f < 2; f++) {
        struct fight_series s;
        struct fight_summary sum;
        load(files[f], &s);
        assert_int_equal(s.n, 500);
        double want[3];
        assert_int_equal(python(script, &s, want, 3), 3);
        assert_int_equal(fight_summarise(s.lat_us, s.n, "x", &sum, NULL), TS_OK);
        assert_true(fabs(sum.p50 - want[0]) < 1e-9 * want[0]);
        assert_true(fabs(sum.p99 - want[1]) < 1e-9 * want[1]);
        assert_true(fabs(sum.p999 - want[2]) < 1e-9 * want[2]);
        assert_true(sum.ci_ok && sum.p99_lo <= sum.p99 && sum.p99 <= sum.p99_hi);
        fight_series_release(&s);
    }
    /* By hand: 1 2 3 4 -> p50 = 2.5; p99: h = 3 * 0.99 = 2.97 -> 3.97. */
    double v[] = {1, 2, 3, 4};
    assert_true(fabs(fight_percentile(v, 4, 0.5) - 2.5) < 1e-12);
    assert_true(fabs(fight_percentile(v, 4, 0.99) - 3.97) < 1e-12);
    assert_true(fight_percentile(v, 4, 1.0) == 4 && fight_percentile(v, 4, 0) == 1);
}

static void recorded_fight_moves_p99(void **state)
{
    (void)state;
    struct fight_series a, b;
    struct fight_summary sa, sb;
    load("sla-alone.lat", &a);
    load("sla-timesliced.lat", &b);
    assert_int_equal(fight_summarise(a.lat_us, a.n, "a", &sa, NULL), TS_OK);
    assert_int_equal(fight_summarise(b.lat_us, b.n, "b", &sb, NULL), TS_OK);
    /* Recorded on a busy 2-core machine, so the baseline has its own tail;
     * the 2 ms noisy kernels still move the median tenfold and p99 twofold. */
    assert_true(sb.p50 > 10 * sa.p50);
    assert_true(sb.p99 > 2 * sa.p99);
    assert_false(fight_within(sa.p99, sb.p99, 0.10));
    assert_true(fight_within(sa.p99, sa.p99, 0.0));
    assert_true(sb.p99_lo > sa.p99_lo);
    fight_series_release(&a);
    fight_series_release(&b);
}

static void ranks_exact(void **state)
{
    (void)state;
    size_t lo, hi;
    struct ts_error e = {0};
    /* By hand: X(n) covers p99 from above iff 1 - 0.99^n >= 0.975, i.e.
     * n >= 368 (0.99^367 = 0.02501, 0.99^368 = 0.02476). */
    assert_int_equal(fight_quantile_ranks(367, 0.99, 0.95, &lo, &hi, &e), TS_INVALID);
    assert_non_null(strstr(e.msg, "367 samples are too few"));
    assert_int_equal(fight_quantile_ranks(368, 0.99, 0.95, &lo, &hi, &e), TS_OK);
    assert_int_equal(hi, 368);
    /* n = 1000 and 5000 against math.comb in Python (an independent sum). */
    const char *script = "from math import comb\n"
                         "for n in (1000, 5000):\n"
                         "    c, lo, hi, whole = 0, 0, 0, 100**n\n"
                         "    for k in range(n):\n"
                         "        c += comb(n, k) * 99**k\n"
                         "        if 40 * c <= whole: lo = k + 1\n"
                         "        if 40 * c >= 39 * whole and not hi: hi = k + 1\n"
                         "    print(lo, hi)\n";
    double want[4];
    assert_int_equal(python(script, NULL, want, 4), 4);
    assert_int_equal(fight_quantile_ranks(1000, 0.99, 0.95, &lo, &hi, NULL), TS_OK);
    assert_int_equal(lo, (size_t)want[0]);
    assert_int_equal(hi, (size_t)want[1]);
    assert_int_equal(fight_quantile_ranks(5000, 0.99, 0.95, &lo, &hi, NULL), TS_OK);
    assert_int_equal(lo, (size_t)want[2]);
    assert_int_equal(hi, (size_t)want[3]);
    assert_int_equal(fight_quantile_ranks(1000, 1.0, 0.95, &lo, &hi, NULL), TS_INVALID);
    assert_int_equal(fight_quantile_ranks(1000, 0.99, 0.0, &lo, &hi, NULL), TS_INVALID);
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 1000 draws of 1000 exponential samples: the 95% interval holds the true
 * p99 (ln 100) in 93..99% of them (exact intervals are conservative). */
static void interval_coverage(void **state)
{
    (void)state;
    enum { TRIALS = 1000, N = 1000 };
    static double x[N];
    uint64_t seed = 42;
    int covered = 0;
    double truth = log(100.0);
    for (int t = 0; t < TRIALS; t++) {
        for (int i = 0; i < N; i++)
            x[i] = -log(((double)(rng(&seed) >> 11) + 0.5) / 9007199254740992.0);
        struct fight_summary s;
        assert_int_equal(fight_summarise(x, N, "exp", &s, NULL), TS_OK);
        assert_true(s.ci_ok);
        covered += s.p99_lo <= truth && truth <= s.p99_hi;
    }
    double frac = (double)covered / TRIALS;
    assert_true(frac >= 0.93 && frac <= 0.99);
}

static void verdict_boundary(void **state)
{
    (void)state;
    assert_true(fight_within(100, 110, 0.10)); /* exactly +10% passes */
    assert_true(fight_within(100, 109.999, 0.10));
    assert_false(fight_within(100, 110.001, 0.10));
    assert_true(fight_within(250, 250, 0));
    assert_false(fight_within(250, 250.001, 0));
    assert_true(fight_within(100, 50, 0.10)); /* faster is fine */
    assert_true(fight_within(0, 0, 0.10));
    assert_false(fight_within(0, 1, 0.10));
    assert_false(fight_within(NAN, 1, 0.10));
    assert_false(fight_within(100, NAN, 0.10));
    assert_false(fight_within(100, 100, -0.1));
}

static void refused_inputs(void **state)
{
    (void)state;
    struct fight_summary s;
    struct ts_error e = {0};
    double one[] = {5}, nan3[] = {1, 2, NAN, 4}, neg[] = {1, -2}, inf[] = {INFINITY, 1};
    assert_int_equal(fight_summarise(NULL, 0, "sla", &s, &e), TS_INVALID);
    assert_string_equal(e.msg, "sla: 0 samples: need at least 2 for a percentile");
    assert_int_equal(fight_summarise(one, 1, "sla", &s, &e), TS_INVALID);
    assert_string_equal(e.msg, "sla: 1 sample: need at least 2 for a percentile");
    assert_int_equal(fight_summarise(nan3, 4, "sla", &s, &e), TS_INVALID);
    assert_string_equal(e.msg, "sla: sample 2 is not a number (NaN)");
    assert_int_equal(fight_summarise(neg, 2, "sla", &s, &e), TS_INVALID);
    assert_non_null(strstr(e.msg, "sample 1 is -2"));
    assert_int_equal(fight_summarise(inf, 2, "sla", &s, &e), TS_INVALID);
    assert_non_null(strstr(e.msg, "sample 0 is inf"));
    /* Too few for an interval: summarised, interval flagged absent. */
    double few[] = {3, 1, 2};
    assert_int_equal(fight_summarise(few, 3, "sla", &s, &e), TS_OK);
    assert_false(s.ci_ok);
    assert_true(s.min == 1 && s.max == 3 && s.p50 == 2);
}

/* The fewest samples for a 95% p99 interval: 368 (exact binomial, the
 * interval of equal tails), and no ranks at 367. */
static void interval_min_samples(void **state)
{
    (void)state;
    size_t lo, hi;
    assert_int_equal(fight_quantile_min_n(0.99, 0.95), 368);
    assert_int_equal(fight_quantile_ranks(368, 0.99, 0.95, &lo, &hi, NULL), TS_OK);
    assert_int_not_equal(fight_quantile_ranks(367, 0.99, 0.95, &lo, &hi, NULL), TS_OK);
    assert_true(fight_quantile_min_n(0.5, 0.95) < 368);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentiles_match_python),
        cmocka_unit_test(recorded_fight_moves_p99),
        cmocka_unit_test(ranks_exact),
        cmocka_unit_test(interval_coverage),
        cmocka_unit_test(verdict_boundary),
        cmocka_unit_test(interval_min_samples),
        cmocka_unit_test(refused_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
