/*
 * fields.c - the field tables of the Fleet, Tenant and PriceBook documents:
 * the single source of truth for the format (the loader checks every value
 * against them; docs/spec.md is generated from them by `tessera docs spec`).
 */
#include "spec/internal.h"

#include <stddef.h>
#include "util/limits.h"

const char *const spec_contract_names[] = {"dedicated",   "isolated", "shared-trusted",
                                           "best-effort", "vm",       NULL};
const char *const spec_pss_names[] = {"baseline", "restricted", NULL};
const char *const spec_memory_action_names[] = {"kill", "evict", "report", NULL};
const char *const spec_sm_action_names[] = {"report", "evict", "kill", NULL};
const char *const spec_data_class_names[] = {"internal", "confidential", "regulated", NULL};
const char *const spec_wkind_names[] = {"inference", "embedding", "training", "fine-tune",
                                        "batch",     "dev",       NULL};
const char *const spec_isolation_names[] = {
    "auto", "whole", "mig", "mps", "time-slicing", "memory-fraction", "vgpu", "cuda-streams", NULL};
static const char *const trust_names[] = {"trusted", "untrusted", NULL};
static const char *const spread_names[] = {"gpu", "node", "none", NULL};
static const char *const share_names[] = {"memory", "compute", "max", NULL};
const char *const spec_split_names[] = {"equal", "weight", "none", "usage", NULL};

/* ---- Tenant ---- */
#define ROW struct spec_workload
static const struct spec_field workload_fields[] = {
    {.key = "name",
     .type = SPEC_F_NAME,
     .offset = OFF(name),
     .required = 1,
     .help = "workload name, unique within the tenant"},
    {.key = "kind",
     .type = SPEC_F_ENUM,
     .offset = OFF(kind),
     .required = 1,
     .enums = spec_wkind_names,
     .help = "what it does"},
    {.key = "memoryHighWaterGiB",
     .type = SPEC_F_NUM,
     .offset = OFF(memory_gib),
     .required = 1,
     .min = 0.01,
     .max = 100000,
     .help = "peak GPU memory of one replica without KV cache (weights + activations)"},
    {.key = "kvCacheGiB",
     .type = SPEC_F_NUM,
     .offset = OFF(kv_cache_gib),
     .max = 100000,
     .help = "KV cache one replica keeps on top of the high-water mark"},
    {.key = "p99Ms",
     .type = SPEC_F_NUM,
     .offset = OFF(p99_ms),
     .min = 0.001,
     .max = 3600000,
     .help = "p99 latency target in milliseconds (omit for none)"},
    {.key = "bestEffort",
     .type = SPEC_F_BOOL,
     .offset = OFF(best_effort),
     .help = "no latency or capacity guarantee"},
    {.key = "replicas",
     .type = SPEC_F_INT,
     .offset = OFF(replicas),
     .min = 1,
     .max = SPEC_REPLICAS_MAX,
     .default_value = 1,
     .help = "copies that must run at once"},
    {.key = "spread",
     .type = SPEC_F_ENUM,
     .offset = OFF(spread),
     .enums = spread_names,
     .help = "replicas on distinct GPUs, distinct nodes, or anywhere"},
    {.key = "gpus",
     .type = SPEC_F_INT,
     .offset = OFF(gpus),
     .min = 1,
     .max = SPEC_REPLICA_GPUS_MAX,
     .default_value = 1,
     .help = "GPUs one replica needs (more than 1 = multi-GPU)"},
    {.key = "peerToPeer",
     .type = SPEC_F_BOOL,
     .offset = OFF(peer_to_peer),
     .help = "needs peer-to-peer / NVLink between its GPUs"},
    {.key = "vm",
     .type = SPEC_F_BOOL,
     .offset = OFF(vm),
     .help = "runs inside a virtual machine (KubeVirt)"},
    {.key = "trust",
     .type = SPEC_F_ENUM,
     .offset = OFF(trust),
     .enums = trust_names,
     .help = "untrusted = handles other parties' data or runs untrusted code"},
    {.key = "schedule",
     .type = SPEC_F_STR,
     .offset = OFF(schedule),
     .help = "when it runs, e.g. nightly (omit for always)"},
    {.key = "isolation",
     .type = SPEC_F_ENUM,
     .offset = OFF(isolation),
     .enums = spec_isolation_names,
     .help = "ask for a mechanism; auto lets the decision table choose"},
    {.key = "computeSlices",
     .type = SPEC_F_INT,
     .offset = OFF(compute_slices),
     .min = 1,
     .max = 8,
     .help = "MIG: fewest compute slices the latency target needs (0 = size by memory)"},
    {.key = "smPercent",
     .type = SPEC_F_INT,
     .offset = OFF(sm_percent),
     .min = 1,
     .max = 100,
     .help = "MPS: active thread percentage (0 = proportional to memory); time-sliced or "
             "shim-enforced fraction: the shim's SM share (0 = none)"},
    {.key = "gpuModel",
     .type = SPEC_F_STR,
     .offset = OFF(gpu_model),
     .help = "run only on this catalog model"},
    {.key = "gpuModels",
     .type = SPEC_F_NAMES,
     .offset = OFF(gpu_models),
     .count_offset = OFF(ngpu_models),
     .max = SPEC_WORKLOAD_MODELS_MAX,
     .help = "run only on these catalog models, most preferred first (instead of cheapest "
             "first); spills down the list when one is full"},
    {.key = "pool",
     .type = SPEC_F_NAME,
     .offset = OFF(pool),
     .help = "named sharing pool: workloads naming the same pool share one card"},
    {.key = "namespace",
     .type = SPEC_F_NAME,
     .offset = OFF(namespace_),
     .help = "one of the tenant's namespaces (default: its first)"},
};
static const struct spec_schema workload_schema = {
    .name = "Workload", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(workload_fields)};
