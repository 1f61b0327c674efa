/*
 * tenant.c - tenants/<tenant>/: per namespace a Namespace, a ResourceQuota
 * and a LimitRange that list every GPU resource of the render (what the
 * plan entitles the namespace to, 0 for everything else, the driver's own
 * classes included), a RoleBinding of the tenant's group to `edit`, a
 * default-deny NetworkPolicy with the allowances the tenant needs, a Kueue
 * ClusterQueue and LocalQueue; per workload a ResourceClaimTemplate carrying
 * the NVIDIA DRA driver's opaque config (or, for VMs, KubeVirt
 * VirtualMachines); per workload whose memory cap tessera's CUDA shim
 * enforces, a ConfigMap with its limit file.
 */
#include "render/internal.h"

#include <stdio.h>
#include <string.h>

static int in_ns(const struct decide_row *r, const struct spec_tenant *t, const char *ns)
{
    return r->tenant == t && strcmp(r->workload->namespace_, ns) == 0;
}

/* Devices of `class` (DRA) the namespace is entitled to. */
static int class_count(const struct render_ctx *c, const struct spec_tenant *t, const char *ns,
                       const char *class)
{
    int n = 0;
    const struct decide_result *d = c->p->decisions;
    for (size_t i = 0; i < d->nrows; i++) {
        struct entitle_kind k;
        entitle_kind_of(&d->rows[i], &k);
        if (in_ns(&d->rows[i], t, ns) && !entitle_is_vm(&d->rows[i]) &&
            strcmp(k.device_class, class) == 0)
            n += k.per_replica * d->rows[i].workload->replicas;
    }
    return n;
}

/* Units of a device-plugin (or KubeVirt) resource the namespace may request
 * in all (*total) and in one container (*one); GiB for gpu.memory. */
static void plugin_count(const struct render_ctx *c, const struct spec_tenant *t, const char *ns,
                         const char *res, double *total, double *one)
{
    *total = *one = 0;
    const struct decide_result *d = c->p->decisions;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        char mine[256];
        int memory;
        if (!in_ns(r, t, ns) || strcmp(entitle_resource_of(r, mine, sizeof(mine)), res) != 0)
            continue;
        double each = entitle_per_container(r, &memory);
        *total += each * r->workload->replicas;
        *one = each > *one ? each : *one;
    }
}

static json_t *amount(const char *res, double v)
{
    char buf[64];
    if (strcmp(res, "nvidia.com/gpu.memory") == 0)
        entitle_quantity(v, buf, sizeof(buf));
    else
        snprintf(buf, sizeof(buf), "%.0f", v);
    return json_string(buf);
}

static json_t *quota(const struct render_ctx *c, const struct spec_tenant *t, const char *ns)
{
    json_t *hard = json_object();
    char key[300];
    for (size_t i = 0; render__dra(c) && i < c->nclasses; i++) {
        snprintf(key, sizeof(key), "%s.deviceclass.resource.k8s.io/devices", c->classes[i].name);
        json_object_set_new(hard, key, amount("", class_count(c, t, ns, c->classes[i].name)));
    }
    if (render__dra(c)) { /* the driver's own classes would bypass the plan */
        json_object_set_new(hard, "gpu.nvidia.com.deviceclass.resource.k8s.io/devices",
                            json_string("0"));
        json_object_set_new(hard, "mig.nvidia.com.deviceclass.resource.k8s.io/devices",
                            json_string("0"));
    }
    for (size_t i = 0; i < c->nplugin; i++) {
        double total, one;
        plugin_count(c, t, ns, c->plugin[i], &total, &one);
        snprintf(key, sizeof(key), "requests.%s", c->plugin[i]);
        json_object_set_new(hard, key, amount(c->plugin[i], total));
    }
    json_t *o = render__object("v1", "ResourceQuota", "tessera-gpus", ns);
    json_object_set_new(o, "spec", json_pack("{s:o}", "hard", hard));
    return o;
}

/* No pod of a PriorityClass the contract does not name: a quota of 0 pods
 * over those classes (Kubernetes' way to limit priority classes to some
 * namespaces); the webhook denies the same pods with a reason. */
