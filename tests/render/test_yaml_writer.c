/*
 * test_yaml_writer.c - the YAML writer: sorted keys, quoting exactly where a
 * YAML 1.1 reader would change a string's type, and a round trip through
 * tessera's own YAML reader that gives back the same values and types.
 */
#include "helpers.h"

#include <string.h>
#include "render/yaml.h"
#include "spec/yaml.h"

static void test_quoting(void **state)
{
    (void)state;
    static const char *quoted[] = {"",      "true",  "False", "yes", "No", "on",    "OFF",
                                   "y",     "null",  "~",     "10",  "-3", "1_000", "0x1F",
                                   "0b101", "0o17",  "1:30",  "1.5", ".5", "1e3",   "1.5E-3",
                                   ".inf",  "-.Inf", ".NaN",  NULL};
    static const char *plain[] = {
        "1g.10gb", "3g.40gb", "nvidia.com/gpu", "h100-80gb-sxm", "Default", "e3",
        "1e",      "1.2.3a",  "client-a",       "10Gi",          "x10",     NULL};
    for (int i = 0; quoted[i]; i++)
        if (!render_yaml_needs_quotes(quoted[i]))
            fail_msg("'%s' should be quoted", quoted[i]);
    for (int i = 0; plain[i]; i++)
        if (render_yaml_needs_quotes(plain[i]))
            fail_msg("'%s' should stay plain", plain[i]);
}

static void test_round_trip(void **state)
{
    (void)state;
    json_t *v = json_pack("{s:s, s:s, s:i, s:b, s:[s,s,i], s:{s:s, s:s}, s:{}, s:[], s:s}", "zeta",
                          "on", "alpha", "10", "count", 3, "flag", 1, "list", "yes", "1g.10gb", 7,
                          "nested", "b", "two: colons", "a", "#hash", "emptyMap", "emptyList",
                          "quote", "it's \"quoted\"\nand multi-line");
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1u << 16);
    assert_int_equal(render_yaml_doc(v, 1, &out), TS_OK);
    const char *text = ts_sbuf_str(&out);
    /* keys sorted */
    assert_true(strstr(text, "alpha:") < strstr(text, "count:"));
    assert_true(strstr(text, "nested:") < strstr(text, "zeta:"));
    struct ts_arena a;
    ts_arena_init(&a);
    struct spec_doc *docs;
    size_t n;
    struct ts_error e;
    assert_int_equal(spec_yaml_parse(text, strlen(text), "rt.yaml", &a, &docs, &n, &e), TS_OK);
    assert_int_equal(n, 1);
    const struct spec_node *root = docs[0].root;
    assert_string_equal(spec_node_get(root, "zeta")->value, "on");
    assert_false(spec_node_get(root, "zeta")->plain);
    assert_string_equal(spec_node_get(root, "alpha")->value, "10");
    assert_false(spec_node_get(root, "alpha")->plain);
    assert_true(spec_node_get(root, "count")->plain);
    assert_string_equal(spec_node_get(root, "flag")->value, "true");
    const struct spec_node *list = spec_node_get(root, "list");
    assert_int_equal(list->count, 3);
    assert_string_equal(list->items[0]->value, "yes");
    assert_false(list->items[0]->plain);
    assert_string_equal(list->items[1]->value, "1g.10gb");
    assert_true(list->items[1]->plain);
    assert_string_equal(list->items[2]->value, "7");
    assert_true(list->items[2]->plain);
    const struct spec_node *nested = spec_node_get(root, "nested");
    assert_string_equal(spec_node_get(nested, "a")->value, "#hash");
    assert_string_equal(spec_node_get(nested, "b")->value, "two: colons");
    assert_string_equal(spec_node_get(root, "quote")->value, "it's \"quoted\"\nand multi-line");
    assert_int_equal(spec_node_get(root, "emptyMap")->type, SPEC_NODE_MAP);
    assert_int_equal(spec_node_get(root, "emptyList")->count, 0);
    ts_arena_free(&a);
    /* a second document starts with --- */
    ts_sbuf_release(&out);
    ts_sbuf_init(&out, 1u << 16);
    assert_int_equal(render_yaml_doc(v, 0, &out), TS_OK);
    assert_int_equal(strncmp(ts_sbuf_str(&out), "---\n", 4), 0);
    ts_sbuf_release(&out);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quoting),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
