/*
 * catalog.c - loading GpuModel documents, validating them, and the lookups
 * and geometry rules the planner relies on (see catalog.h).
 */
#include "catalog/catalog.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "spec/spec.h"

static const char *const arch_names[] = {"volta",  "turing",    "ampere", "ada",
                                         "hopper", "blackwell", NULL};

/* Read straight from YAML, then converted into struct cat_profile. */
struct raw_profile {
    struct spec_loc loc;
    const char *name;
    int id, compute, sms, max_count;
    double memory_gib;
    const char *placements;
};

struct raw_model {
    struct spec_loc loc;
    const char *name, *display;
    const char **products;
    size_t nproducts;
    double memory_gib;
    int sms, arch, mig, grid, compute_slices, mps_max_clients;
    const char *pci_device_id;
    struct raw_profile *profiles;
    size_t nprofiles;
};

/* Each table names the struct its rows fill as ROW; OFF(member) is where
 * a value goes in it. */
#define OFF(member) offsetof(ROW, member)
#define ROW struct raw_profile
static const struct spec_field profile_fields[] = {
    {.key = "name",
     .type = SPEC_F_STR,
     .offset = OFF(name),
     .required = 1,
     .help = "display name, e.g. 3g.40gb"},
    {.key = "id",
     .type = SPEC_F_INT,
     .offset = OFF(id),
     .required = 1,
     .max = CAT_PROFILE_ID_MAX,
     .help = "nvidia-smi / NVML profile ID on this board"},
    {.key = "computeSlices",
     .type = SPEC_F_INT,
     .offset = OFF(compute),
     .required = 1,
     .min = 1,
     .max = TS_MIG_SLICES_MAX,
     .help = "compute slices (the g in 3g)"},
    {.key = "memoryGiB",
     .type = SPEC_F_NUM,
     .offset = OFF(memory_gib),
     .required = 1,
     .min = 0.01,
     .max = CAT_MEMORY_GIB_MAX,
     .help = "usable memory as nvidia-smi mig -lgip reports it"},
    {.key = "sms",
     .type = SPEC_F_INT,
     .offset = OFF(sms),
     .max = CAT_SMS_MAX,
     .help = "multiprocessors (0 = unknown)"},
    {.key = "maxCount",
     .type = SPEC_F_INT,
     .offset = OFF(max_count),
     .required = 1,
     .min = 1,
     .max = CAT_PROFILE_COUNT_MAX,
     .help = "instances of this profile one card can hold"},
    {.key = "placements",
     .type = SPEC_F_STR,
     .offset = OFF(placements),
     .required = 1,
     .help = "allowed starts and size, as nvidia-smi mig -lgipp prints them: \"{0,4}:4\""},
};
static const struct spec_schema profile_schema = {
    .name = "GpuProfile", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(profile_fields)};
#undef ROW

#define ROW struct raw_model
static const struct spec_field model_fields[] = {
    {.key = "displayName",
     .type = SPEC_F_STR,
     .offset = OFF(display),
     .required = 1,
     .help = "human name"},
    {.key = "productNames",
     .type = SPEC_F_STRS,
     .offset = OFF(products),
     .count_offset = OFF(nproducts),
     .max = CAT_PRODUCT_NAMES_MAX,
     .help = "names NVML and nvidia-smi report for this card"},
    {.key = "memoryGiB",
     .type = SPEC_F_NUM,
     .offset = OFF(memory_gib),
     .required = 1,
     .min = 1,
     .max = CAT_MEMORY_GIB_MAX,
     .help = "usable memory of the whole card"},
    {.key = "sms",
     .type = SPEC_F_INT,
     .offset = OFF(sms),
     .max = CAT_SMS_MAX,
     .help = "multiprocessors of the whole card (0 = unknown)"},
    {.key = "architecture",
     .type = SPEC_F_ENUM,
     .offset = OFF(arch),
     .required = 1,
     .enums = arch_names,
     .help = "GPU generation"},
    {.key = "pciDeviceId",
     .type = SPEC_F_STR,
     .offset = OFF(pci_device_id),
     .help = "PCI device ID (vendor 10DE), four hex digits; for VM passthrough"},
    {.key = "mig", .type = SPEC_F_BOOL, .offset = OFF(mig), .help = "MIG-capable"},
    {.key = "migGrid",
     .type = SPEC_F_INT,
     .offset = OFF(grid),
     .min = 1,
     .max = TS_MIG_GRID_MAX,
     .help = "placement grid units (8 on most cards, 4 on A30, 12 on RTX PRO 6000)"},
    {.key = "computeSlices",
     .type = SPEC_F_INT,
     .offset = OFF(compute_slices),
     .min = 1,
     .max = TS_MIG_SLICES_MAX,
     .help = "compute slices of the full card in MIG mode"},
    {.key = "mpsMaxClients",
     .type = SPEC_F_INT,
     .offset = OFF(mps_max_clients),
     .min = 1,
     .max = 1024,
     .help = "MPS clients per device (default 48 on Volta, 64 after)"},
    {.key = "profiles",
     .type = SPEC_F_LIST,
     .offset = OFF(profiles),
     .count_offset = OFF(nprofiles),
     .max = CAT_PROFILES_MAX,
     .sub = &profile_schema,
     .help = "MIG GPU-instance profiles"},
};
static const struct spec_schema model_schema = {.name = "GpuModel.spec",
                                                .size = sizeof(ROW),
                                                .loc_offset = OFF(loc),
                                                SPEC_FIELDS(model_fields)};
