/*
 * model.c - assembling the tenancy model from loaded documents, and the
 * rules that span documents: one Fleet, at most one PriceBook, unique names,
 * uses that resolve, and workloads that do not contradict themselves. Rules
 * about bare-string list items (namespaces, trusts) run in spec.c, which
 * still has their YAML nodes. Catalog references (GPU models, profiles)
 * are checked by decide, which has the catalog.
 */
#include "spec/model.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "spec/internal.h"
#include "spec/spec.h"

static size_t count_kind(const struct spec_object *objs, size_t n, const char *kind)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += strcmp(objs[i].kind->kind, kind) == 0;
    return c;
}

static void collect(struct spec_model *m, const struct spec_object *objs, size_t n,
                    struct ts_diag *diag)
{
    size_t nt = count_kind(objs, n, "Tenant");
    m->tenants = ts_arena_array(&m->arena, nt ? nt : 1, sizeof(*m->tenants));
    for (size_t i = 0; i < n && m->tenants; i++) {
        const char *k = objs[i].kind->kind;
        if (strcmp(k, "Tenant") == 0) {
            m->tenants[m->ntenants++] = *(struct spec_tenant *)objs[i].obj;
        } else if (strcmp(k, "Fleet") == 0) {
            if (m->fleet)
                spec_report_loc(diag, &objs[i].loc,
                                "a second Fleet document; a spec describes "
                                "one fleet (the first is '%s' at %s:%d)",
                                m->fleet->name, m->fleet->loc.file, m->fleet->loc.line);
            else
                m->fleet = objs[i].obj;
        } else if (strcmp(k, "PriceBook") == 0) {
            if (m->pricebook)
                spec_report_loc(diag, &objs[i].loc,
                                "a second PriceBook document; a spec has at "
                                "most one (the first is '%s' at %s:%d)",
                                m->pricebook->name, m->pricebook->loc.file, m->pricebook->loc.line);
            else
                m->pricebook = objs[i].obj;
        }
    }
}

struct named {
    const char *name;
    size_t at;
};

static int cmp_named(const void *x, const void *y)
{
    const struct named *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->at > b->at) - (a->at < b->at);
}

size_t *spec__first_same(struct ts_arena *a, const char *const *names, size_t n,
                         struct ts_diag *diag)
{
    size_t *first = names ? ts_arena_array(a, n ? n : 1, sizeof(*first)) : NULL;
    struct named *v = first ? malloc((n ? n : 1) * sizeof(*v)) : NULL;
    if (!v) {
        struct ts_error e;
        ts_err(&e, TS_NOMEM, "out of memory");
        ts_diag_add(diag, &e);
        return NULL;
    }
    for (size_t k = 0; k < n; k++)
        v[k] = (struct named){names[k], k};
    qsort(v, n, sizeof(*v), cmp_named);
    for (size_t k = 0, head = 0; k < n; k++) {
        head = k && strcmp(v[k].name, v[k - 1].name) == 0 ? head : v[k].at;
        first[v[k].at] = head;
    }
    free(v);
    return first;
}

/* Tenant names, at each document's metadata.name: a repeat names the
 * first document of its name. */
static void check_tenant_names(struct ts_arena *a, const struct spec_object *objs, size_t n,
                               struct ts_diag *diag)
{
    size_t nt = count_kind(objs, n, "Tenant");
    size_t *at = ts_arena_array(a, nt ? nt : 1, sizeof(*at)); /* tenant k is objs[at[k]] */
    const char **names = ts_arena_array(a, nt ? nt : 1, sizeof(*names));
    for (size_t i = 0, k = 0; at && names && i < n; i++)
        if (strcmp(objs[i].kind->kind, "Tenant") == 0) {
            at[k] = i;
            names[k++] = objs[i].name;
        }
    size_t *first = spec__first_same(a, at ? names : NULL, nt, diag);
    if (!first)
        return;
    for (size_t k = 0; k < nt; k++) {
        const struct spec_object *o = &objs[at[k]], *f = &objs[at[first[k]]];
        if (first[k] != k)
            spec_report_loc(diag, &o->loc, "duplicate tenant name '%s' (first at %s:%d)", o->name,
                            f->loc.file, f->loc.line);
    }
}

