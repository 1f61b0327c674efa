/*
 * test_import.c - `tessera catalog import` (catalog/import.c) on real
 * nvidia-smi outputs in tests/fixtures/nvidia-smi/ (origins in SOURCES.md
 * there): every imported profile (ID, name, compute slices, memory, SMs,
 * max count, placements), the grid, the product; the document loads with
 * cat_load_text and matches the built-in model of the same card; and the
 * located errors for incomplete, conflicting and hostile input.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/import.h"
#include "util/file.h"

/* ---- running the importer ---------------------------------------------- */

/* One import: inputs are fixture names, or inline text when they start
 * with "text:" (lines the real outputs lack, written in the test). */
struct run {
    ts_status st;
    struct ts_error err;
    struct ts_sbuf yaml;
    struct cat_catalog *cat;
    const struct cat_model *m;
};

static char *fixture(const char *name, size_t *len)
{
    char path[4096];
    const char *dir = getenv("TESSERA_FIXTURES");
    snprintf(path, sizeof(path), "%s/nvidia-smi/%s", dir ? dir : "tests/fixtures", name);
    char *text = NULL;
    struct ts_error e;
    if (ts_file_read(path, TS_INPUT_MAX, &text, len, &e) != TS_OK)
        fail_msg("cannot read fixture %s: %s", path, e.msg);
    return text;
}

static ts_status add_input(struct cat_import *im, const char *in, struct ts_error *err)
{
    if (strncmp(in, "text:", 5) == 0)
        return cat_import_add(im, in + 5, strlen(in + 5), "inline.txt", err);
    size_t len;
    char *text = fixture(in, &len);
    ts_status st = cat_import_add(im, text, len, in, err);
    free(text);
    return st;
}

/* Import inputs (NULL-terminated); on success the YAML must load. */
static void run_import(struct run *r, const char *const *inputs, const char *name, int gpu)
{
    memset(r, 0, sizeof(*r));
    ts_sbuf_init(&r->yaml, 1u << 20);
    struct cat_import *im = cat_import_new();
    assert_non_null(im);
    for (size_t i = 0; inputs[i] && r->st == TS_OK; i++)
        r->st = add_input(im, inputs[i], &r->err);
    if (r->st == TS_OK)
        r->st = cat_import_finish(im, name, gpu, &r->yaml, &r->err);
    cat_import_free(im);
    if (r->st != TS_OK)
        return;
    struct ts_diag diag = {0};
    ts_status st = cat_load_text(r->yaml.data, r->yaml.len, "imported.yaml", &r->cat, &diag);
    if (st != TS_OK)
        fail_msg("imported YAML does not load: %s\n%s", diag.items[0].msg, r->yaml.data);
    assert_int_equal(r->cat->nmodels, 1);
    r->m = &r->cat->models[0];
}

static void run_free(struct run *r)
{
    cat_free(r->cat);
    ts_sbuf_release(&r->yaml);
}

/* Import that must succeed. */
static void import_ok(struct run *r, const char *const *inputs)
{
    run_import(r, inputs, NULL, -1);
    if (r->st != TS_OK)
        fail_msg("import failed: %s:%d:%d: %s", r->err.file, r->err.line, r->err.column,
                 r->err.msg);
}

/* Import that must fail with code at file:line:col, msg a substring. */
static void import_fails(const char *const *inputs, int gpu, ts_status code, const char *file,
                         int line, int col, const char *msg)
{
    struct run r;
    run_import(&r, inputs, NULL, gpu);
    if (r.st == TS_OK)
        fail_msg("import succeeded, expected '%s'", msg);
    assert_int_equal(r.st, code);
    assert_string_equal(r.err.file, file);
    assert_int_equal(r.err.line, line);
    assert_int_equal(r.err.column, col);
    if (!strstr(r.err.msg, msg))
        fail_msg("message '%s' lacks '%s'", r.err.msg, msg);
    run_free(&r);
}

/* ---- what an imported model must hold ---------------------------------- */

struct want {
    int id;
    const char *name;
    int compute;
    double gib;
    int sms, max;
    const char *placements;
};

static void placements_str(const struct cat_profile *p, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "{");
    for (size_t i = 0; i < p->nstarts && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%d", i ? "," : "", p->starts[i]);
    if (k < n)
        snprintf(buf + k, n - k, "}:%d", p->mem_units);
}

static void assert_profiles(const struct cat_model *m, const struct want *w, size_t n)
{
    assert_int_equal(m->nprofiles, n);
    for (size_t i = 0; i < n; i++) {
        const struct cat_profile *p = &m->profiles[i];
        char pl[256];
        placements_str(p, pl, sizeof(pl));
        assert_int_equal(p->id, w[i].id);
        assert_string_equal(p->name, w[i].name);
        assert_int_equal(p->compute, w[i].compute);
        assert_true(fabs(p->memory_gib - w[i].gib) < 1e-9);
        assert_int_equal(p->sms, w[i].sms);
        assert_int_equal(p->max_count, w[i].max);
        assert_string_equal(pl, w[i].placements);
    }
}