#undef ROW

static const struct spec_kind cat_kinds[] = {
    {.kind = "GpuModel", .schema = &model_schema, .name_off = offsetof(struct raw_model, name)}};

/* "{0,2,4}:2" -> starts, size. Returns 0 on bad syntax. */
static int parse_placements(const char *s, struct ts_arena *a, int **starts, size_t *n, int *size)
{
    int tmp[TS_MIG_GRID_MAX];
    size_t count = 0;
    const char *p = s;
    if (*p++ != '{')
        return 0;
    for (;;) {
        if (!isdigit((unsigned char)*p) || count == TS_MIG_GRID_MAX)
            return 0;
        long v = strtol(p, (char **)&p, 10);
        if (v < 0 || v >= TS_MIG_GRID_MAX || (count && v <= tmp[count - 1]))
            return 0;
        tmp[count++] = (int)v;
        if (*p == '}')
            break;
        if (*p++ != ',')
            return 0;
    }
    p++;
    if (*p++ != ':' || !isdigit((unsigned char)*p))
        return 0;
    long sz = strtol(p, (char **)&p, 10);
    if (*p || sz < 1 || sz > TS_MIG_GRID_MAX)
        return 0;
    *starts = ts_arena_array(a, count, sizeof(int));
    if (!*starts)
        return 0;
    memcpy(*starts, tmp, count * sizeof(int));
    *n = count;
    *size = (int)sz;
    return 1;
}

static const char *name_attrs(const char *name)
{
    const char *p = strpbrk(name, "+-");
    return p ? p : "";
}

static int convert_profile(struct ts_arena *a, const struct raw_model *rm,
                           const struct raw_profile *rp, struct cat_profile *p,
                           struct ts_diag *diag)
{
    *p = (struct cat_profile){rp->loc,
                              rp->name,
                              rp->id,
                              rp->compute,
                              0,
                              rp->memory_gib,
                              rp->sms,
                              rp->max_count,
                              name_attrs(rp->name),
                              NULL,
                              0};
    if (!parse_placements(rp->placements, a, &p->starts, &p->nstarts, &p->mem_units)) {
        spec_report_loc(diag, &rp->loc,
                        "placements: '%.60s' is not like \"{0,2,4}:2\" "
                        "(ascending starts, then the size)",
                        rp->placements);
        return 1;
    }
    int bad = 0;
    if (p->starts[p->nstarts - 1] + p->mem_units > rm->grid) {
        spec_report_loc(diag, &rp->loc,
                        "placements: start %d + size %d runs past the %d-unit "
                        "grid",
                        p->starts[p->nstarts - 1], p->mem_units, rm->grid);
        bad++;
    }
    if (p->compute > rm->compute_slices) {
        spec_report_loc(diag, &rp->loc, "computeSlices %d is more than the card's %d", p->compute,
                        rm->compute_slices);
        bad++;
    }
    if (rp->memory_gib > rm->memory_gib) {
        spec_report_loc(diag, &rp->loc, "memoryGiB %g is more than the card's %g", rp->memory_gib,
                        rm->memory_gib);
        bad++;
    }
    return bad;
}

static int check_model_shape(const struct raw_model *rm, struct ts_diag *diag)
{
    if (rm->mig && (!rm->grid || !rm->compute_slices || !rm->nprofiles)) {
        spec_report_loc(diag, &rm->loc, "a MIG model needs migGrid, computeSlices and profiles");
        return 1;
    }
    if (!rm->mig && rm->nprofiles) {
        spec_report_loc(diag, &rm->loc, "profiles given but mig is false");
        return 1;
    }
    for (size_t i = 0; i < rm->nprofiles; i++)
        for (size_t j = 0; j < i; j++) {
            if (strcmp(rm->profiles[i].name, rm->profiles[j].name) == 0)
                spec_report_loc(diag, &rm->profiles[i].loc, "duplicate profile name '%s'",
                                rm->profiles[i].name);
            else if (rm->profiles[i].id == rm->profiles[j].id)
                spec_report_loc(diag, &rm->profiles[i].loc, "profile id %d is also '%s'",
                                rm->profiles[i].id, rm->profiles[j].name);
            else
                continue;
            return 1;
        }
    return 0;
}

