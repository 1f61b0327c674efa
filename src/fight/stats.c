/*
 * stats.c - the numbers the fight's verdict rests on (see fight.h).
 *
 * Percentiles are type 7 (linear interpolation between order statistics,
 * numpy's and R's default; Python's statistics.quantiles(method=
 * "inclusive") computes the same, which the unit test uses as an
 * independent check). The p99 interval is the classic distribution-free
 * one: the number of samples below the true q-quantile is Binomial(n, q),
 * so order statistics X(lo) and X(hi) bracket it with probability
 * P(lo <= B <= hi-1); lo and hi are chosen with at most (1-conf)/2 in each
 * tail, from the exact binomial CDF (log-space terms, O(n)).
 */
#include "fight/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ts_status fight_check_series(const double *x, size_t n, const char *name, struct ts_error *err)
{
    if (n < 2)
        return ts_err(err, TS_INVALID, "%s: %zu sample%s: need at least 2 for a percentile", name,
                      n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i]))
            return ts_err(err, TS_INVALID, "%s: sample %zu is not a number (NaN)", name, i);
        if (isinf(x[i]) || x[i] < 0)
            return ts_err(err, TS_INVALID, "%s: sample %zu is %g: latencies are finite and >= 0",
                          name, i, x[i]);
    }
    return TS_OK;
}

