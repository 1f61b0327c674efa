/*
 * test_shared.c - a shared workload split among its consumers: equal parts,
 * parts by weight, the micro-GPU-hours left to the largest remainders (ties
 * to the first listed), none, by requests (usage, by weight where none were
 * counted, marked so), and the owner's passed-on line on invoices
 * (minus the consumers' rounded amounts, printed with its sign).
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/invoice.h"
#include "meter/shared.h"

#define SPEC_FMT                                                                      \
    "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"     \
    "  nodes: [{name: n, gpus: [{model: h100-80gb-sxm, count: 1}]}]\n---\n"           \
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: own}\nspec:\n"  \
    "  contract: shared-trusted\n  namespaces: [own]\n"                               \
    "  workloads: [{name: pool, kind: embedding, memoryHighWaterGiB: 6}]\n---\n"      \
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: a}\nspec:\n"    \
    "  contract: shared-trusted\n  namespaces: [a]\n"                                 \
    "  uses: [{tenant: own, workload: pool, weight: %d}]\n---\n"                      \
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: b}\nspec:\n"    \
    "  contract: shared-trusted\n  namespaces: [b]\n"                                 \
    "  uses: [{tenant: own, workload: pool}]\n---\n"                                  \
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: c}\nspec:\n"    \
    "  contract: shared-trusted\n  namespaces: [c]\n"                                 \
    "  uses: [{tenant: own, workload: pool}]\n---\n"                                  \
    "apiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\nspec:\n" \
    "  currency: EUR\n  sharedSplit: %s\n"                                            \
    "  prices: [{model: h100-80gb-sxm, perGpuHour: \"2.90\"}]\n"

static const char *const consumers[] = {"a", "b", "c"};

static struct spec_model *load(const char *split, int weight_a)
{
    char text[4096];
    snprintf(text, sizeof(text), SPEC_FMT, weight_a, split);
    struct spec_model *m;
    struct ts_diag d = {0};
    assert_int_equal(spec_load_text(text, strlen(text), "s.yaml", &m, &d), TS_OK);
    return m;
}

/* The pool ran 1/8 of a card for 3,600,010 ms: 125,001 micro-GPU-hours (rounded) */
static void pool_usage(struct meter_usage *u)
{
    meter_usage_init(u, 3600000);
    for (int64_t ts = 0; ts <= 3600010; ts += 3600010) {
        struct meter_point p = {"G/1",     ts,     "own",  "h100-80gb-sxm",
                                "1g.10gb", 125000, 500000, "pool"};
        assert_int_equal(meter_usage_add(u, &p), TS_OK);
    }
    assert_int_equal(meter_alloc_uh(&u->wtotals[0]), 125000);
}

static void parts_of(const char *split, int weight_a, const int64_t want[3])
{
    struct spec_model *m = load(split, weight_a);
    struct meter_usage u;
    pool_usage(&u);
    struct ts_arena a;
    ts_arena_init(&a);
    struct meter_shared_part *p;
    size_t n;
    assert_int_equal(meter_shared_split(&u, m, &a, &p, &n), TS_OK);
    assert_int_equal(n, want ? 4 : 0);
    int64_t sum = 0;
    for (size_t i = 0; want && i < 3; i++) {
        assert_string_equal(p[i].tenant, consumers[i]);
        assert_int_equal(p[i].alloc_uh, want[i]);
        sum += p[i].alloc_uh;
    }
    if (want) {
        assert_true(p[3].passed_on);
        assert_string_equal(p[3].tenant, "own");
        assert_int_equal(p[3].alloc_uh, -sum);
        assert_int_equal(sum, 125000);
    }
    ts_arena_free(&a);
    meter_usage_release(&u);
    spec_model_free(m);
}

static void test_splits(void **state)
{
    (void)state;
    /* 125000 / 3 = 41666 r 2: two left, to the first two of the equal remainders
     * (equal ignores the weights) */
    parts_of("equal", 5, (const int64_t[]){41667, 41667, 41666});
    /* weights 2, 1, 1: 62500, 31250, 31250 exactly */
    parts_of("weight", 2, (const int64_t[]){62500, 31250, 31250});
    /* weights 5, 1, 1: 89285 r 5, 17857 r 1 each: one left, to a */
    parts_of("weight", 5, (const int64_t[]){89286, 17857, 17857});
    parts_of("none", 1, NULL);
}