#undef ROW

#define ROW struct spec_use
static const struct spec_field use_fields[] = {
    {.key = "tenant",
     .type = SPEC_F_NAME,
     .offset = OFF(tenant),
     .required = 1,
     .help = "the tenant that runs the shared workload"},
    {.key = "workload",
     .type = SPEC_F_NAME,
     .offset = OFF(workload),
     .required = 1,
     .help = "its workload"},
    {.key = "weight",
     .type = SPEC_F_INT,
     .offset = OFF(weight),
     .min = 1,
     .max = 1000000,
     .default_value = 1,
     .help = "this tenant's part of the shared workload's cost under PriceBook sharedSplit: "
             "weight (its weight over the sum of its consumers')"},
};
static const struct spec_schema use_schema = {
    .name = "Use", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(use_fields)};
#undef ROW

#define ROW struct spec_host_path
static const struct spec_field host_path_fields[] = {
    {.key = "path",
     .type = SPEC_F_STR,
     .offset = OFF(path),
     .required = 1,
     .help = "absolute host path its pods may mount (and what is under it); never a GPU device, "
             "MPS or driver path"},
    {.key = "writable",
     .type = SPEC_F_BOOL,
     .offset = OFF(writable),
     .help = "whether a mount of it may be writable (default false: readOnly required)"},
};
static const struct spec_schema host_path_schema = {
    .name = "HostPath", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(host_path_fields)};
#undef ROW

#define ROW struct spec_pod_security
static const struct spec_field pod_security_fields[] = {
    {.key = "level",
     .type = SPEC_F_ENUM,
     .offset = OFF(level),
     .enums = spec_pss_names,
     .help = "Pod Security Standards level of its namespaces (enforce label; capabilities its "
             "containers may add: baseline's list, or NET_BIND_SERVICE only for restricted)"},
    {.key = "capabilities",
     .type = SPEC_F_STRS,
     .offset = OFF(capabilities),
     .count_offset = OFF(ncapabilities),
     .max = SPEC_POD_SECURITY_ITEMS_MAX,
     .help = "Linux capabilities beyond the level its containers may add (e.g. NET_RAW)"},
    {.key = "hostPaths",
     .type = SPEC_F_LIST,
     .offset = OFF(host_paths),
     .count_offset = OFF(nhost_paths),
     .max = SPEC_POD_SECURITY_ITEMS_MAX,
     .sub = &host_path_schema,
     .help = "host paths its pods may mount (none by default)"},
    {.key = "priorityClasses",
     .type = SPEC_F_STRS,
     .offset = OFF(priority_classes),
     .count_offset = OFF(npriority_classes),
     .max = SPEC_POD_SECURITY_ITEMS_MAX,
     .help = "PriorityClasses its pods may name in priorityClassName (none by default: the "
             "cluster's default priority; a higher one would preempt other tenants' pods)"},
};
static const struct spec_schema pod_security_schema = {.name = "PodSecurity",
                                                       .size = sizeof(ROW),
                                                       .loc_offset = SPEC_NO_LOC,
                                                       SPEC_FIELDS(pod_security_fields)};
#undef ROW