static void assert_model(const struct cat_model *m, const char *name, const char *product,
                         const char *arch, double gib, int grid, int compute)
{
    assert_string_equal(m->name, name);
    assert_string_equal(m->display, product);
    assert_int_equal(m->nproduct_names, 1);
    assert_string_equal(m->product_names[0], product);
    assert_string_equal(m->arch, arch);
    assert_true(fabs(m->memory_gib - gib) < 1e-9);
    assert_int_equal(m->mig, 1);
    assert_int_equal(m->grid, grid);
    assert_int_equal(m->compute_slices, compute);
}

/* Every profile of the built-in model `builtin` is in m with the same ID,
 * compute slices, placements, memory, max count and SMs. */
static void assert_like_builtin(const struct cat_model *m, const char *builtin)
{
    struct cat_catalog *cat = NULL;
    struct ts_diag diag = {0};
    assert_int_equal(cat_load(NULL, 0, &cat, &diag), TS_OK);
    const struct cat_model *b = cat_model_find(cat, builtin);
    assert_non_null(b);
    assert_int_equal(m->grid, b->grid);
    assert_int_equal(m->compute_slices, b->compute_slices);
    assert_int_equal(m->nprofiles, b->nprofiles);
    for (size_t i = 0; i < b->nprofiles; i++) {
        const struct cat_profile *bp = &b->profiles[i], *p = NULL;
        for (size_t j = 0; j < m->nprofiles; j++)
            if (m->profiles[j].id == bp->id)
                p = &m->profiles[j];
        assert_non_null(p);
        char a[256], c[256];
        placements_str(p, a, sizeof(a));
        placements_str(bp, c, sizeof(c));
        assert_string_equal(a, c);
        assert_int_equal(p->compute, bp->compute);
        assert_true(fabs(p->memory_gib - bp->memory_gib) < 1e-9);
        assert_int_equal(p->max_count, bp->max_count);
        assert_int_equal(p->sms, bp->sms);
    }
    cat_free(cat);
}

#define H100_PCIE "h100-pcie-80gb_nvidia-smi-mig-lgip-lgipp-lgi-L.txt"
#define RTX "rtx-pro-6000-bw-server_nvidia-smi-L-lgip-lgipp-lgi.txt"
#define A30 "a30-24gb_nvidia-smi-mig-lgip-lgipp-lgi.txt"
#define A100 "a100-sxm4-40gb_nvidia-smi-mig-lgip-cgi-lgi-lcip-L.txt"
#define NVL "h100-nvl-94gb_azure_nvidia-smi-mig-lgip-lgipp-smi.txt"
#define HBM3_L "h100-80gb-hbm3_L.txt"
#define HBM3_LGIP "h100-80gb-hbm3_mig-lgip.txt"
#define HBM3_LGIPP "h100-80gb-hbm3_mig-lgipp.txt"
#define SXM5_4GPU "h100-sxm5-80gb_nvidia-smi-mig-lgip.txt"

/* ---- real outputs ------------------------------------------------------ */

static const struct want h100_pcie[] = {
    {19, "1g.10gb", 1, 9.62, 14, 7, "{0,1,2,3,4,5,6}:1"},
    {20, "1g.10gb+me", 1, 9.62, 14, 1, "{0,1,2,3,4,5,6}:1"},
    {15, "1g.20gb", 1, 19.50, 14, 4, "{0,2,4,6}:2"},
    {14, "2g.20gb", 2, 19.50, 30, 3, "{0,2,4}:2"},
    {9, "3g.40gb", 3, 39.25, 46, 2, "{0,4}:4"},
    {5, "4g.40gb", 4, 39.25, 62, 1, "{0}:4"},
    {0, "7g.80gb", 7, 79.00, 114, 1, "{0}:8"},
};

static void test_h100_pcie(void **state)
{
    (void)state;
    struct run r;
    import_ok(&r, (const char *[]){H100_PCIE, NULL});
    /* header table: 81559 MiB = 79.65 GiB; -L: the product name */
    assert_model(r.m, "nvidia-h100-pcie", "NVIDIA H100 PCIe", "hopper", 79.65, 8, 7);
    assert_int_equal(r.m->sms, 114);
    assert_profiles(r.m, h100_pcie, sizeof(h100_pcie) / sizeof(h100_pcie[0]));
    assert_like_builtin(r.m, "h100-80gb-pcie");
    run_free(&r);
}

