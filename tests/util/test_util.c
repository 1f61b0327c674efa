/*
 * test_util.c - arena (and its doubling arrays), capped string builder
 * (and JSON written into one), located error formatting, the diagnostic
 * list (errors and warnings), capped file reads and atomic writes (with a
 * mode, replacing a link rather than writing through it; without one, a
 * replaced file's mode kept and a new one's from the umask; links planted at
 * the old guessable temporary name never followed).
 */
#include "helpers.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/arena.h"
#include "util/error.h"
#include "util/file.h"
#include "util/jsonwrite.h"
#include "util/sbuf.h"
#include "util/time.h"

static void test_arena(void **state)
{
    (void)state;
    struct ts_arena a;
    ts_arena_init(&a);
    char *big = ts_arena_alloc(&a, 200000); /* larger than a block */
    assert_non_null(big);
    memset(big, 'x', 200000);
    for (int i = 0; i < 10000; i++) {
        int *p = ts_arena_alloc(&a, sizeof(int));
        assert_non_null(p);
        assert_int_equal(*p, 0); /* zeroed */
        assert_int_equal((unsigned long)p % 16, 0);
    }
    assert_null(ts_arena_array(&a, (size_t)-1 / 4, 8)); /* overflow refused */
    assert_string_equal(ts_arena_printf(&a, "%s-%d", "gpu", 7), "gpu-7");
    assert_string_equal(ts_arena_strndup(&a, "abcdef", 3), "abc");
    assert_null(ts_arena_strdup(&a, NULL));
    /* an arena array that doubles keeps what it held */
    int *items = NULL;
    size_t cap = 0;
    for (int i = 0; i < 100; i++) {
        assert_true(ts_arena_grow(&a, (void **)&items, &cap, (size_t)i, sizeof(*items)));
        items[i] = i;
    }
    assert_int_equal(cap, 128);
    for (int i = 0; i < 100; i++)
        assert_int_equal(items[i], i);
    ts_arena_free(&a);
    assert_null(a.head);
}

static void test_sbuf_cap(void **state)
{
    (void)state;
    struct ts_sbuf b;
    ts_sbuf_init(&b, 10);
    ts_sbuf_puts(&b, "0123456789");
    assert_int_equal(ts_sbuf_status(&b), TS_OK);
    ts_sbuf_puts(&b, "x");
    assert_int_equal(ts_sbuf_status(&b), TS_TOO_LARGE);
    assert_string_equal(ts_sbuf_str(&b), "0123456789"); /* nothing half-appended */
    ts_sbuf_release(&b);
    ts_sbuf_init(&b, 100);
    ts_sbuf_xml(&b, "<a & \"b\">");
    assert_string_equal(ts_sbuf_str(&b), "&lt;a &amp; &quot;b&quot;&gt;");
    ts_sbuf_release(&b);
    /* a JSON document as text, and one that could not be built */
    ts_sbuf_init(&b, 100);
    json_t *doc = json_pack("{s:i, s:s}", "b", 1, "a", "x");
    assert_int_equal(ts_json_write(doc, JSON_SORT_KEYS | JSON_COMPACT, &b), TS_OK);
    assert_string_equal(ts_sbuf_str(&b), "{\"a\":\"x\",\"b\":1}\n");
    json_decref(doc);
    assert_int_equal(ts_json_write(NULL, 0, &b), TS_NOMEM);
    assert_int_equal(ts_sbuf_status(&b), TS_NOMEM);
    ts_sbuf_release(&b);
}

static void test_error_format(void **state)
{
    (void)state;
    struct ts_error e;
    char buf[1024];
    ts_err_at(&e, TS_INVALID, "spec.yaml", 12, 7, "Tenant/a.spec.workloads[0].kind", "bad %s", "x");
    ts_error_format(&e, buf, sizeof(buf));
    assert_string_equal(buf, "spec.yaml:12:7: Tenant/a.spec.workloads[0].kind: bad x");
    ts_err(&e, TS_IO, "plain");
    ts_error_format(&e, buf, sizeof(buf));
    assert_string_equal(buf, "plain");
    assert_string_equal(ts_status_str(TS_TOO_LARGE), "input too large");
    assert_string_equal(ts_status_str((ts_status)999), "unknown status");
    struct ts_diag d = {0};
    for (int i = 0; i < TS_DIAG_MAX + 5; i++)
        ts_diag_add(&d, &e);
    assert_int_equal(d.count, TS_DIAG_MAX);
    assert_int_equal(d.dropped, 5);
}