static int convert_model(struct ts_arena *a, const struct raw_model *rm, struct cat_model *m,
                         struct ts_diag *diag)
{
    if (check_model_shape(rm, diag))
        return 1;
    *m = (struct cat_model){rm->loc,
                            rm->name,
                            rm->display,
                            rm->products,
                            rm->nproducts,
                            rm->memory_gib,
                            rm->sms,
                            arch_names[rm->arch],
                            rm->mig,
                            rm->grid,
                            rm->compute_slices,
                            rm->mps_max_clients,
                            rm->pci_device_id,
                            NULL,
                            0};
    if (m->pci_device_id && (strlen(m->pci_device_id) != 4 ||
                             strspn(m->pci_device_id, "0123456789abcdefABCDEF") != 4)) {
        spec_report_loc(diag, &rm->loc, "pciDeviceId: '%s' is not four hex digits like \"2330\"",
                        m->pci_device_id);
        return 1;
    }
    if (!m->mps_max_clients)
        m->mps_max_clients = rm->arch == 0 ? 48 : 64;
    m->profiles = ts_arena_array(a, rm->nprofiles ? rm->nprofiles : 1, sizeof(*m->profiles));
    if (!m->profiles)
        return 1;
    int bad = 0;
    for (size_t i = 0; i < rm->nprofiles; i++)
        bad += convert_profile(a, rm, &rm->profiles[i], &m->profiles[i], diag);
    m->nprofiles = rm->nprofiles;
    return bad;
}

/* Add objs to c; a model with an existing name replaces it. */
static void add_models(struct cat_catalog *c, const struct spec_object *objs, size_t n,
                       struct ts_diag *diag)
{
    struct cat_model *models = ts_arena_array(&c->arena, c->nmodels + n + 1, sizeof(*models));
    if (!models)
        return;
    if (c->nmodels)
        memcpy(models, c->models, c->nmodels * sizeof(*models));
    size_t count = c->nmodels;
    for (size_t i = 0; i < n; i++) {
        struct cat_model m;
        if (convert_model(&c->arena, objs[i].obj, &m, diag))
            continue;
        size_t slot = count;
        for (size_t j = 0; j < count; j++)
            if (strcmp(models[j].name, m.name) == 0)
                slot = j;
        models[slot] = m;
        if (slot == count)
            count++;
    }
    c->models = models;
    c->nmodels = count;
}

static struct cat_catalog *new_catalog(void)
{
    struct cat_catalog *c = calloc(1, sizeof(*c));
    if (c)
        ts_arena_init(&c->arena);
    return c;
}

static ts_status finish(struct cat_catalog *c, struct cat_catalog **out, struct ts_diag *diag)
{
    if (diag->count || diag->dropped) {
        cat_free(c);
        return TS_INVALID;
    }
    *out = c;
    return TS_OK;
}

ts_status cat_load_text(const char *text, size_t len, const char *name, struct cat_catalog **out,
                        struct ts_diag *diag)
{
    struct cat_catalog *c = new_catalog();
    if (!c)
        return TS_NOMEM;
    struct spec_object *objs;
    size_t n;
    if (spec_load_objects_text(text, len, name, cat_kinds, 1, &c->arena, &objs, &n, diag) == TS_OK)
        add_models(c, objs, n, diag);
    return finish(c, out, diag);
}

ts_status cat_load(const char *const *add_paths, size_t npaths, struct cat_catalog **out,
                   struct ts_diag *diag)
{
    struct cat_catalog *c = new_catalog();
    if (!c)
        return TS_NOMEM;
    struct spec_object *objs;
    size_t n;
    if (spec_load_objects_text(cat_builtin_yaml, strlen(cat_builtin_yaml), "<builtin catalog>",
                               cat_kinds, 1, &c->arena, &objs, &n, diag) == TS_OK)
        add_models(c, objs, n, diag);
    if (npaths && diag->count == 0 &&
        spec_load_objects(add_paths, npaths, cat_kinds, 1, &c->arena, &objs, &n, diag) == TS_OK)
        add_models(c, objs, n, diag);
    return finish(c, out, diag);
}

void cat_free(struct cat_catalog *c)
{
    if (!c)
        return;
    ts_arena_free(&c->arena);
    free(c);
}

