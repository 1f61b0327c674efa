/*
 * test_expo.c - the exposition parser on real dcgm-exporter outputs
 * (tests/fixtures/dcgm, origin in SOURCES.md) and on hostile input: every
 * sample line of every fixture parses (counted independently), labels and
 * values come out exact, chunk boundaries do not matter, and a malformed
 * line is reported with its line and column while the lines around it
 * still parse.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/expo.h"
#include "util/file.h"

struct seen {
    long samples, errors, first_error_line;
    int first_error_col;
    char first_error[256];
    char last_metric[128];
    char labels[16][2][128];
    size_t nlabels;
    double last_value;
    int64_t last_ts;
    double sum;
};

static int on_sample(void *ctx, const struct meter_sample *s)
{
    struct seen *w = ctx;
    w->samples++;
    snprintf(w->last_metric, sizeof(w->last_metric), "%s", s->metric);
    w->nlabels = s->nlabels < 16 ? s->nlabels : 16;
    for (size_t i = 0; i < w->nlabels; i++) {
        snprintf(w->labels[i][0], sizeof(w->labels[i][0]), "%s", s->labels[i].name);
        snprintf(w->labels[i][1], sizeof(w->labels[i][1]), "%s", s->labels[i].value);
    }
    w->last_value = s->value;
    w->last_ts = s->has_timestamp ? s->timestamp_ms : -1;
    if (isfinite(s->value))
        w->sum += s->value;
    return 0;
}

static void on_error(void *ctx, long line, int column, const char *msg)
{
    struct seen *w = ctx;
    if (!w->errors++) {
        w->first_error_line = line;
        w->first_error_col = column;
        snprintf(w->first_error, sizeof(w->first_error), "%s", msg);
    }
}

/* Feed text in chunks of `chunk` bytes (0: all at once). */
static void parse(const char *text, size_t len, size_t chunk, struct seen *w)
{
    memset(w, 0, sizeof(*w));
    struct meter_expo *p = meter_expo_new(on_sample, on_error, w);
    assert_non_null(p);
    for (size_t off = 0; off < len;) {
        size_t n = chunk && chunk < len - off ? chunk : len - off;
        assert_int_equal(meter_expo_feed(p, text + off, n), TS_OK);
        off += n;
    }
    assert_int_equal(meter_expo_finish(p), TS_OK);
    meter_expo_free(p);
}

static const char *fixture(const char *name, size_t *len)
{
    static char *text;
    free(text);
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/fixtures/dcgm/%s", getenv("TESSERA_SRC"), name);
    struct ts_error e;
    if (ts_file_read(path, TS_INPUT_MAX, &text, len, &e) != TS_OK)
        fail_msg("%s", e.msg);
    return text;
}