/* usage: a's and c's requests (b none: 0); no requests: by weight, marked */
static void test_split_by_requests(void **state)
{
    (void)state;
    struct spec_model *m = load("usage", 2);
    struct meter_usage u;
    pool_usage(&u);
    struct ts_arena a;
    ts_arena_init(&a);
    struct meter_shared_part *p;
    size_t n;
    assert_int_equal(meter_shared_split(&u, m, &a, &p, &n), TS_OK);
    assert_int_equal(n, 4); /* none counted: weights 2, 1, 1 */
    assert_int_equal(p[0].alloc_uh, 62500);
    assert_true(p[0].by_weight && p[3].by_weight);
    u.requests = calloc(3, sizeof(*u.requests));
    assert_non_null(u.requests);
    const char *who[] = {"a", "c", "x"}; /* x: no consumer, ignored */
    const int64_t count[] = {3, 5, 1000};
    for (int i = 0; i < 3; i++) {
        snprintf(u.requests[i].owner, METER_KEY_MAX, "own");
        snprintf(u.requests[i].workload, METER_KEY_MAX, "pool");
        snprintf(u.requests[i].consumer, METER_KEY_MAX, "%s", who[i]);
        u.requests[i].count = count[i];
    }
    u.nrequests = 3;
    assert_int_equal(meter_shared_split(&u, m, &a, &p, &n), TS_OK);
    /* 125000 x 3/8 = 46875, 0, 125000 x 5/8 = 78125 */
    assert_int_equal(n, 4);
    assert_int_equal(p[0].alloc_uh, 46875);
    assert_int_equal(p[1].alloc_uh, 0);
    assert_int_equal(p[2].alloc_uh, 78125);
    assert_int_equal(p[3].alloc_uh, -125000);
    assert_false(p[0].by_weight || p[3].by_weight);
    ts_arena_free(&a);
    meter_usage_release(&u);
    spec_model_free(m);
}

static void test_invoice_lines(void **state)
{
    (void)state;
    struct cat_catalog *cat;
    struct ts_diag d = {0};
    assert_int_equal(cat_load(NULL, 0, &cat, &d), TS_OK);
    struct spec_model *m = load("equal", 1);
    struct meter_usage u;
    pool_usage(&u);
    struct ts_arena a;
    ts_arena_init(&a);
    struct invoice inv;
    struct ts_error e;
    int64_t sum = 0;
    for (int i = 0; i < 3; i++) { /* 0.04166x x 2.90 = 0.1208 -> 12 cents each */
        const char *t = consumers[i];
        assert_int_equal(invoice_build(&u, m, cat, t, "2026-11", &a, &inv, &e), TS_OK);
        assert_int_equal(inv.nlines, 1);
        assert_string_equal(inv.lines[0].note, "shared: own/pool");
        assert_int_equal(inv.lines[0].amount_minor, 12);
        sum += inv.total_minor;
    }
    assert_int_equal(invoice_build(&u, m, cat, "own", "2026-11", &a, &inv, &e), TS_OK);
    assert_int_equal(inv.nlines, 2);
    assert_int_equal(inv.lines[0].amount_minor, 36); /* 0.125 x 2.90 = 0.3625 -> 36 */
    assert_string_equal(inv.lines[1].note, "passed on: own/pool");
    assert_int_equal(inv.lines[1].alloc_uh, -125000);
    assert_int_equal(inv.lines[1].amount_minor, -sum);
    assert_int_equal(inv.total_minor, 0);
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1 << 20);
    assert_int_equal(invoice_write(&inv, "text", &out), TS_OK);
    assert_non_null(strstr(out.data, "-0.125000"));
    assert_non_null(strstr(out.data, "-0.36  passed on: own/pool"));
    ts_sbuf_release(&out);
    ts_arena_free(&a);
    meter_usage_release(&u);
    spec_model_free(m);
    cat_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splits),
        cmocka_unit_test(test_split_by_requests),
        cmocka_unit_test(test_invoice_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