static json_t *priority_quota(const struct spec_tenant *t, const char *ns)
{
    const struct spec_pod_security *ps = &t->pod_security;
    json_t *exprs = json_pack("[{s:s, s:s}]", "scopeName", "PriorityClass", "operator", "Exists");
    if (ps->npriority_classes) {
        json_t *values = json_array();
        for (size_t i = 0; i < ps->npriority_classes; i++)
            json_array_append_new(values, json_string(ps->priority_classes[i]));
        json_array_append_new(exprs, json_pack("{s:s, s:s, s:o}", "scopeName", "PriorityClass",
                                               "operator", "NotIn", "values", values));
    }
    json_t *o = render__object("v1", "ResourceQuota", "tessera-priority-classes", ns);
    json_object_set_new(o, "spec",
                        json_pack("{s:{s:s}, s:{s:o}}", "hard", "pods", "0", "scopeSelector",
                                  "matchExpressions", exprs));
    return o;
}

/* The most of each device-plugin resource one container may ask for, and a
 * default of 0: without one the API server defaults a container's limit to
 * the max, and every container of the namespace would take a GPU. */
static json_t *limit_range(const struct render_ctx *c, const struct spec_tenant *t, const char *ns)
{
    json_t *max = json_object(), *zero = json_object();
    for (size_t i = 0; i < c->nplugin; i++) {
        double total, one;
        plugin_count(c, t, ns, c->plugin[i], &total, &one);
        json_object_set_new(max, c->plugin[i], amount(c->plugin[i], one));
        json_object_set_new(zero, c->plugin[i], amount(c->plugin[i], 0));
    }
    json_t *o = render__object("v1", "LimitRange", "tessera-gpu-limits", ns);
    json_object_set_new(o, "spec",
                        json_pack("{s:[{s:s, s:o, s:O, s:o}]}", "limits", "type", "Container",
                                  "max", max, "default", zero, "defaultRequest", zero));
    return o;
}

static json_t *role_binding(const struct spec_tenant *t, const char *ns)
{
    json_t *o = render__object("rbac.authorization.k8s.io/v1", "RoleBinding", "tessera-tenant-edit",
                               ns);
    json_object_set_new(o, "roleRef",
                        json_pack("{s:s, s:s, s:s}", "apiGroup", "rbac.authorization.k8s.io",
                                  "kind", "ClusterRole", "name", "edit"));
    json_object_set_new(o, "subjects",
                        json_pack("[{s:s, s:s, s:s}]", "apiGroup", "rbac.authorization.k8s.io",
                                  "kind", "Group", "name", t->group));
    return o;
}

/* Whether t's pods need what the API server's Pod Security admission cannot
 * grant as an exception: host paths or capabilities its contract names, the
 * shim's host path, KubeVirt's launcher pods. */
static int pss_exceeded(const struct render_ctx *c, const struct spec_tenant *t)
{
    const struct decide_result *d = c->p->decisions;
    int over = t->pod_security.ncapabilities || t->pod_security.nhost_paths ||
               t->contract == SPEC_CONTRACT_VM;
    for (size_t i = 0; i < d->nrows && !over; i++)
        over = d->rows[i].tenant == t && entitle_needs_shim(&d->rows[i]);
    return over;
}

/* pod-security.kubernetes.io labels: enforce the tenant's level, so the API
 * server backs the webhook up; where the contract needs more than the level
 * allows, enforce privileged (the webhook alone holds the line) and keep
 * the level as warn and audit. */
static void pss_labels(const struct render_ctx *c, const struct spec_tenant *t, json_t *labels)
{
    const char *level = spec_pss_names[t->pod_security.level];
    json_object_set_new(labels, "pod-security.kubernetes.io/enforce",
                        json_string(pss_exceeded(c, t) ? "privileged" : level));
    json_object_set_new(labels, "pod-security.kubernetes.io/warn", json_string(level));
    json_object_set_new(labels, "pod-security.kubernetes.io/audit", json_string(level));
}

