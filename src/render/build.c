/*
 * build.c - render_build: collect the DeviceClasses and device-plugin
 * resources the plan uses, then build cluster/, tenants/<t>/, nodes/<n>/,
 * the top-level kustomization and README (see render.h).
 */
#include "render/internal.h"

#include <stdlib.h>
#include <string.h>
#include "render/yaml.h"

int render__dra(const struct render_ctx *c)
{
    return c->opt->api == RENDER_DRA || c->opt->api == RENDER_BOTH;
}

int render__plugin(const struct render_ctx *c)
{
    return c->opt->api == RENDER_DEVICE_PLUGIN || c->opt->api == RENDER_BOTH;
}

ts_status render__kustomization(struct render_ctx *c, const char *dir, const char *const *files)
{
    int top = strcmp(dir, ".") == 0;
    struct render_file *f = render__file(c->t, "%s%skustomization.yaml", top ? "" : dir,
                                         top ? "" : "/");
    if (!f)
        return TS_NOMEM;
    json_t *list = json_array();
    for (size_t i = 0; files[i]; i++)
        json_array_append_new(list, json_string(files[i]));
    json_t *k = json_pack("{s:s, s:s, s:o}", "apiVersion", "kustomize.config.k8s.io/v1beta1",
                          "kind", "Kustomization", "resources", list);
    ts_status st = render_yaml_doc(k, 1, &f->body);
    json_decref(k);
    return st;
}

static int cmp_class(const void *a, const void *b)
{
    return strcmp(((const struct render_class *)a)->name, ((const struct render_class *)b)->name);
}

static int cmp_plugin(const void *a, const void *b) { return strcmp(a, b); }

static void add_plugin(struct render_ctx *c, const char *res)
{
    for (size_t j = 0; j < c->nplugin; j++)
        if (strcmp(c->plugin[j], res) == 0)
            return;
    snprintf(c->plugin[c->nplugin++], sizeof(c->plugin[0]), "%s", res);
}

/* What the device plugin advertises on the fleet whether or not a workload
 * asks for it: whole GPUs, shared GPUs and every MIG profile on a card
 * (canary slices and VM-backed instances too). Quotas list them all, so a
 * tenant cannot take one it was not planned. */
static void add_node_resources(struct render_ctx *c)
{
    add_plugin(c, "nvidia.com/gpu");
    add_plugin(c, "nvidia.com/gpu.shared");
    for (size_t i = 0; i < c->p->ngpus; i++)
        for (size_t k = 0; k < c->p->gpus[i].ninst; k++) {
            const struct cat_profile *prof = c->p->gpus[i].inst[k].profile;
            char res[256];
            if (!prof)
                continue;
            snprintf(res, sizeof(res), "nvidia.com/mig-%s", prof->name);
            add_plugin(c, res);
        }
}

/* Every DeviceClass and device-plugin (or KubeVirt) resource of the plan. */
static ts_status collect(struct render_ctx *c)
{
    const struct decide_result *d = c->p->decisions;
    c->classes = calloc(d->nrows + 1, sizeof(*c->classes));
    size_t instances = 0;
    for (size_t i = 0; i < c->p->ngpus; i++)
        instances += c->p->gpus[i].ninst;
    c->plugin = calloc(d->nrows + instances + 3, sizeof(*c->plugin));
    if (!c->classes || !c->plugin)
        return TS_NOMEM;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        struct entitle_kind k;
        char res[256];
        entitle_kind_of(r, &k);
        entitle_resource_of(r, res, sizeof(res));
        add_plugin(c, res);
        int seen = entitle_is_vm(r);
        for (size_t j = 0; j < c->nclasses && !seen; j++)
            seen = strcmp(c->classes[j].name, k.device_class) == 0;
        if (!seen)
            c->classes[c->nclasses++] = (struct render_class){"", r->model, r->mech, r->profile};
        if (!seen)
            snprintf(c->classes[c->nclasses - 1].name, sizeof(c->classes[0].name), "%s",
                     k.device_class);
    }
    add_node_resources(c);
    qsort(c->classes, c->nclasses, sizeof(*c->classes), cmp_class);
    qsort(c->plugin, c->nplugin, sizeof(*c->plugin), cmp_plugin);
    return TS_OK;
}

static ts_status build_parts(struct render_ctx *c, char **dirs, size_t *n)
{
    const char *cluster_files[RENDER_SCOPE_FILES_MAX + 1];
    size_t nfiles = 0;
    ts_status st = render__cluster(c, cluster_files, &nfiles);
    if (st == TS_OK)
        st = render__agent(c, cluster_files, &nfiles);
    if (st == TS_OK)
        st = render__kustomization(c, "cluster", cluster_files);
    dirs[(*n)++] = strdup("cluster");
    const struct spec_model *m = c->p->model;
    for (size_t i = 0; st == TS_OK && i < m->ntenants; i++) {
        st = render__tenant(c, &m->tenants[i]);
        if (asprintf(&dirs[(*n)++], "tenants/%s", m->tenants[i].name) < 0)
            dirs[*n - 1] = NULL;
    }
    for (size_t i = 0; st == TS_OK && i < m->fleet->nnodes; i++) {
        int wrote = 0;
        st = render__node(c, &m->fleet->nodes[i], &wrote);
        if (wrote && asprintf(&dirs[(*n)++], "nodes/%s", m->fleet->nodes[i].name) < 0)
            dirs[*n - 1] = NULL;
    }
    for (size_t i = 0; i < *n; i++)
        if (!dirs[i])
            return TS_NOMEM;
    return st;
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(((const struct render_file *)a)->path, ((const struct render_file *)b)->path);
}

ts_status render_build(const struct plan *p, const struct render_options *opt,
                       struct render_tree *out, struct ts_error *err)
{
    memset(out, 0, sizeof(*out));
    struct render_ctx c = {p, opt, out, err, NULL, 0, NULL, 0};
    const struct spec_model *m = p->model;
    size_t ndirs = 0, max = 3 + m->ntenants + m->fleet->nnodes;
    char **dirs = calloc(max, sizeof(*dirs));
    ts_status st = dirs ? collect(&c) : TS_NOMEM;
    if (st == TS_OK)
        st = build_parts(&c, dirs, &ndirs);
    if (st == TS_OK) {
        dirs[ndirs] = NULL;
        st = render__kustomization(&c, ".", (const char *const *)dirs);
    }
    if (st == TS_OK)
        st = render__readme(&c);
    for (size_t i = 0; i < ndirs; i++)
        free(dirs[i]);
    free(dirs);
    free(c.classes);
    free(c.plugin);
    if (st != TS_OK) {
        if (err && err->msg[0] == '\0')
            ts_err(err, st, "render failed: %s", ts_status_str(st));
        render_tree_free(out);
        return st;
    }
    qsort(out->files, out->nfiles, sizeof(*out->files), cmp_path);
    return TS_OK;
}
