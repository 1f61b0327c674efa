/*
 * policy.c - admit_policy_build: what each namespace may use, from the plan.
 *
 * One entitlement per decision row, named by entitle/ (which render uses
 * too), so what render writes and what admit allows cannot drift: the
 * DeviceClass and its devices per claim, the device-plugin or KubeVirt resource and its
 * per-container maximum (the LimitRange's number; bytes for
 * nvidia.com/gpu.memory), the MPS thread percentage and the pinned-memory or
 * fraction cap exactly as the claim template states it. Per namespace: its
 * tenant, contract, rows, and the nodes holding the tenant's instances.
 * Everything is copied into the policy's arena, so the plan may be freed
 * once the policy is built; the policy is read-only afterwards.
 */
#include "admit/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "entitle/entitle.h"

static const char *const default_runtimes[] = {"nvidia", NULL};

static const char *entry_profile(struct ts_arena *a, const struct decide_row *r)
{
    struct entitle_kind k;
    entitle_kind_of(r, &k);
    if (r->profile)
        return ts_arena_strdup(a, r->profile->name);
    if (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU)
        return k.per_replica == 1 ? "whole" : ts_arena_printf(a, "%d-whole", k.per_replica);
    if (r->mech == DECIDE_TIME_SLICING)
        return "shared";
    char q[64];
    entitle_quantity(r->cap_gib, q, sizeof(q));
    return ts_arena_strdup(a, q);
}

static const char *entry_kind(struct ts_arena *a, const struct decide_row *r)
{
    switch (r->mech) {
    case DECIDE_MIG: return ts_arena_printf(a, "mig %s", r->profile->name);
    case DECIDE_VGPU: return r->profile ? ts_arena_printf(a, "vgpu %s", r->profile->name) : "vgpu";
    case DECIDE_WHOLE: return "whole GPUs";
    case DECIDE_MEMORY_FRACTION: return "a memory fraction";
    default: return decide_mech_names[r->mech];
    }
}

static const char *entry_desc(struct ts_arena *a, const struct decide_row *r, const char *cap)
{
    struct entitle_kind k;
    entitle_kind_of(r, &k);
    switch (r->mech) {
    case DECIDE_MIG: return ts_arena_printf(a, "mig %s", r->profile->name);
    case DECIDE_VGPU:
        return r->profile ? ts_arena_printf(a, "vgpu %s", r->profile->name)
                          : ts_arena_printf(a, "vgpu of %d whole GPU%s", k.per_replica,
                                            k.per_replica == 1 ? "" : "s");
    case DECIDE_WHOLE:
        return k.per_replica == 1 ? "a whole GPU"
                                  : ts_arena_printf(a, "%d whole GPUs", k.per_replica);
    case DECIDE_MPS:
        return ts_arena_printf(a, "mps at %d%% of SMs and %s pinned memory", r->sm_percent, cap);
    case DECIDE_MEMORY_FRACTION: return ts_arena_printf(a, "a memory-fraction of %s", cap);
    default: return "time-slicing";
    }
}

static ts_status build_entry(struct ts_arena *a, const struct decide_row *r, struct ad_ent *e)
{
    struct entitle_kind k;
    char res[256], q[64];
    entitle_kind_of(r, &k);
    int vm = entitle_is_vm(r);
    e->workload = ts_arena_strdup(a, r->workload->name);
    e->mech = r->mech;
    e->cls = vm ? NULL : ts_arena_strdup(a, k.device_class);
    e->mig_class = !vm && r->mech == DECIDE_MIG;
    e->res = ts_arena_strdup(a, entitle_resource_of(r, res, sizeof(res)));
    e->per_claim = k.per_replica;
    e->sm_percent = r->sm_percent;
    if (!vm && decide_mech_has_memory_cap(r->mech)) {
        entitle_quantity(r->cap_gib, q, sizeof(q));
        e->cap = ts_arena_strdup(a, q);
        if (ad_quantity_str(q, &e->cap_bytes) != 0)
            return TS_INTERNAL;
    }
    /* what one container may request, as render's LimitRange has it */
    int memory;
    double each = entitle_per_container(r, &memory);
    e->res_each = memory ? e->cap_bytes : each;
    e->res_each_text = memory ? e->cap : ts_arena_printf(a, "%d", k.per_replica);
    e->res_max = e->res_each;
    e->res_max_text = e->res_each_text;
    e->claim_max = e->per_claim;
    e->cap_max = e->cap_bytes;
    e->cap_max_text = e->cap;
    e->shim = entitle_needs_shim(r);
    if (e->shim) {
        char text[ENTITLE_SHIM_LIMITS_TEXT_MAX];
        entitle_shim_configmap(r, res, sizeof(res));
        entitle_shim_limits_text(r, text, sizeof(text));
        if (!(e->shim_cm = ts_arena_strdup(a, res)) || !(e->shim_text = ts_arena_strdup(a, text)))
            return TS_NOMEM;
    }
    e->profile = entry_profile(a, r);
    e->kind = entry_kind(a, r);
    e->desc = entry_desc(a, r, e->cap);
    if (!e->workload || (!vm && !e->cls) || !e->res || !e->profile || !e->kind || !e->desc ||
        !e->res_each_text || (e->mech == DECIDE_MPS && !e->cap))
        return TS_NOMEM;
    return TS_OK;
}

