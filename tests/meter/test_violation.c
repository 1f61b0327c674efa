/*
 * test_violation.c - meter_violation_record: a custody violation becomes
 * one ledger entry (source "observed", the tenant observed, workload
 * "namespace/pod", the device's node, GPU UUID, GI id and profile, the time
 * of the first scrape that showed it); entries chain and verify, with and
 * without a key, and a store that cannot take it returns its error.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ledger/ledger.h"
#include "meter/ingest.h"

#define KEY "k3y"

static char dir[64];

static struct store *open_store(const char *name)
{
    char url[128];
    struct store *st = NULL;
    snprintf(url, sizeof(url), "sqlite:%s/%s.db", dir, name);
    assert_int_equal(store_open(url, &st, NULL), TS_OK);
    return st;
}

static struct meter_violation violation(int64_t ts_ms, const char *gi)
{
    struct meter_violation v;
    memset(&v, 0, sizeof(v));
    v.ts_ms = ts_ms;
    snprintf(v.device, sizeof(v.device), "GPU-a/%s", gi);
    snprintf(v.node, sizeof(v.node), "node-1");
    snprintf(v.gpu_uuid, sizeof(v.gpu_uuid), "GPU-a");
    snprintf(v.gi_id, sizeof(v.gi_id), "%s", gi);
    snprintf(v.profile, sizeof(v.profile), "1g.10gb");
    snprintf(v.observed, sizeof(v.observed), "intruder");
    snprintf(v.planned, sizeof(v.planned), "owner");
    snprintf(v.ns, sizeof(v.ns), "intruder-ns");
    snprintf(v.pod, sizeof(v.pod), "pod-%s", gi);
    return v;
}

static void test_entry(void **state)
{
    (void)state;
    struct store *st = open_store("plain");
    struct meter_violation v = violation(1700000015000LL, "3");
    assert_int_equal(meter_violation_record(st, NULL, 0, &v, NULL), TS_OK);
    struct ledger_list l;
    assert_int_equal(ledger_history(st, NULL, INT64_MIN, INT64_MAX, &l, NULL), TS_OK);
    assert_int_equal(l.n, 1);
    const struct ledger_row *r = &l.rows[0];
    assert_int_equal(r->ts_ms, 1700000015000LL);
    assert_string_equal(r->source, "observed");
    assert_string_equal(r->tenant, "intruder");
    assert_string_equal(r->workload, "intruder-ns/pod-3");
    assert_string_equal(r->node, "node-1");
    assert_string_equal(r->gpu_uuid, "GPU-a");
    assert_string_equal(r->instance_uuid, "");
    assert_string_equal(r->gi_id, "3");
    assert_string_equal(r->profile, "1g.10gb");
    assert_string_equal(r->placement, "");
    assert_string_equal(r->mac, "");
    ledger_list_free(&l);
    store_close(st);
}

static void test_chain_with_key(void **state)
{
    (void)state;
    struct store *st = open_store("keyed");
    for (int i = 0; i < 5; i++) {
        char gi[8];
        snprintf(gi, sizeof(gi), "%d", i + 1);
        struct meter_violation v = violation(1700000000000LL + i * 15000, gi);
        assert_int_equal(meter_violation_record(st, KEY, strlen(KEY), &v, NULL), TS_OK);
    }
    struct ledger_report r;
    assert_int_equal(ledger_verify(st, KEY, strlen(KEY), &r, NULL), TS_OK);
    assert_int_equal(r.intact, 1);
    assert_int_equal(r.entries, 5);
    assert_int_equal(ledger_verify(st, "other", 5, &r, NULL), TS_OK);
    assert_int_equal(r.intact, 0); /* the macs are the key's */
    int found = 0;
    struct ledger_row row;
    assert_int_equal(ledger_who(st, "GPU-a", 1700000031000LL, &row, &found, NULL), TS_OK);
    assert_int_equal(found, 1);
    assert_string_equal(row.workload, "intruder-ns/pod-3");
    ledger_row_free(&row);
    store_close(st);
}

static void test_invalid_entry(void **state)
{
    (void)state;
    struct store *st = open_store("invalid");
    struct meter_violation v = violation(1700000000000LL, "1");
    v.gpu_uuid[0] = '\0'; /* an entry names its GPU */
    struct ts_error e = {0};
    assert_int_not_equal(meter_violation_record(st, NULL, 0, &v, &e), TS_OK);
    assert_true(e.msg[0] != '\0');
    store_close(st);
}

static int group_setup(void **state)
{
    (void)state;
    return th_tmpdir_make(dir, sizeof dir, "violation");
}

static int group_teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry),
        cmocka_unit_test(test_chain_with_key),
        cmocka_unit_test(test_invalid_entry),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
