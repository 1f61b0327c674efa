/*
 * test_report_doc.c - the plan document as a jansson object
 * (report_json_doc, report_json_dump): dumped as is it is report_json's
 * bytes; with a key added (what `plan --current` adds) it is byte for byte
 * what the old text round trip (dump, parse, add, dump) gave, and the rest
 * of it is unchanged; a document that cannot be made is TS_NOMEM with the
 * buffer marked failed.
 */
#include "helpers.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "report/report.h"
#include "util/jsonfree.h"
#include "util/sbuf.h"

struct fixture {
    struct th_job job;
    struct ts_sbuf plain;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    th_run_file(&f->job, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_HEURISTIC);
    assert_int_equal(f->job.st, TS_OK);
    ts_sbuf_init(&f->plain, 16u << 20);
    assert_int_equal(report_json(f->job.plan, &f->plain), TS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ts_sbuf_release(&f->plain);
    th_free(&f->job);
    free(f);
    return 0;
}

static json_t *extra(void)
{
    return json_pack("{s:[{s:s, s:f}]}", "cards", "verdict", "keep", "ratio", 0.123456789012);
}

static void test_dump_is_report_json(void **state)
{
    struct fixture *f = *state;
    json_t *doc = report_json_doc(f->job.plan);
    struct ts_sbuf out;
    ts_sbuf_init(&out, 16u << 20);
    assert_int_equal(report_json_dump(doc, &out), TS_OK);
    assert_string_equal(ts_sbuf_str(&out), ts_sbuf_str(&f->plain));
    json_decref(doc);
    ts_sbuf_release(&out);
}

/* The bytes `plan --current` wrote before: the text dumped, parsed, the key
 * added, dumped again. */
static char *round_trip(const struct ts_sbuf *plain)
{
    json_t *root = json_loads(ts_sbuf_str(plain), 0, NULL);
    assert_non_null(root);
    json_object_set_new(root, "reconfiguration", extra());
    char *text = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    return text;
}

static void test_added_key(void **state)
{
    struct fixture *f = *state;
    json_t *doc = report_json_doc(f->job.plan);
    json_object_set_new(doc, "reconfiguration", extra());
    struct ts_sbuf out;
    ts_sbuf_init(&out, 16u << 20);
    assert_int_equal(report_json_dump(doc, &out), TS_OK);
    char *old = round_trip(&f->plain);
    assert_int_equal(out.len, strlen(old) + 1);
    assert_memory_equal(out.data, old, strlen(old));
    json_free_text(old);
    json_t *back = json_loads(ts_sbuf_str(&out), 0, NULL),
           *plain = json_loads(f->plain.data, 0, NULL);
    assert_non_null(json_object_get(back, "reconfiguration"));
    json_object_del(back, "reconfiguration");
    assert_true(json_equal(back, plain));
    json_decref(back);
    json_decref(plain);
    json_decref(doc);
    ts_sbuf_release(&out);
}

static void test_no_document(void **state)
{
    (void)state;
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1024);
    assert_int_equal(report_json_dump(NULL, &out), TS_NOMEM);
    assert_int_not_equal(ts_sbuf_status(&out), TS_OK);
    ts_sbuf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dump_is_report_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_added_key, setup, teardown),
        cmocka_unit_test(test_no_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