/* ", " joined workload names of t, for messages. */
static const char *workload_names(struct ts_arena *a, const struct spec_tenant *t)
{
    char list[200] = "";
    for (size_t w = 0; w < t->nworkloads; w++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s", w ? ", " : "", t->workloads[w].name);
    }
    return ts_arena_strdup(a, t->nworkloads ? list : "none");
}

static void check_uses(struct spec_model *m, const struct spec_tenant *t, struct ts_diag *diag)
{
    for (size_t i = 0; i < t->nuses; i++) {
        const struct spec_use *u = &t->uses[i];
        const struct spec_tenant *owner = spec_tenant_find(m, u->tenant);
        int found = 0;
        for (size_t w = 0; owner && w < owner->nworkloads; w++)
            found |= strcmp(owner->workloads[w].name, u->workload) == 0;
        if (!owner)
            spec_report_loc(diag, &u->loc, "tenant: no tenant named '%s'", u->tenant);
        else if (!found)
            spec_report_loc(diag, &u->loc,
                            "workload: tenant '%s' has no workload named '%s' "
                            "(its workloads: %s)",
                            u->tenant, u->workload, workload_names(&m->arena, owner));
    }
}

const char *spec_isolation_forbidden(const struct spec_tenant *t, const struct spec_workload *w)
{
    if (w->isolation != SPEC_ISO_MPS && w->isolation != SPEC_ISO_TIME_SLICING &&
        w->isolation != SPEC_ISO_MEMORY_FRACTION)
        return NULL;
    if (t->contract == SPEC_CONTRACT_DEDICATED)
        return "a dedicated contract promises compute no other process shares";
    if (w->trust == SPEC_TRUST_UNTRUSTED || t->data_class != SPEC_DATA_INTERNAL)
        return "untrusted, confidential or regulated data needs a hardware boundary (mig or whole)";
    if (t->contract == SPEC_CONTRACT_ISOLATED && w->isolation != SPEC_ISO_MEMORY_FRACTION)
        return "an isolated (SLA) contract cannot share SMs with other processes";
    return NULL;
}

static void check_workload(const struct spec_tenant *t, const struct spec_workload *w,
                           struct ts_diag *diag)
{
    const char *forbidden = spec_isolation_forbidden(t, w);
    if (w->best_effort && w->p99_ms > 0)
        spec_report_loc(diag, &w->loc,
                        "bestEffort and p99Ms contradict each other: a "
                        "best-effort workload has no latency target; remove one of them");
    else if (t->contract == SPEC_CONTRACT_BEST_EFFORT && w->p99_ms > 0)
        spec_report_loc(diag, &w->loc,
                        "p99Ms: tenant '%s' has a best-effort contract, which "
                        "cannot promise a latency target; remove p99Ms or change the contract",
                        t->name);
    if (w->peer_to_peer && w->gpus < 2)
        spec_report_loc(diag, &w->loc,
                        "peerToPeer needs gpus: 2 or more (gpus is %d); raise "
                        "gpus or remove peerToPeer",
                        w->gpus);
    if (t->contract == SPEC_CONTRACT_VM && w->isolation != SPEC_ISO_AUTO &&
        w->isolation != SPEC_ISO_VGPU && w->isolation != SPEC_ISO_WHOLE &&
        w->isolation != SPEC_ISO_MIG)
        spec_report_loc(diag, &w->loc,
                        "isolation: a vm tenant's workloads run in virtual "
                        "machines, which can get vgpu, whole or mig, not %s",
                        spec_isolation_names[w->isolation]);
    else if (forbidden)
        spec_report_loc(diag, &w->loc, "isolation: %s is not allowed for tenant '%s': %s",
                        spec_isolation_names[w->isolation], t->name, forbidden);
}

static void check_workloads(const struct spec_tenant *t, struct ts_diag *diag)
{
    for (size_t i = 0; i < t->nworkloads; i++) {
        const struct spec_workload *w = &t->workloads[i];
        for (size_t j = 0; j < i; j++)
            if (strcmp(w->name, t->workloads[j].name) == 0)
                spec_report_loc(diag, &w->loc,
                                "duplicate workload name '%s' in tenant '%s' "
                                "(first at line %d)",
                                w->name, t->name, t->workloads[j].loc.line);
        check_workload(t, w, diag);
    }
}

