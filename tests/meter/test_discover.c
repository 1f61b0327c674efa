/*
 * test_discover.c - a Service's EndpointSlices into scrape targets: ready
 * endpoints only (absent readiness counts as ready), each once, sorted, on
 * the named or numbered port (or the only one), IPv6 in brackets, FQDN slices
 * left out; hostile addresses and malformed lists refused with where; the
 * --discover value checked as NS/SERVICE[:PORT].
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/discover.h"

#define LIST(items)                                                                                \
    "{\"kind\":\"EndpointSliceList\",\"apiVersion\":\"discovery.k8s.io/v1\",\"items\":[" items "]" \
    "}"
#define PORTS "\"ports\":[{\"name\":\"gpu-metrics\",\"port\":9400,\"protocol\":\"TCP\"}]"

static ts_status parse(const char *json, const char *port, struct meter_target **v, size_t *n,
                       struct ts_error *e)
{
    memset(e, 0, sizeof(*e));
    return meter_discover_parse(json, strlen(json), port, v, n, e);
}

static void test_ready_sorted_once(void **state)
{
    (void)state;
    const char *json = LIST(
        "{\"addressType\":\"IPv4\"," PORTS ",\"endpoints\":["
        "{\"addresses\":[\"10.0.2.7\"],\"conditions\":{\"ready\":true},\"nodeName\":\"gpu-b\"},"
        "{\"addresses\":[\"10.0.1.5\"],\"nodeName\":\"gpu-a\"},"
        "{\"addresses\":[\"10.0.3.9\"],\"conditions\":{\"ready\":false},\"nodeName\":\"gpu-c\"}]},"
        "{\"addressType\":\"IPv4\"," PORTS ",\"endpoints\":["
        "{\"addresses\":[\"10.0.1.5\"],\"nodeName\":\"gpu-a\"}]},"
        "{\"addressType\":\"IPv6\"," PORTS ",\"endpoints\":["
        "{\"addresses\":[\"fd00::4\"],\"nodeName\":\"gpu-d\"}]},"
        "{\"addressType\":\"FQDN\"," PORTS ",\"endpoints\":[{\"addresses\":[\"x.example\"]}]}");
    struct meter_target *v;
    size_t n;
    struct ts_error e;
    assert_int_equal(parse(json, "gpu-metrics", &v, &n, &e), TS_OK);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].url, "http://10.0.1.5:9400/metrics");
    assert_string_equal(v[0].node, "gpu-a");
    assert_string_equal(v[1].url, "http://10.0.2.7:9400/metrics");
    assert_string_equal(v[2].url, "http://[fd00::4]:9400/metrics");
    assert_string_equal(v[2].node, "gpu-d");
    free(v);
    /* by number, and the only port when none is named */
    assert_int_equal(parse(json, "9400", &v, &n, &e), TS_OK);
    assert_int_equal(n, 3);
    free(v);
    assert_int_equal(parse(json, NULL, &v, &n, &e), TS_OK);
    assert_int_equal(n, 3);
    free(v);
    /* a port the slices do not have: no target (and no error: the Service is there) */
    assert_int_equal(parse(json, "9401", &v, &n, &e), TS_OK);
    assert_int_equal(n, 0);
    free(v);
}

static void test_empty(void **state)
{
    (void)state;
    struct meter_target *v;
    size_t n;
    struct ts_error e;
    assert_int_equal(parse(LIST(""), NULL, &v, &n, &e), TS_OK);
    assert_int_equal(n, 0);
    free(v);
}

static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *json, *where;
    } bad[] = {
        {"{", "line 1"},
        {"[]", "not an EndpointSliceList"},
        {"{\"kind\":\"PodList\",\"items\":[]}", "not an EndpointSliceList"},
        {"{\"kind\":\"EndpointSliceList\",\"items\":{}}", "not an EndpointSliceList"},
        /* an address that would steer the URL elsewhere */
        {LIST("{\"addressType\":\"IPv4\"," PORTS
              ",\"endpoints\":[{\"addresses\":[\"evil.example/x?\"]}]}"),
         "items[0].endpoints[0].addresses[0]: 'evil.example/x?' is not an IPv4 address"},
        {LIST("{\"addressType\":\"IPv4\"," PORTS
              ",\"endpoints\":[{\"addresses\":[\"user@10.0.0.1\"]}]}"),
         "is not an IPv4 address"},
        {LIST("{\"addressType\":\"IPv4\"," PORTS ",\"endpoints\":[{\"addresses\":[\"fd00::1\"]}]}"),
         "is not an IPv4 address"},
        {LIST("{\"addressType\":\"IPv6\"," PORTS
              ",\"endpoints\":[{\"addresses\":[\"10.0.0.1\"]}]}"),
         "is not an IPv6 address"},
        {LIST("{\"addressType\":\"IPv4\"," PORTS ",\"endpoints\":[{\"addresses\":[]}]}"),
         "items[0].endpoints[0].addresses[0]: missing"},
        {"{\"kind\":\"EndpointSliceList\",\"items\":[],\"items\":[]}", "duplicate"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct meter_target *v = (void *)1;
        size_t n = 1;
        struct ts_error e;
        assert_int_equal(parse(bad[i].json, NULL, &v, &n, &e), TS_INVALID);
        assert_null(v);
        assert_int_equal(n, 0);
        if (!strstr(e.msg, bad[i].where))
            fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, bad[i].where);
    }
}

static void test_too_many(void **state)
{
    (void)state;
    size_t cap = (METER_DISCOVER_TARGETS_MAX + 1) * 40 + 256;
    char *json = malloc(cap);
    size_t n = (size_t)snprintf(
        json, cap, "%s",
        "{\"kind\":\"EndpointSliceList\",\"items\":[{\"addressType\":\"IPv4\"," PORTS
        ",\"endpoints\":[");
    for (int i = 0; i <= METER_DISCOVER_TARGETS_MAX; i++)
        n += (size_t)snprintf(json + n, cap - n, "%s{\"addresses\":[\"10.%d.%d.1\"]}", i ? "," : "",
                              i / 256, i % 256);
    snprintf(json + n, cap - n, "]}]}");
    struct meter_target *v;
    size_t k;
    struct ts_error e;
    assert_int_equal(parse(json, NULL, &v, &k, &e), TS_INVALID);
    assert_non_null(strstr(e.msg, "more than"));
    free(json);
}

static void test_spec(void **state)
{
    (void)state;
    char buf[256];
    struct meter_discover_opts o = {0};
    struct ts_error e = {0};
    assert_int_equal(meter_discover_spec("gpu-operator/nvidia-dcgm-exporter:gpu-metrics", buf,
                                         sizeof(buf), &o, &e),
                     TS_OK);
    assert_string_equal(o.namespace_, "gpu-operator");
    assert_string_equal(o.service, "nvidia-dcgm-exporter");
    assert_string_equal(o.port, "gpu-metrics");
    assert_int_equal(meter_discover_spec("ns/svc", buf, sizeof(buf), &o, &e), TS_OK);
    assert_null(o.port);
    static const char *const bad[] = {"svc",         "/svc",   "ns/",        "NS/svc",
                                      "ns/svc:",     "ns/s_c", "ns/svc?x=1", "ns/../svc",
                                      "ns/svc:90/x", "ns/-svc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (meter_discover_spec(bad[i], buf, sizeof(buf), &o, &e) != TS_USAGE)
            fail_msg("'%s' accepted", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_sorted_once),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_too_many),
        cmocka_unit_test(test_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