#define ROW struct spec_enforcement
static const struct spec_field enforcement_fields[] = {
    {.key = "onMemoryViolation",
     .type = SPEC_F_ENUM,
     .offset = OFF(on_memory),
     .enums = spec_memory_action_names,
     .help = "what the node agent does to a container of the tenant whose processes hold more "
             "device memory than its limit (the shim's, plus its tolerance): kill its processes "
             "(default: the memory is a neighbour's), evict its pod, or only report"},
    {.key = "onSmViolation",
     .type = SPEC_F_ENUM,
     .offset = OFF(on_sm),
     .enums = spec_sm_action_names,
     .help = "what the node agent does to a container that took more than its SM share of a "
             "contended card over a window: report (default: the share is work-conserving and "
             "sampled), evict its pod, or kill its processes"},
};
static const struct spec_schema enforcement_schema = {.name = "Enforcement",
                                                      .size = sizeof(ROW),
                                                      .loc_offset = SPEC_NO_LOC,
                                                      SPEC_FIELDS(enforcement_fields)};
#undef ROW

#define ROW struct spec_tenant
static const struct spec_field tenant_fields[] = {
    {.key = "displayName",
     .type = SPEC_F_STR,
     .offset = OFF(display_name),
     .help = "human name for reports"},
    {.key = "contract",
     .type = SPEC_F_ENUM,
     .offset = OFF(contract),
     .required = 1,
     .enums = spec_contract_names,
     .help = "what the tenant was sold"},
    {.key = "dataClass",
     .type = SPEC_F_ENUM,
     .offset = OFF(data_class),
     .enums = spec_data_class_names,
     .help = "sensitivity of its data"},
    {.key = "namespaces",
     .type = SPEC_F_NAMES,
     .offset = OFF(namespaces),
     .count_offset = OFF(nnamespaces),
     .required = 1,
     .min = 1,
     .max = SPEC_NAMESPACES_MAX,
     .help = "Kubernetes namespaces (projects) that belong to it"},
    {.key = "trusts",
     .type = SPEC_F_NAMES,
     .offset = OFF(trusts),
     .count_offset = OFF(ntrusts),
     .max = SPEC_TRUSTS_MAX,
     .help = "tenants it accepts on a shared card (must be mutual)"},
    {.key = "uses",
     .type = SPEC_F_LIST,
     .offset = OFF(uses),
     .count_offset = OFF(nuses),
     .max = SPEC_USES_MAX,
     .sub = &use_schema,
     .help = "shared workloads of other tenants it consumes"},
    {.key = "workloads",
     .type = SPEC_F_LIST,
     .offset = OFF(workloads),
     .count_offset = OFF(nworkloads),
     .max = SPEC_WORKLOADS_MAX,
     .sub = &workload_schema,
     .help = "what it runs"},
    {.key = "group",
     .type = SPEC_F_STR,
     .offset = OFF(group),
     .help = "identity-provider group given the edit role in its namespaces (default "
             "tessera:<name>)"},
    {.key = "borrowingLimit",
     .type = SPEC_F_INT,
     .offset = OFF(borrowing_limit),
     .max = 100000,
     .default_value = -1,
     .help = "Kueue: devices of each kind it may borrow from idle quota (default: no limit)"},
    {.key = "lendingLimit",
     .type = SPEC_F_INT,
     .offset = OFF(lending_limit),
     .max = 100000,
     .default_value = -1,
     .help = "Kueue: devices of each kind it lends while idle (default: 0 for dedicated, isolated "
             "and vm contracts, no limit otherwise)"},
    {.key = "fairShareWeight",
     .type = SPEC_F_NUM,
     .offset = OFF(fair_share_weight),
     .min = 0.001,
     .max = 1000,
     .default_value = 1,
     .help = "Kueue fair-sharing weight"},
    {.key = "podSecurity",
     .type = SPEC_F_OBJ,
     .offset = OFF(pod_security),
     .sub = &pod_security_schema,
     .help = "what its pods may do beyond the Pod Security level (docs/webhook.md)"},
    {.key = "enforcement",
     .type = SPEC_F_OBJ,
     .offset = OFF(enforcement),
     .sub = &enforcement_schema,
     .help = "what the node agent does when its containers hold more than the plan allows "
             "(docs/agent.md, Enforcement)"},
};
static const struct spec_schema tenant_schema = {
    .name = "Tenant.spec", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(tenant_fields)};
#undef ROW

/* ---- Fleet ---- */
#define ROW struct spec_node_gpus
static const struct spec_field node_gpu_fields[] = {
    {.key = "model",
     .type = SPEC_F_STR,
     .offset = OFF(model),
     .required = 1,
     .help = "catalog model name (see tessera catalog list)"},
    {.key = "count",
     .type = SPEC_F_INT,
     .offset = OFF(count),
     .required = 1,
     .min = 1,
     .max = SPEC_NODE_GPUS_MAX,
     .help = "how many of them"},
};
static const struct spec_schema node_gpu_schema = {
    .name = "NodeGpus", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(node_gpu_fields)};
#undef ROW

