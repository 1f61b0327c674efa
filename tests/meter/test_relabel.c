/*
 * test_relabel.c - stored dcgm-exporter bodies re-served with a tenant label
 * (meter/relabel.h), on a real scrape (tests/fixtures/dcgm, origin in
 * SOURCES.md) and on hostile bodies. The output is read back with the
 * exposition parser, so every check is on what Prometheus would read:
 * tenants from the attribution (pod namespace, "unattributed", the plan),
 * escaping and invalid UTF-8, an existing tenant label, HELP and TYPE once
 * per family across bodies, NaN and infinities, timestamps, the
 * `<<<NULL>>>` profile of a whole GPU, malformed lines, reserved names, and
 * the output cap.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/relabel.h"
#include "util/file.h"

static const char *spec =
    "apiVersion: tessera.dev/v1alpha1\n"
    "kind: Fleet\n"
    "metadata: {name: f}\n"
    "spec:\n"
    "  nodes: [{name: gsrh100-074, gpus: [{model: h100-80gb-sxm, count: 1}]}]\n"
    "---\n"
    "apiVersion: tessera.dev/v1alpha1\n"
    "kind: Tenant\n"
    "metadata: {name: lab}\n"
    "spec:\n"
    "  contract: shared-trusted\n"
    "  namespaces: [model-playground-stg]\n";

#define SAMPLES_MAX 256

/* What the relabelled text reads back as. */
struct readback {
    long n, errors;
    char line[SAMPLES_MAX][1024]; /* metric{name=value,...} value [ts] */
};

static int on_sample(void *arg, const struct meter_sample *x)
{
    struct readback *b = arg;
    if (b->n == SAMPLES_MAX)
        return 1;
    char *o = b->line[b->n++];
    size_t cap = sizeof(b->line[0]), len = 0;
    len += (size_t)snprintf(o + len, cap - len, "%s{", x->metric);
    for (size_t i = 0; i < x->nlabels && len < cap; i++)
        len += (size_t)snprintf(o + len, cap - len, "%s%s=%s", i ? "," : "", x->labels[i].name,
                                x->labels[i].value);
    if (len < cap)
        len += (size_t)snprintf(o + len, cap - len, "} %.17g", x->value);
    if (x->has_timestamp && len < cap)
        snprintf(o + len, cap - len, " %lld", (long long)x->timestamp_ms);
    return 0;
}

static void on_error(void *arg, long line, int column, const char *msg)
{
    struct readback *b = arg;
    b->errors++;
    print_error("relabelled output line %ld:%d: %s\n", line, column, msg);
}

static void read_back(const char *text, struct readback *b)
{
    memset(b, 0, sizeof(*b));
    struct meter_expo *p = meter_expo_new(on_sample, on_error, b);
    assert_non_null(p);
    assert_int_equal(meter_expo_feed(p, text, strlen(text)), TS_OK);
    assert_int_equal(meter_expo_finish(p), TS_OK);
    meter_expo_free(p);
}

