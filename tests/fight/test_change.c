/*
 * test_change.c - the fight's verdict statistics: the interval of the
 * median p99 change over paired repeats (fight_change_interval), its exact
 * coverage level against binomial sums in integers, its coverage on
 * simulated draws of known distributions (within 1 point of the level it
 * claims), the three-way verdict at its exact boundaries, the repeats an
 * INCONCLUSIVE change would need, and refused inputs.
 */
#include "helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fight/fight.h"

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double unif(uint64_t *s) { return ((double)(rng(s) >> 11) + 0.5) / 9007199254740992.0; }

/* Standard normal (Box-Muller). */
static double normal(uint64_t *s)
{
    return sqrt(-2 * log(unif(s))) * cos(6.283185307179586 * unif(s));
}

/* C(n, k) in integers (n <= 62 stays exact here). */
static uint64_t comb(unsigned n, unsigned k)
{
    uint64_t c = 1;
    for (unsigned i = 1; i <= k; i++)
        c = c * (n - k + i) / i;
    return c;
}

/* The level of [X(lo), X(hi)] for the median, summed in integers:
 * sum_{k=lo}^{hi-1} C(n, k) / 2^n. */
static double level_int(unsigned n, unsigned lo, unsigned hi)
{
    uint64_t sum = 0;
    for (unsigned k = lo; k < hi; k++)
        sum += comb(n, k);
    return (double)sum / ldexp(1, (int)n);
}

static void level_exact(void **state)
{
    (void)state;
    size_t lo, hi;
    /* 5 repeats: [min, max] covers with 1 - 2/32 = 93.75% < 95%: none */
    assert_int_not_equal(fight_quantile_ranks(5, 0.5, 0.95, &lo, &hi, NULL), TS_OK);
    assert_int_equal(fight_quantile_min_n(0.5, 0.95), 6);
    for (unsigned n = 6; n <= FIGHT_REPEAT_MAX; n++) {
        assert_int_equal(fight_quantile_ranks(n, 0.5, 0.95, &lo, &hi, NULL), TS_OK);
        double want = level_int(n, (unsigned)lo, (unsigned)hi);
        assert_true(fabs(fight_quantile_level(n, 0.5, lo, hi) - want) < 1e-12);
        assert_true(want >= 0.95);
        /* equal tails, each at most 2.5%, and one rank inward would break that */
        assert_true(level_int(n, 0, (unsigned)lo) <= 0.025);
        assert_true(level_int(n, 0, (unsigned)lo + 1) > 0.025);
        assert_true(hi == n + 1 - lo);
    }
    /* by hand: n = 6 gives [X(1), X(6)] at 62/64 */
    assert_int_equal(fight_quantile_ranks(6, 0.5, 0.95, &lo, &hi, NULL), TS_OK);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 6);
    assert_true(fabs(fight_quantile_level(6, 0.5, 1, 6) - 62.0 / 64) < 1e-12);
}

/* A draw of a ratio whose median is known (kind 0..3). */
static double draw(int kind, uint64_t *s, double *median)
{
    switch (kind) {
    case 0: *median = exp(0.1); return exp(0.1 + 0.5 * normal(s)); /* lognormal */
    case 1: *median = 0.8 + log(2.0); return 0.8 - log(unif(s));   /* shifted exponential */
    case 2: *median = 1.05; return 0.9 + 0.3 * unif(s);            /* uniform */
    default: *median = 1 + pow(2, 1 / 1.5); return 1 + pow(unif(s), -1 / 1.5); /* Pareto */
    }
}

/* The interval's coverage of the true median on 10000 simulated sets of
 * repeats, per distribution and count, is within 1 point of its level. */
static void coverage_known(void **state)
{
    (void)state;
    enum { TRIALS = 10000 };
    static const size_t ns[] = {6, 8, 11, 16, 32};
    uint64_t seed = 7;
    double one[FIGHT_REPEAT_MAX], p99[FIGHT_REPEAT_MAX];
    for (int i = 0; i < FIGHT_REPEAT_MAX; i++)
        one[i] = 1;
    for (int kind = 0; kind < 4; kind++)
        for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
            int covered = 0;
            double truth = 0, level = 0;
            for (int t = 0; t < TRIALS; t++) {
                for (size_t i = 0; i < ns[k]; i++)
                    p99[i] = draw(kind, &seed, &truth);
                struct fight_change c;
                assert_int_equal(fight_change_interval(p99, one, ns[k], 0.95, &c, NULL), TS_OK);
                assert_true(c.ok);
                level = c.level;
                covered += c.lo <= truth && truth <= c.hi;
            }
            double frac = (double)covered / TRIALS;
            if (fabs(frac - level) > 0.01)
                fail_msg("kind %d, n %zu: covered %.4f, level %.4f", kind, ns[k], frac, level);
        }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p99 of n lognormal latencies (median 100 us) times scale. */
static double sample_p99(uint64_t *s, double scale, double *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = scale * 100 * exp(0.6 * normal(s));
    qsort(buf, n, sizeof(buf[0]), cmp);
    return fight_percentile(buf, n, 0.99);
}

/* End to end on simulated runs: each repeat's baseline and mechanism p99
 * come from 200 latencies each, the mechanism's scaled by 1.3, so the
 * median of the p99 ratios is exactly 1.3 (log of the ratio of two i.i.d.
 * p99s is symmetric about 0). Coverage within 1 point of the level. */