static const struct want rtx[] = {
    {14, "1g.24gb", 1, 23.62, 46, 4, "{0,3,6,9}:3"},
    {21, "1g.24gb+me", 1, 23.62, 46, 1, "{0,3,6,9}:3"},
    {47, "1g.24gb+gfx", 1, 23.62, 46, 4, "{0,3,6,9}:3"},
    {65, "1g.24gb+me.all", 1, 23.62, 46, 1, "{0,3,6,9}:3"},
    {67, "1g.24gb-me", 1, 23.62, 46, 4, "{0,3,6,9}:3"},
    {5, "2g.48gb", 2, 47.38, 94, 2, "{0,6}:6"},
    {35, "2g.48gb+gfx", 2, 47.38, 94, 2, "{0,6}:6"},
    {64, "2g.48gb+me.all", 2, 47.38, 94, 1, "{0,6}:6"},
    {66, "2g.48gb-me", 2, 47.38, 94, 2, "{0,6}:6"},
    {0, "4g.96gb", 4, 95.12, 188, 1, "{0}:12"},
    {32, "4g.96gb+gfx", 4, 95.12, 188, 1, "{0}:12"},
};

/* The wide -lgip layout, a 12-unit grid; -L lists 8 GPUs, -lgip only GPU 0. */
static void test_rtx_pro_6000(void **state)
{
    (void)state;
    struct run r;
    import_ok(&r, (const char *[]){RTX, NULL});
    /* no header table: the card's memory is the full profile's */
    assert_model(r.m, "nvidia-rtx-pro-6000-blackwell-server-edition",
                 "NVIDIA RTX PRO 6000 Blackwell Server Edition", "blackwell", 95.12, 12, 4);
    assert_int_equal(r.m->sms, 188);
    assert_profiles(r.m, rtx, sizeof(rtx) / sizeof(rtx[0]));
    assert_like_builtin(r.m, "rtx-pro-6000-bw");
    run_free(&r);
}

/* The A30 output has no -L or header: alone it cannot be named. */
#define A30_L "text:GPU 0: NVIDIA A30 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"

static const struct want a30[] = {
    {14, "1g.6gb", 1, 5.81, 14, 4, "{0,1,2,3}:1"},
    {21, "1g.6gb+me", 1, 5.81, 14, 1, "{0,1,2,3}:1"},
    {5, "2g.12gb", 2, 11.69, 28, 2, "{0,2}:2"},
    {0, "4g.24gb", 4, 23.50, 56, 1, "{0}:4"},
};

static void test_a30(void **state)
{
    (void)state;
    import_fails((const char *[]){A30, NULL}, -1, TS_INVALID, A30, 0, 0,
                 "no product name for GPU 0: add the output of nvidia-smi -L");
    struct run r;
    import_ok(&r, (const char *[]){A30, A30_L, NULL});
    assert_model(r.m, "nvidia-a30", "NVIDIA A30", "ampere", 23.50, 4, 4);
    assert_profiles(r.m, a30, sizeof(a30) / sizeof(a30[0]));
    run_free(&r);
    /* the same tables as two files, every instance in use (Free 0/N) */
    import_ok(&r, (const char *[]){A30_L, "a30-24gb_mig-lgip-all-used.txt",
                                   "a30-24gb_mig-lgipp.txt", NULL});
    assert_profiles(r.m, a30, sizeof(a30) / sizeof(a30[0]));
    run_free(&r);
}

static const struct want h100_sxm[] = {
    {19, "1g.10gb", 1, 9.75, 16, 7, "{0,1,2,3,4,5,6}:1"},
    {20, "1g.10gb+me", 1, 9.75, 16, 1, "{0,1,2,3,4,5,6}:1"},
    {15, "1g.20gb", 1, 19.62, 26, 4, "{0,2,4,6}:2"},
    {14, "2g.20gb", 2, 19.62, 32, 3, "{0,2,4}:2"},
    {9, "3g.40gb", 3, 39.50, 60, 2, "{0,4}:4"},
    {5, "4g.40gb", 4, 39.50, 64, 1, "{0}:4"},
    {0, "7g.80gb", 7, 79.25, 132, 1, "{0}:8"},
};

/* Three files in any order give the same document. */
static void test_h100_hbm3_three_files(void **state)
{
    (void)state;
    struct run a, b;
    import_ok(&a, (const char *[]){HBM3_L, HBM3_LGIP, HBM3_LGIPP, NULL});
    assert_model(a.m, "nvidia-h100-80gb-hbm3", "NVIDIA H100 80GB HBM3", "hopper", 79.25, 8, 7);
    assert_profiles(a.m, h100_sxm, sizeof(h100_sxm) / sizeof(h100_sxm[0]));
    assert_like_builtin(a.m, "h100-80gb-sxm");
    import_ok(&b, (const char *[]){HBM3_LGIPP, HBM3_LGIP, HBM3_L, NULL});
    assert_string_equal(a.yaml.data, b.yaml.data);
    run_free(&a);
    run_free(&b);
}

