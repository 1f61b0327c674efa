/*
 * test_limits.c - the shim's limit-file parser (src/shim/limits.c): good
 * files with every key, units, comments, blanks and CRLF; each kind of bad
 * input refused with the exact line, column and message; the value parsers
 * the environment fallback uses. The shim is not in tessera_core, so the
 * parser's source is compiled into this test.
 */
#include "helpers.h"

#include <string.h>
#include "shim/limits.c"

static int parse(const char *text, struct shim_limits *l, struct shim_limits_error *e)
{
    memset(e, 0, sizeof(*e));
    return shim_limits_parse(text, strlen(text), l, e);
}

static void test_good(void **state)
{
    (void)state;
    struct shim_limits l;
    struct shim_limits_error e;
    assert_int_equal(parse("# node agent\n\nversion = 1\nmemoryLimit = 8Gi\n"
                           "smPercent=30\n  region =\t/run/t/r1  \n",
                           &l, &e),
                     0);
    assert_int_equal(l.version, 1);
    assert_int_equal(l.has_memory, 1);
    assert_true(l.memory_bytes == 8ull << 30);
    assert_int_equal(l.sm_percent, 30);
    assert_string_equal(l.region, "/run/t/r1");
    assert_string_equal(l.pid_map, "");
    assert_int_equal(parse("version = 1\npidMap = /run/tessera/pid-map\n", &l, &e), 0);
    assert_string_equal(l.pid_map, "/run/tessera/pid-map");
    assert_int_equal(parse("version=1\r\nmemoryLimit=1073741824\r\n", &l, &e), 0);
    assert_true(l.memory_bytes == 1073741824ull);
    assert_int_equal(l.sm_percent, 100);
    assert_string_equal(l.region, "");
    assert_int_equal(parse("version = 1", &l, &e), 0); /* no final newline */
    assert_int_equal(l.has_memory, 0);
    assert_int_equal(l.backstop, SHIM_BACKSTOP_OFF);
    assert_true(l.backstop_tolerance == 512ull << 20);
    assert_int_equal(l.backstop_interval_ms, 1000);
}

static void refused(const char *text, int line, int col, const char *msg);

static void test_backstop(void **state)
{
    (void)state;
    struct shim_limits l;
    struct shim_limits_error e;
    assert_int_equal(parse("version = 1\nmemoryBackstop = refuse\nbackstopTolerance = 1Mi\n"
                           "backstopIntervalMs = 10\n",
                           &l, &e),
                     0);
    assert_int_equal(l.backstop, SHIM_BACKSTOP_REFUSE);
    assert_true(l.backstop_tolerance == 1ull << 20);
    assert_int_equal(l.backstop_interval_ms, 10);
    assert_int_equal(parse("version = 1\nmemoryBackstop = report\n", &l, &e), 0);
    assert_int_equal(l.backstop, SHIM_BACKSTOP_REPORT);
    refused("version = 1\nmemoryBackstop = on\n", 2, 18, "memoryBackstop: expected off");
    refused("version = 1\nbackstopTolerance = 0\n", 2, 21, "more than 0");
    refused("version = 1\nbackstopIntervalMs = 9\n", 2, 22, "between 10 and 60000");
    refused("version = 1\nbackstopIntervalMs = 60001\n", 2, 22, "between 10 and 60000");
    refused("version = 1\nbackstopIntervalMs = 5s\n", 2, 23, "milliseconds");
}

static void test_units(void **state)
{
    (void)state;
    static const struct {
        const char *v;
        uint64_t want;
    } cases[] = {
        {"1", 1},
        {"1Ki", 1024},
        {"3Mi", 3ull << 20},
        {"2Ti", 2ull << 40},
        {"1Pi", 1ull << 50},
        {"5k", 5000},
        {"5K", 5000},
        {"7M", 7000000},
        {"8G", 8000000000ull},
        {"16383Pi", 16383ull << 50},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t got = 0;
        size_t bad = 99;
        const char *why = NULL;
        assert_int_equal(shim_limits_bytes(cases[i].v, strlen(cases[i].v), &got, &bad, &why), 0);
        assert_true(got == cases[i].want);
    }
}

