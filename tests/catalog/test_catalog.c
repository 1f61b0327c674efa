/*
 * test_catalog.c - the built-in catalog and the geometry rule.
 *
 * The counts of valid MIG geometries are checked against an independent
 * enumeration, made apart from this code, from the placement rules
 * (disjoint memory ranges, each at one of the profile's published
 * `nvidia-smi mig -lgipp` starts, per-profile max counts; sources in
 * builtin.yaml): on 7-slice boards, 37 distinct non-empty multisets of
 * plain profiles without the 2-unit 1g profile (77 with it); on the 4-unit
 * A30 and the 12-unit RTX PRO 6000, 9. This test brute-forces placements
 * with cat_geometry_check, so a wrong start list or max count in
 * builtin.yaml changes the counts.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXP 16

struct enum_state {
    const struct cat_model *m;
    const struct cat_profile *plain[MAXP];
    int nplain;
    int count[MAXP];
    int valid;
};

/* Does some choice of starts make this multiset valid? Overlaps are pruned
 * as we go; the leaf asks cat_geometry_check, the function under test. */
static int placeable(const struct cat_model *m, const struct cat_profile **profs, int *starts,
                     int n, int k, unsigned long long used)
{
    if (k == n) {
        struct ts_error e;
        return cat_geometry_check(m, profs, starts, (size_t)n, &e) == TS_OK;
    }
    for (size_t s = 0; s < profs[k]->nstarts; s++) {
        int start = profs[k]->starts[s];
        unsigned long long mask = ((1ull << profs[k]->mem_units) - 1) << start;
        if ((used & mask) || (k > 0 && profs[k - 1] == profs[k] && start < starts[k - 1]))
            continue;
        starts[k] = start;
        if (placeable(m, profs, starts, n, k + 1, used | mask))
            return 1;
    }
    return 0;
}

static void enumerate(struct enum_state *st, int p)
{
    if (p == st->nplain) {
        const struct cat_profile *profs[32];
        int starts[32], n = 0;
        for (int i = 0; i < st->nplain; i++)
            for (int c = 0; c < st->count[i]; c++)
                profs[n++] = st->plain[i];
        if (n > 0 && n <= st->m->grid && placeable(st->m, profs, starts, n, 0, 0))
            st->valid++;
        return;
    }
    for (int c = 0; c <= st->plain[p]->max_count && c <= st->m->grid; c++) {
        st->count[p] = c;
        enumerate(st, p + 1);
    }
    st->count[p] = 0;
}

static int count_geometries(const struct cat_model *m, int with_2unit_1g)
{
    struct enum_state st = {m, {0}, 0, {0}, 0};
    for (size_t i = 0; i < m->nprofiles; i++) {
        const struct cat_profile *p = &m->profiles[i];
        if (!cat_profile_plain(p) ||
            (!with_2unit_1g && p->compute == 1 && p->mem_units == 2 && m->grid == 8))
            continue;
        st.plain[st.nplain++] = p;
    }
    enumerate(&st, 0);
    return st.valid;
}

static struct cat_catalog *builtin(void)
{
    struct cat_catalog *c = NULL;
    struct ts_diag d = {0};
    assert_int_equal(cat_load(NULL, 0, &c, &d), TS_OK);
    return c;
}

static void test_geometry_counts(void **state)
{
    (void)state;
    struct cat_catalog *c = builtin();
    static const char *seven[] = {"a100-40gb",      "a100-80gb",     "h100-80gb-sxm",
                                  "h100-80gb-pcie", "h100-nvl-94gb", "gh200-h100-96gb",
                                  "h200-141gb",     "b200"};
    for (size_t i = 0; i < sizeof(seven) / sizeof(seven[0]); i++) {
        const struct cat_model *m = cat_model_find(c, seven[i]);
        assert_non_null(m);
        assert_int_equal(count_geometries(m, 0), 37);
        assert_int_equal(count_geometries(m, 1), 77);
    }
    assert_int_equal(count_geometries(cat_model_find(c, "a30"), 1), 9);
    assert_int_equal(count_geometries(cat_model_find(c, "rtx-pro-6000-bw"), 1), 9);
    cat_free(c);
}

static void test_geometry_rules(void **state)
{
    (void)state;
    struct cat_catalog *c = builtin();
    const struct cat_model *m = cat_model_find(c, "h100-80gb-sxm");
    const struct cat_profile *g1 = cat_profile_find(m, "1g.10gb");
    const struct cat_profile *g2 = cat_profile_find(m, "2g.20gb");
    const struct cat_profile *g3 = cat_profile_find(m, "3g.40gb");
    const struct cat_profile *g4 = cat_profile_find(m, "4g.40gb");
    struct ts_error e;
    /* the guide's 3-2-1-1 layout */
    const struct cat_profile *ok[] = {g1, g1, g2, g3};
    int ok_starts[] = {0, 1, 2, 4};
    assert_int_equal(cat_geometry_check(m, ok, ok_starts, 4, &e), TS_OK);
    /* 3g at 0 leaves slice 7 to nobody: 1g cannot start at 7 */
    const struct cat_profile *bad[] = {g3, g2, g1, g1};
    int bad_starts[] = {0, 4, 6, 7};
    assert_int_equal(cat_geometry_check(m, bad, bad_starts, 4, &e), TS_INFEASIBLE);
    assert_string_equal(e.msg, "1g.10gb cannot start at unit 7 on h100-80gb-sxm");
    int overlap[] = {0, 0};
    const struct cat_profile *two[] = {g3, g2};
    assert_int_equal(cat_geometry_check(m, two, overlap, 2, &e), TS_INFEASIBLE);
    assert_string_equal(e.msg, "2g.20gb at 0:2 overlaps another instance");
    const struct cat_profile *fours[] = {g4, g4};
    int four_starts[] = {0, 0};
    assert_int_equal(cat_geometry_check(m, fours, four_starts, 2, &e), TS_INFEASIBLE);
    cat_free(c);
}

