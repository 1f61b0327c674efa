/*
 * test_agent.c - the agent's pure parts: the NodeInventory reader (good,
 * round trip through the writer, hostile input with JSON paths), the plan
 * JSON reader, and the per-card difference (keep, change, profile names
 * that differ only in memory, MIG mode, wrong model, missing profile).
 * NVML itself is exercised through the stand-in by tests/cli/agent.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "helpers.h"

static const char INV[] =
    "{\"apiVersion\": \"tessera.dev/v1alpha1\", \"kind\": \"NodeInventory\", \"node\": \"n1\",\n"
    " \"gpus\": [{\"index\": 0, \"uuid\": \"GPU-a\", \"name\": \"NVIDIA H100 80GB HBM3\",\n"
    "  \"pciBusId\": \"00000000:1B:00.0\", \"memoryMiB\": 81559, \"computeMode\": \"default\",\n"
    "  \"migMode\": {\"current\": \"enabled\", \"pending\": \"enabled\"},\n"
    "  \"profiles\": [\n"
    "   {\"id\": 19, \"name\": \"1g.10gb\", \"computeSlices\": 1, \"memoryMiB\": 9984, \"sms\": "
    "16,\n"
    "    \"maxCount\": 7, \"placements\": [{\"start\": 0, \"size\": 1}, {\"start\": 6, \"size\": "
    "1}]},\n"
    "   {\"id\": 0, \"name\": \"7g.79gb\", \"computeSlices\": 7, \"memoryMiB\": 81152, \"sms\": "
    "132,\n"
    "    \"maxCount\": 1, \"placements\": [{\"start\": 0, \"size\": 8}]}],\n"
    "  \"gpuInstances\": [{\"id\": 3, \"profileId\": 19, \"profile\": \"1g.10gb\",\n"
    "   \"computeSlices\": 1, \"placement\": {\"start\": 6, \"size\": 1},\n"
    "   \"computeInstances\": [{\"id\": 0, \"profileId\": 0, \"profile\": \"1g.10gb\",\n"
    "    \"computeSlices\": 1, \"placement\": {\"start\": 0, \"size\": 1}, \"uuid\": "
    "\"MIG-x\"}]}]}]}\n";

static struct inv_node *parse_ok(const char *text)
{
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct ts_error e = {0};
    assert_int_equal(inv_parse(text, strlen(text), "inv.json", inv, &e), TS_OK);
    return inv;
}

static void test_inventory_parse(void **state)
{
    (void)state;
    struct inv_node *inv = parse_ok(INV);
    assert_string_equal(inv->node, "n1");
    assert_int_equal(inv->ngpu, 1);
    const struct inv_gpu *g = inv_gpu_at(inv, 0);
    assert_non_null(g);
    assert_null(inv_gpu_at(inv, 1));
    assert_int_equal(g->memory_mib, 81559);
    assert_int_equal(g->mig_current, 1);
    assert_int_equal(g->nprof, 2);
    assert_int_equal(g->prof[0].npl, 2);
    assert_int_equal(g->prof[0].pl[1].start, 6);
    assert_int_equal(g->gi[0].ci[0].pl.size, 1);
    assert_string_equal(g->gi[0].ci[0].uuid, "MIG-x");
    /* 7g.80gb (the catalog's name) finds the card's 7g.79gb; sizes must agree */
    assert_int_equal(inv_profile_for(g, "7g.80gb", 8)->id, 0);
    assert_null(inv_profile_for(g, "7g.80gb", 4));
    assert_null(inv_profile_for(g, "3g.40gb", 4));
    free(inv);
}

static void test_inventory_round_trip(void **state)
{
    (void)state;
    struct inv_node *inv = parse_ok(INV);
    struct ts_sbuf a, b;
    ts_sbuf_init(&a, 1 << 20);
    ts_sbuf_init(&b, 1 << 20);
    assert_int_equal(inv_json(inv, &a), TS_OK);
    struct inv_node *again = parse_ok(ts_sbuf_str(&a));
    assert_int_equal(inv_json(again, &b), TS_OK);
    assert_string_equal(ts_sbuf_str(&a), ts_sbuf_str(&b));
    assert_memory_equal(inv, again, sizeof *inv);
    ts_sbuf_release(&a);
    ts_sbuf_release(&b);
    free(inv);
    free(again);
}

