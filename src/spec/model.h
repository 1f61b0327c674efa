/*
 * model.h - the tenancy model: plain data, no I/O.
 *
 * The spec loader fills it from YAML (kinds Fleet, Tenant, PriceBook); decide
 * and plan read it. Every object keeps the spec_loc of the YAML that made
 * it, so a later stage can point a user at the exact line to change.
 * All memory belongs to the spec_model's arena.
 */
#ifndef SPEC_MODEL_H
#define SPEC_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "spec/schema.h"
#include "util/arena.h"

enum spec_contract {
    SPEC_CONTRACT_DEDICATED,      /* dedicated compute: hardware boundary, no sharing */
    SPEC_CONTRACT_ISOLATED,       /* SLA: isolation from other tenants */
    SPEC_CONTRACT_SHARED_TRUSTED, /* may share with tenants it trusts */
    SPEC_CONTRACT_BEST_EFFORT,    /* no guarantee */
    SPEC_CONTRACT_VM,             /* runs in virtual machines */
};

enum spec_data_class { SPEC_DATA_INTERNAL, SPEC_DATA_CONFIDENTIAL, SPEC_DATA_REGULATED };

enum spec_wkind {
    SPEC_WK_INFERENCE,
    SPEC_WK_EMBEDDING,
    SPEC_WK_TRAINING,
    SPEC_WK_FINE_TUNE,
    SPEC_WK_BATCH,
    SPEC_WK_DEV,
};

enum spec_trust { SPEC_TRUST_TRUSTED, SPEC_TRUST_UNTRUSTED };
enum spec_spread { SPEC_SPREAD_GPU, SPEC_SPREAD_NODE, SPEC_SPREAD_NONE };

/* What a workload may ask for explicitly; AUTO lets the decision table choose. */
enum spec_isolation {
    SPEC_ISO_AUTO,
    SPEC_ISO_WHOLE,
    SPEC_ISO_MIG,
    SPEC_ISO_MPS,
    SPEC_ISO_TIME_SLICING,
    SPEC_ISO_MEMORY_FRACTION,
    SPEC_ISO_VGPU,
    SPEC_ISO_CUDA_STREAMS,
};

/* The Pod Security Standards level a tenant's pods are held to (the
 * namespace's pod-security.kubernetes.io/enforce label, and the capability
 * floor the webhook checks). */
enum spec_pss { SPEC_PSS_BASELINE, SPEC_PSS_RESTRICTED };

extern const char *const spec_contract_names[];
extern const char *const spec_pss_names[];
/* What the node agent does to a container over its limit (Tenant
 * enforcement, the limit file's onMemoryViolation / onSmViolation): the
 * first name of each list is its default. */
extern const char *const spec_memory_action_names[]; /* kill, evict, report */
extern const char *const spec_sm_action_names[];     /* report, evict, kill */
extern const char *const spec_data_class_names[];
extern const char *const spec_wkind_names[];
extern const char *const spec_isolation_names[];
extern const char *const spec_split_names[];

struct spec_workload {
    struct spec_loc loc;
    const char *name;
    int kind;            /* enum spec_wkind */
    double memory_gib;   /* memory high-water mark: weights + activations */
    double kv_cache_gib; /* KV cache on top of the high-water mark */
    double p99_ms;       /* latency target; 0 = none */
    int best_effort;     /* 1 = explicitly best-effort */
    int replicas;
    int spread;              /* enum spec_spread */
    int gpus;                /* GPUs one replica needs (multi-GPU when > 1) */
    int peer_to_peer;        /* needs P2P / NVLink between its GPUs */
    int vm;                  /* runs in a VM */
    int trust;               /* enum spec_trust: the data/code it handles */
    const char *schedule;    /* e.g. "nightly"; NULL = always on */
    int isolation;           /* enum spec_isolation */
    int compute_slices;      /* MIG: minimum compute slices (0 = by memory) */
    int sm_percent;          /* MPS: active thread percentage (0 = derived) */
    const char *gpu_model;   /* preferred catalog model, or NULL */
    const char **gpu_models; /* allowed catalog models, most preferred first */
    size_t ngpu_models;
    const char *pool;       /* named sharing pool, or NULL */
    const char *namespace_; /* where it runs (defaulted to the tenant's first) */
};