static int has_line(const struct readback *b, const char *want)
{
    for (long i = 0; i < b->n; i++)
        if (strcmp(b->line[i], want) == 0)
            return 1;
    print_error("no sample reads back as\n  %s\namong %ld:\n", want, b->n);
    for (long i = 0; i < b->n && i < 12; i++)
        print_error("  %s\n", b->line[i]);
    return 0;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

struct env {
    struct th_job job;
    struct meter_ctx ctx;
    struct meter_relabel *r;
    struct ts_sbuf out;
    struct readback back;
    struct meter_relabel_counts counts;
};

static struct env *start(int with_plan, size_t max)
{
    struct env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    th_run_text(&e->job, spec, PLAN_SOLVER_HEURISTIC);
    assert_non_null(e->job.plan);
    e->ctx = (struct meter_ctx){
        .model = e->job.model, .cat = e->job.cat, .plan = with_plan ? e->job.plan : NULL};
    e->r = meter_relabel_new(&e->ctx, max);
    assert_non_null(e->r);
    ts_sbuf_init(&e->out, 1u << 24);
    return e;
}

static void add(struct env *e, const char *body)
{
    assert_int_equal(meter_relabel_add(e->r, body, strlen(body)), TS_OK);
}

/* Write everything out and read it back. */
static const char *finish(struct env *e)
{
    assert_int_equal(meter_relabel_write(e->r, &e->out), TS_OK);
    meter_relabel_counts(e->r, &e->counts);
    read_back(ts_sbuf_str(&e->out), &e->back);
    assert_int_equal(e->back.errors, 0);
    return ts_sbuf_str(&e->out);
}

static void done(struct env *e)
{
    meter_relabel_free(e->r);
    ts_sbuf_release(&e->out);
    th_free(&e->job);
    free(e);
}

/* The real H100 scrape: two instances with pods of lab's namespace, one idle
 * instance with no pod labels; every sample kept, HELP and TYPE kept. */
static void test_fixture_tenants(void **state)
{
    (void)state;
    struct env *e = start(0, 1u << 20);
    char *text;
    size_t len;
    struct ts_error err;
    assert_int_equal(ts_file_read(th_src_path("tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-"
                                              "h100-80gb-hbm3-mig-1g10gb-pods.prom"),
                                  1u << 20, &text, &len, &err),
                     TS_OK);
    assert_int_equal(meter_relabel_add(e->r, text, len), TS_OK);
    free(text);
    const char *out = finish(e);
    assert_int_equal(e->back.n, 3);
    assert_int_equal(e->counts.samples, 3);
    assert_int_equal(e->counts.rejected, 0);
    assert_int_equal(count(out, "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n"), 1);
    assert_int_equal(count(out, "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the "
                                "graphics engine is active.\n"),
                     1);
    assert_int_equal(count(out, "GPU_I_ID=\"7\""), 1);
    assert_int_equal(count(out, ",tenant=\"lab\"} 0\n"), 2);
    assert_int_equal(count(out, "GPU_I_ID=\"8\",Hostname=\"gsrh100-074\","
                                "DCGM_FI_DRIVER_VERSION=\"535.129.03\",tenant=\"unattributed\"} 0"),
                     1);
    /* the labels are all there, in their order, the tenant last */
    assert_true(has_line(&e->back,
                         "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=0,UUID=GPU-58e8f5ea-13cc-013a-d88f-"
                         "2bcf5ae8bc77,pci_bus_id=00000000:1A:00.0,device=nvidia0,modelName=NVIDIA "
                         "H100 80GB HBM3,GPU_I_PROFILE=1g.10gb,GPU_I_ID=9,Hostname=gsrh100-074,"
                         "DCGM_FI_DRIVER_VERSION=535.129.03,container=kserve-container,namespace="
                         "model-playground-stg,pod=tts-predictor-00011-deployment-5554f75554-8j8pl,"
                         "tenant=lab} 0"));
    done(e);
}

/* Label values come back exactly: quotes, backslashes, newlines; invalid
 * UTF-8 becomes U+FFFD (valid UTF-8 stays as it is). */
static void test_escaping(void **state)
{
    (void)state;
    struct env *e = start(0, 1u << 20);
    add(e, "m{pod=\"a\\\"b\\\\c\\nd\",x=\"caf\xC3\xA9\",z=\"\"} 1\n"
           "m{y=\"bad\xFF\xC3(\xED\xA0\x80\"} 2\n");
    const char *out = finish(e);
    assert_true(has_line(&e->back, "m{pod=a\"b\\c\nd,x=caf\xC3\xA9,z=,tenant=unattributed} 1"));
    /* a line that is not UTF-8 is rejected by the parser, not served */
    assert_int_equal(e->back.n, 1);
    assert_int_equal(e->counts.rejected, 1);
    assert_non_null(strstr(out, "pod=\"a\\\"b\\\\c\\nd\""));
    struct ts_sbuf b;
    ts_sbuf_init(&b, 100);
    meter_relabel_put_label(&b, "\"\\\n\x80");
    assert_string_equal(ts_sbuf_str(&b), "\"\\\"\\\\\\n\xEF\xBF\xBD\"");
    ts_sbuf_release(&b);
    done(e);
}

/* A sample's own tenant label is kept as exported_tenant (and further
 * prefixed while that name is taken); a repeated label keeps its first. */
static void test_existing_tenant(void **state)
{
    (void)state;
    struct env *e = start(0, 1u << 20);
    add(e, "a{tenant=\"evil\",namespace=\"model-playground-stg\"} 1\n"
           "b{tenant=\"t\",exported_tenant=\"u\"} 2\n"
           "c{exported_tenant=\"only\"} 3\n"
           "d{x=\"1\",x=\"2\"} 4\n");
    finish(e);
    assert_true(has_line(&e->back, "a{exported_tenant=evil,namespace=model-playground-stg,"
                                   "tenant=lab} 1"));
    assert_true(has_line(&e->back, "b{exported_exported_tenant=t,exported_tenant=u,"
                                   "tenant=unattributed} 2"));
    assert_true(has_line(&e->back, "c{exported_tenant=only,tenant=unattributed} 3"));
    assert_true(has_line(&e->back, "d{x=1,tenant=unattributed} 4"));
    done(e);
}

/* Two bodies of one family: HELP and TYPE once, before all its samples,
 * the first body's words; a family's samples stay together; a histogram's
 * _bucket/_sum/_count follow its TYPE; HELP without text and unknown TYPEs
 * are left out. */
static void test_help_type(void **state)
{
    (void)state;
    struct env *e = start(0, 1u << 20);
    add(e, "# HELP A first help\n# TYPE A gauge\nA{n=\"1\"} 1\n"
           "#  HELP B\n# TYPE B counter\nB 10\n"
           "# TYPE H histogram\nH_bucket{le=\"1\"} 1\nH_bucket{le=\"+Inf\"} 2\nH_sum 3\nH_count 2\n"
           "# TYPE W wibble\nW 1\n# random comment\n");
    add(e, "# TYPE B counter\n# HELP B later help\nB 11\n"
           "# HELP A second help\n# TYPE A counter\nA{n=\"2\"} 2\n");
    const char *out = finish(e);
    assert_int_equal(e->back.n, 9);
    assert_int_equal(count(out, "# HELP A"), 1);
    assert_int_equal(count(out, "# TYPE A"), 1);
    assert_int_equal(count(out, "# TYPE B"), 1);
    assert_int_equal(count(out, "# HELP B"), 1);
    assert_int_equal(count(out, "# TYPE H histogram\n"), 1);
    assert_int_equal(count(out, "W"), 1); /* no TYPE for an unknown type */
    assert_int_equal(count(out, "wibble"), 0);
    assert_int_equal(count(out, "random"), 0);
    assert_non_null(strstr(out, "# HELP A first help\n# TYPE A gauge\n"
                                "A{n=\"1\",tenant=\"unattributed\"} 1\n"
                                "A{n=\"2\",tenant=\"unattributed\"} 2\n"
                                "# HELP B later help\n# TYPE B counter\n"
                                "B{tenant=\"unattributed\"} 10\n"
                                "B{tenant=\"unattributed\"} 11\n"
                                "# TYPE H histogram\n"
                                "H_bucket{le=\"1\",tenant=\"unattributed\"} 1\n"));
    assert_non_null(strstr(out, "H_count{tenant=\"unattributed\"} 2\nW{"));
    done(e);
}

/* Values read back as the same double; timestamps stay, none is added. */
static void test_values_timestamps(void **state)
{
    (void)state;
    struct env *e = start(0, 1u << 20);
    add(e, "v{k=\"nan\"} NaN\nv{k=\"inf\"} +Inf\nv{k=\"ninf\"} -Inf\n"
           "v{k=\"tiny\"} 4.9e-324 1700000000123\nv{k=\"tenth\"} 0.1\n"
           "v{k=\"big\"} 123456789012345678 -5\nv{k=\"neg\"} -0.000001\n");
    const char *out = finish(e);
    assert_true(has_line(&e->back, "v{k=nan,tenant=unattributed} nan"));
    assert_true(has_line(&e->back, "v{k=inf,tenant=unattributed} inf"));
    assert_true(has_line(&e->back, "v{k=ninf,tenant=unattributed} -inf"));
    assert_true(has_line(&e->back, "v{k=tiny,tenant=unattributed} 4.9406564584124654e-324 "
                                   "1700000000123"));
    assert_true(has_line(&e->back, "v{k=tenth,tenant=unattributed} 0.10000000000000001"));
    assert_true(has_line(&e->back, "v{k=big,tenant=unattributed} 1.2345678901234568e+17 -5"));
    assert_non_null(strstr(out, "v{k=\"tenth\",tenant=\"unattributed\"} 0.1\n"));
    assert_non_null(strstr(out, "v{k=\"nan\",tenant=\"unattributed\"} NaN\n"));
    assert_non_null(strstr(out, "v{k=\"inf\",tenant=\"unattributed\"} +Inf\n"));
    assert_non_null(strstr(out, "v{k=\"neg\",tenant=\"unattributed\"} -1e-06\n"));
    assert_int_equal(count(out, "} 0.1 "), 0); /* no timestamp where none was */
    done(e);
}

/* A whole GPU reports GPU_I_PROFILE="<<<NULL>>>": the label is kept as it
 * is and the namespace decides; a namespace of no tenant, or no labels at
 * all, is "unattributed". With the plan, an instance without pod labels is
 * the tenant the plan gives it when there is one; here lab has no
 * workloads, so it stays unattributed. */
static void test_null_profile_unattributed(void **state)
{
    (void)state;
    for (int with_plan = 0; with_plan < 2; with_plan++) {
        struct env *e = start(with_plan, 1u << 20);
        add(e, "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\",GPU_I_PROFILE=\"<<<NULL>>>\","
               "GPU_I_ID=\"6\",Hostname=\"gsrh100-074\",namespace=\"model-playground-stg\"} 512\n"
               "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-2\",namespace=\"someone-else\"} 7\n"
               "DCGM_FI_DEV_FB_USED{gpu=\"2\",UUID=\"GPU-3\",GPU_I_PROFILE=\"1g.10gb\","
               "GPU_I_ID=\"9\",Hostname=\"gsrh100-074\",modelName=\"NVIDIA H100 80GB HBM3\"} 8\n"
               "DCGM_FI_DEV_FB_USED 9\n");
        finish(e);
        assert_true(has_line(&e->back, "DCGM_FI_DEV_FB_USED{gpu=0,UUID=GPU-1,GPU_I_PROFILE="
                                       "<<<NULL>>>,GPU_I_ID=6,Hostname=gsrh100-074,namespace="
                                       "model-playground-stg,tenant=lab} 512"));
        assert_true(has_line(&e->back, "DCGM_FI_DEV_FB_USED{gpu=1,UUID=GPU-2,namespace="
                                       "someone-else,tenant=unattributed} 7"));
        assert_true(has_line(&e->back, "DCGM_FI_DEV_FB_USED{gpu=2,UUID=GPU-3,GPU_I_PROFILE="
                                       "1g.10gb,GPU_I_ID=9,Hostname=gsrh100-074,modelName=NVIDIA "
                                       "H100 80GB HBM3,tenant=unattributed} 8"));
        assert_true(has_line(&e->back, "DCGM_FI_DEV_FB_USED{tenant=unattributed} 9"));
        done(e);
    }
}

/* Malformed lines are counted and skipped, the rest kept; tessera_ names
 * are not re-served (they would clash with tessera's own families); a NUL
 * byte or an unterminated (cut short) last line cost only their line. */
static void test_hostile(void **state)
{
    (void)state;
    struct env *e = start(0, 1u << 20);
    static const char body[] = "ok 1\nbad{ 2\n{x=\"1\"} 3\nno_value\n"
                               "tessera_gpu_hours_total{tenant=\"x\"} 99\n"
                               "# TYPE tessera_metering_up counter\n"
                               "nul\0byte 5\nok2{a=\"b\"} 6";
    assert_int_equal(meter_relabel_add(e->r, body, sizeof(body) - 1), TS_OK);
    const char *out = finish(e);
    assert_int_equal(e->back.n, 1);
    assert_true(has_line(&e->back, "ok{tenant=unattributed} 1"));
    assert_false(has_line(&e->back, "ok2{a=b,tenant=unattributed} 6"));
    assert_int_equal(e->counts.rejected, 5);
    assert_int_equal(e->counts.skipped, 1);
    assert_int_equal(count(out, "tessera_"), 0);
    /* an empty body adds nothing */
    assert_int_equal(meter_relabel_add(e->r, "", 0), TS_OK);
    done(e);
}

/* Past the cap the add fails with TS_TOO_LARGE instead of growing. */
static void test_cap(void **state)
{
    (void)state;
    struct env *e = start(0, 200);
    assert_int_equal(meter_relabel_add(e->r, "a 1\n", 4), TS_OK);
    char body[4096];
    size_t len = 0;
    for (int i = 0; i < 100; i++)
        len += (size_t)snprintf(body + len, sizeof(body) - len, "m{i=\"%d\"} %d\n", i, i);
    assert_int_equal(meter_relabel_add(e->r, body, len), TS_TOO_LARGE);
    done(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_tenants),   cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_existing_tenant),   cmocka_unit_test(test_help_type),
        cmocka_unit_test(test_values_timestamps), cmocka_unit_test(test_null_profile_unattributed),
        cmocka_unit_test(test_hostile),           cmocka_unit_test(test_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