static json_t *namespace_obj(const struct render_ctx *c, const struct spec_tenant *t,
                             const char *ns)
{
    json_t *o = render__object("v1", "Namespace", ns, NULL);
    json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
    pss_labels(c, t, labels);
    json_object_set_new(labels, ENTITLE_LABEL_TENANT, json_string(t->name));
    json_object_set_new(labels, ENTITLE_LABEL_CONTRACT,
                        json_string(spec_contract_names[t->contract]));
    return o;
}

/* ---- network ---- */

static json_t *policy(const char *name, const char *ns, json_t *spec)
{
    json_t *o = render__object("networking.k8s.io/v1", "NetworkPolicy", name, ns);
    json_object_set_new(o, "spec", spec);
    return o;
}

static json_t *tenant_peer(const char *tenant)
{
    return json_pack("{s:{s:{s:s}}}", "namespaceSelector", "matchLabels", ENTITLE_LABEL_TENANT,
                     tenant);
}

static void network(const struct render_ctx *c, const struct spec_tenant *t, const char *ns,
                    json_t *docs)
{
    json_array_append_new(docs, policy("tessera-default-deny", ns,
                                       json_pack("{s:{}, s:[s,s]}", "podSelector", "policyTypes",
                                                 "Ingress", "Egress")));
    json_t *dns = json_pack("{s:[{s:{s:{s:s}}, s:{s:{s:s}}}], s:[{s:s, s:i}, {s:s, s:i}]}", "to",
                            "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name",
                            "kube-system", "podSelector", "matchLabels", "k8s-app", "kube-dns",
                            "ports", "protocol", "UDP", "port", 53, "protocol", "TCP", "port", 53);
    json_array_append_new(
        docs, policy("tessera-allow-tenant", ns,
                     json_pack("{s:{}, s:[s,s], s:[{s:[o]}], s:[{s:[o]}, o]}", "podSelector",
                               "policyTypes", "Ingress", "Egress", "ingress", "from",
                               tenant_peer(t->name), "egress", "to", tenant_peer(t->name), dns)));
    /* consumers reach the shared workloads they use, and only those pods */
    const struct spec_model *m = c->p->model;
    for (size_t i = 0; i < t->nuses; i++) {
        const struct spec_tenant *owner = spec_tenant_find(m, t->uses[i].tenant);
        char name[200];
        snprintf(name, sizeof(name), "tessera-uses-%s-%s", t->uses[i].tenant, t->uses[i].workload);
        json_array_append_new(
            docs,
            policy(name, ns,
                   json_pack("{s:{}, s:[s], s:[{s:[{s:{s:{s:s}}, s:{s:{s:s}}}]}]}", "podSelector",
                             "policyTypes", "Egress", "egress", "to", "namespaceSelector",
                             "matchLabels", ENTITLE_LABEL_TENANT, owner->name, "podSelector",
                             "matchLabels", ENTITLE_LABEL_WORKLOAD, t->uses[i].workload)));
    }
    for (size_t i = 0; i < m->ntenants; i++)
        for (size_t u = 0; u < m->tenants[i].nuses; u++) {
            const struct spec_use *use = &m->tenants[i].uses[u];
            if (strcmp(use->tenant, t->name) != 0)
                continue;
            char name[200];
            snprintf(name, sizeof(name), "tessera-consumer-%s-%s", m->tenants[i].name,
                     use->workload);
            json_array_append_new(
                docs,
                policy(name, ns,
                       json_pack("{s:{s:{s:s}}, s:[s], s:[{s:[o]}]}", "podSelector", "matchLabels",
                                 ENTITLE_LABEL_WORKLOAD, use->workload, "policyTypes", "Ingress",
                                 "ingress", "from", tenant_peer(m->tenants[i].name))));
        }
}

/* ---- claims ---- */

/* An MPS claim's own limits: its SM share and pinned memory (the class says
 * only "MPS"). Every other claim carries no config: its class holds the
 * sharing strategy, so Kueue's DRA integration, which refuses claims with a
 * config, can count it. */
