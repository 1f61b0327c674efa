/*
 * test_invoice.c - pricing: the catalog maps DCGM model names to prices,
 * each line rounds once to the currency's minor unit, half to even, and the
 * total is the sum of the rounded lines; JPY has no minor digits; a
 * currency without a known minor unit is refused naming its field; unknown
 * models are flagged unpriced, the period is a calendar month in UTC.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include "meter/invoice.h"

static const char *spec =
    "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
    "  nodes: [{name: n, gpus: [{model: h100-80gb-sxm, count: 1}]}]\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t}\nspec:\n"
    "  contract: shared-trusted\n  namespaces: [t]\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\nspec:\n"
    "  currency: EUR\n  prices: [{model: h100-80gb-sxm, perGpuHour: \"2.005\"}]\n";

static void point(struct meter_usage *u, const char *dev, int64_t s, const char *model,
                  int64_t share)
{
    struct meter_point p = {dev, s * 1000, "t", model, "", share, -1, NULL};
    assert_int_equal(meter_usage_add(u, &p), TS_OK);
}

static void test_rounding_and_models(void **state)
{
    (void)state;
    struct cat_catalog *cat;
    struct spec_model *m;
    struct ts_diag d = {0};
    assert_int_equal(cat_load(NULL, 0, &cat, &d), TS_OK);
    assert_int_equal(spec_load_text(spec, strlen(spec), "s.yaml", &m, &d), TS_OK);
    struct meter_usage u;
    meter_usage_init(&u, 3600000);
    /* one GPU-hour of an H100 at 2.005 = 2.005: 201 cents, half up */
    point(&u, "GPU-a", 0, "NVIDIA H100 80GB HBM3", 1000000);
    point(&u, "GPU-a", 3600, "NVIDIA H100 80GB HBM3", 1000000);
    /* half an hour of a card tessera does not know */
    point(&u, "GPU-x", 0, "Mystery GPU", 1000000);
    point(&u, "GPU-x", 1800, "Mystery GPU", 1000000);
    struct ts_arena a;
    ts_arena_init(&a);
    struct invoice inv;
    struct ts_error e;
    assert_int_equal(invoice_build(&u, m, cat, "t", "2026-11", &a, &inv, &e), TS_OK);
    assert_int_equal(inv.nlines, 2);
    assert_string_equal(inv.lines[0].model, "h100-80gb-sxm");
    assert_int_equal(inv.lines[0].price_micro, 2005000);
    assert_int_equal(inv.lines[1].price_micro, -1);
    assert_int_equal(inv.unpriced, 1);
    assert_int_equal(inv.exponent, 2);
    assert_int_equal(inv.lines[0].amount_minor, 200); /* 2.005: half to even, 200 */
    assert_int_equal(inv.lines[1].amount_minor, 0);   /* unpriced */
    assert_int_equal(inv.total_minor, 200);
    meter_usage_release(&u);
    /* 1.5 hours at 2.005 = 3.0075 -> 3.01 */
    meter_usage_init(&u, 3600000);
    point(&u, "GPU-a", 0, "h100-80gb-sxm", 1000000);
    point(&u, "GPU-a", 3600, "h100-80gb-sxm", 1000000);
    point(&u, "GPU-a", 5400, "h100-80gb-sxm", 1000000);
    assert_int_equal(invoice_build(&u, m, cat, "t", "2026-11", &a, &inv, &e), TS_OK);
    assert_int_equal(inv.total_minor, 301);
    meter_usage_release(&u);
    ts_arena_free(&a);
    spec_model_free(m);
    cat_free(cat);
}

/* The spec with another currency and price. */
static struct spec_model *priced(const char *currency, const char *price)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
             "  nodes: [{name: n, gpus: [{model: h100-80gb-sxm, count: 3}]}]\n---\n"
             "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t}\nspec:\n"
             "  contract: shared-trusted\n  namespaces: [t]\n---\n"
             "apiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\nspec:\n"
             "  currency: %s\n  prices: [{model: h100-80gb-sxm, perGpuHour: \"%s\"}]\n",
             currency, price);
    struct spec_model *m;
    struct ts_diag d = {0};
    assert_int_equal(spec_load_text(text, strlen(text), "s.yaml", &m, &d), TS_OK);
    return m;
}

