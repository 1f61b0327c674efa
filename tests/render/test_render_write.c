/*
 * test_render_write.c - render_write in a folder others can write to: links
 * planted at the staging names the old code guessed (DIR.tmp-<pid>,
 * DIR.old-<pid>) are neither followed nor emptied, and the tree lands.
 */
#include "helpers.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "render/render.h"
#include "util/file.h"
#include "util/limits.h"

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

static void expect_text(const char *path, const char *text)
{
    char *got = NULL;
    size_t len = 0;
    struct ts_error e;
    assert_int_equal(ts_file_read(path, 100, &got, &len, &e), TS_OK);
    assert_string_equal(got, text);
    free(got);
}

static void test_planted_links(void **state)
{
    (void)state;
    char base[] = "/tmp/tessera-test-XXXXXX", victim[64], out[64], p[128];
    assert_non_null(mkdtemp(base));
    snprintf(victim, sizeof(victim), "%s/victim", base);
    snprintf(out, sizeof(out), "%s/out", base);
    assert_int_equal(mkdir(victim, 0700), 0);
    snprintf(p, sizeof(p), "%s/precious", victim);
    struct ts_error e;
    assert_int_equal(ts_file_write(p, "keep", 4, &e), TS_OK);
    snprintf(p, sizeof(p), "%s.tmp-%ld", out, (long)getpid());
    assert_int_equal(symlink(victim, p), 0);
    snprintf(p, sizeof(p), "%s.old-%ld", out, (long)getpid());
    assert_int_equal(symlink(victim, p), 0);
    struct render_file f = {.path = "a.yaml"};
    ts_sbuf_init(&f.body, RENDER_FILE_MAX);
    ts_sbuf_puts(&f.body, "x: 1\n");
    struct render_tree t = {.files = &f, .nfiles = 1};
    for (int round = 0; round < 2; round++) { /* a new tree, then one replaced */
        assert_int_equal(render_write(&t, out, 0, &e), TS_OK);
        snprintf(p, sizeof(p), "%s/a.yaml", out);
        expect_text(p, "x: 1\n");
        snprintf(p, sizeof(p), "%s/precious", victim);
        expect_text(p, "keep");
        assert_int_equal(count_entries(victim), 1);
        assert_int_equal(count_entries(base), 4); /* victim, two links, out */
        assert_int_equal(count_entries(out), 2);  /* a.yaml and the manifest */
    }
    ts_sbuf_release(&f.body);
    snprintf(p, sizeof(p), "rm -r %s", base);
    assert_int_equal(system(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planted_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