static void test_lookups(void **state)
{
    (void)state;
    struct cat_catalog *c = builtin();
    assert_string_equal(cat_model_find(c, "NVIDIA H100 80GB HBM3")->name, "h100-80gb-sxm");
    assert_string_equal(cat_model_find(c, "nvidia a100-sxm4-80gb")->name, "a100-80gb");
    assert_string_equal(cat_model_find(c, "Tesla T4")->name, "t4");
    assert_null(cat_model_find(c, "H100"));
    const struct cat_model *a100 = cat_model_find(c, "a100-80gb");
    /* names are display only: older drivers said 7g.79gb */
    assert_string_equal(cat_profile_find(a100, "7g.79gb")->name, "7g.80gb");
    assert_string_equal(cat_profile_find(a100, "1g.10gb+me")->name, "1g.10gb+me");
    assert_null(cat_profile_find(a100, "7g.40gb"));
    assert_null(cat_profile_find(a100, "garbage"));
    const struct cat_model *v100 = cat_model_find(c, "v100-32gb");
    assert_int_equal(v100->mps_max_clients, 48);
    assert_int_equal(a100->mps_max_clients, 64);
    assert_int_equal(cat_model_find(c, "rtx-pro-6000-bw")->grid, 12);
    assert_int_equal(cat_model_find(c, "a30")->grid, 4);
    assert_false(cat_model_find(c, "l40s")->mig);
    cat_free(c);
}

/* A --catalog model wins product-name lookups; catalog names stay exact. */
static void test_user_model_precedence(void **state)
{
    (void)state;
    char path[] = "/tmp/tessera-catalog-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *doc =
        "apiVersion: tessera.dev/v1alpha1\nkind: GpuModel\nmetadata: {name: lab-h100}\n"
        "spec:\n  displayName: Lab H100\n  productNames: [\"NVIDIA H100 PCIe\"]\n"
        "  memoryGiB: 79.6\n  architecture: hopper\n";
    assert_int_equal(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
    close(fd);
    struct cat_catalog *c = NULL;
    struct ts_diag d = {0};
    const char *paths[] = {path};
    assert_int_equal(cat_load(paths, 1, &c, &d), TS_OK);
    assert_string_equal(cat_model_find(c, "NVIDIA H100 PCIe")->name, "lab-h100");
    assert_string_equal(cat_model_find(c, "h100-80gb-pcie")->name, "h100-80gb-pcie");
    assert_string_equal(cat_model_find(c, "lab-h100")->name, "lab-h100");
    cat_free(c);
    unlink(path);
}

/* Malformed GpuModel documents are located errors, never a catalog. */
static void test_bad_catalog_documents(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *message;
    } cases[] = {
        {"mig: true\n  migGrid: 8\n  computeSlices: 7\n  profiles:\n  - {name: 1g.1gb, id: 1, "
         "computeSlices: 1, memoryGiB: 1, maxCount: 7, placements: \"{0,1,9}:1\"}\n",
         "placements: start 9 + size 1 runs past the 8-unit grid"},
        {"mig: true\n  migGrid: 8\n  computeSlices: 7\n  profiles:\n  - {name: 1g.1gb, id: 1, "
         "computeSlices: 1, memoryGiB: 1, maxCount: 7, placements: \"{2,1}:1\"}\n",
         "placements: '{2,1}:1' is not like \"{0,2,4}:2\""},
        {"mig: true\n", "a MIG model needs migGrid, computeSlices and profiles"},
        {"mig: false\n  profiles:\n  - {name: 1g.1gb, id: 1, computeSlices: 1, memoryGiB: 1, "
         "maxCount: 7, placements: \"{0}:1\"}\n",
         "profiles given but mig is false"},
        {"mig: true\n  migGrid: 8\n  computeSlices: 7\n  profiles:\n  - {name: 9g.1gb, id: 1, "
         "computeSlices: 9, memoryGiB: 1, maxCount: 1, placements: \"{0}:8\"}\n",
         "computeSlices 9 is more than the card's 7"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[2048];
        snprintf(text, sizeof(text),
                 "apiVersion: tessera.dev/v1alpha1\nkind: GpuModel\n"
                 "metadata: {name: x}\nspec:\n  displayName: X\n  memoryGiB: 10\n"
                 "  architecture: hopper\n  %s",
                 cases[i].spec);
        struct cat_catalog *c = NULL;
        struct ts_diag d = {0};
        assert_int_equal(cat_load_text(text, strlen(text), "x.yaml", &c, &d), TS_INVALID);
        assert_null(c);
        if (!strstr(d.items[0].msg, cases[i].message))
            fail_msg("case %zu: %s", i, d.items[0].msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry_counts),
        cmocka_unit_test(test_geometry_rules),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_user_model_precedence),
        cmocka_unit_test(test_bad_catalog_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
