/*
 * test_promq.c - a Prometheus answer of raw samples into exposition lines:
 * the exact text (points sorted by time, instance/job left out, label values
 * escaped), values that read back bit for bit through the exposition parser,
 * and every bad field refused with its JSON path; a series' samples out of
 * order or twice, a sample outside the window, a series listed twice and
 * native histograms refused; the sample at the window's first ms less one
 * (Prometheus 2's range start) left to the previous window; Prometheus'
 * error answers refused with their text.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/expo.h"
#include "meter/promq.h"

#define OK_HEAD "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["

static const struct meter_promq_window *window;

static ts_status convert(const char *json, struct ts_sbuf *out, struct ts_error *e)
{
    ts_sbuf_init(out, 1 << 20);
    memset(e, 0, sizeof(*e));
    return meter_promq_text(json, strlen(json), "prom", window, out, e);
}

static void test_text_sorted(void **state)
{
    (void)state;
    const char *json = OK_HEAD
        "{\"metric\":{\"__name__\":\"A\",\"instance\":\"h:9400\",\"job\":\"dcgm\","
        "\"UUID\":\"GPU-1\",\"pod\":\"a\\\"b\\\\c\\nd\"},"
        "\"values\":[[1700000000,\"1\"],[1700000015.5,\"2\"]]},"
        "{\"metric\":{\"__name__\":\"B\",\"UUID\":\"GPU-2\"},"
        "\"values\":[[1700000000,\"3\"],[1700000015.5,\"4\"]]}]}}";
    struct ts_sbuf out;
    struct ts_error e;
    assert_int_equal(convert(json, &out, &e), TS_OK);
    assert_string_equal(ts_sbuf_str(&out),
                        "A{UUID=\"GPU-1\",pod=\"a\\\"b\\\\c\\nd\"} 1 1700000000000\n"
                        "B{UUID=\"GPU-2\"} 3 1700000000000\n"
                        "A{UUID=\"GPU-1\",pod=\"a\\\"b\\\\c\\nd\"} 2 1700000015500\n"
                        "B{UUID=\"GPU-2\"} 4 1700000015500\n");
    ts_sbuf_release(&out);
}

struct got {
    double v[8];
    char pod[8][32];
    int n;
};

static int on_sample(void *ctx, const struct meter_sample *s)
{
    struct got *g = ctx;
    const char *pod = meter_label(s, "pod");
    snprintf(g->pod[g->n], sizeof(g->pod[0]), "%s", pod ? pod : "");
    g->v[g->n++] = s->value;
    return 0;
}

static void on_error(void *ctx, long line, int column, const char *msg)
{
    (void)ctx;
    fail_msg("line %ld col %d: %s", line, column, msg);
}

/* Every value reads back through the exposition parser as strtod reads it. */
static void test_values_exact(void **state)
{
    (void)state;
    static const char *const values[] = {"0.1",  "1e-05", "0.30000000000000004",   "NaN",
                                         "+Inf", "-Inf",  "123456789012345680000", "5e-324"};
    char json[4096];
    int len = snprintf(json, sizeof(json),
                       "%s{\"metric\":{\"__name__\":\"A\",\"pod\":"
                       "\"x\\\\\\\"\\n\"},\"values\":[",
                       OK_HEAD);
    for (int i = 0; i < 8; i++)
        len += snprintf(json + len, sizeof(json) - (size_t)len, "%s[%d,\"%s\"]", i ? "," : "",
                        1700000000 + i, values[i]);
    snprintf(json + len, sizeof(json) - (size_t)len, "]}]}}");
    struct ts_sbuf out;
    struct ts_error e;
    assert_int_equal(convert(json, &out, &e), TS_OK);
    struct got g = {0};
    struct meter_expo *p = meter_expo_new(on_sample, on_error, &g);
    assert_int_equal(meter_expo_feed(p, ts_sbuf_str(&out), out.len), TS_OK);
    assert_int_equal(meter_expo_finish(p), TS_OK);
    meter_expo_free(p);
    assert_int_equal(g.n, 8);
    for (int i = 0; i < 8; i++) {
        double want = strtod(values[i], NULL);
        if (isnan(want))
            assert_true(isnan(g.v[i]));
        else
            assert_memory_equal(&g.v[i], &want, sizeof(want));
        assert_string_equal(g.pod[i], "x\\\"\n");
    }
    ts_sbuf_release(&out);
}