static const struct want nvl[] = {
    {19, "1g.12gb", 1, 10.75, 16, 7, "{0,1,2,3,4,5,6}:1"},
    {20, "1g.12gb+me", 1, 10.75, 16, 1, "{0,1,2,3,4,5,6}:1"},
    {15, "1g.24gb", 1, 21.62, 26, 4, "{0,2,4,6}:2"},
    {14, "2g.24gb", 2, 21.62, 32, 3, "{0,2,4}:2"},
    {9, "3g.47gb", 3, 46.38, 60, 2, "{0,4}:4"},
    {5, "4g.47gb", 4, 46.38, 64, 1, "{0}:4"},
    {0, "7g.94gb", 7, 93.12, 132, 1, "{0}:8"},
};

/* Product and memory from the newer nvidia-smi header (95830 MiB); the
 * MIG devices and processes tables after it are skipped. */
static void test_h100_nvl_azure(void **state)
{
    (void)state;
    struct run r;
    import_ok(&r, (const char *[]){NVL, NULL});
    assert_model(r.m, "nvidia-h100-nvl", "NVIDIA H100 NVL", "hopper", 93.58, 8, 7);
    assert_profiles(r.m, nvl, sizeof(nvl) / sizeof(nvl[0]));
    assert_like_builtin(r.m, "h100-nvl-94gb");
    run_free(&r);
}

/* The A100 40GB session has four -lgip tables (Free drops, Total stays),
 * -lgi, -lcip, the header and -L, but no -lgipp. */
static void test_a100_without_lgipp(void **state)
{
    (void)state;
    import_fails((const char *[]){A100, NULL}, -1, TS_INVALID, A100, 15, 28,
                 "no placements for profile ID 19 (1g.5gb): add the output of nvidia-smi mig "
                 "-lgipp");
    /* With -lgipp lines (written here, from the built-in a100-40gb) it
     * imports: the repeated tables are not conflicts, -lcip is skipped. */
    struct run r;
    import_ok(&r, (const char *[]){A100,
                                   "text:GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1\n"
                                   "GPU  0 Profile ID 20 Placements: {0,1,2,3,4,5,6}:1\n"
                                   "GPU  0 Profile ID 15 Placements: {0,2,4,6}:2\n"
                                   "GPU  0 Profile ID 14 Placements: {0,2,4}:2\n"
                                   "GPU  0 Profile ID  9 Placements: {0,4}:4\n"
                                   "GPU  0 Profile ID  5 Placement : {0}:4\n"
                                   "GPU  0 Profile ID  0 Placement : {0}:8\n",
                                   NULL});
    assert_model(r.m, "nvidia-a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB", "ampere", 40.0, 8, 7);
    assert_like_builtin(r.m, "a100-40gb");
    run_free(&r);
}

/* The other A100 40GB outputs (-cgi, -lgi, MIG devices) hold no profiles. */
static void test_a100_no_profile_table(void **state)
{
    (void)state;
    import_fails((const char *[]){"a100-40gb_mig-cgi-2x3g20gb.txt",
                                  "a100-40gb_mig-lgi-2x3g20gb.txt",
                                  "a100-40gb_nvidia-smi-mig-devices-2x3g20gb.txt", NULL},
                 -1, TS_INVALID, "", 0, 0,
                 "no GPU instance profile table (nvidia-smi mig -lgip output) in the input");
}

/* ---- layouts and names ------------------------------------------------- */

#define GB200_L "text:GPU 0: NVIDIA GB200 (UUID: GPU-0)\n"
#define GB200_LGIPP                                             \
    "text:GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1\n" \
    "GPU  0 Profile ID 20 Placements: {0,1,2,3,4,5,6}:1\n"      \
    "GPU  0 Profile ID 15 Placements: {0,2,4,6}:2\n"

/* The same GB200 profiles in the narrow (driver 570) and the wide (newer)
 * -lgip layouts. */