/* name is m's display or product name, in any case */
static int product_named(const struct cat_model *m, const char *name)
{
    if (strcasecmp(m->display, name) == 0)
        return 1;
    for (size_t j = 0; j < m->nproduct_names; j++)
        if (strcasecmp(m->product_names[j], name) == 0)
            return 1;
    return 0;
}

const struct cat_model *cat_model_find(const struct cat_catalog *c, const char *name)
{
    for (size_t i = 0; i < c->nmodels; i++)
        if (strcasecmp(c->models[i].name, name) == 0)
            return &c->models[i];
    /* product names: models loaded later (--catalog files) win */
    for (size_t i = c->nmodels; i-- > 0;)
        if (product_named(&c->models[i], name))
            return &c->models[i];
    return NULL;
}

int cat_model_named(const struct cat_model *m, const char *name)
{
    return strcasecmp(m->name, name) == 0 || product_named(m, name);
}

int64_t cat_price_of(const struct spec_pricebook *pb, const struct cat_model *model)
{
    for (size_t i = 0; pb && model && i < pb->nprices; i++)
        if (cat_model_named(model, pb->prices[i].model))
            return pb->prices[i].per_gpu_hour;
    return -1;
}

/* "3g.40gb+me" -> compute 3, gb 40, attrs "+me"; "1c.3g.40gb" is not a GI name. */
static int parse_profile_name(const char *s, int *compute, double *gb, const char **attrs)
{
    char *end;
    long g = strtol(s, &end, 10);
    if (end == s || *end != 'g' || end[1] != '.' || g < 1)
        return 0;
    double mem = strtod(end + 2, &end);
    if (end[0] != 'g' || end[1] != 'b' || mem <= 0)
        return 0;
    *compute = (int)g;
    *gb = mem;
    *attrs = end + 2;
    return 1;
}

const struct cat_profile *cat_profile_find(const struct cat_model *m, const char *name)
{
    for (size_t i = 0; i < m->nprofiles; i++)
        if (strcmp(m->profiles[i].name, name) == 0)
            return &m->profiles[i];
    int compute;
    double gb;
    const char *attrs;
    if (!parse_profile_name(name, &compute, &gb, &attrs))
        return NULL;
    const struct cat_profile *best = NULL;
    double best_diff = 0;
    for (size_t i = 0; i < m->nprofiles; i++) {
        const struct cat_profile *p = &m->profiles[i];
        int pc;
        double pgb;
        const char *pattrs;
        if (!parse_profile_name(p->name, &pc, &pgb, &pattrs) || pc != compute ||
            strcmp(pattrs, attrs) != 0)
            continue;
        double diff = fabs(pgb - gb);
        if (diff <= pgb * 0.05 + 1 && (!best || diff < best_diff)) {
            best = p;
            best_diff = diff;
        }
    }
    return best;
}

int cat_profile_plain(const struct cat_profile *p) { return p->attrs[0] == '\0'; }

int cat_profile_allows(const struct cat_profile *p, int unit)
{
    for (size_t i = 0; i < p->nstarts; i++)
        if (p->starts[i] == unit)
            return 1;
    return 0;
}

const struct cat_profile *cat_profile_full(const struct cat_model *m)
{
    for (size_t i = 0; i < m->nprofiles; i++)
        if (cat_profile_plain(&m->profiles[i]) && m->profiles[i].mem_units == m->grid)
            return &m->profiles[i];
    return NULL;
}

ts_status cat_geometry_check(const struct cat_model *m, const struct cat_profile *const *profiles,
                             const int *starts, size_t n, struct ts_error *err)
{
    unsigned long long used = 0;
    int compute = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cat_profile *p = profiles[i];
        if (!cat_profile_allows(p, starts[i]))
            return ts_err(err, TS_INFEASIBLE, "%s cannot start at unit %d on %s", p->name,
                          starts[i], m->name);
        unsigned long long mask = ((1ull << p->mem_units) - 1ull) << starts[i];
        if (used & mask)
            return ts_err(err, TS_INFEASIBLE, "%s at %d:%d overlaps another instance", p->name,
                          starts[i], p->mem_units);
        used |= mask;
        compute += p->compute;
        size_t same = 0;
        for (size_t j = 0; j < n; j++)
            same += profiles[j] == p;
        if ((int)same > p->max_count)
            return ts_err(err, TS_INFEASIBLE, "%zu instances of %s; a card holds at most %d", same,
                          p->name, p->max_count);
    }
    if (compute > m->compute_slices)
        return ts_err(err, TS_INFEASIBLE, "%d compute slices; %s has %d", compute, m->name,
                      m->compute_slices);
    return TS_OK;
}

void cat_doc_reference(struct ts_sbuf *out) { spec_schema_doc(out, &model_schema); }
