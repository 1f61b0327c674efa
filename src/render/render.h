/*
 * render.h - the Kubernetes objects and node configs that enforce a plan.
 *
 * render_build reads the model, the decisions and the plan (nothing else)
 * and produces an in-memory kustomize tree:
 *   kustomization.yaml, README.md
 *   cluster/   DeviceClasses, Kueue ResourceFlavors, Cohorts, the device-plugin
 *              ConfigMap, the mig-parted ConfigMap, the agents' node configs, KubeVirt and Kueue
 *              configuration snippets
 *   tenants/<tenant>/  Namespaces, ResourceQuota, LimitRange, RoleBinding,
 *              NetworkPolicies, ResourceClaimTemplates, ClusterQueues,
 *              LocalQueues, VirtualMachines
 *   nodes/<node>/  mig-parted config, the placement script, MPS prep, labels,
 *              agent.json (the NodeConfig the node agent keeps; all of them in
 *              cluster/agent-nodes.yaml)
 * render_write puts the tree on disk atomically (see tree.c). Output is
 * deterministic: names and keys sorted, no timestamps.
 */
#ifndef RENDER_RENDER_H
#define RENDER_RENDER_H

#include <jansson.h>
#include "plan/plan.h"
#include "util/sbuf.h"

enum render_api { RENDER_DRA, RENDER_DEVICE_PLUGIN, RENDER_BOTH };
extern const char *const render_api_names[];

struct render_file {
    char *path; /* relative, e.g. "tenants/client-a/quota.yaml" */
    struct ts_sbuf body;
    int executable;
};

struct render_tree {
    struct render_file *files;
    size_t nfiles, cap;
};

struct render_options {
    int api; /* enum render_api */
};

ts_status render_build(const struct plan *p, const struct render_options *opt,
                       struct render_tree *out, struct ts_error *err);
void render_tree_free(struct render_tree *t);

/* Write the tree to dir: refuses a dir holding files tessera did not write
 * unless force; builds in a temporary sibling and renames it into place, so
 * a failure leaves the previous tree intact; files whose bytes did not
 * change keep their inode and mtime. */
ts_status render_write(const struct render_tree *t, const char *dir, int force,
                       struct ts_error *err);

/* What a render writes, in numbers, and against the tree now in dir (call
 * before render_write): objects by kind (the first RENDER_SUMMARY_KINDS,
 * the rest in other), files per top-level folder, files added, changed,
 * unchanged and removed. first: dir does not exist yet. */
#define RENDER_SUMMARY_KINDS 48
#define RENDER_SUMMARY_FOLDERS 16
struct render_summary {
    struct {
        char kind[64];
        int n;
    } kinds[RENDER_SUMMARY_KINDS];
    size_t nkinds;
    int other;
    struct {
        char name[32];
        int files, sub, subfolders;
    } folders[RENDER_SUMMARY_FOLDERS];
    size_t nfolders;
    size_t files;
    int first, added, changed, unchanged, removed;
};
void render_summarize(const struct render_tree *t, const char *dir, struct render_summary *s);

/* ---- shared by the render files ---- */

/* A new file in t (path printf-style); NULL on out of memory. */
struct render_file *render__file(struct render_tree *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append YAML documents (a JSON array of objects) to f, sorted by kind
 * then name; steals the array. */
ts_status render__docs(struct render_file *f, json_t *objects);
/* A Kubernetes object skeleton with tessera's labels. */
json_t *render__object(const char *api_version, const char *kind, const char *name, const char *ns);

#endif
