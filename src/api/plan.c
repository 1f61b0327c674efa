/*
 * plan.c - GET /api/v1/plan and /api/v1/tenants[/{name}]: the plan's
 * document (report/), filtered to what the caller may see, and each
 * tenant's contract, decisions and entitlements.
 */
#include "api/internal.h"

#include <string.h>
#include "entitle/entitle.h"
#include "report/report.h"
#include "util/text.h"

/* 1 when a JSON row's "tenant" is name. */
static int row_of(const json_t *row, const char *name)
{
    const char *t = json_string_value(json_object_get(row, "tenant"));
    return t && strcmp(t, name) == 0;
}

/* Keep only the items of arr whose tenant is name; the number removed. */
static size_t keep_tenant(json_t *arr, const char *name)
{
    size_t removed = 0;
    for (size_t i = json_array_size(arr); i-- > 0;)
        if (!row_of(json_array_get(arr, i), name)) {
            json_array_remove(arr, i);
            removed++;
        }
    return removed;
}

/* Another tenant's holder is not shown: uuid and holder go null. */
static int hide_others(json_t *o, const char *tenant)
{
    json_t *h = json_object_get(o, "holder");
    if (json_is_object(h) && row_of(h, tenant))
        return json_is_string(json_object_get(o, "uuid"));
    json_object_set_new(o, "uuid", json_null());
    json_object_set_new(o, "holder", json_null());
    return 0;
}

/* A tenant's card: its own instances; the GPU UUID when one of them is
 * known, the card's holder only when it is the tenant. */
static size_t own_card(json_t *g, const char *tenant, size_t *others)
{
    json_t *inst = json_object_get(g, "instances"), *i;
    size_t before = json_array_size(inst), k;
    int known = 0;
    *others = keep_tenant(inst, tenant);
    json_array_foreach (inst, k, i)
        known |= hide_others(i, tenant);
    json_t *uuid = json_incref(json_object_get(g, "uuid"));
    hide_others(g, tenant);
    if (known && json_is_null(json_object_get(g, "uuid")))
        json_object_set(g, "uuid", uuid);
    json_decref(uuid);
    return before - *others;
}

/* GPUs per replica summed over rows: one guaranteed GPU per workload. */
static json_int_t naive(const json_t *rows)
{
    json_int_t n = 0;
    const json_t *d;
    size_t k;
    json_array_foreach (rows, k, d)
        n += json_integer_value(json_object_get(d, "gpus"));
    return n;
}

/* The plan as tenant sees it: own rows, own cards with own instances. */
static void filter_plan(json_t *doc, const char *tenant)
{
    keep_tenant(json_object_get(doc, "decisions"), tenant);
    json_t *gpus = json_object_get(doc, "gpus");
    size_t ncards = 0, ninst = 0;
    for (size_t i = json_array_size(gpus); i-- > 0;) {
        json_t *g = json_array_get(gpus, i);
        size_t others, own = own_card(g, tenant, &others);
        if (own == 0) {
            json_array_remove(gpus, i);
            continue;
        }
        json_object_set_new(g, "sharedWithOthers", json_boolean(others > 0));
        ncards++;
        ninst += own;
    }
    json_object_set_new(doc, "summary",
                        json_pack("{s:I, s:I, s:I}", "gpus", (json_int_t)ncards, "instances",
                                  (json_int_t)ninst, "naiveGpus",
                                  naive(json_object_get(doc, "decisions"))));
}

void api__plan(struct api__req *r)
{
    const char *tenant = NULL;
    if (!api__tenant(r, "tenant", &tenant) || !api__done(r))
        return;
    json_t *doc = report_json_doc(r->s->plan);
    if (doc)
        api__plan_custody(r->s, doc);
    if (doc && tenant)
        filter_plan(doc, tenant);
    if (doc)
        json_object_set_new(doc, "generation", json_integer((json_int_t)r->s->generation));
    api__send(r, doc, "tenant");
}

json_t *api__decisions(const struct api_state *s, const char *tenant)
{
    json_t *doc = report_json_doc(s->plan);
    json_t *rows = doc ? json_incref(json_object_get(doc, "decisions")) : NULL;
    json_decref(doc);
    if (rows && tenant)
        keep_tenant(rows, tenant);
    return rows;
}

/* Instances the plan placed for row d. */
static size_t placed(const struct plan *p, const struct decide_row *d)
{
    size_t n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        for (size_t k = 0; k < p->gpus[i].ninst; k++)
            n += p->gpus[i].inst[k].row == d;
    return n;
}

static json_t *entitlement(const struct api_state *s, const struct decide_row *d)
{
    char res[256];
    int memory = 0;
    double per = entitle_per_container(d, &memory);
    return json_pack("{s:o, s:s, s:o, s:o, s:f, s:s, s:I}", "workload",
                     ts_text_json(d->workload->name), "mechanism", decide_mech_names[d->mech],
                     "profile", d->profile ? ts_text_json(d->profile->name) : json_null(),
                     "resource", ts_text_json(entitle_resource_of(d, res, sizeof(res))),
                     "perContainer", per, "perContainerUnit", memory ? "GiB" : "devices",
                     "instances", (json_int_t)placed(s->plan, d));
}

static json_t *strings(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, ts_text_json(v[i]));
    return a;
}

static json_t *tenant_json(const struct api_state *s, const struct spec_tenant *t)
{
    json_t *ents = json_array();
    for (size_t i = 0; ents && i < s->decisions->nrows; i++)
        if (s->decisions->rows[i].tenant == t)
            json_array_append_new(ents, entitlement(s, &s->decisions->rows[i]));
    json_t *contract = json_pack(
        "{s:s, s:s, s:I, s:o}", "contract", spec_contract_names[t->contract], "dataClass",
        spec_data_class_names[t->data_class], "workloads", (json_int_t)t->nworkloads, "trusts",
        strings(t->trusts, t->ntrusts));
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "name", ts_text_json(t->name), "displayName",
                     ts_text_json(t->display_name ? t->display_name : t->name), "namespaces",
                     strings(t->namespaces, t->nnamespaces), "contract", contract, "decisions",
                     api__decisions(s, t->name), "entitlements", ents);
}

static void one_tenant(struct api__req *r, const char *name)
{
    const struct spec_tenant *t = spec_tenant_find(r->s->model, name);
    if (!api__done(r))
        return;
    if (!api__may_see(r->who, name))
        api__fail(r, 403, NULL, "you may only see tenant '%s'", r->who->tenant);
    else if (!t)
        api__fail(r, 404, NULL, "no tenant '%s' in the spec", name);
    else
        api__send(r, tenant_json(r->s, t), NULL);
}

void api__tenants(struct api__req *r, const char *name)
{
    struct api__page pg;
    if (name) {
        one_tenant(r, name);
        return;
    }
    if (!api__page(r, &pg) || !api__done(r))
        return;
    const struct spec_model *m = r->s->model;
    json_t *items = json_array();
    for (size_t i = 0; items && i < m->ntenants; i++)
        if (api__may_see(r->who, m->tenants[i].name))
            json_array_append_new(items, tenant_json(r->s, &m->tenants[i]));
    api__send(r, api__paged(r, items, &pg), "limit");
}
