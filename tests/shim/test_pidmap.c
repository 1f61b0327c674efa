/*
 * test_pidmap.c - the shim's pid map (src/shim/hostpid.c): each line's
 * fields and faults with their column, and shim__host_pids over a region
 * of processes in the initial pid namespace, in a container's namespace
 * found in the map, and missing from it (or with no map): then -1, never a
 * partial answer. The shim is not in tessera_core: the source is compiled
 * in, with the region, the configuration and the log stubbed here.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include "shim/hostpid.c"

static struct shim_region test_region;
static struct shim_config test_config;
static int logged;

struct shim_region *shim__region(void) { return &test_region; }
const struct shim_config *shim__config(void) { return &test_config; }
void shim__log(const char *fmt, ...)
{
    (void)fmt;
    logged++;
}

static int line(const char *s, struct shim_pidmap_entry *e, size_t *col)
{
    const char *why = "";
    return shim__pidmap_line(s, strlen(s), e, col, &why);
}

static void test_lines(void **state)
{
    (void)state;
    struct shim_pidmap_entry e;
    size_t col = 99;
    assert_int_equal(line("4026532178 1 21484", &e, &col), 1);
    assert_true(e.ns == 4026532178ull && e.pid == 1 && e.host == 21484);
    assert_int_equal(line("\t7  2\t3 \r", &e, &col), 1);
    assert_true(e.ns == 7 && e.pid == 2 && e.host == 3);
    assert_int_equal(line("", &e, &col), 0);
    assert_int_equal(line("   # ns pid host", &e, &col), 0);
    assert_int_equal(line("7 2", &e, &col), -1);
    assert_int_equal(col, 3);
    assert_int_equal(line("7 x 3", &e, &col), -1);
    assert_int_equal(col, 2);
    assert_int_equal(line("7 2 3 0 -", &e, &col), 1); /* the agent's format */
    assert_true(e.ns == 7 && e.pid == 2 && e.host == 3);
    assert_int_equal(line("7 2 3 1 5", &e, &col), 1);
    assert_int_equal(line("7 2 3 1", &e, &col), 1);
    assert_int_equal(line("7 2 3 x", &e, &col), -1);
    assert_int_equal(col, 6);
    assert_int_equal(line("7 2 3 0 y", &e, &col), -1);
    assert_int_equal(col, 8);
    assert_int_equal(line("7 2 3 0 - z", &e, &col), -1);
    assert_int_equal(col, 10);
    assert_int_equal(line("7 0 3", &e, &col), -1); /* pids start at 1 */
    assert_int_equal(line("7 2 2147483648", &e, &col), -1);
    assert_int_equal(col, 4);
    assert_int_equal(line("7 -2 3", &e, &col), -1);
    /* the largest inode taken, and one past 2^64 refused (it wrapped to 3) */
    assert_int_equal(line("1844674407370955161 2 3", &e, &col), 1);
    assert_int_equal(line("18446744073709551619 2 3", &e, &col), -1);
    assert_int_equal(col, 0);
    assert_int_equal(line("7 2 3x", &e, &col), -1);
}

static void slot(int i, int32_t pid, uint64_t ns)
{
    atomic_store(&test_region.slots[i].pid, pid);
    atomic_store(&test_region.slots[i].ns, ns);
    if ((uint32_t)i >= atomic_load(&test_region.hiwater))
        atomic_store(&test_region.hiwater, (uint32_t)i + 1);
}

static void write_map(const char *text)
{
    FILE *f = fopen(test_config.pid_map, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_host_pids(void **state)
{
    (void)state;
    snprintf(test_config.pid_map, sizeof(test_config.pid_map), "/tmp/test_pidmap.%d",
             (int)getpid());
    unlink(test_config.pid_map);
    pid_t host[8];
    slot(0, 4242, INIT_PID_NS);
    slot(1, 0, 0);                                 /* a free slot */
    assert_int_equal(shim__host_pids(host, 8), 1); /* no map needed */
    assert_int_equal(host[0], 4242);
    slot(2, 1, 555);
    slot(3, 7, 555);
    logged = 0;
    assert_int_equal(shim__host_pids(host, 8), -1); /* no map */
    assert_int_equal(shim__host_pids(host, 8), -1);
    assert_int_equal(logged, 1); /* said once */
    write_map("# ns pid host\n555 1 9001\n556 7 9999\n");
    assert_int_equal(shim__host_pids(host, 8), -1); /* pid 7 of 555 missing */
    assert_int_equal(logged, 2);
    write_map("# ns pid host\n555 1 9001\n556 7 9999\n555 7 9007"); /* no final newline */
    assert_int_equal(shim__host_pids(host, 8), 3);
    assert_int_equal(host[0], 4242);
    assert_int_equal(host[1], 9001);
    assert_int_equal(host[2], 9007);
    assert_int_equal(shim__host_pids(host, 2), 2);
    slot(4, 99, 0); /* being claimed: its namespace not yet stored */
    assert_int_equal(shim__host_pids(host, 8), 3);
    slot(4, 0, 0);
    write_map("555 1 9001\n555 7 oops\n");
    assert_int_equal(shim__host_pids(host, 8), -1);
    assert_int_equal(logged, 3);
    unlink(test_config.pid_map);
}

/* A map longer than the read buffer: lines cut across chunks still match. */
static void test_long_map(void **state)
{
    (void)state;
    FILE *f = fopen(test_config.pid_map, "w");
    assert_non_null(f);
    for (int i = 1; i <= 2000; i++)
        fprintf(f, "%d %d %d\n", 556, i, 100000 + i);
    fprintf(f, "555 1 9001\n555 7 9007\n");
    fclose(f);
    pid_t host[8];
    assert_int_equal(shim__host_pids(host, 8), 3);
    assert_int_equal(host[2], 9007);
    unlink(test_config.pid_map);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_host_pids),
        cmocka_unit_test(test_long_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
