/*
 * cluster.c - cluster-wide objects: the tessera-system namespace, one
 * DeviceClass per (GPU model, MIG profile) and per (GPU model, sharing
 * mode), Kueue ResourceFlavors (one per GPU model) and Cohorts (a root,
 * one per tenant), the device-plugin ConfigMap with one config per node
 * that needs sharing, the mig-parted ConfigMap for NVIDIA's mig-manager, and
 * two snippets applied by hand (KubeVirt permittedHostDevices, Kueue's
 * deviceClassMappings).
 */
#include "render/internal.h"

#include <stdio.h>
#include <string.h>
#include "render/yaml.h"

static json_t *selector(const struct render_class *k)
{
    char expr[2048];
    int n = snprintf(expr, sizeof(expr),
                     "device.driver == '%s' && device.attributes['%s'].type == '%s'",
                     ENTITLE_DRIVER, ENTITLE_DRIVER, k->profile ? "mig" : "gpu");
    if (k->profile)
        n += snprintf(expr + n, sizeof(expr) - (size_t)n,
                      " && device.attributes['%s'].profile == '%s'", ENTITLE_DRIVER,
                      k->profile->name);
    n += snprintf(expr + n, sizeof(expr) - (size_t)n,
                  " && device.attributes['%s'].productName in [", ENTITLE_DRIVER);
    const struct cat_model *m = k->model;
    for (size_t i = 0; i < m->nproduct_names && (size_t)n < sizeof(expr) - 100; i++)
        n += snprintf(expr + n, sizeof(expr) - (size_t)n, "%s'%s'", i ? ", " : "",
                      m->product_names[i]);
    if (m->nproduct_names == 0)
        n += snprintf(expr + n, sizeof(expr) - (size_t)n, "'%s'", m->display);
    snprintf(expr + n, sizeof(expr) - (size_t)n, "]");
    return json_pack("[{s:{s:s}}]", "cel", "expression", expr);
}

json_t *render__sharing(int mech, json_t *mps)
{
    const char *strategy = entitle_sharing_strategy(mech);
    json_t *sharing = strategy ? json_pack("{s:s}", "strategy", strategy) : NULL;
    if (sharing && mps)
        json_object_set_new(sharing, "mpsConfig", mps);
    else if (mps)
        json_decref(mps);
    if (sharing && mech != DECIDE_MPS)
        json_object_set_new(sharing, "timeSlicingConfig",
                            json_pack("{s:s}", "interval", "Default"));
    return sharing;
}

/* The sharing strategy a class hands every claim, or NULL. */
static json_t *class_config(const struct render_class *k)
{
    json_t *sharing = render__sharing(k->mech, NULL);
    if (!sharing)
        return NULL;
    return json_pack("[{s:{s:s, s:{s:s, s:s, s:o}}}]", "opaque", "driver", ENTITLE_DRIVER,
                     "parameters", "apiVersion", ENTITLE_CONFIG_API, "kind", "GpuConfig", "sharing",
                     sharing);
}

static ts_status device_classes(struct render_ctx *c)
{
    struct render_file *f = render__file(c->t, "cluster/deviceclasses.yaml");
    json_t *docs = json_array();
    for (size_t i = 0; f && i < c->nclasses; i++) {
        json_t *o = render__object("resource.k8s.io/v1", "DeviceClass", c->classes[i].name, NULL);
        json_t *spec = json_pack("{s:o}", "selectors", selector(&c->classes[i]));
        json_t *config = class_config(&c->classes[i]);
        if (config)
            json_object_set_new(spec, "config", config);
        json_object_set_new(o, "spec", spec);
        json_array_append_new(docs, o);
    }
    return f ? render__docs(f, docs) : TS_NOMEM;
}

static int model_used(const struct plan *p, const struct cat_model *m)
{
    for (size_t i = 0; i < p->ngpus; i++)
        if (p->gpus[i].model == m)
            return 1;
    return 0;
}