static json_t *mps_config(const struct decide_row *r)
{
    char mem[64];
    entitle_quantity(r->cap_gib, mem, sizeof(mem));
    json_t *mps = json_pack("{s:i, s:s}", "defaultActiveThreadPercentage", r->sm_percent,
                            "defaultPinnedDeviceMemoryLimit", mem);
    json_t *params = json_pack("{s:s, s:s, s:o}", "apiVersion", ENTITLE_CONFIG_API, "kind",
                               "GpuConfig", "sharing", render__sharing(r->mech, mps));
    return json_pack("[{s:[s], s:{s:s, s:o}}]", "requests", "gpu", "opaque", "driver",
                     ENTITLE_DRIVER, "parameters", params);
}

static json_t *claim_template(const struct decide_row *r)
{
    struct entitle_kind k;
    entitle_kind_of(r, &k);
    json_t *exactly = json_pack("{s:s, s:s, s:i}", "deviceClassName", k.device_class,
                                "allocationMode", "ExactCount", "count", k.per_replica);
    if (r->mech == DECIDE_MEMORY_FRACTION) {
        char mem[64];
        entitle_quantity(r->cap_gib, mem, sizeof(mem));
        json_object_set_new(exactly, "capacity", json_pack("{s:{s:s}}", "requests", "memory", mem));
    }
    json_t *o = render__object("resource.k8s.io/v1", "ResourceClaimTemplate", r->workload->name,
                               r->workload->namespace_);
    json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
    json_object_set_new(labels, ENTITLE_LABEL_TENANT, json_string(r->tenant->name));
    json_object_set_new(labels, ENTITLE_LABEL_WORKLOAD, json_string(r->workload->name));
    json_t *devices = json_pack("{s:[{s:s, s:o}]}", "requests", "name", "gpu", "exactly", exactly);
    if (r->mech == DECIDE_MPS)
        json_object_set_new(devices, "config", mps_config(r));
    json_object_set_new(o, "spec", json_pack("{s:{s:o}}", "spec", "devices", devices));
    return o;
}

/* ---- the CUDA shim's limit file (docs/shim.md) ---- */

static json_t *shim_limits(const struct decide_row *r)
{
    char name[300], text[ENTITLE_SHIM_LIMITS_TEXT_MAX];
    entitle_shim_configmap(r, name, sizeof(name));
    entitle_shim_limits_text(r, text, sizeof(text));
    json_t *o = render__object("v1", "ConfigMap", name, r->workload->namespace_);
    json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
    json_object_set_new(labels, ENTITLE_LABEL_TENANT, json_string(r->tenant->name));
    json_object_set_new(labels, ENTITLE_LABEL_WORKLOAD, json_string(r->workload->name));
    json_object_set_new(o, "data", json_pack("{s:s}", ENTITLE_SHIM_LIMITS_KEY, text));
    return o;
}

/* ---- VMs ---- */

static json_t *virtual_machine(const struct decide_row *r, int replica)
{
    char name[300], device[256], sel[256], vmname[320];
    entitle_vm_device(r, device, sizeof(device), sel, sizeof(sel));
    json_t *gpus = json_array();
    for (int g = 0; g < (r->profile ? 1 : r->gpus); g++) {
        snprintf(name, sizeof(name), "gpu%d", g);
        json_array_append_new(gpus, json_pack("{s:s, s:s}", "name", name, "deviceName", device));
    }
    snprintf(vmname, sizeof(vmname), "%s-%d", r->workload->name, replica);
    json_t *o = render__object("kubevirt.io/v1", "VirtualMachine", vmname, r->workload->namespace_);
    json_t *labels = json_pack("{s:s, s:s}", ENTITLE_LABEL_TENANT, r->tenant->name,
                               ENTITLE_LABEL_WORKLOAD, r->workload->name);
    json_object_update(json_object_get(json_object_get(o, "metadata"), "labels"), labels);
    json_object_set_new(o, "spec",
                        json_pack("{s:s, s:{s:{s:o}, s:{s:{s:{s:o}}}}}", "runStrategy", "Halted",
                                  "template", "metadata", "labels", labels, "spec", "domain",
                                  "devices", "gpus", gpus));
    return o;
}

/* ---- Kueue ---- */

static void add_resource(json_t *resources, const struct spec_tenant *t, const char *name,
                         json_t *nominal)
{
    json_t *r = json_pack("{s:s, s:o}", "name", name, "nominalQuota", nominal);
    if (t->borrowing_limit >= 0)
        json_object_set_new(r, "borrowingLimit", json_integer(t->borrowing_limit));
    if (t->lending_limit >= 0)
        json_object_set_new(r, "lendingLimit", json_integer(t->lending_limit));
    json_array_append_new(resources, r);
}