static void coverage_p99_runs(void **state)
{
    (void)state;
    enum { TRIALS = 4000, N = 200, REP = 6 };
    static double buf[N];
    double base[REP], mech[REP];
    uint64_t seed = 11;
    int covered = 0;
    double level = 0;
    for (int t = 0; t < TRIALS; t++) {
        for (int i = 0; i < REP; i++) {
            base[i] = sample_p99(&seed, 1.0, buf, N);
            mech[i] = sample_p99(&seed, 1.3, buf, N);
        }
        struct fight_change c;
        assert_int_equal(fight_change_interval(mech, base, REP, 0.95, &c, NULL), TS_OK);
        level = c.level;
        covered += c.lo <= 1.3 && 1.3 <= c.hi;
    }
    double frac = (double)covered / TRIALS;
    if (fabs(frac - level) > 0.01)
        fail_msg("covered %.4f, level %.4f", frac, level);
}

static struct fight_change ch(double lo, double est, double hi)
{
    struct fight_change c = {6, 1, est, lo, hi, 62.0 / 64};
    return c;
}

static void verdict_exact(void **state)
{
    (void)state;
    double bound = 1.1 * (1 + 1e-9); /* the slack for rounding, documented */
    struct fight_change c = ch(0.9, 1.0, 1.1);
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_PASS); /* hi exactly on it */
    c = ch(0.9, 1.0, bound);
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_PASS);
    c = ch(0.9, 1.0, nextafter(bound, 2));
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_INCONCLUSIVE);
    c = ch(1.1, 1.2, 1.3); /* lo exactly on it: not above */
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_INCONCLUSIVE);
    c = ch(bound, 1.2, 1.3);
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_INCONCLUSIVE);
    c = ch(nextafter(bound, 2), 1.2, 1.3);
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_FAIL);
    c = ch(0.5, 0.6, 0.7); /* faster is fine */
    assert_int_equal(fight_verdict3(&c, 0.0), FIGHT_ST_PASS);
    c.ok = 0; /* no interval: never a PASS or a FAIL */
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_INCONCLUSIVE);
    /* through the interval: ratios 110/100 = 1.1 in every repeat pass */
    double base[6] = {100, 200, 50, 100, 400, 10}, p99[6];
    for (int i = 0; i < 6; i++)
        p99[i] = base[i] * 1.1;
    assert_int_equal(fight_change_interval(p99, base, 6, 0.95, &c, NULL), TS_OK);
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_PASS);
    p99[3] = 110.001; /* one repeat above: the top of [X(1), X(6)] */
    assert_int_equal(fight_change_interval(p99, base, 6, 0.95, &c, NULL), TS_OK);
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_INCONCLUSIVE);
    for (int i = 0; i < 6; i++)
        p99[i] = base[i] * 1.100001;
    assert_int_equal(fight_change_interval(p99, base, 6, 0.95, &c, NULL), TS_OK);
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_FAIL);
    /* five repeats: no 95% interval, INCONCLUSIVE even when far off */
    for (int i = 0; i < 6; i++)
        p99[i] = base[i] * 3;
    assert_int_equal(fight_change_interval(p99, base, 5, 0.95, &c, NULL), TS_OK);
    assert_false(c.ok);
    assert_int_equal(fight_verdict3(&c, 0.10), FIGHT_ST_INCONCLUSIVE);
    assert_int_equal(fight_repeats_needed(&c, 0.10, 0.95), 6);
}

static void median_and_needed(void **state)
{
    (void)state;
    double base[7] = {1, 1, 1, 1, 1, 1, 1}, p99[7] = {1.3, 0.9, 1.0, 1.2, 1.05, 0.95, 1.1};
    struct fight_change c;
    assert_int_equal(fight_change_interval(p99, base, 7, 0.95, &c, NULL), TS_OK);
    assert_true(c.ok && c.est == 1.05 && c.lo == 0.9 && c.hi == 1.3); /* n 7: [X(1), X(7)] */
    assert_true(fabs(c.level - 126.0 / 128) < 1e-12);
    /* reach 0.2 above est 1.0, gap 0.1 to 1.1: (0.2/0.1)^2 x 6 = 24 */
    c = ch(0.9, 1.0, 1.2);
    assert_int_equal(fight_repeats_needed(&c, 0.10, 0.95), 24);
    /* above: reach 0.3 below est 1.3, gap 0.2: 2.25 x 6 = 13.5 -> 14 */
    c = ch(1.0, 1.3, 1.5);
    assert_int_equal(fight_repeats_needed(&c, 0.10, 0.95), 14);
    /* nearly decided: at least one more */
    c = ch(0.9, 1.0, 1.1000001);
    assert_int_equal(fight_repeats_needed(&c, 0.10, 0.95), 7);
    c = ch(1.0, 1.1, 1.2); /* the estimate on the line */
    assert_int_equal(fight_repeats_needed(&c, 0.10, 0.95), 0);
}

static void refused(void **state)
{
    (void)state;
    struct fight_change c;
    struct ts_error e = {0};
    double base[3] = {100, 0, 100}, p99[3] = {100, 100, NAN};
    assert_int_equal(fight_change_interval(p99, base, 3, 0.95, &c, &e), TS_INVALID);
    assert_string_equal(e.msg, "repeat 1: p99 100 against baseline 0");
    base[1] = 100;
    assert_int_equal(fight_change_interval(p99, base, 3, 0.95, &c, &e), TS_INVALID);
    assert_string_equal(e.msg, "repeat 2: p99 nan against baseline 100");
    assert_int_equal(fight_change_interval(p99, base, 0, 0.95, &c, &e), TS_INVALID);
    assert_non_null(strstr(e.msg, "0 paired repeats"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(level_exact),       cmocka_unit_test(coverage_known),
        cmocka_unit_test(coverage_p99_runs), cmocka_unit_test(verdict_exact),
        cmocka_unit_test(median_and_needed), cmocka_unit_test(refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