static void test_narrow_and_wide_layouts(void **state)
{
    (void)state;
    static const struct want narrow[] = {{19, "1g.24gb", 1, 20.00, 18, 7, "{0,1,2,3,4,5,6}:1"},
                                         {20, "1g.24gb+me", 1, 20.00, 18, 1, "{0,1,2,3,4,5,6}:1"},
                                         {15, "1g.47gb", 1, 45.50, 32, 4, "{0,2,4,6}:2"},
                                         {14, "2g.47gb", 2, 45.50, 38, 3, "{0,2,4}:2"}};
    static const struct want wide[] = {{19, "1g.23gb", 1, 22.00, 18, 7, "{0,1,2,3,4,5,6}:1"},
                                       {20, "1g.23gb+me", 1, 22.00, 18, 1, "{0,1,2,3,4,5,6}:1"},
                                       {15, "1g.47gb", 1, 45.50, 32, 4, "{0,2,4,6}:2"}};
    struct run r;
    import_ok(&r,
              (const char *[]){GB200_L, "gpu-operator-pr1303_gb200_mig-lgip-partial.txt",
                               GB200_LGIPP "GPU  0 Profile ID 14 Placements: {0,2,4}:2\n", NULL});
    assert_model(r.m, "nvidia-gb200", "NVIDIA GB200", "blackwell", 45.50, 8, 2);
    assert_profiles(r.m, narrow, 4);
    run_free(&r);
    import_ok(&r, (const char *[]){GB200_L, "mig-parted-issue227_gb200_mig-lgip-partial-wide.txt",
                                   GB200_LGIPP, NULL});
    assert_model(r.m, "nvidia-gb200", "NVIDIA GB200", "blackwell", 45.50, 8, 1);
    assert_profiles(r.m, wide, 3);
    run_free(&r);
}

/* Another board's wide excerpt (RTX PRO 6000 Max-Q class, 23.12 GiB). */
static void test_wide_excerpt_rtx(void **state)
{
    (void)state;
    static const struct want w[] = {{14, "1g.24gb", 1, 23.12, 46, 4, "{0,3,6,9}:3"},
                                    {21, "1g.24gb+me", 1, 23.12, 46, 1, "{0,3,6,9}:3"},
                                    {47, "1g.24gb+gfx", 1, 23.12, 46, 4, "{0,3,6,9}:3"}};
    struct run r;
    import_ok(&r,
              (const char *[]){"cubecos-issue312_rtx-pro-6000-blackwell_mig-lgip-partial-wide.txt",
                               "text:GPU 0: NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation "
                               "Edition (UUID: GPU-0)\n"
                               "GPU  0 Profile ID 14 Placements: {0,3,6,9}:3\n"
                               "GPU  0 Profile ID 21 Placements: {0,3,6,9}:3\n"
                               "GPU  0 Profile ID 47 Placements: {0,3,6,9}:3\n",
                               NULL});
    assert_int_equal(r.m->grid, 12);
    assert_profiles(r.m, w, 3);
    run_free(&r);
}

static char *h100_pcie_edited(const char *from, const char *to)
{
    size_t len;
    char *text = fixture(H100_PCIE, &len);
    char *p = strstr(text, from);
    assert_non_null(p);
    assert_int_equal(strlen(from), strlen(to));
    memcpy(p, to, strlen(to));
    return text;
}

/* A name the driver prints differently (7g.79gb) is still keyed by ID. */
static void test_profile_keyed_by_id(void **state)
{
    (void)state;
    char *text = h100_pcie_edited("MIG 7g.80gb", "MIG 7g.79gb");
    char input[8192];
    snprintf(input, sizeof(input), "text:%s", text);
    free(text);
    struct run r;
    import_ok(&r, (const char *[]){input, NULL});
    const struct cat_profile *p = &r.m->profiles[6];
    assert_string_equal(p->name, "7g.79gb");
    assert_int_equal(p->id, 0);
    assert_int_equal(p->mem_units, 8);
    assert_ptr_equal(cat_profile_find(r.m, "7g.80gb"), p);
    run_free(&r);
}

/* -lgip rows whose table header was cut off (GPU 6 of an H200 host). */
static void test_headerless_rows(void **state)
{
    (void)state;
    struct run r;
    import_ok(&r, (const char *[]){"mig-parted-issue120_h200-141gb_mig-lgip-partial.txt",
                                   "text:GPU 6: NVIDIA H200 (UUID: GPU-6)\n"
                                   "GPU  6 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1\n"
                                   "GPU  6 Profile ID 20 Placements: {0,1,2,3,4,5,6}:1\n"
                                   "GPU  6 Profile ID 15 Placements: {0,2,4,6}:2\n"
                                   "GPU  6 Profile ID 14 Placements: {0,2,4}:2\n"
                                   "GPU  6 Profile ID  9 Placements: {0,4}:4\n"
                                   "GPU  6 Profile ID  5 Placement : {0}:4\n",
                                   NULL});
    assert_model(r.m, "nvidia-h200", "NVIDIA H200", "hopper", 69.50, 8, 4);
    assert_int_equal(r.m->nprofiles, 6);
    assert_string_equal(r.m->profiles[4].name, "3g.71gb");
    run_free(&r);
}