#define ROW struct spec_fleet_node
static const struct spec_field node_fields[] = {
    {.key = "name",
     .type = SPEC_F_DNS,
     .offset = OFF(name),
     .required = 1,
     .help = "Kubernetes node name"},
    {.key = "gpus",
     .type = SPEC_F_LIST,
     .offset = OFF(gpus),
     .count_offset = OFF(ngpus),
     .required = 1,
     .min = 1,
     .max = SPEC_NODE_MODELS_MAX,
     .sub = &node_gpu_schema,
     .help = "GPU models and counts, in index order"},
    {.key = "cudaVersion",
     .type = SPEC_F_STR,
     .offset = OFF(cuda_version),
     .help = "driver's CUDA version, e.g. \"13.4\" (memory-enforced fractions need 13.4+)"},
    {.key = "vgpuLicensed",
     .type = SPEC_F_BOOL,
     .offset = OFF(vgpu_licensed),
     .help = "NVIDIA vGPU licensed on this node"},
    {.key = "mps",
     .type = SPEC_F_BOOL,
     .offset = OFF(mps_allowed),
     .default_value = 1,
     .help = "MPS control daemons may run here"},
    {.key = "canary",
     .type = SPEC_F_STR,
     .offset = OFF(canary),
     .help = "MIG profile kept free on this node (overrides the fleet's)"},
};
static const struct spec_schema node_schema = {
    .name = "Node", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(node_fields)};
#undef ROW

#define ROW struct spec_fleet
static const struct spec_field fleet_fields[] = {
    {.key = "nodes",
     .type = SPEC_F_LIST,
     .offset = OFF(nodes),
     .count_offset = OFF(nnodes),
     .required = 1,
     .min = 1,
     .max = SPEC_NODES_MAX,
     .sub = &node_schema,
     .help = "the GPU nodes"},
    {.key = "canary",
     .type = SPEC_F_STR,
     .offset = OFF(canary),
     .help = "MIG profile kept free on every node with MIG cards, for canary rollouts"},
};
static const struct spec_schema fleet_schema = {
    .name = "Fleet.spec", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(fleet_fields)};
#undef ROW

/* ---- PriceBook ---- */
#define ROW struct spec_price
static const struct spec_field price_fields[] = {
    {.key = "model",
     .type = SPEC_F_STR,
     .offset = OFF(model),
     .required = 1,
     .help = "catalog model name"},
    {.key = "perGpuHour",
     .type = SPEC_F_MONEY,
     .offset = OFF(per_gpu_hour),
     .required = 1,
     .help = "price of one whole GPU for one hour, e.g. \"2.50\""},
};
static const struct spec_schema price_schema = {
    .name = "Price", .size = sizeof(ROW), .loc_offset = OFF(loc), SPEC_FIELDS(price_fields)};
#undef ROW

#define ROW struct spec_pricebook
static const struct spec_field pricebook_fields[] = {
    {.key = "displayName",
     .type = SPEC_F_STR,
     .offset = OFF(display_name),
     .help = "the provider's name on invoices (default: the Fleet's name)"},
    {.key = "currency",
     .type = SPEC_F_STR,
     .offset = OFF(currency),
     .required = 1,
     .help = "ISO 4217 code, e.g. EUR"},
    {.key = "prices",
     .type = SPEC_F_LIST,
     .offset = OFF(prices),
     .count_offset = OFF(nprices),
     .required = 1,
     .min = 1,
     .max = SPEC_PRICES_MAX,
     .sub = &price_schema,
     .help = "price per GPU model"},
    {.key = "migShareBasis",
     .type = SPEC_F_ENUM,
     .offset = OFF(mig_share),
     .enums = share_names,
     .help = "a MIG instance's share of its card: memory slices, compute slices, or the larger"},
    {.key = "sharedSplit",
     .type = SPEC_F_ENUM,
     .offset = OFF(shared_split),
     .enums = spec_split_names,
     .help = "how a workload other tenants use is billed: split equally among its consumers, "
             "by their uses weight, none (its owner pays all), or usage (by each consumer's "
             "requests, istio_requests_total; by weight where none were counted)"},
};
static const struct spec_schema pricebook_schema = {.name = "PriceBook.spec",
                                                    .size = sizeof(ROW),
                                                    .loc_offset = OFF(loc),
                                                    SPEC_FIELDS(pricebook_fields)};
#undef ROW

const struct spec_kind spec__kinds[] = {
    {.kind = "Fleet", .schema = &fleet_schema, .name_off = offsetof(struct spec_fleet, name)},
    {.kind = "Tenant", .schema = &tenant_schema, .name_off = offsetof(struct spec_tenant, name)},
    {.kind = "PriceBook",
     .schema = &pricebook_schema,
     .name_off = offsetof(struct spec_pricebook, name)},
};
const size_t spec__nkinds = sizeof(spec__kinds) / sizeof(spec__kinds[0]);