static ts_status kueue(struct render_ctx *c)
{
    struct render_file *f = render__file(c->t, "cluster/kueue.yaml");
    json_t *docs = json_array();
    for (size_t i = 0; f && i < c->p->ngpus; i++) {
        const struct cat_model *m = c->p->gpus[i].model;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = c->p->gpus[j].model != m;
        if (!first || !model_used(c->p, m))
            continue;
        char label[256];
        entitle_product_label(m->nproduct_names ? m->product_names[0] : m->display, label,
                              sizeof(label));
        json_t *o = render__object("kueue.x-k8s.io/v1beta2", "ResourceFlavor", m->name, NULL);
        json_object_set_new(o, "spec",
                            json_pack("{s:{s:s}}", "nodeLabels", "nvidia.com/gpu.product", label));
        json_array_append_new(docs, o);
    }
    json_t *root = render__object("kueue.x-k8s.io/v1beta2", "Cohort", "tessera", NULL);
    json_object_set_new(root, "spec", json_object());
    json_array_append_new(docs, root);
    const struct spec_model *m = c->p->model;
    for (size_t i = 0; i < m->ntenants; i++) {
        char weight[32];
        snprintf(weight, sizeof(weight), "%g", m->tenants[i].fair_share_weight);
        json_t *o = render__object("kueue.x-k8s.io/v1beta2", "Cohort", m->tenants[i].name, NULL);
        json_object_set_new(
            o, "spec",
            json_pack("{s:s, s:{s:s}}", "parentName", "tessera", "fairSharing", "weight", weight));
        json_array_append_new(docs, o);
    }
    return f ? render__docs(f, docs) : TS_NOMEM;
}

static ts_status system_namespace(struct render_ctx *c)
{
    struct render_file *f = render__file(c->t, "cluster/namespace.yaml");
    json_t *ns = render__object("v1", "Namespace", ENTITLE_SYSTEM_NS, NULL);
    return f ? render__docs(f, json_pack("[o]", ns)) : TS_NOMEM;
}

/* ---- device plugin ---- */

/* The most clients on one card of mode on node n (guests count). */
static int max_clients(const struct plan *p, const struct spec_fleet_node *n, int mode)
{
    int best = 0;
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        int shared = g->mode == mode || (mode == PLAN_TIME_SLICING && g->sharing) ||
                     (mode == PLAN_TIME_SLICING && g->mode == PLAN_MEMORY_FRACTION);
        if (g->node == n && shared && (int)g->ninst > best)
            best = (int)g->ninst;
    }
    return best;
}

static json_t *plugin_config(int ts, int mps)
{
    json_t *cfg = json_pack("{s:s, s:{s:s}}", "version", "v1", "flags", "migStrategy", "mixed");
    if (ts || mps)
        json_object_set_new(cfg, "sharing",
                            json_pack("{s:{s:b, s:b, s:[{s:s, s:i}]}}", mps ? "mps" : "timeSlicing",
                                      "renameByDefault", 1, "failRequestsGreaterThanOne", 1,
                                      "resources", "name", "nvidia.com/gpu", "replicas",
                                      mps ? mps : ts));
    return cfg;
}

static ts_status add_plugin_entry(json_t *data, const char *key, json_t *cfg)
{
    struct ts_sbuf text;
    ts_sbuf_init(&text, RENDER_ENTRY_MAX);
    ts_status st = render_yaml_doc(cfg, 1, &text);
    json_decref(cfg);
    if (st == TS_OK)
        json_object_set_new(data, key, json_string(ts_sbuf_str(&text)));
    ts_sbuf_release(&text);
    return st;
}

static ts_status device_plugin(struct render_ctx *c)
{
    json_t *data = json_object();
    ts_status st = add_plugin_entry(data, "default", plugin_config(0, 0));
    const struct spec_fleet *fl = c->p->model->fleet;
    for (size_t i = 0; st == TS_OK && i < fl->nnodes; i++) {
        int ts = max_clients(c->p, &fl->nodes[i], PLAN_TIME_SLICING);
        int mps = max_clients(c->p, &fl->nodes[i], PLAN_MPS);
        if (ts && mps)
            st = ts_err(c->err, TS_INFEASIBLE,
                        "node %s has time-sliced and MPS cards, but the "
                        "device plugin applies one sharing strategy to a whole node; render with "
                        "--device-api dra, or keep the two on different nodes",
                        fl->nodes[i].name);
        char key[300];
        snprintf(key, sizeof(key), "tessera-%s", fl->nodes[i].name);
        if (st == TS_OK && (ts || mps))
            st = add_plugin_entry(data, key, plugin_config(ts, mps));
    }
    json_t *cm = render__object("v1", "ConfigMap", "tessera-device-plugin-config",
                                ENTITLE_GPU_OPERATOR_NS);
    json_object_set_new(cm, "data", data);
    struct render_file *f = st ? NULL : render__file(c->t, "cluster/device-plugin-config.yaml");
    if (!f) {
        json_decref(cm);
        return st ? st : TS_NOMEM;
    }
    return render__docs(f, json_pack("[o]", cm));
}

/* ---- MIG: one ConfigMap for mig-manager with every node's config ---- */