/* Four GPUs in -lgip; -L and -lgipp only for GPU 0. */
static void test_gpu_selection(void **state)
{
    (void)state;
    const char *in[] = {SXM5_4GPU, HBM3_L, HBM3_LGIPP, NULL};
    struct run r;
    import_ok(&r, in);
    assert_profiles(r.m, h100_sxm, sizeof(h100_sxm) / sizeof(h100_sxm[0]));
    run_free(&r);
    run_import(&r, in, "h100-gpu0", 0);
    assert_int_equal(r.st, TS_OK);
    assert_string_equal(r.m->name, "h100-gpu0");
    run_free(&r);
    import_fails(in, 2, TS_INVALID, SXM5_4GPU, 58, 26, "no placements for profile ID 19 (1g.10gb)");
    import_fails(in, 5, TS_NOT_FOUND, "", 0, 0,
                 "no nvidia-smi mig -lgip rows for GPU 5 (there are some for GPU 0)");
}

static void test_bad_name(void **state)
{
    (void)state;
    struct run r;
    run_import(&r, (const char *[]){H100_PCIE, NULL}, "H100_PCIe", -1);
    assert_int_equal(r.st, TS_USAGE);
    assert_non_null(strstr(r.err.msg, "catalog name 'H100_PCIe' must be lowercase"));
    run_free(&r);
}

static char *first_bytes(const char *name, const char *upto, size_t extra)
{
    size_t len;
    char *text = fixture(name, &len);
    char *p = strstr(text, upto);
    assert_non_null(p);
    p[strlen(upto) + extra] = '\0';
    return text;
}

/* Windows line ends read the same as Unix ones. */
static void test_crlf(void **state)
{
    (void)state;
    size_t len;
    char *text = fixture(H100_PCIE, &len);
    static char crlf[16384];
    size_t n = (size_t)snprintf(crlf, sizeof(crlf), "text:");
    for (size_t i = 0; i < len && n + 2 < sizeof(crlf); i++) {
        if (text[i] == '\n')
            crlf[n++] = '\r';
        crlf[n++] = text[i];
    }
    free(text);
    struct run a, b;
    import_ok(&a, (const char *[]){H100_PCIE, NULL});
    import_ok(&b, (const char *[]){crlf, NULL});
    assert_string_equal(a.yaml.data, b.yaml.data);
    run_free(&a);
    run_free(&b);
}

/* The driver 535 header with MIG on shows memory N/A: the product comes
 * from the header, the memory from the full profile. */
static void test_header_without_memory(void **state)
{
    (void)state;
    char *text = first_bytes(NVL, "Placement : {0}:8", 1);
    char in[8192];
    snprintf(in, sizeof(in), "text:%s", text);
    free(text);
    struct run r;
    import_ok(&r,
              (const char *[]){"dcgm-exporter-issue544_h100-nvl_nvidia-smi-mig-enabled-partial.txt",
                               in, NULL});
    assert_model(r.m, "nvidia-h100-nvl", "NVIDIA H100 NVL", "hopper", 93.12, 8, 7);
    assert_profiles(r.m, nvl, sizeof(nvl) / sizeof(nvl[0]));
    run_free(&r);
}

/* nvidia-smi cuts long names in its header table; the -L name wins,
 * whichever comes first. */
static void test_list_name_beats_header(void **state)
{
    (void)state;
    static const char header[] =
        "text:|   0  NVIDIA RTX PRO 6000 Blac...    On  |   00000000:01:00.0 Off |    0 |\n"
        "| 30%   34C    P8     11W /  600W |    0MiB /  97887MiB |     0%      Default |\n";
    struct run r;
    import_ok(&r, (const char *[]){RTX, header, NULL});
    assert_string_equal(r.m->display, "NVIDIA RTX PRO 6000 Blackwell Server Edition");
    assert_true(fabs(r.m->memory_gib - 95.59) < 1e-9);
    run_free(&r);
    import_ok(&r, (const char *[]){header, RTX, NULL});
    assert_string_equal(r.m->display, "NVIDIA RTX PRO 6000 Blackwell Server Edition");
    run_free(&r);
}

/* A row of another table is never a profile, whatever it looks like. */
static void test_other_tables_skipped(void **state)
{
    (void)state;
    struct run r;
    import_ok(&r, (const char *[]){H100_PCIE,
                                   "text:| MIG devices: |\n"
                                   "|   0  MIG 1g.10gb       19     1/1        1.00       No     14"
                                   "     1     0   |\n",
                                   NULL});
    assert_profiles(r.m, h100_pcie, sizeof(h100_pcie) / sizeof(h100_pcie[0]));
    run_free(&r);
}

/* ---- errors, each at its line ------------------------------------------ */

