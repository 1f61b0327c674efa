/*
 * test_metrics.c - the webhook's per-tenant review counts on /metrics
 * (serve/metrics.c): reviews allowed per tenant and denials per tenant and
 * rule, counted from threads at once, in tenant then rule order; a review of
 * no tenant is not counted per tenant; a label value is escaped; pairs past
 * SERVE_TENANT_RULES_MAX are not counted per tenant while the per-rule
 * totals still are.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve/internal.h"

static char *page(struct serve_metrics *m)
{
    struct ts_sbuf o;
    ts_sbuf_init(&o, SERVE_METRICS_MAX);
    serve_metrics_text(m, 1, 1, &o);
    assert_int_equal(ts_sbuf_status(&o), TS_OK);
    char *text = strdup(ts_sbuf_str(&o));
    ts_sbuf_release(&o);
    return text;
}

/* The value of the line that starts with head ("name{labels}"), -1 if none. */
static long value_of(const char *text, const char *head)
{
    char want[256];
    snprintf(want, sizeof(want), "\n%s ", head);
    const char *at = strstr(text, want);
    return at ? strtol(at + strlen(want), NULL, 10) : -1;
}

struct worker {
    struct serve_metrics *m;
    int n;
};

/* n reviews: every third one of client-b, denied; the others client-a's,
 * every fifth of them denied by the MIG rule. */
static void *reviews(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < w->n; i++) {
        if (i % 3 == 0)
            serve_metrics_tenant(w->m, "client-b", 0, "escape-hatch/privileged");
        else
            serve_metrics_tenant(w->m, "client-a", i % 5 != 0, "entitlement/mig");
        serve_metrics_tenant(w->m, "", 0, "no-tenant");
    }
    return NULL;
}

static void test_counts_by_tenant(void **state)
{
    (void)state;
    struct serve_metrics m;
    serve_metrics_init(&m);
    pthread_t t[4];
    struct worker w = {&m, 3000};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reviews, &w), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    /* per thread: i % 3 == 0 for 1000 of 3000; of the other 2000, i % 5 == 0
     * for the multiples of 5 that are not multiples of 3: 600 - 200 = 400 */
    char *text = page(&m);
    assert_int_equal(value_of(text, "tessera_admission_tenant_allowed_total{tenant=\"client-a\"}"),
                     4 * (2000 - 400));
    assert_int_equal(value_of(text, "tessera_admission_tenant_denials_total{tenant=\"client-a\","
                                    "rule=\"entitlement/mig\"}"),
                     4 * 400);
    assert_int_equal(value_of(text, "tessera_admission_tenant_denials_total{tenant=\"client-b\","
                                    "rule=\"escape-hatch/privileged\"}"),
                     4 * 1000);
    assert_int_equal(value_of(text, "tessera_admission_tenant_allowed_total{tenant=\"client-b\"}"),
                     -1);
    assert_null(strstr(text, "no-tenant"));
    assert_null(strstr(text, "tenant=\"\""));
    /* the families in order, denials after the allowed */
    const char *allowed = strstr(text, "# TYPE tessera_admission_tenant_allowed_total counter\n");
    const char *denials = strstr(text, "# TYPE tessera_admission_tenant_denials_total counter\n");
    assert_non_null(allowed);
    assert_non_null(denials);
    assert_true(allowed < denials);
    assert_true(strstr(text, "{tenant=\"client-a\",rule") < strstr(text, "{tenant=\"client-b\""));
    free(text);
    serve_metrics_release(&m);
}

static void test_escaped_and_capped(void **state)
{
    (void)state;
    struct serve_metrics m;
    serve_metrics_init(&m);
    serve_metrics_tenant(&m, "a\"b\\c\nd", 1, "");
    serve_metrics_tenant(&m, "x", 0, ""); /* denied without a rule id */
    char name[32];
    for (int i = 0; i < SERVE_TENANT_RULES_MAX + 10; i++) {
        snprintf(name, sizeof(name), "t%05d", i);
        serve_metrics_tenant(&m, name, 1, "");
        serve_metrics_denied(&m, "r");
    }
    char *text = page(&m);
    assert_int_equal(
        value_of(text, "tessera_admission_tenant_allowed_total{tenant=\"a\\\"b\\\\c\\nd\"}"), 1);
    assert_int_equal(
        value_of(text, "tessera_admission_tenant_denials_total{tenant=\"x\",rule=\"unknown\"}"), 1);
    /* two pairs above, then the first SERVE_TENANT_RULES_MAX - 2 names only */
    snprintf(name, sizeof(name), "t%05d", SERVE_TENANT_RULES_MAX - 3);
    char head[128];
    snprintf(head, sizeof(head), "tessera_admission_tenant_allowed_total{tenant=\"%s\"}", name);
    assert_int_equal(value_of(text, head), 1);
    snprintf(head, sizeof(head), "tessera_admission_tenant_allowed_total{tenant=\"t%05d\"}",
             SERVE_TENANT_RULES_MAX - 2);
    assert_int_equal(value_of(text, head), -1);
    assert_int_equal(value_of(text, "tessera_admission_denials_total{rule=\"r\"}"),
                     SERVE_TENANT_RULES_MAX + 10);
    free(text);
    serve_metrics_release(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_by_tenant),
        cmocka_unit_test(test_escaped_and_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