/* Each row's maxima over the rows of its namespace with its class or
 * resource (two workloads of one tenant may share a class). */
static void ns_maxima(struct ad_ent **ents, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            struct ad_ent *e = ents[i];
            const struct ad_ent *o = ents[j];
            if (e->cls && o->cls && strcmp(e->cls, o->cls) == 0) {
                e->claim_max = o->per_claim > e->claim_max ? o->per_claim : e->claim_max;
                if (o->cap_bytes > e->cap_max) {
                    e->cap_max = o->cap_bytes;
                    e->cap_max_text = o->cap;
                }
            }
            if (strcmp(e->res, o->res) == 0 && o->res_each > e->res_max) {
                e->res_max = o->res_each;
                e->res_max_text = o->res_each_text;
            }
        }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The nodes holding t's instances (MIG, whole, sharing, guest), sorted, unique. */
static ts_status tenant_nodes(struct ts_arena *a, const struct plan *p, const struct spec_tenant *t,
                              struct ad_ns *ns)
{
    const char **nodes = ts_arena_array(a, p->ngpus + 1, sizeof(*nodes));
    if (!nodes)
        return TS_NOMEM;
    size_t n = 0;
    for (size_t g = 0; g < p->ngpus; g++) {
        const struct plan_gpu *gpu = &p->gpus[g];
        int mine = 0;
        for (size_t i = 0; i < gpu->ninst; i++)
            mine |= gpu->inst[i].row && gpu->inst[i].row->tenant == t;
        int seen = 0;
        for (size_t j = 0; j < n && mine; j++)
            seen |= strcmp(nodes[j], gpu->node->name) == 0;
        if (mine && !seen && !(nodes[n++] = ts_arena_strdup(a, gpu->node->name)))
            return TS_NOMEM;
    }
    qsort(nodes, n, sizeof(*nodes), cmp_str);
    ns->nodes = nodes;
    ns->nnodes = n;
    return TS_OK;
}

/* The contract's podSecurity, copied into the policy. */
static ts_status build_pod_security(struct ts_arena *a, const struct spec_tenant *t,
                                    struct ad_ns *ns)
{
    const struct spec_pod_security *ps = &t->pod_security;
    const char **caps = ts_arena_array(a, ps->ncapabilities + 1, sizeof(*caps));
    const char **prios = ts_arena_array(a, ps->npriority_classes + 1, sizeof(*prios));
    struct ad_host_path *hp = ts_arena_array(a, ps->nhost_paths + 1, sizeof(*hp));
    if (!caps || !hp || !prios)
        return TS_NOMEM;
    for (size_t i = 0; i < ps->npriority_classes; i++)
        if (!(prios[ns->nprios++] = ts_arena_strdup(a, ps->priority_classes[i])))
            return TS_NOMEM;
    ns->prios = prios;
    ns->level = ps->level;
    for (size_t i = 0; i < ps->ncapabilities; i++)
        if (!(caps[ns->ncaps++] = ts_arena_strdup(a, ps->capabilities[i])))
            return TS_NOMEM;
    for (size_t i = 0; i < ps->nhost_paths; i++, ns->nhost_paths++) {
        hp[i].writable = ps->host_paths[i].writable;
        if (!(hp[i].path = ts_arena_strdup(a, ps->host_paths[i].path)))
            return TS_NOMEM;
    }
    ns->caps = caps;
    ns->host_paths = hp;
    return TS_OK;
}