/* A module's own reporters pass their va_list on (as spec_report does). */
static ts_status fail_at(struct ts_error *e, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ts_status fail_at(struct ts_error *e, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_status st = ts_verr_at(e, TS_SYNTAX, "a.txt", line, 2, NULL, fmt, ap);
    va_end(ap);
    return st;
}

static void report(struct ts_diag *d, ts_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(struct ts_diag *d, ts_severity sev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_diag_vaddf(d, sev, TS_INVALID, "spec.yaml", 3, 5, "Tenant/a", fmt, ap);
    va_end(ap);
}

static void test_diag_addf(void **state)
{
    (void)state;
    struct ts_diag d = {0};
    char buf[1024];
    struct ts_error e;
    assert_int_equal(fail_at(&e, 4, "no %s", "row"), TS_SYNTAX);
    ts_error_format(&e, buf, sizeof(buf));
    assert_string_equal(buf, "a.txt:4:2: no row");
    assert_int_equal(fail_at(NULL, 4, "no %s", "row"), TS_SYNTAX);
    report(&d, TS_SEV_ERROR, "bad %s", "x");
    report(&d, TS_SEV_WARNING, "odd %d", 7);
    ts_diag_addf(&d, TS_SEV_ERROR, TS_INFEASIBLE, NULL, 0, 0, NULL, "no room for %d", 2);
    assert_int_equal(d.count, 3);
    assert_int_equal(d.warnings, 1);
    assert_int_equal(ts_diag_errors(&d), 2);
    ts_error_format(&d.items[0], buf, sizeof(buf));
    assert_string_equal(buf, "spec.yaml:3:5: Tenant/a: bad x");
    assert_int_equal(d.items[0].code, TS_INVALID);
    ts_error_format(&d.items[1], buf, sizeof(buf));
    assert_string_equal(buf, "spec.yaml:3:5: warning: Tenant/a: odd 7");
    ts_error_format(&d.items[2], buf, sizeof(buf));
    assert_string_equal(buf, "no room for 2");
    assert_int_equal(d.items[2].code, TS_INFEASIBLE);
    /* past the cap: counted, warnings apart */
    for (int i = 0; i < TS_DIAG_MAX; i++)
        report(&d, i % 2 ? TS_SEV_WARNING : TS_SEV_ERROR, "n %d", i);
    assert_int_equal(d.count, TS_DIAG_MAX);
    assert_int_equal(d.dropped, 3);
    assert_int_equal(d.warnings, 1 + TS_DIAG_MAX / 2);
    assert_int_equal(ts_diag_errors(&d), 2 + TS_DIAG_MAX / 2);
}

static void test_files(void **state)
{
    (void)state;
    char path[] = "/tmp/tessera-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct ts_error e;
    assert_int_equal(ts_file_write(path, "hello", 5, &e), TS_OK);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(ts_file_read(path, 100, &text, &len, &e), TS_OK);
    assert_int_equal(len, 5);
    assert_string_equal(text, "hello");
    free(text);
    assert_int_equal(ts_file_read(path, 4, &text, &len, &e), TS_TOO_LARGE);
    assert_string_equal(e.file, path);
    assert_non_null(strstr(e.msg, "larger than the limit of 4 bytes"));
    unlink(path);
    assert_int_equal(ts_file_read(path, 100, &text, &len, &e), TS_IO);
    assert_non_null(strstr(e.msg, "cannot open"));
    assert_int_equal(ts_file_write("/nonexistent-dir/x", "a", 1, &e), TS_IO);
}

/* ts_file_write_mode: the mode set (not the umask's), a link at the path
 * replaced and its target untouched, no temporary file left, errors named. */
static void test_file_write_mode(void **state)
{
    (void)state;
    char dir[] = "/tmp/tessera-test-XXXXXX", target[64], link_[64], cmd[96];
    assert_non_null(mkdtemp(dir));
    snprintf(target, sizeof(target), "%s/target", dir);
    snprintf(link_, sizeof(link_), "%s/link", dir);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fputs("keep", f);
    fclose(f);
    assert_int_equal(symlink(target, link_), 0);
    struct ts_error e;
    assert_int_equal(ts_file_write_mode(link_, "new", 3, 0640, &e), TS_OK);
    struct stat st;
    assert_int_equal(lstat(link_, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0640);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(ts_file_read(target, 100, &text, &len, &e), TS_OK);
    assert_string_equal(text, "keep");
    free(text);
    assert_int_equal(ts_file_read(link_, 100, &text, &len, &e), TS_OK);
    assert_string_equal(text, "new");
    free(text);
    snprintf(cmd, sizeof(cmd), "test $(ls %s | wc -l) = 2", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s/none/x", dir);
    assert_int_equal(ts_file_write_mode(cmd, "a", 1, 0600, &e), TS_IO);
    assert_string_equal(e.file, cmd);
    assert_non_null(strstr(e.msg, "cannot create"));
    snprintf(cmd, sizeof(cmd), "rm -r %s", dir);
    assert_int_equal(system(cmd), 0);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void put(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static void expect(const char *path, const char *text, mode_t mode)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, mode);
    char *got = NULL;
    size_t len = 0;
    struct ts_error e;
    assert_int_equal(ts_file_read(path, 100, &got, &len, &e), TS_OK);
    assert_string_equal(got, text);
    free(got);
}

/* ts_file_write in a folder others write to: links planted at the guessable
 * temporary name the old code used and at the destination itself are not
 * followed (the victim keeps its bytes and mode); mode from the umask for a
 * new file, kept (less set-id bits) for a replaced one; errors leave nothing. */
static void test_file_write_safe(void **state)
{
    (void)state;
    char dir[] = "/tmp/tessera-test-XXXXXX", victim[64], out[64], tmp[96], p[64];
    assert_non_null(mkdtemp(dir));
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", out, (long)getpid());
    put(victim, "keep", 0600);
    assert_int_equal(symlink(victim, tmp), 0);
    mode_t old = umask(022);
    struct ts_error e;
    assert_int_equal(ts_file_write(out, "new", 3, &e), TS_OK);
    expect(victim, "keep", 0600);
    expect(out, "new", 0644);
    struct stat st;
    assert_int_equal(lstat(tmp, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(count_entries(dir), 3);
    snprintf(p, sizeof(p), "%s/link", dir); /* a link at the destination */
    assert_int_equal(symlink(victim, p), 0);
    assert_int_equal(ts_file_write(p, "mine", 4, &e), TS_OK);
    expect(p, "mine", 0644);
    expect(victim, "keep", 0600);
    umask(027);
    snprintf(p, sizeof(p), "%s/new027", dir);
    assert_int_equal(ts_file_write(p, "a", 1, &e), TS_OK);
    expect(p, "a", 0640);
    umask(0);
    snprintf(p, sizeof(p), "%s/new000", dir);
    assert_int_equal(ts_file_write(p, "b", 1, &e), TS_OK);
    expect(p, "b", 0644);
    umask(077); /* a replaced file keeps its mode whatever the umask */
    put(out, "old", 0751);
    assert_int_equal(ts_file_write(out, "c", 1, &e), TS_OK);
    expect(out, "c", 0751);
    put(out, "old", 04755);
    assert_int_equal(ts_file_write(out, "d", 1, &e), TS_OK);
    expect(out, "d", 0755);
    umask(old);
    assert_int_equal(count_entries(dir), 6);
    snprintf(p, sizeof(p), "%s/sub", dir); /* a folder at the path: refused */
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(ts_file_write(p, "e", 1, &e), TS_IO);
    assert_string_equal(e.file, p);
    assert_non_null(strstr(e.msg, "cannot write"));
    assert_int_equal(count_entries(dir), 7);
    assert_int_equal(count_entries(p), 0);
    snprintf(tmp, sizeof(tmp), "rm -r %s", dir);
    assert_int_equal(system(tmp), 0);
}

static void test_times(void **state)
{
    (void)state;
    int64_t ms;
    assert_true(ts_time_parse("1700000000", &ms) && ms == 1700000000000LL);
    assert_true(ts_time_parse("1970-01-01T00:00:00Z", &ms) && ms == 0);
    assert_true(ts_time_parse("2023-11-14T22:13:20Z", &ms) && ms == 1700000000000LL);
    assert_true(ts_time_parse("2023-11-14T23:13:20+01:00", &ms) && ms == 1700000000000LL);
    assert_true(ts_time_parse("2023-11-14T22:13:20.25Z", &ms) && ms == 1700000000250LL);
    assert_true(ts_time_parse("2000-02-29T00:00:00Z", &ms) && ms == 951782400000LL);
    assert_false(ts_time_parse("2023-11-14 22:13", &ms));
    assert_false(ts_time_parse("2023-13-01T00:00:00Z", &ms));
    assert_false(ts_time_parse("2023-11-14T22:13:20", &ms)); /* no zone */
    assert_false(ts_time_parse("yesterday", &ms));
    assert_false(ts_time_parse("", &ms));
    assert_true(ts_duration_parse("15s", &ms) && ms == 15000);
    assert_true(ts_duration_parse("500ms", &ms) && ms == 500);
    assert_true(ts_duration_parse("2m", &ms) && ms == 120000);
    assert_true(ts_duration_parse("30", &ms) && ms == 30000);
    /* the console asks for step=1d (it was a 400) */
    assert_true(ts_duration_parse("1d", &ms) && ms == 86400000);
    assert_true(ts_duration_parse("2w", &ms) && ms == 2 * 604800000LL);
    assert_false(ts_duration_parse("1y", &ms));
    assert_false(ts_duration_parse("1dd", &ms));
    assert_false(ts_duration_parse("-5s", &ms));
    assert_false(ts_duration_parse("5 days", &ms));
    assert_false(ts_duration_parse("nan", &ms)); /* was cast to int64_t: undefined */
    assert_false(ts_duration_parse("nans", &ms));
    assert_false(ts_duration_parse("inf", &ms));
    /* the clocks in milliseconds: Unix time, and a monotonic one */
    int64_t wall = ts_clock_ms(CLOCK_REALTIME), unix_s = (int64_t)time(NULL);
    assert_true(wall / 1000 >= unix_s - 1 && wall / 1000 <= unix_s + 1);
    int64_t a = ts_clock_ms(CLOCK_MONOTONIC), b = ts_clock_ms(CLOCK_MONOTONIC);
    assert_true(a > 0 && b >= a && b - a < 1000);
}

/* Untrusted text in an error (a file name, a label) reaches a terminal or a
 * log line escaped: no raw control byte survives formatting. */
static void test_error_format_escapes(void **state)
{
    (void)state;
    struct ts_error e = {0};
    ts_err_at(&e, TS_INVALID, "/tmp/\x1b[31mred.yaml", 2, 5, "a\tb", "bad\nforged line");
    char out[512];
    ts_error_format(&e, out, sizeof out);
    assert_string_equal(out, "/tmp/\\x1b[31mred.yaml:2:5: a\\x09b: bad\\x0aforged line");
    for (const char *p = out; *p; p++)
        assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
    char tiny[8];
    ts_error_format(&e, tiny, sizeof tiny);
    assert_string_equal(tiny, "/tmp/");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_format_escapes),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_sbuf_cap),
        cmocka_unit_test(test_error_format),
        cmocka_unit_test(test_diag_addf),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_file_write_mode),
        cmocka_unit_test(test_file_write_safe),
        cmocka_unit_test(test_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
