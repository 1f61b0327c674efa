/*
 * test_usage_report.c - what `tessera usage` reports: meter_usage_scan
 * integrates the store's samples over [from, to) (one device, a whole card,
 * half busy, scraped at 0, 15, 30 and 60 s: [0, 45 s) holds 45 s of it,
 * 12,500 micro-GPU-hours allocated, 6,250 used; the interval from 30 s is
 * split at the boundary, so windows that split the time add up exactly),
 * and meter_usage_write gives the table (whole cards as "whole", six
 * decimals) and the Usage JSON document; another format is TS_USAGE.
 */
#include "helpers.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "meter/usage_report.h"
#include "util/names.h"
#include "util/sbuf.h"

static char dir[64];

/* A store with GPU-1 scraped at 0, 15, 30 and 60 s; its usage over [from, to). */
static void scan_window(struct meter_usage *u, int64_t from, int64_t to)
{
    char url[128];
    struct store *st = NULL;
    snprintf(url, sizeof(url), "sqlite:%s/u.db", dir);
    assert_int_equal(store_open(url, &st, NULL), TS_OK);
    struct store_sample s[4];
    for (int i = 0; i < 4; i++)
        s[i] = (struct store_sample){"node-1",
                                     "GPU-1",
                                     i == 3 ? 60000 : i * 15000,
                                     "h100-80gb-sxm",
                                     "",
                                     "lab",
                                     "ns",
                                     "pod",
                                     1000000,
                                     500000,
                                     ""};
    assert_int_equal(store_put_samples(st, s, 4, NULL, NULL), TS_OK);
    meter_usage_init(u, 15000);
    assert_int_equal(meter_usage_scan(st, from, to, u, NULL), TS_OK);
    store_close(st);
}

static void scan(struct meter_usage *u) { scan_window(u, 0, 45000); }

static void test_scan(void **state)
{
    (void)state;
    struct meter_usage u;
    scan(&u);
    assert_int_equal(u.ntotals, 1);
    assert_string_equal(u.totals[0].tenant, "lab");
    assert_int_equal(meter_alloc_uh(&u.totals[0]), 12500);
    assert_int_equal(meter_usage_uh(&u.totals[0]), 6250);
    meter_usage_release(&u);
}

/* Every split point of the 60 s (a second apart, some inside an interval,
 * some on a scrape): the two windows' ms x ppm sums add up to the whole. */
static void test_boundaries(void **state)
{
    (void)state;
    struct meter_usage whole, a, b;
    scan_window(&whole, INT64_MIN, INT64_MAX);
    assert_true(whole.totals[0].alloc_num == (__int128)60000 * 1000000);
    for (int64_t cut = 0; cut <= 61000; cut += 1000) {
        scan_window(&a, INT64_MIN, cut);
        scan_window(&b, cut, INT64_MAX);
        __int128 sa = a.ntotals ? a.totals[0].alloc_num : 0,
                 sb = b.ntotals ? b.totals[0].alloc_num : 0;
        __int128 ua = a.ntotals ? a.totals[0].usage_num : 0,
                 ub = b.ntotals ? b.totals[0].usage_num : 0;
        if (sa + sb != whole.totals[0].alloc_num || ua + ub != whole.totals[0].usage_num ||
            sa != (__int128)(cut < 60000 ? cut : 60000) * 1000000)
            fail_msg("cut at %lld ms: %lld + %lld ms x ppm", (long long)cut, (long long)sa,
                     (long long)sb);
        meter_usage_release(&a);
        meter_usage_release(&b);
    }
    meter_usage_release(&whole);
}

static void test_text(void **state)
{
    (void)state;
    struct meter_usage u;
    struct ts_sbuf out;
    scan(&u);
    ts_sbuf_init(&out, 1u << 20);
    assert_int_equal(meter_usage_write(&u, NULL, "text", &out), TS_OK);
    const char *want = "TENANT               GPU MODEL                  PROFILE           GPU-HOURS"
                       "   USED GPU-HOURS      UNKNOWN USE\n"
                       "lab                  h100-80gb-sxm              whole              0.012500"
                       "         0.006250         0.000000\n";
    assert_string_equal(ts_sbuf_str(&out), want);
    ts_sbuf_release(&out);
    meter_usage_release(&u);
}

static void test_json(void **state)
{
    (void)state;
    struct meter_usage u;
    struct ts_sbuf out;
    scan(&u);
    ts_sbuf_init(&out, 1u << 20);
    assert_int_equal(meter_usage_write(&u, NULL, "json", &out), TS_OK);
    json_t *doc = json_loads(ts_sbuf_str(&out), 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "Usage");
    assert_string_equal(json_string_value(json_object_get(doc, "apiVersion")), TS_API_VERSION);
    json_t *row = json_array_get(json_object_get(doc, "rows"), 0);
    assert_int_equal(json_array_size(json_object_get(doc, "rows")), 1);
    assert_string_equal(json_string_value(json_object_get(row, "tenant")), "lab");
    assert_string_equal(json_string_value(json_object_get(row, "profile")), "whole");
    assert_int_equal(json_integer_value(json_object_get(row, "allocationMicroGpuHours")), 12500);
    assert_int_equal(json_integer_value(json_object_get(row, "usageMicroGpuHours")), 6250);
    assert_int_equal(json_integer_value(json_object_get(row, "unknownUsageMicroGpuHours")), 0);
    json_decref(doc);
    assert_int_equal(ts_sbuf_str(&out)[out.len - 1], '\n');
    ts_sbuf_release(&out);
    ts_sbuf_init(&out, 1u << 20);
    assert_int_equal(meter_usage_write(&u, NULL, "yaml", &out), TS_USAGE);
    ts_sbuf_release(&out);
    meter_usage_release(&u);
}

static int group_setup(void **state)
{
    (void)state;
    return th_tmpdir_make(dir, sizeof dir, "usage");
}

static int group_teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