static int valid_cuda_version(const char *v) { return spec_cuda_version(v) > 0; }

/* Nodes by name, then position: a name's first node leads its run. */
static int cmp_nodes(const void *a, const void *b, void *arg)
{
    const struct spec_fleet *f = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(f->nodes[x].name, f->nodes[y].name);
    return c ? c : (x > y) - (x < y);
}

/* first[i]: the first node named as node i is (i itself when none before);
 * sorted, so n log n name comparisons for tens of thousands of nodes. 0 on
 * out of memory. */
static int first_names(const struct spec_fleet *f, size_t *first)
{
    size_t *order = malloc((f->nnodes + 1) * sizeof(*order));
    if (!order)
        return 0;
    for (size_t i = 0; i < f->nnodes; i++)
        order[i] = i;
    qsort_r(order, f->nnodes, sizeof(*order), cmp_nodes, (void *)f);
    for (size_t k = 0; k < f->nnodes; k++)
        first[order[k]] = k > 0 && strcmp(f->nodes[order[k]].name, f->nodes[order[k - 1]].name) == 0
                              ? first[order[k - 1]]
                              : order[k];
    free(order);
    return 1;
}

static void check_fleet(const struct spec_fleet *f, struct ts_diag *diag)
{
    size_t *first = malloc((f->nnodes + 1) * sizeof(*first));
    if (!first || !first_names(f, first)) {
        free(first);
        spec_report_loc(diag, &f->loc, "out of memory checking %zu node names", f->nnodes);
        return;
    }
    for (size_t i = 0; i < f->nnodes; i++) {
        const struct spec_fleet_node *n = &f->nodes[i];
        if (first[i] != i)
            spec_report_loc(diag, &n->loc, "duplicate node name '%s' (first at line %d)", n->name,
                            f->nodes[first[i]].loc.line);
        if (n->cuda_version && !valid_cuda_version(n->cuda_version))
            spec_report_loc(diag, &n->loc, "cudaVersion: '%s' is not a version like \"13.4\"",
                            n->cuda_version);
    }
    free(first);
}

static void check_pricebook(const struct spec_pricebook *p, struct ts_diag *diag)
{
    const char *c = p->currency;
    if (strlen(c) != 3 || !isupper((unsigned char)c[0]) || !isupper((unsigned char)c[1]) ||
        !isupper((unsigned char)c[2]))
        spec_report_loc(diag, &p->loc, "currency: '%s' is not an ISO 4217 code like EUR", c);
    for (size_t i = 0; i < p->nprices; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(p->prices[i].model, p->prices[j].model) == 0)
                spec_report_loc(diag, &p->prices[i].loc, "duplicate price for model '%s'",
                                p->prices[i].model);
}

static int has_namespace(const struct spec_tenant *t, const char *ns)
{
    for (size_t i = 0; i < t->nnamespaces; i++)
        if (strcmp(t->namespaces[i], ns) == 0)
            return 1;
    return 0;
}

/* Defaults that depend on other fields: the RBAC group, each workload's
 * namespace, the lending limit of guaranteed contracts. */
static void fill_defaults(struct spec_model *m, struct spec_tenant *t, struct ts_diag *diag)
{
    if (!t->group)
        t->group = ts_arena_printf(&m->arena, "tessera:%s", t->name);
    if (t->lending_limit < 0 &&
        (t->contract == SPEC_CONTRACT_DEDICATED || t->contract == SPEC_CONTRACT_ISOLATED ||
         t->contract == SPEC_CONTRACT_VM))
        t->lending_limit = 0;
    for (size_t i = 0; i < t->nworkloads; i++) {
        struct spec_workload *w = &t->workloads[i];
        if (!w->namespace_)
            w->namespace_ = t->namespaces[0];
        else if (!has_namespace(t, w->namespace_))
            spec_report_loc(diag, &w->loc,
                            "namespace: '%s' is not one of tenant '%s''s "
                            "namespaces; add it to namespaces or pick one of them",
                            w->namespace_, t->name);
    }
}