/* A table cut in the middle of a row, and one cut between rows. */
static void test_truncated_table(void **state)
{
    (void)state;
    char in[8192];
    char *text = first_bytes(H100_PCIE, "MIG 3g.40gb        9     2/2", 0);
    snprintf(in, sizeof(in), "text:%s", text);
    free(text);
    import_fails((const char *[]){in, NULL}, -1, TS_INVALID, "inline.txt", 33, 36,
                 "malformed nvidia-smi mig -lgip row: expected memory GiB like 19.50, found end "
                 "of line");
    text = first_bytes(HBM3_LGIP, "MIG 2g.20gb", 0);
    *strrchr(text, '\n') = '\0';
    snprintf(in, sizeof(in), "text:%s", text);
    free(text);
    import_fails((const char *[]){HBM3_L, in, HBM3_LGIPP, NULL}, -1, TS_INVALID, HBM3_LGIPP, 4, 19,
                 "profile ID 14 of GPU 0 has placements but no nvidia-smi mig -lgip row");
}

static void test_lgip_without_lgipp(void **state)
{
    (void)state;
    import_fails((const char *[]){HBM3_L, HBM3_LGIP, NULL}, -1, TS_INVALID, HBM3_LGIP, 6, 26,
                 "no placements for profile ID 19 (1g.10gb): add the output of nvidia-smi mig "
                 "-lgipp");
    import_fails((const char *[]){HBM3_L, HBM3_LGIP, HBM3_LGIPP,
                                  "text:\n\nGPU  0 Profile ID 33 Placement : {0}:8\n", NULL},
                 -1, TS_INVALID, "inline.txt", 3, 19,
                 "profile ID 33 of GPU 0 has placements but no nvidia-smi mig -lgip row");
}

static void test_garbage(void **state)
{
    (void)state;
    import_fails((const char *[]){"text:hello\nthis is not nvidia-smi output\n| a | b |\n", NULL},
                 -1, TS_INVALID, "inline.txt", 0, 0, "no GPU instance profile table");
    char *text = h100_pcie_edited("|                                                             1"
                                  "     1     0   |",
                                  "|  this row is not what nvidia-smi prints, it is garbage"
                                  "                      |");
    char in[8192];
    snprintf(in, sizeof(in), "text:%s", text);
    free(text);
    import_fails((const char *[]){in, NULL}, -1, TS_INVALID, "inline.txt", 22, 4,
                 "malformed nvidia-smi mig -lgip row: expected a GPU index, found 'this'");
}

static void test_empty(void **state)
{
    (void)state;
    import_fails((const char *[]){"text:", NULL}, -1, TS_INVALID, "inline.txt", 0, 0,
                 "empty input: expected nvidia-smi output");
    import_fails((const char *[]){"text: \n\r\n\t\n", NULL}, -1, TS_INVALID, "inline.txt", 0, 0,
                 "empty input");
}

static void test_binary(void **state)
{
    (void)state;
    static const char bytes[] = "GPU 0: NVIDIA H100 PCIe (UUID: GPU-x)\n"
                                "\x7f"
                                "ELF\x02\x01\x01\0\0\0";
    struct cat_import *im = cat_import_new();
    struct ts_error e;
    assert_int_equal(cat_import_add(im, bytes, sizeof(bytes) - 1, "a.out", &e), TS_INVALID);
    assert_string_equal(e.file, "a.out");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 8);
    assert_string_equal(e.msg, "binary data (a NUL byte): expected nvidia-smi text output");
    cat_import_free(im);
}

static void test_overlong_line(void **state)
{
    (void)state;
    static char in[2048];
    int n = snprintf(in, sizeof(in), "text:line one\nline two\n");
    memset(in + n, 'x', 1024);
    import_fails((const char *[]){in, NULL}, -1, TS_INVALID, "inline.txt", 0, 0,
                 "no GPU instance profile table");
    in[n + 1024] = 'x';
    import_fails((const char *[]){in, NULL}, -1, TS_TOO_LARGE, "inline.txt", 3, 1025,
                 "line is longer than 1024 bytes");
}

static void test_placement_past_32_units(void **state)
{
    (void)state;
    import_fails((const char *[]){"text:GPU  0 Profile ID  0 Placements: {0,30}:4\n", NULL}, -1,
                 TS_INVALID, "inline.txt", 1, 34, "placement {0,30}:4 runs past 32 units");
    import_fails((const char *[]){"text:\nGPU  0 Profile ID 19 Placements: {0,2,1}:1\n", NULL}, -1,
                 TS_INVALID, "inline.txt", 2, 34,
                 "malformed nvidia-smi mig -lgipp line: expected placements like {0,2,4}:2");
}

#define ROW19 "|   0  MIG 1g.10gb       19     7/7        9.62       No     14     1     0   |\n"

