/*
 * test_latpipe.c - the latency-pipe reader on good and hostile lines (every
 * error names its line and column, the reader stops there and stays
 * stopped), the same samples whether fed whole or byte by byte; MIG UUIDs
 * from real `nvidia-smi -L` outputs (tests/fixtures/fight, origin in its
 * README.md); and the embedded PTX assembled by ptxas when one is present.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fight/fight.h"
#include "fight/internal.h"
#include "util/file.h"

/* Feed text in chunks of step bytes (0 = whole); returns the status. */
static ts_status feed(const char *text, size_t step, struct fight_series *s, struct ts_error *e)
{
    struct fight_reader r;
    memset(s, 0, sizeof(*s));
    memset(e, 0, sizeof(*e));
    fight_reader_init(&r, "sla tenant", s);
    size_t len = strlen(text), at = 0;
    ts_status st = TS_OK;
    while (at < len && st == TS_OK) {
        size_t n = step && len - at > step ? step : len - at;
        st = fight_reader_feed(&r, text + at, n, e);
        at += n;
    }
    if (st == TS_OK)
        st = fight_reader_finish(&r, e);
    if (st != TS_OK) /* sticky */
        assert_int_equal(fight_reader_feed(&r, "latency_us 1\n", 13, NULL), TS_SYNTAX);
    return st;
}

static void good_lines(void **state)
{
    (void)state;
    const char *text = "# the sla tenant\n\nlatency_us 103.5 gpu_us 100.25\n"
                       "latency_us\t7e1\r\nmem_mib 512\nmem_mib 256.5\n"
                       "error cuMemAlloc: out of memory\nerror again\n  latency_us 0  \n"
                       "latency_us 42\nlatency_us 9 gpu_us 1 host_us 250.5\n"
                       "latency_us 8 host_us 0";
    for (size_t step = 0; step < 4; step++) {
        struct fight_series s;
        struct ts_error e;
        assert_int_equal(feed(text, step, &s, &e), TS_OK);
        assert_int_equal(s.n, 6);
        assert_true(s.lat_us[0] == 103.5 && s.gpu_us[0] == 100.25 && isnan(s.host_us[0]));
        assert_true(s.lat_us[1] == 70 && isnan(s.gpu_us[1]));
        assert_true(s.lat_us[2] == 0 && s.lat_us[3] == 42);
        assert_true(s.lat_us[4] == 9 && s.gpu_us[4] == 1 && s.host_us[4] == 250.5);
        assert_true(s.lat_us[5] == 8 && isnan(s.gpu_us[5]) && s.host_us[5] == 0);
        assert_int_equal(s.errors, 2);
        assert_string_equal(s.first_error, "cuMemAlloc: out of memory");
        assert_true(s.mem_mib_max == 512);
        fight_series_release(&s);
    }
}

struct bad_case {
    const char *text;
    int line, column;
    const char *msg;
};

static void bad_lines(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"latency_us 1\nlatency_us x\n", 2, 12, "not a decimal number: 'x'"},
        {"latency_us 1\n\nbogus 1\n", 3, 1,
         "unknown keyword (latency_us, error, mem_mib): 'bogus'"},
        {"latency_us\n", 1, 11, "latency_us needs a number"},
        {"latency_us 5 gpu_us\n", 1, 20, "gpu_us needs a number"},
        {"latency_us 5 gpu_us 4 more\n", 1, 23,
         "expected 'host_us' or the end of the line: 'more'"},
        {"latency_us 5 cpu_us 4\n", 1, 14,
         "expected 'gpu_us', 'host_us' or the end of the line: 'cpu_us'"},
        {"latency_us 5 host_us\n", 1, 21, "host_us needs a number"},
        {"latency_us 5 host_us -2\n", 1, 22, "must be a finite number >= 0: '-2'"},
        {"latency_us 5 host_us 1 gpu_us 4\n", 1, 24,
         "unexpected text after the host_us value: 'gpu_us'"},
        {"latency_us 5 gpu_us 1 gpu_us 4\n", 1, 23,
         "expected 'host_us' or the end of the line: 'gpu_us'"},
        {"latency_us -1\n", 1, 12, "must be a finite number >= 0: '-1'"},
        {"latency_us 1e999\n", 1, 12, "must be a finite number >= 0: '1e999'"},
        {"latency_us inf\n", 1, 12, "not a decimal number: 'inf'"},
        {"latency_us nan\n", 1, 12, "not a decimal number: 'nan'"},
        {"latency_us 0x10\n", 1, 12, "not a decimal number: '0x10'"},
        {"latency_us 1.2.3\n", 1, 12, "not a decimal number: '1.2.3'"},
        {"mem_mib 5 6\n", 1, 11, "unexpected text after the mem_mib value: '6'"},
        {"LATENCY_US 5\n", 1, 1, "unknown keyword (latency_us, error, mem_mib): 'LATENCY_US'"},
        {"latency_us 5\n\n\nlatency_us 5,5", 4, 12, "not a decimal number: '5,5'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (size_t step = 0; step < 3; step++) {
            struct fight_series s;
            struct ts_error e;
            assert_int_equal(feed(cases[i].text, step, &s, &e), TS_SYNTAX);
            if (e.line != cases[i].line || e.column != cases[i].column ||
                strcmp(e.msg, cases[i].msg) != 0)
                fail_msg("case %zu: got %d:%d %s", i, e.line, e.column, e.msg);
            assert_string_equal(e.file, "sla tenant");
            fight_series_release(&s);
        }
    }
}

