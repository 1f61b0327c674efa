/*
 * internal.h - what the render files share: the render context and the
 * builders for each part of the tree. Not part of render's interface.
 */
#ifndef RENDER_INTERNAL_H
#define RENDER_INTERNAL_H

#include "entitle/entitle.h"
#include "render/render.h"
#include "util/limits.h"

/* A DeviceClass the render uses (deduplicated, sorted by name). */
struct render_class {
    char name[160];
    const struct cat_model *model;
    int mech;                          /* enum decide_mech (VGPU rows are not classes) */
    const struct cat_profile *profile; /* MIG */
};

struct render_ctx {
    const struct plan *p;
    const struct render_options *opt;
    struct render_tree *t;
    struct ts_error *err;
    struct render_class *classes;
    size_t nclasses;
    char (*plugin)[256]; /* device plugin and KubeVirt resources used, sorted */
    size_t nplugin;
};

int render__dra(const struct render_ctx *c);    /* DRA objects wanted */
int render__plugin(const struct render_ctx *c); /* device-plugin objects wanted */
/* Files one folder of the tree (cluster/, tenants/<t>/) may hold: its
 * builders' file lists are arrays of this size plus the NULL. */
#define RENDER_SCOPE_FILES_MAX 16

/* Append a kustomization.yaml listing files (NULL-terminated) to the tree. */
ts_status render__kustomization(struct render_ctx *c, const char *dir, const char *const *files);

/* The DRA driver's "sharing" config for mech: its strategy
 * (entitle_sharing_strategy), mps (taken; may be NULL) as its mpsConfig, a
 * default timeSlicingConfig for time-slicing. NULL when mech shares no card. */
json_t *render__sharing(int mech, json_t *mps);

/* A node's mig-parted entries (NULL when it has no MIG-capable card). */
json_t *render__mig_parted(const struct render_ctx *c, const struct spec_fleet_node *n);

ts_status render__cluster(struct render_ctx *c, const char **files, size_t *n);
/* agent.c: cluster/agent-nodes.yaml (added to files, n files so far;
 * NULL-terminated again); nodes/<n>/agent.json, its text also under
 * agent.json in data (the node's ConfigMap); nothing when n has no card. */
ts_status render__agent(struct render_ctx *c, const char **files, size_t *n);
ts_status render__agent_node(struct render_ctx *c, const struct spec_fleet_node *n, json_t *data);
ts_status render__tenant(struct render_ctx *c, const struct spec_tenant *t);
ts_status render__node(struct render_ctx *c, const struct spec_fleet_node *n, int *wrote);
ts_status render__readme(struct render_ctx *c);

#endif