static void test_conflicting_rows(void **state)
{
    (void)state;
    import_fails((const char *[]){H100_PCIE,
                                  "text:| GPU instance profiles: |\n" ROW19
                                  "|   0  MIG 1g.10gb       19     4/4        9.62       No     14"
                                  "     1     0   |\n",
                                  NULL},
                 -1, TS_INVALID, "inline.txt", 3, 26,
                 "conflicting rows for profile ID 19 of GPU 0: 1g.10gb, 4 max, 9.62 GiB, 14 SMs "
                 "here, 1g.10gb, 7 max, 9.62 GiB, 14 SMs at " H100_PCIE ":21");
    import_fails(
        (const char *[]){H100_PCIE, "text:GPU  0 Profile ID  9 Placements: {0,2}:4\n", NULL}, -1,
        TS_INVALID, "inline.txt", 1, 20,
        "conflicting placements for profile ID 9 of GPU 0: this line differs from " H100_PCIE
        ":48");
    import_fails((const char *[]){H100_PCIE, "text:GPU 0: NVIDIA H200 (UUID: GPU-1)\n", NULL}, -1,
                 TS_INVALID, "inline.txt", 1, 8,
                 "GPU 0 is 'NVIDIA H200' here but 'NVIDIA H100 PCIe'");
}

static void test_unknown_architecture(void **state)
{
    (void)state;
    import_fails(
        (const char *[]){"text:GPU 0: NVIDIA L40S (UUID: GPU-0)\n", HBM3_LGIP, HBM3_LGIPP, NULL},
        -1, TS_INVALID, "inline.txt", 1, 8, "cannot tell the architecture of 'NVIDIA L40S'");
}

/* Checks the catalog loader would make, made before anything is written. */
static void test_inconsistent_model(void **state)
{
    (void)state;
    import_fails((const char *[]){"text:GPU 0: NVIDIA A30 (UUID: GPU-0)\n" ROW19
                                  "|   0  MIG 1g.10gb       20     7/7        9.62       No     14"
                                  "     1     0   |\n"
                                  "GPU  0 Profile ID 19 Placements: {0}:1\n"
                                  "GPU  0 Profile ID 20 Placements: {1}:1\n",
                                  NULL},
                 -1, TS_INVALID, "inline.txt", 3, 26,
                 "profile name '1g.10gb' is both ID 19 and ID 20");
    import_fails((const char *[]){"text:GPU 0: NVIDIA A30 (UUID: GPU-0)\n"
                                  "|   0  MIG 1g.0gb        19     7/7        0.00       No     14"
                                  "     1     0   |\n"
                                  "GPU  0 Profile ID 19 Placements: {0}:1\n",
                                  NULL},
                 -1, TS_INVALID, "inline.txt", 2, 26, "profile 1g.0gb has no memory (0 GiB)");
    import_fails(
        (const char *[]){"text:|   0  NVIDIA A30   On   | 00000000:01:00.0 Off |  0 |\n"
                         "| N/A 40C P0 51W / 350W |  0MiB / 4096MiB |  0% Default |\n" ROW19
                         "GPU  0 Profile ID 19 Placements: {0}:1\n",
                         NULL},
        -1, TS_INVALID, "inline.txt", 3, 26,
        "profile 1g.10gb has 9.62 GiB, more than the card's 4.00 GiB");
}

/* 65 profile IDs for one GPU: more than a GpuModel may hold. */
static void test_too_many_profiles(void **state)
{
    (void)state;
    static char in[16384];
    size_t n = (size_t)snprintf(in, sizeof(in), "text:| GPU instance profiles: |\n");
    for (int id = 0; id < 65; id++)
        n += (size_t)snprintf(in + n, sizeof(in) - n,
                              "|   0  MIG 1g.%dgb  %d  1/1  1.00  No  1  0  0  |\n", id, id);
    import_fails((const char *[]){in, NULL}, -1, TS_TOO_LARGE, "inline.txt", 66, 21,
                 "more than 64 profiles for GPU 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100_pcie),
        cmocka_unit_test(test_rtx_pro_6000),
        cmocka_unit_test(test_a30),
        cmocka_unit_test(test_h100_hbm3_three_files),
        cmocka_unit_test(test_h100_nvl_azure),
        cmocka_unit_test(test_a100_without_lgipp),
        cmocka_unit_test(test_a100_no_profile_table),
        cmocka_unit_test(test_narrow_and_wide_layouts),
        cmocka_unit_test(test_wide_excerpt_rtx),
        cmocka_unit_test(test_profile_keyed_by_id),
        cmocka_unit_test(test_headerless_rows),
        cmocka_unit_test(test_gpu_selection),
        cmocka_unit_test(test_bad_name),
        cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_header_without_memory),
        cmocka_unit_test(test_list_name_beats_header),
        cmocka_unit_test(test_other_tables_skipped),
        cmocka_unit_test(test_truncated_table),
        cmocka_unit_test(test_lgip_without_lgipp),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_overlong_line),
        cmocka_unit_test(test_placement_past_32_units),
        cmocka_unit_test(test_conflicting_rows),
        cmocka_unit_test(test_unknown_architecture),
        cmocka_unit_test(test_inconsistent_model),
        cmocka_unit_test(test_too_many_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