static void expect_bad(const char *json, ts_status code, const char *text)
{
    struct ts_sbuf out;
    struct ts_error e;
    assert_int_equal(convert(json, &out, &e), code);
    if (!strstr(e.msg, text))
        fail_msg("'%s' not in '%s'", text, e.msg);
    ts_sbuf_release(&out);
}

#define M "{\"metric\":{\"__name__\":\"A\"},\"values\":"

static void test_bad_fields(void **state)
{
    (void)state;
    expect_bad("[]", TS_INVALID, "not a JSON object");
    expect_bad("{\"data\":{}}", TS_INVALID, "status: missing");
    expect_bad("{\"status\":\"success\"}", TS_INVALID, "data: missing");
    expect_bad("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
               TS_INVALID, "data.resultType: expected \"matrix\"");
    expect_bad("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\"}}", TS_INVALID,
               "data.result: missing");
    expect_bad(OK_HEAD "7]}}", TS_INVALID, "data.result[0]: not an object");
    expect_bad(OK_HEAD "{\"values\":[]}]}}", TS_INVALID, "data.result[0].metric: missing");
    expect_bad(OK_HEAD "{\"metric\":{},\"values\":[]}]}}", TS_INVALID,
               "data.result[0].metric.__name__: missing");
    expect_bad(OK_HEAD "{\"metric\":{\"__name__\":\"1A\"},\"values\":[]}]}}", TS_INVALID,
               "data.result[0].metric.__name__: not a valid Prometheus name");
    expect_bad(OK_HEAD "{\"metric\":{\"__name__\":\"A\",\"x\":1},\"values\":[]}]}}", TS_INVALID,
               "data.result[0].metric.x: not a string");
    expect_bad(OK_HEAD M "{}}]}}", TS_INVALID, "data.result[0].values: missing");
    expect_bad(OK_HEAD M "[]}," M "[[1,\"1\"],[2]]}]}}", TS_INVALID,
               "data.result[1].values[1]: expected [time, \"value\"]");
    expect_bad(OK_HEAD M "[[-1,\"1\"]]}]}}", TS_INVALID, "data.result[0].values[0][0]: not a time");
    expect_bad(OK_HEAD M "[[1,1]]}]}}", TS_INVALID, "data.result[0].values[0][1]: not a string");
    static const char *const numbers[] = {"", "1x", "0x10", "inf", "nan", "Infinity", " 1"};
    for (int i = 0; i < 7; i++) {
        char json[256];
        snprintf(json, sizeof(json), OK_HEAD M "[[1,\"%s\"]]}]}}", numbers[i]);
        expect_bad(json, TS_INVALID, "data.result[0].values[0][1]: \"");
    }
    expect_bad("{\"status\":", TS_SYNTAX, "");
    expect_bad(OK_HEAD M "[[1,\"1\"]],\"values\":[]}]}}", TS_SYNTAX, "");
}

/* The window [1700000000.000, 1700000060.000] s: the ms before its start
 * (Prometheus 2's range includes it) is left out; Prometheus' own scrape
 * times (ms after the second) are kept as they are. */
static void test_window(void **state)
{
    (void)state;
    static const struct meter_promq_window w = {1700000000000LL, 1700000060000LL};
    window = &w;
    struct ts_sbuf out;
    struct ts_error e;
    assert_int_equal(convert(OK_HEAD M "[[1699999999.999,\"1\"],[1700000000.006,\"2\"],"
                                       "[1700000059.127,\"3\"],[1700000060,\"4\"]]}]}}",
                             &out, &e),
                     TS_OK);
    assert_string_equal(ts_sbuf_str(&out), "A{} 2 1700000000006\nA{} 3 1700000059127\nA{} 4 "
                                           "1700000060000\n");
    ts_sbuf_release(&out);
    expect_bad(OK_HEAD M "[[1699999999.998,\"1\"]]}]}}", TS_INVALID,
               "data.result[0].values[0][0]: 1699999999998 ms is outside the window asked for "
               "(1700000000000 to 1700000060000 ms)");
    expect_bad(OK_HEAD M "[[1700000060.001,\"1\"]]}]}}", TS_INVALID,
               "data.result[0].values[0][0]: 1700000060001 ms is outside the window");
    window = NULL;
}