static ts_status build_ns(struct admit_policy *pol, const struct plan *p,
                          const struct spec_tenant *t, const char *name, struct ad_ns *ns)
{
    const struct decide_result *d = p->decisions;
    struct ad_ent **ents = ts_arena_array(&pol->arena, d->nrows + 1, sizeof(*ents));
    ns->name = ts_arena_strdup(&pol->arena, name);
    ns->tenant = ts_arena_strdup(&pol->arena, t->name);
    ns->contract = t->contract;
    if (!ents || !ns->name || !ns->tenant)
        return TS_NOMEM;
    for (size_t i = 0; i < d->nrows; i++)
        if (d->rows[i].tenant == t && strcmp(d->rows[i].workload->namespace_, name) == 0)
            ents[ns->nents++] = &pol->all[i];
    ns_maxima(ents, ns->nents);
    ns->ents = (const struct ad_ent **)ents;
    ts_status st = build_pod_security(&pol->arena, t, ns);
    return st == TS_OK ? tenant_nodes(&pol->arena, p, t, ns) : st;
}

static int cmp_ns(const void *a, const void *b)
{
    return strcmp(((const struct ad_ns *)a)->name, ((const struct ad_ns *)b)->name);
}

static ts_status build_tables(struct admit_policy *pol, const struct plan *p)
{
    const struct spec_model *m = p->model;
    const struct decide_result *d = p->decisions;
    struct ts_arena *a = &pol->arena;
    size_t nns = 0;
    for (size_t i = 0; i < m->ntenants; i++)
        nns += m->tenants[i].nnamespaces;
    pol->all = ts_arena_array(a, d->nrows + 1, sizeof(*pol->all));
    pol->ns = ts_arena_array(a, nns + 1, sizeof(*pol->ns));
    pol->fleet = ts_arena_array(a, m->fleet->nnodes + 1, sizeof(*pol->fleet));
    if (!pol->all || !pol->ns || !pol->fleet)
        return TS_NOMEM;
    ts_status st = TS_OK;
    for (size_t i = 0; st == TS_OK && i < d->nrows; i++, pol->nall++)
        st = build_entry(a, &d->rows[i], &pol->all[i]);
    for (size_t i = 0; st == TS_OK && i < m->ntenants; i++)
        for (size_t j = 0; st == TS_OK && j < m->tenants[i].nnamespaces; j++)
            st = build_ns(pol, p, &m->tenants[i], m->tenants[i].namespaces[j],
                          &pol->ns[pol->nns++]);
    for (size_t i = 0; st == TS_OK && i < m->fleet->nnodes; i++)
        if (!(pol->fleet[pol->nfleet++] = ts_arena_strdup(a, m->fleet->nodes[i].name)))
            st = TS_NOMEM;
    qsort(pol->ns, pol->nns, sizeof(*pol->ns), cmp_ns);
    if (st == TS_OK)
        qsort(pol->fleet, pol->nfleet, sizeof(*pol->fleet), cmp_str);
    return st;
}

static ts_status build_options(struct admit_policy *pol, const struct admit_options *opt)
{
    const char *const *rc = opt && opt->runtime_classes ? opt->runtime_classes : default_runtimes;
    size_t n = 0;
    while (rc[n])
        n++;
    pol->runtime = ts_arena_array(&pol->arena, n + 1, sizeof(*pol->runtime));
    if (!pol->runtime)
        return TS_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (!(pol->runtime[pol->nruntime++] = ts_arena_strdup(&pol->arena, rc[i])))
            return TS_NOMEM;
    /* without --shim-path, render's path where the plan needs the shim */
    const char *shim = opt && opt->shim_path ? opt->shim_path : NULL;
    for (size_t i = 0; !shim && i < pol->nall; i++)
        if (pol->all[i].shim)
            shim = ENTITLE_SHIM_LIBRARY;
    if (shim && !(pol->shim = ts_arena_strdup(&pol->arena, shim)))
        return TS_NOMEM;
    return TS_OK;
}

ts_status admit_policy_build(const struct plan *p, const struct admit_options *opt,
                             struct admit_policy **out, struct ts_error *err)
{
    *out = NULL;
    if (!p || !p->model || !p->model->fleet || !p->decisions)
        return ts_err(err, TS_INVALID, "admit: the policy needs a plan");
    struct admit_policy *pol = calloc(1, sizeof(*pol));
    if (!pol)
        return ts_err(err, TS_NOMEM, "admit: out of memory");
    ts_arena_init(&pol->arena);
    ts_status st = build_tables(pol, p);
    if (st == TS_OK)
        st = build_options(pol, opt);
    if (st != TS_OK) {
        admit_policy_free(pol);
        return ts_err(err, st, "admit: building the policy failed: %s", ts_status_str(st));
    }
    *out = pol;
    return TS_OK;
}

