/*
 * internal.h - what the admit files share; not part of admit's interface.
 *
 *   policy.c    the policy: per namespace its tenant, entitlements (one per
 *               decision row, named with render's helpers) and planned nodes
 *   stream.c    the fast decoder: builds only what the checks read
 *   decode.c    the request context: JSON paths, the first 400, denials,
 *               typed getters that locate every error, the depth scanner
 *   review.c    admit_review: the envelope, which kinds are policed, the
 *               response
 *   pod.c       pod specs: containers of every kind, GPU use, the
 *               device-plugin resources
 *   hatch.c     the escape hatches (env, envFrom, host paths, host
 *               namespaces and ports, runtime class, node pinning)
 *   pss.c       the Pod Security Standards, control by control (privilege,
 *               capabilities, profiles, sysctls, restricted's controls)
 *   claim.c     DRA ResourceClaim(Template) requests and opaque configs
 *   shim.c      the CUDA shim where the plan needs it
 *   quantity.c  Kubernetes quantities
 */
#ifndef ADMIT_INTERNAL_H
#define ADMIT_INTERNAL_H

#include <jansson.h>
#include "admit/admit.h"

/* What one decision row lets its namespace use, in render's names. */
struct ad_ent {
    const char *workload; /* workload name (render names its claim template so) */
    int mech;             /* enum decide_mech */
    const char *profile;  /* for audit: "1g.10gb", "whole", "2 whole", "14Gi" */
    const char *cls;      /* DRA DeviceClass; NULL for VM rows (no DRA) */
    int mig_class;        /* cls selects MIG devices: config kind MigDeviceConfig */
    const char *res;      /* device-plugin or KubeVirt resource */
    int per_claim;        /* devices one replica claims (render_kind.per_replica) */
    double cap_bytes;     /* MPS pinned memory / fraction cap as render writes it; 0 none */
    const char *cap;      /* that cap as render writes it ("14Gi"), or NULL */
    double res_each;      /* res one container of this row requests (LimitRange's unit) */
    const char *res_each_text;
    /* the namespace's maxima over its rows of the same class or resource */
    int claim_max;  /* devices of cls in one claim */
    double cap_max; /* memory of cls in one fraction claim, bytes */
    const char *cap_max_text;
    double res_max;           /* res in one container: devices, or bytes of gpu.memory */
    const char *res_max_text; /* as the LimitRange states it: "1", "20Gi" */
    int sm_percent;           /* MPS active thread percentage */
    const char *kind;         /* what the class is: "mig 1g.10gb", "mps", "whole GPUs" */
    const char *desc;         /* what the row allows: "mps at 20% of SMs and 14Gi pinned memory" */
    int shim;                 /* its memory cap only tessera's CUDA shim enforces */
    const char *shim_cm;      /* then the ConfigMap of its limit file, else NULL */
    const char *shim_text;    /* and the limit file it must hold, as render writes it */
};

struct ad_host_path { /* a host path the tenant's contract allows */
    const char *path;
    int writable;
};

struct ad_ns {
    const char *name;
    const char *tenant;
    int contract;      /* enum spec_contract */
    int level;         /* enum spec_pss: the capability floor */
    const char **caps; /* extra capabilities the contract names */
    size_t ncaps;
    const struct ad_host_path *host_paths; /* host paths the contract allows */
    size_t nhost_paths;
    const char **prios; /* PriorityClasses the contract allows */
    size_t nprios;
    const struct ad_ent **ents; /* this namespace's rows */
    size_t nents;
    const char **nodes; /* nodes holding the tenant's instances, sorted */
    size_t nnodes;
};

struct admit_policy {
    struct ts_arena arena;
    struct ad_ns *ns; /* sorted by name */
    size_t nns;
    struct ad_ent *all; /* every row, to name what a request asks for */
    size_t nall;
    const char **fleet; /* the fleet's node names, sorted */
    size_t nfleet;
    const char **runtime; /* allowed runtimeClassName values */
    size_t nruntime;
    const char *shim; /* the one LD_PRELOAD allowed, or NULL */
};

/* ---- policy.c: lookups ---- */
const struct ad_ns *ad_ns_find(const struct admit_policy *pol, const char *name);
/* The first row of ns with DeviceClass cls (or resource res), or NULL. */
const struct ad_ent *ad_ent_class(const struct ad_ns *ns, const char *cls);
const struct ad_ent *ad_ent_res(const struct ad_ns *ns, const char *res);
/* Any row of the plan using class cls (to describe a request), or NULL. */
const struct ad_ent *ad_any_class(const struct admit_policy *pol, const char *cls);
int ad_is_fleet_node(const struct admit_policy *pol, const char *node);
int ad_is_planned_node(const struct ad_ns *ns, const char *node);
/* "mig 1g.10gb (class X) or mps at 20% ... or mps at 30% ... (class Y)":
 * the namespace's offer by class (by_class) or by device-plugin resource,
 * rows of one name together. "" when none. */
void ad_offer(const struct ad_ns *ns, int by_class, char *buf, size_t size);

/* ---- decode.c: the request context (AD_PATH_MAX, AD_MSG_MAX: util/limits.h) ---- */