double fight_percentile(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

/* log P(B = k) for B ~ Binomial(n, q), 0 < q < 1. */
static double log_pmf(size_t n, size_t k, double q)
{
    double dn = (double)n, dk = (double)k;
    return lgamma(dn + 1) - lgamma(dk + 1) - lgamma(dn - dk + 1) + dk * log(q) +
           (dn - dk) * log1p(-q);
}

ts_status fight_quantile_ranks(size_t n, double q, double conf, size_t *lo, size_t *hi,
                               struct ts_error *err)
{
    if (!(q > 0 && q < 1) || !(conf > 0 && conf < 1))
        return ts_err(err, TS_INVALID, "quantile %g and confidence %g must lie in (0, 1)", q, conf);
    double tail = (1 - conf) / 2, cdf = 0;
    size_t l = 0, u = 0;
    /* cdf = P(B <= k) after adding term k; rank r is usable as the lower
     * bound when P(B <= r-1) <= tail, as the upper when P(B <= r-1) >= 1-tail. */
    for (size_t k = 0; k < n && !u; k++) {
        cdf += exp(log_pmf(n, k, q));
        if (cdf <= tail)
            l = k + 1;
        if (cdf >= 1 - tail)
            u = k + 1;
    }
    if (l == 0 || u == 0 || u <= l)
        return ts_err(err, TS_INVALID,
                      "%zu samples are too few for a %.0f%% interval of the %g quantile", n,
                      conf * 100, q * 100);
    *lo = l;
    *hi = u;
    return TS_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double *fight__sorted_copy(const double *x, size_t n)
{
    double *v = malloc(n ? n * sizeof(*v) : 1);
    if (!v)
        return NULL;
    memcpy(v, x, n * sizeof(*v));
    qsort(v, n, sizeof(*v), cmp_double);
    return v;
}

ts_status fight_summarise(const double *x, size_t n, const char *name, struct fight_summary *s,
                          struct ts_error *err)
{
    memset(s, 0, sizeof(*s));
    ts_status st = fight_check_series(x, n, name, err);
    if (st != TS_OK)
        return st;
    double *v = fight__sorted_copy(x, n);
    if (!v)
        return ts_err(err, TS_NOMEM, "%s: out of memory sorting %zu samples", name, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    s->n = n;
    s->min = v[0];
    s->max = v[n - 1];
    s->mean = sum / (double)n;
    s->p50 = fight_percentile(v, n, 0.50);
    s->p99 = fight_percentile(v, n, 0.99);
    s->p999 = fight_percentile(v, n, 0.999);
    size_t lo, hi;
    if (fight_quantile_ranks(n, 0.99, FIGHT_CI_LEVEL, &lo, &hi, NULL) == TS_OK) {
        s->ci_ok = 1;
        s->p99_lo = v[lo - 1];
        s->p99_hi = v[hi - 1];
    }
    free(v);
    return TS_OK;
}

int fight_within(double base_p99, double p99, double tol)
{
    if (!(base_p99 >= 0) || !(p99 >= 0) || !(tol >= 0))
        return 0;
    return p99 <= base_p99 * (1 + tol) * (1 + 1e-9);
}

size_t fight_quantile_min_n(double q, double conf)
{
    size_t lo = 1, hi = FIGHT_REQUESTS_MAX, a, b;
    if (fight_quantile_ranks(hi, q, conf, &a, &b, NULL) != TS_OK)
        return 0;
    while (lo < hi) { /* the ranks exist from some n on */
        size_t mid = lo + (hi - lo) / 2;
        if (fight_quantile_ranks(mid, q, conf, &a, &b, NULL) == TS_OK)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

double fight_quantile_level(size_t n, double q, size_t lo, size_t hi)
{
    double p = 0; /* P(lo <= B <= hi-1), B ~ Binomial(n, q) */
    for (size_t k = lo; k < hi && k <= n; k++)
        p += exp(log_pmf(n, k, q));
    return p;
}

ts_status fight_change_interval(const double *p99, const double *base, size_t n, double conf,
                                struct fight_change *c, struct ts_error *err)
{
    memset(c, 0, sizeof(*c));
    double d[FIGHT_REPEAT_MAX];
    if (n < 1 || n > FIGHT_REPEAT_MAX)
        return ts_err(err, TS_INVALID, "%zu paired repeats: need 1 to %d", n, FIGHT_REPEAT_MAX);
    for (size_t i = 0; i < n; i++) {
        if (!(base[i] > 0) || !(p99[i] >= 0) || !isfinite(base[i]) || !isfinite(p99[i]))
            return ts_err(err, TS_INVALID, "repeat %zu: p99 %g against baseline %g", i, p99[i],
                          base[i]);
        d[i] = p99[i] / base[i];
    }
    qsort(d, n, sizeof(d[0]), cmp_double);
    c->n = n;
    c->est = fight_percentile(d, n, 0.5);
    c->lo = d[0];
    c->hi = d[n - 1];
    size_t lo, hi;
    if (fight_quantile_ranks(n, 0.5, conf, &lo, &hi, NULL) != TS_OK)
        return TS_OK; /* ok stays 0: too few repeats for conf */
    c->ok = 1;
    c->lo = d[lo - 1];
    c->hi = d[hi - 1];
    c->level = fight_quantile_level(n, 0.5, lo, hi);
    return TS_OK;
}

int fight_verdict3(const struct fight_change *c, double tol)
{
    double bound = (1 + tol) * (1 + 1e-9);
    if (!c->ok)
        return FIGHT_ST_INCONCLUSIVE;
    if (c->hi <= bound)
        return FIGHT_ST_PASS;
    if (c->lo > bound)
        return FIGHT_ST_FAIL;
    return FIGHT_ST_INCONCLUSIVE;
}

int fight_verdict_aa(const struct fight_change *c, double tol)
{
    double hi = (1 + tol) * (1 + 1e-9), lo = 1 / hi;
    if (!c->ok)
        return FIGHT_ST_INCONCLUSIVE;
    if (c->lo >= lo && c->hi <= hi)
        return FIGHT_ST_PASS;
    if (c->lo > hi || c->hi < lo)
        return FIGHT_ST_FAIL;
    return FIGHT_ST_INCONCLUSIVE;
}

size_t fight_repeats_needed(const struct fight_change *c, double tol, double conf)
{
    size_t least = fight_quantile_min_n(0.5, conf);
    if (!c->ok)
        return least > c->n ? least : c->n + 1;
    double bound = 1 + tol, gap = fabs(c->est - bound);
    double reach = c->est < bound ? c->hi - c->est : c->est - c->lo;
    if (!(gap > 0))
        return 0; /* the estimate sits on the tolerance: no count decides it */
    double f = reach / gap, n = ceil((double)c->n * f * f);
    if (!(n < (double)FIGHT_REQUESTS_MAX))
        return FIGHT_REQUESTS_MAX;
    return n > (double)c->n ? (size_t)n : c->n + 1;
}

uint64_t fight__rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
