/*
 * test_spec.c - the loader on good input: every field of the worked example
 * lands where it should, defaults apply, money is exact, trust is mutual,
 * aliases are shared not copied, and several files make one spec.
 * (Hostile input is tests/cli/bad_specs.sh.)
 */
#include "helpers.h"

#include <string.h>

static struct spec_model *load(const char *text)
{
    struct spec_model *m = NULL;
    struct ts_diag d = {0};
    ts_status st = spec_load_text(text, strlen(text), "t.yaml", &m, &d);
    if (st != TS_OK)
        fail_msg("%s", d.count ? d.items[0].msg : "load failed");
    return m;
}

static void test_worked_example_fields(void **state)
{
    (void)state;
    const char *path = th_src_path("examples/four-h100.yaml");
    struct spec_model *m = NULL;
    struct ts_diag d = {0};
    assert_int_equal(spec_load(&path, 1, &m, &d), TS_OK);
    assert_int_equal(m->ntenants, 10);
    assert_int_equal(m->fleet->nnodes, 1);
    assert_string_equal(m->fleet->nodes[0].gpus[0].model, "h100-80gb-sxm");
    assert_int_equal(m->fleet->nodes[0].gpus[0].count, 4);
    const struct spec_tenant *a = spec_tenant_find(m, "client-a");
    assert_int_equal(a->contract, SPEC_CONTRACT_ISOLATED);
    assert_int_equal(a->data_class, SPEC_DATA_CONFIDENTIAL);
    const struct spec_workload *w = &a->workloads[0];
    assert_string_equal(w->name, "chat-13b");
    assert_true(w->memory_gib == 28.0 && w->kv_cache_gib == 8.0 && w->p99_ms == 250.0);
    assert_int_equal(w->replicas, 2);
    assert_int_equal(w->trust, SPEC_TRUST_UNTRUSTED);
    assert_int_equal(w->loc.line, 30);
    assert_string_equal(w->loc.path, "Tenant/client-a.spec.workloads[0]");
    assert_int_equal(m->pricebook->prices[0].per_gpu_hour, 2900000);
    assert_string_equal(m->pricebook->currency, "EUR");
    const struct spec_tenant *rag = spec_tenant_find(m, "rag-e");
    assert_int_equal(rag->nuses, 1);
    assert_string_equal(rag->uses[0].workload, "embedding");
    assert_true(spec_tenants_trust(m, "provider", "platform-dev"));
    assert_false(spec_tenants_trust(m, "provider", "client-a"));
    spec_model_free(m);
}

#define FLEET                                                                     \
    "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n" \
    "  nodes: [{name: n1, gpus: [{model: l4, count: 1}]}]\n"

static void test_defaults(void **state)
{
    (void)state;
    struct spec_model *m = load(FLEET "---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\n"
                                      "metadata: {name: t}\nspec:\n  contract: best-effort\n"
                                      "  namespaces: [t]\n  workloads:\n  - {name: w, kind: "
                                      "batch, memoryHighWaterGiB: 1}\n");
    const struct spec_workload *w = &m->tenants[0].workloads[0];
    assert_int_equal(w->replicas, 1);
    assert_int_equal(w->gpus, 1);
    assert_int_equal(w->spread, SPEC_SPREAD_GPU);
    assert_int_equal(w->trust, SPEC_TRUST_TRUSTED);
    assert_int_equal(w->isolation, SPEC_ISO_AUTO);
    assert_true(w->p99_ms == 0 && w->kv_cache_gib == 0);
    assert_null(w->schedule);
    assert_int_equal(m->tenants[0].data_class, SPEC_DATA_INTERNAL);
    assert_true(m->fleet->nodes[0].mps_allowed);
    assert_null(m->pricebook);
    spec_model_free(m);
}

/* Anchors and aliases are legal YAML: the aliased node is shared. */
static void test_aliases(void **state)
{
    (void)state;
    struct spec_model *m = load(FLEET "---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\n"
                                      "metadata: {name: t}\nspec:\n  contract: best-effort\n"
                                      "  namespaces: &ns [t, t2]\n  trusts: []\n  workloads:\n"
                                      "  - &w {name: w, kind: batch, memoryHighWaterGiB: 1}\n");
    assert_int_equal(m->tenants[0].nnamespaces, 2);
    assert_string_equal(m->tenants[0].namespaces[1], "t2");
    spec_model_free(m);
}

static void test_money_and_versions(void **state)
{
    (void)state;
    int64_t v;
    assert_true(spec_parse_money("2.90", &v) && v == 2900000);
    assert_true(spec_parse_money("0.000001", &v) && v == 1);
    assert_true(spec_parse_money("1234", &v) && v == 1234000000);
    assert_false(spec_parse_money("1.0000001", &v));
    assert_false(spec_parse_money("-1", &v));
    assert_false(spec_parse_money("1e3", &v));
    assert_false(spec_parse_money("1.", &v));
    assert_false(spec_parse_money("99999999999999999999", &v));
    assert_int_equal(spec_cuda_version("13.4"), 1304);
    assert_int_equal(spec_cuda_version("12.10"), 1210);
    assert_int_equal(spec_cuda_version("13"), 0);
    assert_int_equal(spec_cuda_version("13.4.1"), 0);
    assert_int_equal(spec_cuda_version(NULL), 0);
}

static void test_doc_reference(void **state)
{
    (void)state;
    struct ts_sbuf b;
    ts_sbuf_init(&b, 1u << 20);
    spec_doc_reference(&b);
    const char *s = ts_sbuf_str(&b);
    assert_non_null(strstr(s, "| `memoryHighWaterGiB` | number | yes | 0.01 to 100000 |"));
    assert_non_null(strstr(s, "### Workload"));
    assert_non_null(strstr(s, "`dedicated`, `isolated`, `shared-trusted`, `best-effort`, `vm`"));
    ts_sbuf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example_fields),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_money_and_versions),
        cmocka_unit_test(test_doc_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