/* DRA: one resource group per GPU model, its tessera classes as resources. */
static void dra_groups(const struct render_ctx *c, const struct spec_tenant *t, const char *ns,
                       json_t *groups)
{
    for (size_t i = 0; i < c->nclasses; i++) {
        const struct cat_model *m = c->classes[i].model;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = c->classes[j].model != m;
        if (!first)
            continue;
        json_t *covered = json_array(), *resources = json_array();
        for (size_t j = i; j < c->nclasses; j++) {
            int n = class_count(c, t, ns, c->classes[j].name);
            if (c->classes[j].model != m || n == 0)
                continue;
            char logical[200];
            entitle_kueue_resource(c->classes[j].name, logical, sizeof(logical));
            json_array_append_new(covered, json_string(logical));
            add_resource(resources, t, logical, json_integer(n));
        }
        if (json_array_size(covered))
            json_array_append_new(groups,
                                  json_pack("{s:o, s:[{s:s, s:o}]}", "coveredResources", covered,
                                            "flavors", "name", m->name, "resources", resources));
        else {
            json_decref(covered);
            json_decref(resources);
        }
    }
}

static const struct cat_model *ns_model(const struct render_ctx *c, const struct spec_tenant *t,
                                        const char *ns, const char *res)
{
    const struct decide_result *d = c->p->decisions;
    for (size_t i = 0; i < d->nrows; i++) {
        struct entitle_kind k;
        entitle_kind_of(&d->rows[i], &k);
        if (in_ns(&d->rows[i], t, ns) && strcmp(k.plugin_resource, res) == 0)
            return d->rows[i].model;
    }
    return NULL;
}

/* Device plugin: one group, one flavor per model the namespace runs on. */
static void plugin_group(const struct render_ctx *c, const struct spec_tenant *t, const char *ns,
                         json_t *groups)
{
    json_t *covered = json_array(), *flavors = json_array();
    for (size_t i = 0; i < c->nplugin; i++) {
        double total, one;
        plugin_count(c, t, ns, c->plugin[i], &total, &one);
        const struct cat_model *m = ns_model(c, t, ns, c->plugin[i]);
        if (total <= 0 || !m)
            continue; /* VM resources are not queued */
        json_array_append_new(covered, json_string(c->plugin[i]));
        json_t *flavor = NULL;
        for (size_t f = 0; f < json_array_size(flavors) && !flavor; f++)
            if (strcmp(json_string_value(json_object_get(json_array_get(flavors, f), "name")),
                       m->name) == 0)
                flavor = json_array_get(flavors, f);
        if (!flavor) {
            flavor = json_pack("{s:s, s:[]}", "name", m->name, "resources");
            json_array_append_new(flavors, flavor);
        }
        add_resource(json_object_get(flavor, "resources"), t, c->plugin[i],
                     amount(c->plugin[i], total));
    }
    /* every flavor must list every covered resource */
    for (size_t f = 0; f < json_array_size(flavors); f++) {
        json_t *res = json_object_get(json_array_get(flavors, f), "resources");
        for (size_t i = 0; i < json_array_size(covered); i++) {
            const char *name = json_string_value(json_array_get(covered, i));
            int has = 0;
            for (size_t k = 0; k < json_array_size(res); k++)
                has |= strcmp(json_string_value(json_object_get(json_array_get(res, k), "name")),
                              name) == 0;
            if (!has)
                add_resource(res, t, name, json_string("0"));
        }
    }
    if (json_array_size(covered))
        json_array_append_new(
            groups, json_pack("{s:o, s:o}", "coveredResources", covered, "flavors", flavors));
    else {
        json_decref(covered);
        json_decref(flavors);
    }
}

