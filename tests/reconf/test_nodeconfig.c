/*
 * test_nodeconfig.c - reconf_plan_parse on a NodeConfig (render's
 * nodes/NODE/agent.json): every card takes the document's node, the
 * instances are read as a plan's, a plan keeps node NULL, and a NodeConfig
 * without its node, of another kind, or with a card out of range is
 * refused with the file and JSON path.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include "reconf/reconf.h"

#define NODE_CONFIG                                                                           \
    "{\"apiVersion\": \"tessera.dev/v1alpha1\", \"kind\": \"NodeConfig\", \"node\": \"n1\", " \
    "\"gpus\": [{\"index\": 0, \"model\": \"h100-80gb-sxm\", \"mode\": \"mig\", "             \
    "\"instances\": [{\"profile\": \"3g.40gb\", \"start\": 4, \"size\": 4, "                  \
    "\"tenant\": \"alpha\", \"workload\": \"chat\"}]}, "                                      \
    "{\"index\": 1, \"model\": \"h100-80gb-sxm\", \"mode\": \"free\", \"instances\": []}]}"

static ts_status parse(const char *text, struct reconf_plan *p, struct ts_error *e)
{
    return reconf_plan_parse(text, strlen(text), "agent.json", p, e);
}

static void test_node_config_read(void **state)
{
    (void)state;
    struct reconf_plan p;
    struct ts_error e = {0};
    assert_int_equal(parse(NODE_CONFIG, &p, &e), TS_OK);
    assert_string_equal(p.node, "n1");
    assert_int_equal(p.n, 2);
    assert_string_equal(p.t[0].node, "n1");
    assert_string_equal(p.t[1].node, "n1");
    assert_int_equal(p.t[0].mig, 1);
    assert_int_equal(p.t[0].nwant, 1);
    assert_string_equal(p.t[0].want[0].profile, "3g.40gb");
    assert_int_equal(p.t[0].want[0].start, 4);
    assert_string_equal(p.t[0].want[0].tenant, "alpha");
    assert_int_equal(p.t[1].index, 1);
    assert_int_equal(p.t[1].mig, 0);
    assert_ptr_equal(reconf_plan_card(&p, "n1", 1), &p.t[1]);
    reconf_plan_release(&p);
}

static void test_plan_has_no_node(void **state)
{
    (void)state;
    struct reconf_plan p;
    struct ts_error e = {0};
    const char *plan = "{\"kind\": \"Plan\", \"gpus\": [{\"node\": \"n2\", \"index\": 0, "
                       "\"model\": \"m\", \"mode\": \"free\", \"instances\": []}]}";
    assert_int_equal(parse(plan, &p, &e), TS_OK);
    assert_null(p.node);
    assert_string_equal(p.t[0].node, "n2");
    reconf_plan_release(&p);
}

/* NODE_CONFIG with from replaced by to: refused at path. */
static void refused(const char *from, const char *to, const char *path)
{
    char text[2048];
    const char *at = strstr(NODE_CONFIG, from);
    assert_non_null(at);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - NODE_CONFIG), NODE_CONFIG, to,
             at + strlen(from));
    struct reconf_plan p;
    struct ts_error e = {0};
    assert_int_not_equal(parse(text, &p, &e), TS_OK);
    assert_string_equal(e.file, "agent.json");
    assert_string_equal(e.path, path);
}

static void test_bad_node_configs(void **state)
{
    (void)state;
    refused("\"node\": \"n1\", ", "", "node");
    refused("\"node\": \"n1\"", "\"node\": 7", "node");
    refused("NodeConfig", "NodeConfigs", "kind");
    refused("\"index\": 1", "\"index\": -1", "gpus[1].index");
    refused("\"start\": 4", "\"start\": 99", "gpus[0].instances[0].start");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_config_read),
        cmocka_unit_test(test_plan_has_no_node),
        cmocka_unit_test(test_bad_node_configs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