void admit_policy_free(struct admit_policy *pol)
{
    if (!pol)
        return;
    ts_arena_free(&pol->arena);
    free(pol);
}

/* ---- lookups ---- */

const struct ad_ns *ad_ns_find(const struct admit_policy *pol, const char *name)
{
    struct ad_ns key = {.name = name};
    return pol->nns ? bsearch(&key, pol->ns, pol->nns, sizeof(*pol->ns), cmp_ns) : NULL;
}

static int has_class(const struct ad_ent *e, const char *cls)
{
    return e->cls && strcmp(e->cls, cls) == 0;
}

const struct ad_ent *ad_ent_class(const struct ad_ns *ns, const char *cls)
{
    for (size_t i = 0; ns && i < ns->nents; i++)
        if (has_class(ns->ents[i], cls))
            return ns->ents[i];
    return NULL;
}

const struct ad_ent *ad_ent_res(const struct ad_ns *ns, const char *res)
{
    for (size_t i = 0; ns && i < ns->nents; i++)
        if (strcmp(ns->ents[i]->res, res) == 0)
            return ns->ents[i];
    return NULL;
}

const struct ad_ent *ad_any_class(const struct admit_policy *pol, const char *cls)
{
    for (size_t i = 0; i < pol->nall; i++)
        if (has_class(&pol->all[i], cls))
            return &pol->all[i];
    return NULL;
}

int ad_is_fleet_node(const struct admit_policy *pol, const char *node)
{
    return pol->nfleet &&
           bsearch(&node, pol->fleet, pol->nfleet, sizeof(*pol->fleet), cmp_str) != NULL;
}

int ad_is_planned_node(const struct ad_ns *ns, const char *node)
{
    return ns->nnodes && bsearch(&node, ns->nodes, ns->nnodes, sizeof(*ns->nodes), cmp_str) != NULL;
}

/* Append "desc or desc (name)" for the rows of ns named name. */
static void offer_group(const struct ad_ns *ns, int by_class, const char *name, char *buf,
                        size_t size)
{
    size_t len = strlen(buf);
    int n = snprintf(buf + len, size - len, "%s", len ? " or " : "");
    for (size_t i = 0, first = 1; n >= 0 && i < ns->nents; i++) {
        const struct ad_ent *e = ns->ents[i];
        const char *mine = by_class ? e->cls : e->res;
        size_t at = strlen(buf);
        if (!mine || strcmp(mine, name) != 0)
            continue;
        int seen = 0; /* two rows that read the same (two MIG workloads of one profile) */
        for (size_t j = 0; j < i; j++)
            seen |= (by_class ? ns->ents[j]->cls : ns->ents[j]->res) &&
                    strcmp(by_class ? ns->ents[j]->cls : ns->ents[j]->res, name) == 0 &&
                    strcmp(ns->ents[j]->desc, e->desc) == 0;
        if (!seen)
            n = snprintf(buf + at, size - at, "%s%s", first ? "" : " or ", e->desc);
        first = 0;
    }
    len = strlen(buf);
    snprintf(buf + len, size - len, " (%s%s)", by_class ? "class " : "", name);
}

void ad_offer(const struct ad_ns *ns, int by_class, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; ns && i < ns->nents; i++) {
        const char *name = by_class ? ns->ents[i]->cls : ns->ents[i]->res;
        int seen = !name;
        for (size_t j = 0; j < i && !seen; j++) {
            const char *other = by_class ? ns->ents[j]->cls : ns->ents[j]->res;
            seen = other && strcmp(other, name) == 0;
        }
        if (!seen)
            offer_group(ns, by_class, name, buf, size);
    }
}

void ad_may_use(struct ad_ctx *c, int by_class, int sharing, char *buf, size_t size)
{
    char offer[AD_MSG_MAX / 2];
    ad_offer(c->ns, by_class, offer, sizeof(offer));
    const char *why = sharing && c->ns->contract == SPEC_CONTRACT_DEDICATED
                          ? " (a dedicated contract never shares a GPU)"
                          : "";
    if (offer[0])
        snprintf(buf, size, "tenant %s may use %s only%s", c->ns->tenant, offer, why);
    else
        snprintf(buf, size, "tenant %s may use no GPU %s in namespace %s%s", c->ns->tenant,
                 by_class ? "device class" : "resource", c->ns->name, why);
}