/* in with its first `from` replaced by `to` (which must be there). */
static void subst(char *out, size_t size, const char *in, const char *from, const char *to)
{
    const char *at = strstr(in, from);
    assert_non_null(at);
    snprintf(out, size, "%.*s%s%s", (int)(at - in), in, to, at + strlen(from));
}

/* INV with `from` replaced by `to` must fail at path with msg. */
static void expect_bad(const char *from, const char *to, const char *path, const char *msg)
{
    char text[sizeof INV + 256];
    subst(text, sizeof text, INV, from, to);
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct ts_error e = {0};
    assert_int_not_equal(inv_parse(text, strlen(text), "inv.json", inv, &e), TS_OK);
    if (strcmp(path, e.path) != 0 || !strstr(e.msg, msg))
        fail_msg("want %s: %s, got %s: %s", path, msg, e.path, e.msg);
    free(inv);
}

static void test_inventory_hostile(void **state)
{
    (void)state;
    expect_bad("{\"start\": 6, \"size\": 1},\n", "{\"start\": 31, \"size\": 2},\n",
               "gpus[0].gpuInstances[0].placement", "past 32");
    expect_bad("\"start\": 6, \"size\": 1}]", "\"start\": -1, \"size\": 1}]",
               "gpus[0].profiles[0].placements[1].start", "from 0 to 31");
    expect_bad("\"kind\": \"NodeInventory\"", "\"kind\": \"Plan\"", "kind", "NodeInventory");
    expect_bad("\"current\": \"enabled\"", "\"current\": \"maybe\"", "gpus[0].migMode.current",
               "enabled, disabled");
    expect_bad("\"uuid\": \"MIG-x\"", "\"uuid\": 7",
               "gpus[0].gpuInstances[0].computeInstances[0].uuid", "expected a string");
    expect_bad("\"memoryMiB\": 81559", "\"memoryMiB\": 1.5", "gpus[0].memoryMiB", "integer");
    expect_bad("\"gpus\": [", "\"gpus\": 3, \"x\": [", "gpus", "expected an array");
    expect_bad("\"node\": \"n1\"", "\"node\": \"n1\", \"node\": \"n2\"", "", "duplicate");
    /* a NUL inside a string, and more GPUs than the limit */
    char nul[] = "{\"apiVersion\": \"tessera.dev/v1alpha1\", \"kind\": \"NodeInventory\", "
                 "\"node\": \"a\\u0000b\", \"gpus\": []}";
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct ts_error e = {0};
    assert_int_equal(inv_parse(nul, strlen(nul), "x", inv, &e), TS_SYNTAX);
    assert_int_equal(e.line, 1);
    char many[8192] = "{\"apiVersion\": \"tessera.dev/v1alpha1\", \"kind\": \"NodeInventory\", "
                      "\"node\": \"a\", \"gpus\": [";
    for (int i = 0; i <= INV_GPUS_MAX; i++)
        strcat(many, i ? ",{}" : "{}");
    strcat(many, "]}");
    assert_int_equal(inv_parse(many, strlen(many), "x", inv, &e), TS_TOO_LARGE);
    assert_string_equal(e.path, "gpus");
    free(inv);
}

static const char PLAN[] =
    "{\"kind\": \"Plan\", \"gpus\": [{\"node\": \"n1\", \"index\": 0, \"model\": "
    "\"h100-80gb-sxm\", \"mode\": \"mig\", \"instances\": [{\"profile\": \"1g.10gb\", "
    "\"start\": 6, \"size\": 1, \"tenant\": \"t\", \"workload\": \"w\"}]}]}";