struct ad_ctx {
    const struct admit_policy *pol;
    const struct ad_ns *ns; /* NULL: the namespace belongs to no tenant */
    const char *nsname;
    json_t *pod;            /* the pod spec being checked, or NULL */
    char path[AD_PATH_MAX]; /* JSON path of the value being read */
    size_t plen;
    int bad;                       /* 1 after a malformed-input error (400) */
    char err[AD_MSG_MAX];          /* "<path>: <what>" */
    int ndeny, dropped;            /* denials kept in msg, and those left out */
    char rule[48];                 /* the first denial's rule */
    char msg[AD_MSG_MAX];          /* denials joined with "; " */
    char gpu_use[256];             /* the first GPU use seen ("" none) */
    char mech[128], profile[128];  /* audit: what it uses, comma-separated */
    const struct ad_ent *shim_ent; /* the first row used that needs the shim, or NULL */
    char clip[4][112];             /* ad_q's buffers */
    int clipi;
};

void ad_ctx_init(struct ad_ctx *c, const struct admit_policy *pol);
/* Enter key / index of the current value; ad_pop(c, mark) leaves it. */
size_t ad_push(struct ad_ctx *c, const char *key);
size_t ad_push_index(struct ad_ctx *c, size_t i);
void ad_pop(struct ad_ctx *c, size_t mark);
/* A 400 at the current path (the first one wins). */
void ad_bad(struct ad_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A 400 not tied to the current path ("body: ..."). */
void ad_bad_at(struct ad_ctx *c, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A denial under rule; identical messages are kept once. */
void ad_deny(struct ad_ctx *c, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* User text for a message: quoted, clipped at a UTF-8 boundary (one of four
 * rotating buffers, so up to four per message). */
const char *ad_q(struct ad_ctx *c, const char *s);
/* Note a GPU use (what = "container \"x\" requests nvidia.com/gpu"). */
void ad_gpu(struct ad_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Add a row (or words) to the audit annotations. */
void ad_audit(struct ad_ctx *c, const struct ad_ent *e);
void ad_audit_words(struct ad_ctx *c, const char *mech, const char *profile);
/* "tenant t may use <offer> only" / "tenant t has no GPUs in namespace n",
 * and for a dedicated tenant asking for sharing, why not: the first half of
 * every entitlement denial. */
void ad_may_use(struct ad_ctx *c, int by_class, int sharing, char *buf, size_t size);

/* obj[key] if it has type type; NULL when obj is NULL or the key is absent
 * or null; a 400 at <path>.key when it has another type. */
json_t *ad_get(struct ad_ctx *c, json_t *obj, const char *key, json_type type);
const char *ad_get_str(struct ad_ctx *c, json_t *obj, const char *key);
int ad_get_true(struct ad_ctx *c, json_t *obj, const char *key);
/* arr[i] if it has type type, else a 400 at <path>[i] and NULL. */
json_t *ad_item(struct ad_ctx *c, json_t *arr, size_t i, json_type type);
/* Call fn on each item of the array obj[key] while the request stays well
 * formed, at <path>.key[i]: a 400 at <path>.key when it is not an array,
 * and at <path>.key[i] (fn not called) when an item has not type type. */
typedef void ad_each_fn(struct ad_ctx *c, json_t *item, size_t i, const void *arg);
void ad_each(struct ad_ctx *c, json_t *obj, const char *key, json_type type, ad_each_fn *fn,
             const void *arg);
/* Parse body into *root, after the size and depth checks. 0 or a 400. */
int ad_load(struct ad_ctx *c, const char *body, size_t len, json_t **root);

/* ---- stream.c: the fast decoder ---- */
/* Decode body into *root keeping only what the checks read (0), or -1
 * (nothing set, no error) when it cannot decode it exactly as ad_load
 * would: then call ad_load, which names the fault. */
int ad_stream_load(const char *body, size_t len, json_t **root);
/* admit_review; full: always decode with ad_load (tests compare the two). */
void ad_review(const struct admit_policy *pol, const char *body, size_t len, struct ts_sbuf *out,
               struct admit_verdict *v, int full);

/* ---- the checks ---- */
void ad_pod(struct ad_ctx *c, json_t *spec);                             /* pod.c */
void ad_plugin(struct ad_ctx *c, json_t *ctr, const char *who);          /* pod.c */
void ad_hatch_container(struct ad_ctx *c, json_t *ctr, const char *who); /* hatch.c */
void ad_hatch_pod(struct ad_ctx *c, json_t *spec);                       /* hatch.c */
void ad_pss_container(struct ad_ctx *c, json_t *ctr, const char *who);   /* pss.c */
void ad_pss_pod(struct ad_ctx *c, json_t *spec);                         /* pss.c */
/* A pod annotation key: the deprecated seccomp and AppArmor ones by value. */
void ad_pss_annotation(struct ad_ctx *c, const char *key, json_t *val); /* pss.c */
void ad_claim(struct ad_ctx *c, json_t *devices);                       /* claim.c */
void ad_shim(struct ad_ctx *c, json_t *spec);                           /* shim.c */
void ad_shim_limits(struct ad_ctx *c, json_t *configmap);               /* shim.c */
/* path normalised lexically (malloc'd; "//a/./b/../c/" -> "/a/c"); NULL
 * and a 400 when it is too long or memory runs out. hatch.c */
char *ad_normalised(struct ad_ctx *c, const char *path);

/* ---- quantity.c ---- */
/* A Kubernetes quantity ("20Gi", "1.5", "500m", "1e3", "10G", a JSON
 * number) in base units (bytes, devices). 0, or -1 when it is not one. */
int ad_quantity(const json_t *v, double *out);
int ad_quantity_str(const char *s, double *out);
/* The quantity as the user wrote it (for messages). */
void ad_quantity_text(const json_t *v, char *buf, size_t size);

#endif