/* Sample lines, counted without the parser: lines that start a metric name. */
static long sample_lines(const char *text)
{
    long n = 0;
    for (const char *l = text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        n += (*l >= 'A' && *l <= 'Z') || (*l >= 'a' && *l <= 'z') || *l == '_' || *l == ':';
    return n;
}

static void test_real_outputs(void **state)
{
    (void)state;
    static const char *files[] = {
        "datadog-integrations-core_dcgm_metrics.txt",
        "NVIDIA-gpu-monitoring-tools-issue138-k8s-empty-pod-labels.prom",
        "nvidia-dcgm-exporter-issue250-v100-sxm2-32gb.prom",
        "nvidia-dcgm-exporter-issue272-a100-80gb-pcie-mig-relabeled-lowercase.prom",
        "nvidia-dcgm-exporter-issue317-a30-mig-1g6gb-x4.prom",
        "nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom",
        "nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-3g40gb-and-full-gpus.prom",
        "nvidia-dcgm-exporter-issue58-titanv-k8s-empty-pod-labels.prom",
        "nvidia-dcgm-exporter-issue68-a30-mig-2g12gb.prom",
        "nvidia-gpu-operator-issue687_a100-80gb-pcie_mig-7g79gb-profile-name.prom",
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        size_t len;
        const char *text = fixture(files[i], &len);
        struct seen whole, bytewise;
        parse(text, len, 0, &whole);
        if (whole.errors || whole.samples != sample_lines(text))
            fail_msg("%s: %ld samples of %ld, %ld errors (first: line %ld: %s)", files[i],
                     whole.samples, sample_lines(text), whole.errors, whole.first_error_line,
                     whole.first_error);
        parse(text, len, 1, &bytewise);
        assert_int_equal(bytewise.samples, whole.samples);
        assert_true(bytewise.sum == whole.sum);
    }
}

static const char *label(const struct seen *w, const char *name)
{
    for (size_t i = 0; i < w->nlabels; i++)
        if (strcmp(w->labels[i][0], name) == 0)
            return w->labels[i][1];
    return NULL;
}

static void test_mig_labels(void **state)
{
    (void)state;
    size_t len;
    const char *text = fixture("nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom",
                               &len);
    struct seen w;
    parse(text, len, 7, &w);
    assert_int_equal(w.samples, 3);
    assert_string_equal(w.last_metric, "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
    assert_string_equal(label(&w, "GPU_I_PROFILE"), "1g.10gb");
    assert_string_equal(label(&w, "GPU_I_ID"), "9");
    assert_string_equal(label(&w, "modelName"), "NVIDIA H100 80GB HBM3");
    assert_string_equal(label(&w, "pod"), "tts-predictor-00011-deployment-5554f75554-8j8pl");
    assert_true(w.last_value == 0.0);
}

/* The line without a value is reported where it is; nothing else is lost. */
static void test_line_without_value(void **state)
{
    (void)state;
    size_t len;
    const char *bad = fixture(
        "NVIDIA-gpu-monitoring-tools-issue193_gpu-i-profile-NULL_line-without-value.txt", &len);
    char text[4096];
    snprintf(text, sizeof(text), "up 1\n%sup 2 1700000000000\n", bad);
    struct seen w;
    parse(text, strlen(text), 3, &w);
    assert_int_equal(w.samples, 2);
    assert_int_equal(w.errors, 1);
    assert_int_equal(w.first_error_line, 2);
    assert_string_equal(w.first_error, "no value");
    assert_true(w.last_value == 2.0);
    assert_int_equal(w.last_ts, 1700000000000LL);
}

static void test_values_and_escapes(void **state)
{
    (void)state;
    const char *text = "# HELP x a \"help\" line\n# TYPE x gauge\n\n"
                       "x{a=\"q\\\"uote\",b=\"new\\nline\",c=\"back\\\\slash\",d=\"\",} NaN\n"
                       "x +Inf\nx -Inf 123\r\ny:z{k=\"v\"} 1.5e3\n";
    struct seen w;
    parse(text, strlen(text), 0, &w);
    assert_int_equal(w.errors, 0);
    assert_int_equal(w.samples, 4);
    assert_string_equal(w.last_metric, "y:z");
    assert_true(w.last_value == 1500.0);
    parse(text, (size_t)(strstr(text, "NaN\n") + 4 - text), 0, &w); /* the first sample only */
    assert_int_equal(w.samples, 1);
    assert_string_equal(label(&w, "a"), "q\"uote");
    assert_string_equal(label(&w, "b"), "new\nline");
    assert_string_equal(label(&w, "c"), "back\\slash");
    assert_string_equal(label(&w, "d"), "");
    assert_true(isnan(w.last_value));
}

static void test_malformed_lines(void **state)
{
    (void)state;
    static const struct {
        const char *line, *msg;
        int col;
    } cases[] = {
        {"x{a=\"v\"}", "no value", 9},
        {"x{a=v} 1", "expected a quoted label value (escapes: \\\\ \\\" \\n)", 5},
        {"x{a=\"v\" 1", "expected ',' or '}' after a label", 9},
        {"x{=\"v\"} 1", "expected a label name", 3},
        {"x{a \"v\"} 1", "expected '=' after the label name", 5},
        {"x{a=\"\\q\"} 1", "expected a quoted label value (escapes: \\\\ \\\" \\n)", 5},
        {"x{a=\"unterminated} 1", "expected a quoted label value (escapes: \\\\ \\\" \\n)", 5},
        {"x one", "the value is not a number", 3},
        {"x 1 ts", "the timestamp is not an integer", 5},
        {"x 1 2 3", "unexpected text after the timestamp", 7},
        {"9x 1", "expected a metric name", 1},
        {"x{a=\"1\"}2", "expected a space before the value", 9},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "ok 1\n%s\nok 2\n", cases[i].line);
        struct seen w;
        parse(text, strlen(text), 0, &w);
        if (w.errors != 1 || w.samples != 2 || w.first_error_line != 2 ||
            strcmp(w.first_error, cases[i].msg) != 0 || w.first_error_col != cases[i].col)
            fail_msg("case %zu '%s': %ld errors, %ld samples, line %ld col %d '%s'", i,
                     cases[i].line, w.errors, w.samples, w.first_error_line, w.first_error_col,
                     w.first_error);
    }
}

static void test_limits(void **state)
{
    (void)state;
    /* a line over 64 KiB is reported and skipped; the next still parses */
    size_t big = METER_LINE_MAX + 100;
    char *text = malloc(big + 32);
    memset(text, 'a', big);
    strcpy(text + big, " 1\nok 3\n");
    struct seen w;
    parse(text, strlen(text), 4096, &w);
    assert_int_equal(w.errors, 1);
    assert_string_equal(w.first_error, "line longer than 65536 bytes");
    assert_int_equal(w.samples, 1);
    free(text);
    /* 33 labels */
    char many[1024] = "x{";
    for (int i = 0; i < 33; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "l%d=\"v\",", i);
    strcat(many, "} 1\n");
    parse(many, strlen(many), 0, &w);
    assert_int_equal(w.errors, 1);
    assert_string_equal(w.first_error, "more than 32 labels");
    /* a NUL byte */
    const char nul[] = "ok 1\nx\0y 1\nok 2\n";
    parse(nul, sizeof(nul) - 1, 0, &w);
    assert_int_equal(w.errors, 1);
    assert_string_equal(w.first_error, "NUL byte in the line");
    assert_int_equal(w.samples, 2);
}

/* A body cut anywhere in its last line is rejected there (a cut inside the
 * timestamp would otherwise read as a sample in 1970); a last comment or
 * blank line without its newline is harmless. */
static void test_cut_short(void **state)
{
    (void)state;
    const char *whole = "ok 1\nx{a=\"v\"} 0.5 1700000000123\n";
    size_t first = strlen("ok 1\n"), len = strlen(whole);
    for (size_t cut = first + 1; cut < len; cut++) {
        struct seen w;
        parse(whole, cut, 3, &w);
        if (w.samples != 1 || w.errors != 1 || w.first_error_line != 2 ||
            w.first_error_col != (int)(cut - first) + 1 ||
            strcmp(w.first_error, "the line has no newline: the body was cut short") != 0)
            fail_msg("cut at %zu: %ld samples, %ld errors, line %ld col %d '%s'", cut, w.samples,
                     w.errors, w.first_error_line, w.first_error_col, w.first_error);
    }
    struct seen w;
    parse(whole, len, 0, &w);
    assert_int_equal(w.samples, 2);
    assert_int_equal(w.errors, 0);
    parse("ok 1\n# a comment", strlen("ok 1\n# a comment"), 0, &w);
    assert_int_equal(w.errors, 0);
    parse("ok 1\n  ", strlen("ok 1\n  "), 0, &w);
    assert_int_equal(w.errors, 0);
}

/* A byte that is not well-formed UTF-8 rejects its line, at its column;
 * the lines around it parse; well-formed multi-byte text passes. */
static void test_not_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int ok, col; /* col: of the bad byte in 'x{a="VALUE"} 1' */
    } cases[] = {
        {"caf\xc3\xa9", 1, 0},
        {"\xe2\x82\xac \xf0\x9f\x98\x80", 1, 0},
        {"caf\xe9", 0, 9},
        {"\xff", 0, 6},
        {"\xc0\xaf", 0, 6},         /* overlong '/' */
        {"\xed\xa0\x80", 0, 6},     /* a UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 0, 6}, /* above U+10FFFF */
        {"ab\xe2\x82", 0, 8},       /* a sequence cut short */
        {"\x80", 0, 6},             /* a lone continuation byte */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "ok 1\nx{a=\"%s\"} 1\nok 2\n", cases[i].value);
        struct seen w;
        parse(text, strlen(text), 2, &w);
        if (cases[i].ok ? w.errors != 0 || w.samples != 3
                        : w.errors != 1 || w.samples != 2 || w.first_error_line != 2 ||
                              w.first_error_col != cases[i].col ||
                              strcmp(w.first_error, "not UTF-8 (the exposition format is UTF-8)"))
            fail_msg("case %zu: %ld errors, %ld samples, line %ld col %d '%s'", i, w.errors,
                     w.samples, w.first_error_line, w.first_error_col, w.first_error);
    }
}