static void diff_of(const char *plan_text, const char *inventory_text,
                    const struct cat_catalog *cat, struct reconf_diff *d)
{
    struct reconf_plan p;
    struct ts_error e = {0};
    assert_int_equal(reconf_plan_parse(plan_text, strlen(plan_text), "p", &p, &e), TS_OK);
    struct inv_node *inv = parse_ok(inventory_text);
    reconf_diff_card(inv_gpu_at(inv, p.t[0].index), &p.t[0], cat, d);
    reconf_plan_release(&p);
    free(inv);
}

static void test_diff(void **state)
{
    (void)state;
    struct cat_catalog *cat = NULL;
    struct ts_diag diag = {0};
    assert_int_equal(cat_load(NULL, 0, &cat, &diag), TS_OK);
    struct reconf_diff d;
    diff_of(PLAN, INV, cat, &d);
    assert_int_equal(d.verdict, RECONF_KEEP);
    assert_int_equal(d.nstep, 0);

    char plan[sizeof PLAN + 64], tmp[sizeof PLAN + 64];
    subst(tmp, sizeof tmp, PLAN, "1g.10gb", "7g.80gb");
    subst(plan, sizeof plan, tmp, "\"start\": 6, \"size\": 1", "\"start\": 0, \"size\": 8");
    diff_of(plan, INV, cat, &d);
    assert_int_equal(d.verdict, RECONF_CHANGE);
    assert_int_equal(d.ndestroy, 1);
    assert_int_equal(d.ncreate, 1);
    assert_int_equal(d.step[0].kind, RECONF_DESTROY);
    assert_int_equal(d.step[0].gi_id, 3);
    assert_int_equal(d.step[1].kind, RECONF_CREATE);
    assert_int_equal(d.step[1].profile_id, 0);

    subst(tmp, sizeof tmp, plan, "7g.80gb", "5g.80gb");
    diff_of(tmp, INV, cat, &d);
    assert_int_equal(d.verdict, RECONF_NO_PROFILE);

    subst(plan, sizeof plan, PLAN, "h100-80gb-sxm", "a100-40gb");
    diff_of(plan, INV, cat, &d);
    assert_int_equal(d.verdict, RECONF_WRONG_MODEL);
    assert_non_null(strstr(d.why, "'NVIDIA H100 80GB HBM3'"));

    char inv_off[sizeof INV + 8];
    subst(inv_off, sizeof inv_off, INV, "\"current\": \"enabled\"", "\"current\": \"disabled\"");
    diff_of(PLAN, inv_off, cat, &d);
    assert_int_equal(d.verdict, RECONF_MIG_OFF);
    cat_free(cat);
}

static void test_plan_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *path;
    } cases[] = {
        {"{\"kind\": \"Plan\", \"gpus\": [{\"node\": \"n\", \"index\": 0, \"model\": \"m\", "
         "\"mode\": \"mig\", \"instances\": [{\"profile\": null, \"start\": 0, \"size\": 1}]}]}",
         "gpus[0].instances[0].profile"},
        {"{\"kind\": \"Plan\", \"gpus\": [{\"node\": \"n\", \"index\": -3}]}", "gpus[0].index"},
        {"{\"kind\": \"Fleet\", \"gpus\": []}", "kind"},
        {"[]", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct reconf_plan p;
        struct ts_error e = {0};
        assert_int_not_equal(reconf_plan_parse(cases[i].text, strlen(cases[i].text), "p", &p, &e),
                             TS_OK);
        assert_string_equal(e.path, cases[i].path);
    }
    struct reconf_plan p;
    struct ts_error e = {0};
    assert_int_equal(reconf_plan_parse("{\"kind\":", 8, "p.json", &p, &e), TS_SYNTAX);
    assert_int_equal(e.line, 1);
    assert_string_equal(e.file, "p.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inventory_parse),   cmocka_unit_test(test_inventory_round_trip),
        cmocka_unit_test(test_inventory_hostile), cmocka_unit_test(test_diff),
        cmocka_unit_test(test_plan_parse_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