/* Each series' samples rise in time; no series twice (instance and job
 * count: two targets of one device are two series); no histograms. */
static void test_hostile(void **state)
{
    (void)state;
    expect_bad(OK_HEAD M "[[2,\"1\"],[1,\"2\"]]}]}}", TS_INVALID,
               "data.result[0].values[1][0]: 1000 ms is not after the series' previous sample "
               "(2000 ms): out of order or a duplicate");
    expect_bad(OK_HEAD M "[[2,\"1\"],[2,\"1\"]]}]}}", TS_INVALID,
               "data.result[0].values[1][0]: 2000 ms is not after");
    expect_bad(OK_HEAD "{\"metric\":{\"__name__\":\"A\",\"b\":\"1\",\"c\":\"2\"},\"values\":[]},"
                       "{\"metric\":{\"__name__\":\"B\"},\"values\":[]},"
                       "{\"metric\":{\"c\":\"2\",\"__name__\":\"A\",\"b\":\"1\"},\"values\":[]}]}}",
               TS_INVALID, "data.result[2].metric: the same series as data.result[0]");
    struct ts_sbuf out;
    struct ts_error e;
    assert_int_equal(convert(OK_HEAD "{\"metric\":{\"__name__\":\"A\",\"instance\":\"a\"},"
                                     "\"values\":[[1,\"1\"]]},"
                                     "{\"metric\":{\"__name__\":\"A\",\"instance\":\"b\"},"
                                     "\"values\":[[1,\"2\"]]}]}}",
                             &out, &e),
                     TS_OK);
    assert_string_equal(ts_sbuf_str(&out), "A{} 1 1000\nA{} 2 1000\n");
    ts_sbuf_release(&out);
    expect_bad(OK_HEAD "{\"metric\":{\"__name__\":\"A\"},\"histograms\":[[1,{}]]}]}}", TS_INVALID,
               "data.result[0].histograms: native histogram samples");
}

static ts_status collect_lines(void *ctx, const char *lines, size_t len, struct ts_error *err)
{
    (void)err;
    ts_sbuf_add(ctx, lines, len);
    return TS_OK;
}

/* Two selectors' answers of a window merged in time order, the first
 * selector's first on a tie; the body is not needed once parsed. */
static void test_emit_merged(void **state)
{
    (void)state;
    struct meter_promq_answer *ans[2];
    struct ts_error e = {0};
    char *body = strdup(OK_HEAD M "[[1,\"1\"],[3,\"3\"]]}]}}");
    assert_int_equal(meter_promq_parse(body, strlen(body), "a", NULL, &ans[0], &e), TS_OK);
    free(body);
    const char *b = OK_HEAD "{\"metric\":{\"__name__\":\"B\"},\"values\":[[2,\"2\"],[3,\"4\"]]}]}}";
    assert_int_equal(meter_promq_parse(b, strlen(b), "b", NULL, &ans[1], &e), TS_OK);
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1 << 20);
    assert_int_equal(meter_promq_emit(ans, 2, collect_lines, &out, &e), TS_OK);
    assert_string_equal(ts_sbuf_str(&out), "A{} 1 1000\nB{} 2 2000\nA{} 3 3000\nB{} 4 3000\n");
    ts_sbuf_release(&out);
    meter_promq_answer_free(ans[0]);
    meter_promq_answer_free(ans[1]);
}

static void test_error_answers(void **state)
{
    (void)state;
    expect_bad("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error\"}",
               TS_INVALID, "Prometheus answered status \"error\": bad_data: parse error");
    expect_bad("{\"status\":\"error\",\"errorType\":\"timeout\",\"error\":\"query timed out\"}",
               TS_IO, "timeout: query timed out");
    expect_bad("{\"status\":\"error\"}", TS_IO, "(no errorType): (no error)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_sorted),   cmocka_unit_test(test_values_exact),
        cmocka_unit_test(test_bad_fields),    cmocka_unit_test(test_window),
        cmocka_unit_test(test_hostile),       cmocka_unit_test(test_emit_merged),
        cmocka_unit_test(test_error_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