/* text must be refused at line:column with a message containing msg. */
static void refused(const char *text, int line, int col, const char *msg)
{
    struct shim_limits l;
    struct shim_limits_error e;
    assert_int_equal(parse(text, &l, &e), -1);
    if (e.line != line || e.column != col || !strstr(e.msg, msg))
        fail_msg("'%s': got %d:%d '%s', want %d:%d '%s'", text, e.line, e.column, e.msg, line, col,
                 msg);
}

static void test_bad(void **state)
{
    (void)state;
    refused("version = 1\nmemoryLimit = 8Qi\n", 2, 16, "memoryLimit: unknown unit");
    refused("version = 1\nmemoryLimit = 0\n", 2, 15, "more than 0");
    refused("version = 1\nmemoryLimit = Gi\n", 2, 15, "expected a number");
    refused("version = 1\nmemoryLimit = 99999999999999999999\n", 2, 15, "too large");
    refused("version = 1\nmemoryLimit = 16384Pi\n", 2, 15, "too large");
    refused("version = 1\nmemoryLimit = 8 Gi\n", 2, 16, "unknown unit");
    refused("version = 1\nmemoryLimit = -1\n", 2, 15, "expected a number");
    refused("version = 1\nsmPercent = 0\n", 2, 13, "between 1 and 100");
    refused("version = 1\nsmPercent = 101\n", 2, 13, "between 1 and 100");
    refused("version = 1\nsmPercent = 50%\n", 2, 15, "integer percentage");
    refused("version = 1\nsmPercent = 30\nsmPercent = 40\n", 3, 1, "smPercent: key given twice");
    refused("version = 1\nregion = run/x\n", 2, 10, "absolute path");
    refused("version = 1\nregion = /a\tb\n", 2, 12, "control character");
    refused("version = 1\npidMap = pid-map\n", 2, 10, "absolute path");
    refused("version = 1\ngpuMemory = 1\n", 2, 1, "unknown key");
    refused("version = 1\nVersion = 1\n", 2, 1, "unknown key");
    refused("version = 1\nmemoryLimit\n", 2, 1, "expected key = value");
    refused("version = 1\nmemoryLimit =   \n", 2, 14, "memoryLimit: empty value");
    refused("version = 2\n", 1, 11, "unsupported version");
    refused("memoryLimit = 1Gi\n", 1, 1, "missing 'version = 1'");
    refused("", 1, 1, "missing 'version = 1'");
    refused("# only a comment\n\n", 2, 1, "missing 'version = 1'");
    struct shim_limits l;
    struct shim_limits_error e;
    static const char nul[] = "version = 1\nmemoryLimit = 1\0Gi\n";
    assert_int_equal(shim_limits_parse(nul, sizeof(nul) - 1, &l, &e), -1);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 16);
    assert_non_null(strstr(e.msg, "NUL byte"));
}

static void test_hostile(void **state)
{
    (void)state;
    struct shim_limits l;
    struct shim_limits_error e;
    char big[2048];
    memset(big, 'a', sizeof(big));
    memcpy(big, "version = 1\nregion = /", 22);
    assert_int_equal(shim_limits_parse(big, sizeof(big), &l, &e), -1);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 1025);
    assert_non_null(strstr(e.msg, "line too long"));
    char path[400] = "version = 1\nregion = /";
    memset(path + 22, 'p', 300);
    assert_int_equal(shim_limits_parse(path, strlen(path), &l, &e), -1);
    assert_non_null(strstr(e.msg, "path too long"));
    assert_int_equal(e.column, 9 + SHIM_REGION_PATH_MAX);
    static char huge[SHIM_LIMITS_FILE_MAX + 2];
    memset(huge, '\n', sizeof(huge));
    assert_int_equal(shim_limits_parse(huge, sizeof(huge), &l, &e), -1);
    assert_non_null(strstr(e.msg, "too large"));
    /* The NUL in a value may not cut the check short. */
    assert_int_equal(shim_limits_parse("version = 1\0", 12, &l, &e), -1);
    assert_int_equal(e.column, 12);
}

