/*
 * test_stream.c - the fast decoder (src/admit/stream.c) gives the verdict
 * and the response bytes the full decoder gives, on every review of the
 * admission table (both policies) and every input of the fuzz corpus; it
 * takes the fast road on the table's well-formed reviews (else the
 * comparison would prove nothing); and its bounds: depth, entries, size,
 * each left-out object's keys, and bodies it must hand back to jansson.
 */
#include "helpers.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admit/admit.h"
#include "admit/internal.h"

#define SHIM "/usr/lib/tessera/libtessera-cuda.so"

struct tally {
    size_t n, fast, ok200, fast200;
};

/* Both decoders on one body under pol: identical verdict and response. */
static void same_verdict(const struct admit_policy *pol, const char *name, const char *body,
                         size_t len, struct tally *t)
{
    struct admit_verdict a, b;
    struct ts_sbuf oa, ob;
    ts_sbuf_init(&oa, 1 << 20);
    ts_sbuf_init(&ob, 1 << 20);
    ad_review(pol, body, len, &oa, &a, 0);
    ad_review(pol, body, len, &ob, &b, 1);
    if (memcmp(&a, &b, sizeof(a)) != 0 || strcmp(ts_sbuf_str(&oa), ts_sbuf_str(&ob)) != 0)
        fail_msg("%s: fast decoder: %d %s\n  full decoder: %d %s", name, a.http_status,
                 ts_sbuf_str(&oa), b.http_status, ts_sbuf_str(&ob));
    json_t *root = NULL;
    int fast = ad_stream_load(body, len, &root) == 0;
    json_decref(root);
    t->n++;
    t->fast += fast;
    t->ok200 += b.http_status == 200;
    t->fast200 += fast && b.http_status == 200;
    ts_sbuf_release(&oa);
    ts_sbuf_release(&ob);
}

static void each_file(const char *rel, const char *suffix, const struct admit_policy *pol,
                      struct tally *t)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", th_src_path(rel));
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name), s = strlen(suffix);
        if (de->d_name[0] == '.' || n < s || strcmp(de->d_name + n - s, suffix) != 0)
            continue;
        char path[1400];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        size_t len;
        char *body = th_read(path, &len);
        assert_non_null(body);
        same_verdict(pol, path, body, len, t);
        free(body);
    }
    closedir(d);
}

static void table_same(void **state)
{
    (void)state;
    struct admit_policy *four = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct admit_policy *sharing = th_admit_policy("tests/fixtures/admission/sharing/spec.yaml",
                                                   SHIM);
    struct tally t = {0};
    each_file("tests/fixtures/admission", ".json", four, &t);
    each_file("tests/fixtures/admission/sharing", ".json", sharing, &t);
    print_message("table: %zu reviews, %zu well formed, %zu of those on the fast road\n", t.n,
                  t.ok200, t.fast200);
    assert_true(t.n >= 190);
    /* every well-formed review of the table takes the fast road */
    assert_int_equal(t.fast200, t.ok200);
    admit_policy_free(four);
    admit_policy_free(sharing);
}

static void corpus_same(void **state)
{
    (void)state;
    struct admit_policy *four = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct admit_policy *sharing = th_admit_policy("tests/fixtures/admission/sharing/spec.yaml",
                                                   SHIM);
    struct tally t = {0}, u = {0};
    each_file("fuzz/corpus/admit", "", four, &t);
    each_file("fuzz/corpus/admit", "", sharing, &u);
    print_message("corpus: %zu inputs, %zu on the fast road\n", t.n, t.fast);
    assert_true(t.n >= 100);
    assert_true(t.fast > 0);
    admit_policy_free(four);
    admit_policy_free(sharing);
}

/* What the fast decoder keeps and leaves out, and what it hands back. */
static int fast(const char *body)
{
    json_t *root = NULL;
    int r = ad_stream_load(body, strlen(body), &root);
    json_decref(root);
    return r == 0;
}