static void queues(const struct render_ctx *c, const struct spec_tenant *t, const char *ns,
                   json_t *docs)
{
    json_t *groups = json_array();
    if (render__dra(c))
        dra_groups(c, t, ns, groups);
    if (render__plugin(c))
        plugin_group(c, t, ns, groups);
    if (json_array_size(groups) == 0) {
        json_decref(groups);
        return; /* nothing to queue: a consumer of shared services */
    }
    char weight[32];
    snprintf(weight, sizeof(weight), "%g", t->fair_share_weight);
    json_t *cq = render__object("kueue.x-k8s.io/v1beta2", "ClusterQueue", ns, NULL);
    json_object_set_new(
        cq, "spec",
        json_pack("{s:s, s:{s:{s:s}}, s:s, s:o, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "cohortName",
                  t->name, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name", ns,
                  "queueingStrategy", "BestEffortFIFO", "resourceGroups", groups, "preemption",
                  "reclaimWithinCohort", "Any", "withinClusterQueue", "LowerPriority",
                  "borrowWithinCohort", "policy", "Never", "fairSharing", "weight", weight));
    json_array_append_new(docs, cq);
    json_t *lq = render__object("kueue.x-k8s.io/v1beta2", "LocalQueue", "default", ns);
    json_object_set_new(lq, "spec", json_pack("{s:s}", "clusterQueue", ns));
    json_array_append_new(docs, lq);
}

/* ---- the tenant's folder ---- */

/* Write docs to the tenant's file (skipped when empty); after an earlier
 * failure (st) only frees them. */
static ts_status emit(struct render_ctx *c, const struct spec_tenant *t, const char *file,
                      json_t *docs, const char **files, size_t *n, ts_status st)
{
    if (st != TS_OK || json_array_size(docs) == 0) {
        json_decref(docs);
        return st;
    }
    struct render_file *f = render__file(c->t, "tenants/%s/%s", t->name, file);
    if (!f) {
        json_decref(docs);
        return TS_NOMEM;
    }
    if (*n == RENDER_SCOPE_FILES_MAX) { /* a builder added a file: raise the cap */
        json_decref(docs);
        return TS_INTERNAL;
    }
    files[(*n)++] = file;
    return render__docs(f, docs);
}

ts_status render__tenant(struct render_ctx *c, const struct spec_tenant *t)
{
    json_t *nss = json_array(), *quotas = json_array(), *rbac = json_array(), *net = json_array(),
           *claims = json_array(), *kueue = json_array(), *vms = json_array(),
           *limits = json_array();
    for (size_t i = 0; i < t->nnamespaces; i++) {
        const char *ns = t->namespaces[i];
        json_array_append_new(nss, namespace_obj(c, t, ns));
        json_array_append_new(quotas, quota(c, t, ns));
        json_array_append_new(quotas, priority_quota(t, ns));
        json_array_append_new(quotas, limit_range(c, t, ns));
        json_array_append_new(rbac, role_binding(t, ns));
        network(c, t, ns, net);
        queues(c, t, ns, kueue);
    }
    const struct decide_result *d = c->p->decisions;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        if (r->tenant != t)
            continue;
        if (entitle_is_vm(r))
            for (int k = 0; k < r->workload->replicas; k++)
                json_array_append_new(vms, virtual_machine(r, k));
        else if (render__dra(c))
            json_array_append_new(claims, claim_template(r));
        if (entitle_needs_shim(r))
            json_array_append_new(limits, shim_limits(r));
    }
    const char *files[RENDER_SCOPE_FILES_MAX + 1];
    size_t n = 0;
    ts_status st = emit(c, t, "namespaces.yaml", nss, files, &n, TS_OK);
    st = emit(c, t, "quota.yaml", quotas, files, &n, st);
    st = emit(c, t, "rbac.yaml", rbac, files, &n, st);
    st = emit(c, t, "networkpolicies.yaml", net, files, &n, st);
    st = emit(c, t, "claimtemplates.yaml", claims, files, &n, st);
    st = emit(c, t, "kueue.yaml", kueue, files, &n, st);
    st = emit(c, t, "virtualmachines.yaml", vms, files, &n, st);
    st = emit(c, t, "cuda-limits.yaml", limits, files, &n, st);
    files[n] = NULL;
    char dir[300];
    snprintf(dir, sizeof(dir), "tenants/%s", t->name);
    return st ? st : render__kustomization(c, dir, files);
}