/* A Kubernetes object name of the DNS subdomain kind (PriorityClass):
 * DNS labels joined by dots, at most 253 bytes. */
static int dns_subdomain(const char *s)
{
    char label[64];
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    while (*s) {
        size_t len = strcspn(s, ".");
        if (len == 0 || len >= sizeof(label))
            return 0;
        memcpy(label, s, len);
        label[len] = '\0';
        if (!spec_is_dns_label(label))
            return 0;
        s += len;
        if (*s == '.' && !*++s)
            return 0;
    }
    return 1;
}

/* podSecurity: host paths absolute, capabilities written as Linux names
 * (letters, digits, '_'; with or without CAP_), priority classes named as
 * Kubernetes names them and never the cluster's own system-* ones. */
static void check_pod_security(const struct spec_tenant *t, struct ts_diag *diag)
{
    const struct spec_pod_security *ps = &t->pod_security;
    for (size_t i = 0; i < ps->nhost_paths; i++)
        if (ps->host_paths[i].path[0] != '/')
            spec_report_loc(diag, &ps->host_paths[i].loc,
                            "path: must be absolute (start with '/'), got '%s'",
                            ps->host_paths[i].path);
    for (size_t i = 0; i < ps->ncapabilities; i++) {
        const char *c = ps->capabilities[i];
        if (strspn(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
            strlen(c))
            spec_report_loc(diag, &t->loc,
                            "podSecurity.capabilities[%zu]: must be a Linux capability name "
                            "such as NET_RAW, got '%s'",
                            i, c);
    }
    for (size_t i = 0; i < ps->npriority_classes; i++) {
        const char *p = ps->priority_classes[i];
        if (!dns_subdomain(p) || strncmp(p, "system-", 7) == 0)
            spec_report_loc(diag, &t->loc,
                            "podSecurity.priorityClasses[%zu]: must name a PriorityClass of "
                            "the cluster's own (a DNS subdomain, not a system- class such as "
                            "system-node-critical, which preempts every tenant), got '%s'",
                            i, p);
    }
}

void spec_model_assemble(struct spec_model *m, const struct spec_object *objs, size_t n,
                         struct ts_diag *diag)
{
    collect(m, objs, n, diag);
    if (!m->fleet) {
        struct ts_error e;
        ts_err(&e, TS_INVALID,
               "no Fleet document: a spec needs one Fleet (kind: Fleet) that "
               "lists the GPU nodes");
        ts_diag_add(diag, &e);
        return;
    }
    check_fleet(m->fleet, diag);
    check_tenant_names(&m->arena, objs, n, diag);
    for (size_t i = 0; i < m->ntenants; i++) {
        fill_defaults(m, &m->tenants[i], diag);
        check_uses(m, &m->tenants[i], diag);
        check_workloads(&m->tenants[i], diag);
        check_pod_security(&m->tenants[i], diag);
    }
    if (m->pricebook)
        check_pricebook(m->pricebook, diag);
}

const struct spec_tenant *spec_tenant_find(const struct spec_model *m, const char *name)
{
    for (size_t i = 0; i < m->ntenants; i++)
        if (strcmp(m->tenants[i].name, name) == 0)
            return &m->tenants[i];
    return NULL;
}

static int lists(const struct spec_tenant *t, const char *name)
{
    for (size_t i = 0; i < t->ntrusts; i++)
        if (strcmp(t->trusts[i], name) == 0)
            return 1;
    return 0;
}

int spec_tenants_trust(const struct spec_model *m, const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return 1;
    const struct spec_tenant *ta = spec_tenant_find(m, a), *tb = spec_tenant_find(m, b);
    return ta && tb && lists(ta, b) && lists(tb, a);
}

int spec_cuda_version(const char *v)
{
    if (!v)
        return 0;
    int major = 0, minor = 0, n = 0;
    if (sscanf(v, "%3d.%3d%n", &major, &minor, &n) != 2 || v[n] != '\0' || major <= 0 ||
        major > 99 || minor < 0 || minor > 99)
        return 0;
    return major * 100 + minor;
}