static void hands_back(void **state)
{
    (void)state;
    assert_true(fast("{\"a\": [1, -2.5e10, true, false, null, \"\\u00e9\\ud83d\\ude00\"]}"));
    assert_true(fast("{\"a\": [9223372036854775807, -9223372036854775808]}"));
    assert_true(fast(" {\"request\": {\"userInfo\": {\"x\": {\"y\": [1, {}]}}}}\n"));
    assert_true(fast("{\"x\": {\"k:{\\\"a\\\"}\": 1, \"k:{\\\"b\\\"}\": 1}}"));
    static const char *const back[] = {
        "", "[]", "{", "{} x", "{\"a\":1,}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":1e400}",
        "{\"a\":12345678901234567890}", "{\"a\":9223372036854775808}",
        "{\"a\":-9223372036854775809}", "{\"a\":\"\\u0000\"}", "{\"a\":\"\\ud800\"}",
        "{\"a\":\"\\udc00x\"}", "{\"a\":\"\x01\"}", "{\"a\":\"\xc0\x80\"}",
        "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\\x\"}", "{\"a\":tru}", "{\"a\":1,\"a\":2}",
        /* duplicates in what is left out, and an escaped key there */
        "{\"request\":{\"userInfo\":{\"u\":1,\"u\":2}}}", "{\"x\":1,\"x\":2}",
        "{\"request\":{\"userInfo\":{\"\\u0075\":1}}}", "{\"x\":{\"\\/\":1}}",
        "{\"x\":{\"k:\\\"a\\\"\":1,\"k:\\\"a\\\"\":2}}",
        "{\"request\":{\"oldObject\":{},\"oldObject\":{}}}"};
    for (size_t i = 0; i < sizeof(back) / sizeof(back[0]); i++)
        if (fast(back[i]))
            fail_msg("fast decoder took %s", back[i]);
}

/* A body nested n deep: {"a":{"a":...1...}}. */
static char *nested(int n)
{
    size_t len = (size_t)n * 6 + 2;
    char *b = malloc(len + 1), *p = b;
    assert_non_null(b);
    for (int i = 0; i < n; i++)
        p += sprintf(p, "{\"a\":");
    *p++ = '1';
    for (int i = 0; i < n; i++)
        *p++ = '}';
    *p = '\0';
    return b;
}

static void bounds(void **state)
{
    (void)state;
    char *ok = nested(ADMIT_DEPTH_MAX), *deep = nested(ADMIT_DEPTH_MAX + 1);
    assert_true(fast(ok));
    assert_false(fast(deep)); /* jansson is not reached: ad_load refuses it first */
    free(ok);
    free(deep);
    /* entries: AD_ENTRIES_MAX commas in a left-out array */
    size_t n = AD_ENTRIES_MAX + 64;
    char *many = malloc(n * 2 + 64), *p = many;
    assert_non_null(many);
    p += sprintf(p, "{\"x\":[");
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s0", i ? "," : "");
    sprintf(p, "]}");
    assert_false(fast(many));
    free(many);
    /* keys of a left-out object: 64 are read, 65 hand back */
    char keys[4096];
    p = keys + sprintf(keys, "{\"x\":{");
    for (int i = 0; i < 65; i++)
        p += sprintf(p, "%s\"k%d\":0", i ? "," : "", i);
    sprintf(p, "}}");
    assert_false(fast(keys));
    strcpy(strstr(keys, ",\"k64\":0"), "}}");
    assert_true(fast(keys));
    /* size: past ADMIT_BODY_MAX (the length is what counts) */
    json_t *root = NULL;
    assert_int_equal(ad_stream_load("{}", (size_t)ADMIT_BODY_MAX + 1, &root), -1);
    assert_null(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_same),
        cmocka_unit_test(corpus_same),
        cmocka_unit_test(hands_back),
        cmocka_unit_test(bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