static void hostile_bytes(void **state)
{
    (void)state;
    struct fight_series s;
    struct ts_error e;
    char text[1024];
    memset(text, '9', sizeof(text));
    memcpy(text, "latency_us 1\nlatency_us ", 24);
    text[sizeof(text) - 2] = '\n';
    text[sizeof(text) - 1] = '\0';
    assert_int_equal(feed(text, 0, &s, &e), TS_SYNTAX);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, FIGHT_LINE_MAX + 1);
    assert_string_equal(e.msg, "line longer than 256 bytes");
    assert_int_equal(s.n, 1);
    fight_series_release(&s);
    struct fight_reader r;
    memset(&s, 0, sizeof(s));
    fight_reader_init(&r, "noisy tenant", &s);
    assert_int_equal(fight_reader_feed(&r, "latency_us 1\nlaten\0cy_us 2\n", 28, &e), TS_SYNTAX);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 6);
    assert_string_equal(e.msg, "NUL byte in line");
    fight_series_release(&s);
    /* A long number token and a truncated last line. */
    assert_int_equal(feed("latency_us 1111111111111111111111111111111111111111111111111111111111111"
                          "11111111\n",
                          0, &s, &e),
                     TS_SYNTAX);
    assert_string_equal(e.msg, "number too long: '1111111111111111111111111111111111111111'");
    fight_series_release(&s);
    assert_int_equal(feed("latency_us 1\nlatency_us", 0, &s, &e), TS_SYNTAX);
    assert_int_equal(e.line, 2);
    fight_series_release(&s);
}

static void mig_uuids(void **state)
{
    (void)state;
    char uuids[FIGHT_MIG_MAX][FIGHT_UUID_MAX];
    char *text;
    size_t len;
    struct ts_error e;
    assert_int_equal(
        ts_file_read(th_src_path("tests/fixtures/fight/"
                                 "datadog-agent-pr33120_a100-sxm4-80gb_L_mig-7x1g10gb.txt"),
                     1u << 20, &text, &len, &e),
        TS_OK);
    assert_int_equal(fight_mig_parse(text, uuids, FIGHT_MIG_MAX), 7);
    assert_string_equal(uuids[0], "MIG-feb88891-0321-5fef-9c87-d4af3b54259e");
    assert_string_equal(uuids[6], "MIG-1aae4990-b962-574e-8375-119d6d9b9687");
    assert_int_equal(fight_mig_parse(text, uuids, 2), 2);
    free(text);
    assert_int_equal(
        ts_file_read(
            th_src_path("tests/fixtures/fight/"
                        "dcgm-exporter-issue105_a100-sxm4-40gb_L_mig-r450-uuid-format.txt"),
            1u << 20, &text, &len, &e),
        TS_OK);
    assert_int_equal(fight_mig_parse(text, uuids, FIGHT_MIG_MAX), 6);
    assert_string_equal(uuids[1], "MIG-GPU-a810a1fc-9f46-0e6f-5cef-bf34c2248e12/2/0");
    free(text);
    /* GPU lines, no UUID, unclosed, wrong prefix, spaces: none count. */
    assert_int_equal(fight_mig_parse("GPU 0: A100 (UUID: GPU-1234)\n"
                                     "  MIG 1g.10gb Device 0: (UUID: MIG-abc\n"
                                     "  MIG 1g.10gb Device 1: (UUID: GPU-abcdef)\n"
                                     "  MIG 1g.10gb Device 2: (UUID: MIG-a b)\n"
                                     "  MIG 1g.10gb Device 3:\n  MIG",
                                     uuids, FIGHT_MIG_MAX),
                     0);
}

static void ptx_assembles(void **state)
{
    (void)state;
    const char *ptxas = access("/usr/local/cuda/bin/ptxas", X_OK) == 0 ? "/usr/local/cuda/bin/ptxas"
                                                                       : NULL;
    if (!ptxas && system("command -v ptxas >/dev/null 2>&1") == 0)
        ptxas = "ptxas";
    assert_non_null(strstr(fight__ptx, ".entry tessera_sleep_us"));
    assert_non_null(strstr(fight__ptx, ".entry tessera_stream"));
    assert_non_null(strstr(fight__ptx, ".entry tessera_fma"));
    if (!ptxas)
        skip();
    char path[] = "/tmp/test_ptx_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(write(fd, fight__ptx, strlen(fight__ptx)) == (ssize_t)strlen(fight__ptx));
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s -arch=sm_90 -o /dev/null %s", ptxas, path);
    int rc = system(cmd);
    remove(path);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_lines),    cmocka_unit_test(bad_lines),
        cmocka_unit_test(hostile_bytes), cmocka_unit_test(mig_uuids),
        cmocka_unit_test(ptx_assembles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