/* The node agent's keys: who the container is and what it does when the
 * driver shows more than the limit. */
static void test_enforcement(void **state)
{
    (void)state;
    struct shim_limits l;
    struct shim_limits_error e;
    assert_int_equal(parse("version = 1\n", &l, &e), 0);
    assert_string_equal(l.tenant, "");
    assert_string_equal(l.workload, "");
    assert_int_equal(l.on_memory, SHIM_ACTION_KILL);
    assert_int_equal(l.on_sm, SHIM_ACTION_REPORT);
    assert_int_equal(parse("version = 1\ntenant = alpha-2\nworkload = chat\n"
                           "onMemoryViolation = evict\nonSmViolation = kill\n",
                           &l, &e),
                     0);
    assert_string_equal(l.tenant, "alpha-2");
    assert_string_equal(l.workload, "chat");
    assert_int_equal(l.on_memory, SHIM_ACTION_EVICT);
    assert_int_equal(l.on_sm, SHIM_ACTION_KILL);
    assert_string_equal(shim_action_name(l.on_memory), "evict");
    assert_int_equal(parse("version = 1\nonMemoryViolation = report\n", &l, &e), 0);
    assert_int_equal(l.on_memory, SHIM_ACTION_REPORT);
    refused("version = 1\nonMemoryViolation = stop\n", 2, 21,
            "onMemoryViolation: expected report, evict or kill");
    refused("version = 1\nonSmViolation = Kill\n", 2, 17, "expected report, evict or kill");
    refused("version = 1\ntenant = Alpha\n", 2, 10, "tenant: expected a name");
    refused("version = 1\nworkload = chat-\n", 2, 16, "expected a name");
    refused("version = 1\nworkload = -chat\n", 2, 12, "expected a name");
    refused("version = 1\ntenant = a b\n", 2, 11, "expected a name");
    refused("version = 1\ntenant = a\ntenant = b\n", 3, 1, "tenant: key given twice");
    char long_name[128] = "version = 1\ntenant = ";
    memset(long_name + strlen(long_name), 'a', 64);
    refused(long_name, 2, 10 + 63, "name too long");
}

static void test_env_values(void **state)
{
    (void)state;
    unsigned pct = 0;
    size_t bad = 0;
    const char *why = NULL;
    assert_int_equal(shim_limits_percent("70", 2, &pct, &bad, &why), 0);
    assert_int_equal(pct, 70);
    assert_int_equal(shim_limits_percent("", 0, &pct, &bad, &why), -1);
    assert_string_equal(why, "expected a number");
    assert_int_equal(shim_limits_percent("7x", 2, &pct, &bad, &why), -1);
    assert_int_equal(bad, 1);
    uint64_t b = 0;
    assert_int_equal(shim_limits_bytes("lots", 4, &b, &bad, &why), -1);
    assert_int_equal(bad, 0);
    char region[SHIM_REGION_PATH_MAX] = "/kept";
    assert_int_equal(shim_limits_region("run/x", 5, region, &bad, &why), -1);
    assert_int_equal(bad, 0);
    assert_string_equal(why, "must be an absolute path");
    assert_int_equal(shim_limits_region("", 0, region, &bad, &why), -1);
    assert_int_equal(shim_limits_region("/a\nb", 4, region, &bad, &why), -1);
    assert_int_equal(bad, 2);
    assert_string_equal(region, "/kept"); /* untouched on error */
    assert_int_equal(shim_limits_region("/run/t/r1", 9, region, &bad, &why), 0);
    assert_string_equal(region, "/run/t/r1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),        cmocka_unit_test(test_units),
        cmocka_unit_test(test_bad),         cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_enforcement), cmocka_unit_test(test_env_values),
        cmocka_unit_test(test_backstop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