static ts_status mig_parted(struct render_ctx *c)
{
    json_t *configs = json_object();
    const struct spec_fleet *fl = c->p->model->fleet;
    for (size_t i = 0; i < fl->nnodes; i++) {
        json_t *entries = render__mig_parted(c, &fl->nodes[i]);
        char key[300];
        snprintf(key, sizeof(key), "tessera-%s", fl->nodes[i].name);
        if (entries)
            json_object_set_new(configs, key, entries);
    }
    json_t *doc = json_pack("{s:s, s:o}", "version", "v1", "mig-configs", configs);
    struct ts_sbuf text;
    ts_sbuf_init(&text, RENDER_CONFIG_MAX);
    ts_status st = render_yaml_doc(doc, 1, &text);
    json_decref(doc);
    json_t *cm = render__object("v1", "ConfigMap", "tessera-mig-parted-config",
                                ENTITLE_GPU_OPERATOR_NS);
    json_object_set_new(cm, "data", json_pack("{s:s}", "config.yaml", ts_sbuf_str(&text)));
    ts_sbuf_release(&text);
    struct render_file *f = st ? NULL : render__file(c->t, "cluster/mig-parted-config.yaml");
    if (!f) {
        json_decref(cm);
        return st ? st : TS_NOMEM;
    }
    return render__docs(f, json_pack("[o]", cm));
}

/* ---- snippets applied by hand ---- */

static ts_status kubevirt_snippet(struct render_ctx *c, int *wrote)
{
    json_t *pci = json_array(), *mdev = json_array();
    const struct decide_result *d = c->p->decisions;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        char name[256], selector_text[256];
        if (!entitle_is_vm(r))
            continue;
        entitle_vm_device(r, name, sizeof(name), selector_text, sizeof(selector_text));
        json_t *list = r->profile ? mdev : pci;
        json_t *entry = r->profile ? json_pack("{s:s, s:s}", "mdevNameSelector", selector_text,
                                               "resourceName", name)
                                   : json_pack("{s:s, s:s}", "pciVendorSelector", selector_text,
                                               "resourceName", name);
        int dup = 0;
        for (size_t k = 0; k < json_array_size(list); k++)
            dup |= json_equal(json_array_get(list, k), entry);
        if (dup)
            json_decref(entry);
        else
            json_array_append_new(list, entry);
    }
    *wrote = json_array_size(pci) + json_array_size(mdev) > 0;
    if (!*wrote) {
        json_decref(pci);
        json_decref(mdev);
        return TS_OK;
    }
    json_t *kv = render__object("kubevirt.io/v1", "KubeVirt", "kubevirt", "kubevirt");
    json_object_set_new(kv, "spec",
                        json_pack("{s:{s:{s:o, s:o}}}", "configuration", "permittedHostDevices",
                                  "pciHostDevices", pci, "mediatedDevices", mdev));
    struct render_file *f = render__file(c->t, "cluster/kubevirt-permitted-host-devices.yaml");
    return f ? render__docs(f, json_pack("[o]", kv)) : TS_NOMEM;
}

static ts_status kueue_fragment(struct render_ctx *c)
{
    json_t *maps = json_array();
    for (size_t i = 0; i < c->nclasses; i++) {
        char logical[200];
        entitle_kueue_resource(c->classes[i].name, logical, sizeof(logical));
        json_array_append_new(maps, json_pack("{s:s, s:[s]}", "name", logical, "deviceClassNames",
                                              c->classes[i].name));
    }
    json_t *doc = json_pack("{s:{s:o}}", "resources", "deviceClassMappings", maps);
    struct render_file *f = render__file(c->t, "cluster/kueue-configuration-fragment.yaml");
    if (!f) {
        json_decref(doc);
        return TS_NOMEM;
    }
    ts_sbuf_puts(&f->body,
                 "# Merge into Kueue's Configuration (ConfigMap kueue-manager-config);\n"
                 "# needs Kueue's DRA integration (feature gate DynamicResourceAllocation).\n");
    ts_status st = render_yaml_doc(doc, 1, &f->body);
    json_decref(doc);
    return st;
}

ts_status render__cluster(struct render_ctx *c, const char **files, size_t *n)
{
    int vm = 0;
    ts_status st = system_namespace(c);
    files[(*n)++] = "namespace.yaml";
    if (st == TS_OK && render__dra(c)) {
        st = device_classes(c);
        files[(*n)++] = "deviceclasses.yaml";
        if (st == TS_OK)
            st = kueue_fragment(c);
    }
    if (st == TS_OK) {
        st = kueue(c);
        files[(*n)++] = "kueue.yaml";
    }
    if (st == TS_OK && render__plugin(c)) {
        st = device_plugin(c);
        files[(*n)++] = "device-plugin-config.yaml";
    }
    if (st == TS_OK) {
        st = mig_parted(c);
        files[(*n)++] = "mig-parted-config.yaml";
    }
    if (st == TS_OK)
        st = kubevirt_snippet(c, &vm);
    files[*n] = NULL;
    return st;
}