/* Three profiles of a card, an hour each at a third of it: 1/3 h each. */
static void thirds(struct meter_usage *u)
{
    static const char *const dev[] = {"GPU-a", "GPU-b", "GPU-c"};
    for (int i = 0; i < 3; i++) {
        struct meter_point p = {dev[i], 0, "t", "h100-80gb-sxm", dev[i], 333333, -1, NULL};
        assert_int_equal(meter_usage_add(u, &p), TS_OK);
        p.ts_ms = 3600000;
        assert_int_equal(meter_usage_add(u, &p), TS_OK);
    }
}

static void test_lines_add_up(void **state)
{
    (void)state;
    struct cat_catalog *cat;
    struct ts_diag d = {0};
    assert_int_equal(cat_load(NULL, 0, &cat, &d), TS_OK);
    struct meter_usage u;
    meter_usage_init(&u, 3600000);
    thirds(&u);
    struct ts_arena a;
    ts_arena_init(&a);
    struct invoice inv;
    struct ts_error e;
    /* 0.333333 GPU-h x 4.365 = 1.454998545 -> 1.45 a line; the exact sum
     * 4.364995635 would round to 4.36, a cent more than the lines printed:
     * the total is the lines' sum, 4.35 */
    struct spec_model *m = priced("EUR", "4.365");
    assert_int_equal(invoice_build(&u, m, cat, "t", "2026-11", &a, &inv, &e), TS_OK);
    assert_int_equal(inv.nlines, 3);
    for (size_t i = 0; i < inv.nlines; i++)
        assert_int_equal(inv.lines[i].amount_minor, 145);
    assert_int_equal(inv.total_minor, 435);
    spec_model_free(m);
    /* JPY: no minor digits; 0.333333 h x 1500 = 499.9995 -> 500 */
    m = priced("JPY", "1500");
    assert_int_equal(invoice_build(&u, m, cat, "t", "2026-11", &a, &inv, &e), TS_OK);
    assert_int_equal(inv.exponent, 0);
    assert_int_equal(inv.lines[0].amount_minor, 500);
    assert_int_equal(inv.total_minor, 1500);
    spec_model_free(m);
    /* no minor unit known: refused, naming the field and its place */
    m = priced("XTS", "1");
    assert_int_equal(invoice_build(&u, m, cat, "t", "2026-11", &a, &inv, &e), TS_INVALID);
    assert_string_equal(e.file, "s.yaml");
    assert_true(e.line > 0);
    assert_string_equal(e.path, "PriceBook/p.spec.currency");
    assert_non_null(strstr(e.msg, "'XTS'"));
    spec_model_free(m);
    assert_int_equal(invoice_currency_exponent("KWD"), 3);
    assert_int_equal(invoice_currency_exponent("usd"), -1);
    meter_usage_release(&u);
    ts_arena_free(&a);
    cat_free(cat);
}

static void test_period(void **state)
{
    (void)state;
    int64_t from, to;
    assert_true(invoice_period("2026-11", &from, &to));
    assert_int_equal(from, 1793491200000LL); /* 2026-11-01T00:00:00Z */
    assert_int_equal(to, 1796083200000LL);   /* 2026-12-01T00:00:00Z */
    assert_true(invoice_period("2026-12", &from, &to));
    assert_int_equal(to, 1798761600000LL); /* 2027-01-01 */
    assert_false(invoice_period("2026-13", &from, &to));
    assert_false(invoice_period("2026-1", &from, &to));
    assert_false(invoice_period("november", &from, &to));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding_and_models),
        cmocka_unit_test(test_lines_add_up),
        cmocka_unit_test(test_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
