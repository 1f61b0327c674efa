/*
 * test_ingest.c - real dcgm-exporter scrapes (tests/fixtures/dcgm) become
 * one sample per device: MIG instances keyed by GPU instance, tenants from
 * namespaces (unattributed kept, never dropped), card shares from the
 * catalog (a driver's 7g.79gb name still finds 7g.80gb), engine ratios.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/ingest.h"
#include "util/file.h"

static const char *spec =
    "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
    "  nodes: [{name: gsrh100-074, gpus: [{model: h100-80gb-sxm, count: 1}]}]\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: lab}\nspec:\n"
    "  contract: shared-trusted\n  namespaces: [model-playground-stg]\n";

struct env {
    struct cat_catalog *cat;
    struct spec_model *m;
    struct ts_diag diag;
    struct meter_scrape s;
};

static struct store_sample *scrape(struct env *e, const char *file, size_t *n)
{
    memset(e, 0, sizeof(*e));
    assert_int_equal(cat_load(NULL, 0, &e->cat, &e->diag), TS_OK);
    assert_int_equal(spec_load_text(spec, strlen(spec), "t.yaml", &e->m, &e->diag), TS_OK);
    char path[1024], *text;
    size_t len;
    struct ts_error err;
    snprintf(path, sizeof(path), "%s/tests/fixtures/dcgm/%s", getenv("TESSERA_SRC"), file);
    assert_int_equal(ts_file_read(path, TS_INPUT_MAX, &text, &len, &err), TS_OK);
    meter_scrape_init(&e->s, e->m, e->cat, 1700000000000LL, file, &e->diag);
    assert_int_equal(meter_scrape_parse(&e->s, text, len), TS_OK);
    free(text);
    return meter_scrape_samples(&e->s, n);
}

static void done(struct env *e)
{
    meter_scrape_release(&e->s);
    spec_model_free(e->m);
    cat_free(e->cat);
}

static const struct store_sample *device(const struct store_sample *s, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].device, key) == 0)
            return &s[i];
    fail_msg("no device %s", key);
    return NULL;
}

static void test_mig_pods(void **state)
{
    (void)state;
    struct env e;
    size_t n;
    struct store_sample *s = scrape(&e, "nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom", &n);
    assert_int_equal(n, 3);
    assert_int_equal(e.diag.count, 0);
    const char *uuid = "GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77";
    char key[128];
    for (int gi = 7; gi <= 9; gi++) {
        snprintf(key, sizeof(key), "%s/%d", uuid, gi);
        const struct store_sample *d = device(s, n, key);
        assert_string_equal(d->profile, "1g.10gb");
        assert_string_equal(d->model, "NVIDIA H100 80GB HBM3");
        assert_string_equal(d->node, "gsrh100-074");
        assert_int_equal(d->share_ppm, 125000); /* 1 of 8 memory units */
        assert_int_equal(d->util_ppm, 0);
        assert_int_equal(d->ts_ms, 1700000000000LL);
        assert_string_equal(d->tenant, gi == 8 ? "unattributed" : "lab");
    }
    done(&e);
}

static void test_whole_and_redacted(void **state)
{
    (void)state;
    struct env e;
    size_t n;
    struct store_sample *s = scrape(&e, "nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-3g40gb-and-full-gpus.prom", &n);
    assert_int_equal(n, 5); /* two 3g.40gb instances on GPU 0, GPUs 1-3 whole */
    int mig = 0, whole = 0;
    for (size_t i = 0; i < n; i++) {
        mig += s[i].share_ppm == 500000 && strcmp(s[i].profile, "3g.40gb") == 0;
        whole += s[i].share_ppm == 1000000 && !s[i].profile[0];
        assert_string_equal(s[i].tenant, "unattributed");
    }
    assert_int_equal(mig, 2);
    assert_int_equal(whole, 3);
    done(&e);
}

static void test_old_profile_name(void **state)
{
    (void)state;
    struct env e;
    size_t n;
    struct store_sample *s = scrape(&e, "nvidia-gpu-operator-issue687_a100-80gb-pcie_mig-7g79gb-profile-name.prom", &n);
    assert_int_equal(n, 1);
    assert_string_equal(s[0].device, "GPU-06357e72-c3ee-614b-775f-a89e18e8cc08/0");
    assert_int_equal(s[0].share_ppm, 1000000); /* 7g.79gb = the full 8-unit profile */
    assert_int_equal(s[0].util_ppm, -1);        /* this scrape has no engine metric */
    assert_int_equal(e.diag.count, 0);
    done(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mig_pods),
        cmocka_unit_test(test_whole_and_redacted),
        cmocka_unit_test(test_old_profile_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