/* Lines are checked eight bytes at a time first: a NUL or a byte above
 * 0x7F at any place of a word, or of the tail after the last word, still
 * rejects its line at its column; 0x01 and 0x7F (ASCII) pass everywhere. */
static void test_bad_byte_anywhere(void **state)
{
    (void)state;
    static const struct {
        char byte;
        const char *error;
    } cases[] = {{'\0', "NUL byte in the line"},
                 {'\x80', "not UTF-8 (the exposition format is UTF-8)"},
                 {'\xff', "not UTF-8 (the exposition format is UTF-8)"},
                 {'\x01', NULL},
                 {'\x7f', NULL}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (size_t at = 0; at < 29; at++) {
            char text[128];
            /* line 2: 'x{a="' and 29 value bytes, one of them the case's */
            int n = snprintf(text, sizeof(text), "ok 1\nx{a=\"%29s\"} 1\nok 2\n", "");
            memset(text + 10, 'v', 29);
            text[10 + at] = cases[c].byte;
            struct seen w;
            parse(text, (size_t)n, 2, &w);
            int ok = cases[c].error ? w.errors == 1 && w.samples == 2 && w.first_error_line == 2 &&
                                          w.first_error_col == (int)at + 6 &&
                                          strcmp(w.first_error, cases[c].error) == 0
                                    : w.errors == 0 && w.samples == 3;
            if (!ok)
                fail_msg("byte %#x at %zu: %ld errors, %ld samples, line %ld col %d '%s'",
                         (unsigned char)cases[c].byte, at, w.errors, w.samples, w.first_error_line,
                         w.first_error_col, w.first_error);
        }
}

/* The parser reads plain decimals without strtod: every value, plain or
 * not, must come out bit for bit as strtod reads it; a timestamp too. */
static void test_values_as_strtod(void **state)
{
    (void)state;
    static const char *values[] = {"0",
                                   "-0",
                                   "+7",
                                   "1.5",
                                   ".5",
                                   "5.",
                                   "0.1",
                                   "0.250000",
                                   "1024",
                                   "-3.75",
                                   "123456789012345",
                                   "1234567890.12345",
                                   "0.000000000000001",
                                   "99999999999999.9",
                                   "0.30000000000000004",
                                   "9007199254740993",
                                   "1e3",
                                   "-2.5E-3",
                                   "0x1A",
                                   "1234567890123456"};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "m{a=\"b\"} %s 1700000000123\n", values[i]);
        struct seen w;
        parse(line, strlen(line), 0, &w);
        assert_int_equal(w.errors, 0);
        double want = strtod(values[i], NULL);
        if (memcmp(&w.last_value, &want, sizeof(want)) != 0)
            fail_msg("%s read as %.17g, strtod says %.17g", values[i], w.last_value, want);
        assert_int_equal(w.last_ts, 1700000000123LL);
    }
    static const char *bad[] = {"1.2.3", "1-2", "--1", "+", "12ab"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "m %s\n", bad[i]);
        struct seen w;
        parse(line, strlen(line), 0, &w);
        assert_int_equal(w.errors, 1);
        assert_string_equal(w.first_error, "the value is not a number");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_short),
        cmocka_unit_test(test_not_utf8),
        cmocka_unit_test(test_bad_byte_anywhere),
        cmocka_unit_test(test_real_outputs),
        cmocka_unit_test(test_mig_labels),
        cmocka_unit_test(test_line_without_value),
        cmocka_unit_test(test_values_and_escapes),
        cmocka_unit_test(test_malformed_lines),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_values_as_strtod),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
