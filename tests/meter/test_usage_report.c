/*
 * test_usage_report.c - what `tessera usage` reports: meter_usage_scan
 * integrates the store's samples of [from, to) (one device, a whole card,
 * half busy: 30 s of it is 8,333 micro-GPU-hours allocated, 4,167 used),
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

/* A store with GPU-1 scraped at 0, 15, 30 and 60 s; its usage over [0, 45 s). */
static void scan(struct meter_usage *u)
{
    char url[128];
    struct store *st = NULL;
    snprintf(url, sizeof(url), "sqlite:%s/u.db", dir);
    assert_int_equal(store_open(url, &st, NULL), TS_OK);
    struct store_sample s[4];
    for (int i = 0; i < 4; i++)
        s[i] = (struct store_sample){
            "node-1", "GPU-1", i == 3 ? 60000 : i * 15000, "h100-80gb-sxm", "", "lab", "ns", "pod",
            1000000,  500000};
    assert_int_equal(store_put_samples(st, s, 4, NULL, NULL), TS_OK);
    meter_usage_init(u, 15000);
    assert_int_equal(meter_usage_scan(st, 0, 45000, u, NULL), TS_OK);
    store_close(st);
}

static void test_scan(void **state)
{
    (void)state;
    struct meter_usage u;
    scan(&u);
    assert_int_equal(u.ntotals, 1);
    assert_string_equal(u.totals[0].tenant, "lab");
    assert_int_equal(meter_alloc_uh(&u.totals[0]), 8333);
    assert_int_equal(meter_usage_uh(&u.totals[0]), 4167);
    meter_usage_release(&u);
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
                       "   USED GPU-HOURS\n"
                       "lab                  h100-80gb-sxm              whole              0.008333"
                       "         0.004167\n";
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
    assert_int_equal(json_integer_value(json_object_get(row, "allocationMicroGpuHours")), 8333);
    assert_int_equal(json_integer_value(json_object_get(row, "usageMicroGpuHours")), 4167);
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
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