struct spec_use { /* a tenant consuming another tenant's workload */
    struct spec_loc loc;
    const char *tenant;
    const char *workload;
    int weight; /* its part under PriceBook sharedSplit: weight */
};

struct spec_host_path { /* a host path the tenant's pods may mount */
    struct spec_loc loc;
    const char *path; /* absolute; the path and what is under it */
    int writable;     /* 0: every mount of it must be readOnly */
};

/* What the tenant's pods may do beyond the Pod Security level (the
 * webhook's escape-hatch rules, docs/webhook.md). */
struct spec_pod_security {
    int level;                 /* enum spec_pss */
    const char **capabilities; /* extra capabilities its containers may add */
    size_t ncapabilities;
    struct spec_host_path *host_paths;
    size_t nhost_paths;
    const char **priority_classes; /* PriorityClasses its pods may name */
    size_t npriority_classes;
};

/* The tenant's enforcement policy (docs/agent.md, "Enforcement"). */
struct spec_enforcement {
    int on_memory; /* index into spec_memory_action_names (0: kill) */
    int on_sm;     /* index into spec_sm_action_names (0: report) */
};

struct spec_tenant {
    struct spec_loc loc;
    const char *name;
    const char *display_name;
    int contract;   /* enum spec_contract */
    int data_class; /* enum spec_data_class */
    const char **namespaces;
    size_t nnamespaces;
    const char **trusts; /* tenants this one trusts to share a card */
    size_t ntrusts;
    struct spec_use *uses;
    size_t nuses;
    struct spec_workload *workloads;
    size_t nworkloads;
    const char *group;        /* RBAC group (defaulted to tessera:<tenant>) */
    int borrowing_limit;      /* Kueue, per resource; -1 = no limit */
    int lending_limit;        /* Kueue, per resource; -1 = contract default */
    double fair_share_weight; /* Kueue fair sharing weight */
    struct spec_pod_security pod_security;
    struct spec_enforcement enforcement;
};

struct spec_node_gpus {
    struct spec_loc loc;
    const char *model; /* catalog model name */
    int count;
};

struct spec_fleet_node {
    struct spec_loc loc;
    const char *name;
    struct spec_node_gpus *gpus;
    size_t ngpus;
    const char *cuda_version; /* driver's CUDA version, e.g. "13.4" */
    int vgpu_licensed;
    int mps_allowed;
    const char *canary; /* profile kept free on this node; overrides the fleet's */
};

struct spec_fleet {
    struct spec_loc loc;
    const char *name;
    struct spec_fleet_node *nodes;
    size_t nnodes;
    const char *canary; /* profile kept free per node, or NULL */
};

enum spec_mig_share { SPEC_SHARE_MEMORY, SPEC_SHARE_COMPUTE, SPEC_SHARE_MAX };
/* How a workload other tenants use (Tenant uses) is billed. */
enum spec_shared_split { SPEC_SPLIT_EQUAL, SPEC_SPLIT_WEIGHT, SPEC_SPLIT_NONE, SPEC_SPLIT_USAGE };

struct spec_price {
    struct spec_loc loc;
    const char *model;
    int64_t per_gpu_hour; /* micro-units of the currency */
};

struct spec_pricebook {
    struct spec_loc loc;
    const char *name;
    const char *display_name; /* the provider's name on invoices, or NULL */
    const char *currency;     /* ISO 4217 code */
    struct spec_price *prices;
    size_t nprices;
    int mig_share;    /* enum spec_mig_share */
    int shared_split; /* enum spec_shared_split */
};

struct spec_model {
    struct ts_arena arena;
    struct spec_fleet *fleet; /* exactly one */
    struct spec_tenant *tenants;
    size_t ntenants;
    struct spec_pricebook *pricebook; /* optional */
};

struct spec_object;
/* Build m from loaded objects and run the cross-document checks (unique
 * names, references, contradictions); problems go to diag. */
void spec_model_assemble(struct spec_model *m, const struct spec_object *objs, size_t n,
                         struct ts_diag *diag);

/* Tenant by name, or NULL. */
const struct spec_tenant *spec_tenant_find(const struct spec_model *m, const char *name);
/* 1 if a and b may share a card (same tenant or trust both ways). */
int spec_tenants_trust(const struct spec_model *m, const char *a, const char *b);
/* Parse "13.4" into 1304 (major*100+minor); 0 when absent or malformed. */
int spec_cuda_version(const char *v);

#endif
