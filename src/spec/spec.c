/*
 * spec.c - the document envelope, the Fleet/Tenant/PriceBook schemas and the
 * cross-document checks (see spec.h). Field tables here are the single
 * source of truth for the format; docs/spec.md is generated from them.
 * Most cross-document rules live in model.c; the two about list items the
 * model keeps as bare strings (a namespace owned twice, trusts naming no
 * tenant) run here, where the YAML nodes still give each item's place.
 */
#include "spec/spec.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/file.h"
#include "util/limits.h"

const char *const spec_contract_names[] = {"dedicated",   "isolated", "shared-trusted",
                                           "best-effort", "vm",       NULL};
const char *const spec_pss_names[] = {"baseline", "restricted", NULL};
const char *const spec_data_class_names[] = {"internal", "confidential", "regulated", NULL};
const char *const spec_wkind_names[] = {"inference", "embedding", "training", "fine-tune",
                                        "batch",     "dev",       NULL};
const char *const spec_isolation_names[] = {
    "auto", "whole", "mig", "mps", "time-slicing", "memory-fraction", "vgpu", "cuda-streams", NULL};
static const char *const trust_names[] = {"trusted", "untrusted", NULL};
static const char *const spread_names[] = {"gpu", "node", "none", NULL};
static const char *const share_names[] = {"memory", "compute", "max", NULL};

/* Each table below names the struct its rows fill as ROW (#undef after);
 * OFF(member) is where a value goes in it. */
#define OFF(member) offsetof(ROW, member)

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
     .help = "MPS: active thread percentage (0 = proportional to memory)"},
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
};
static const struct spec_schema pod_security_schema = {.name = "PodSecurity",
                                                       .size = sizeof(ROW),
                                                       .loc_offset = SPEC_NO_LOC,
                                                       SPEC_FIELDS(pod_security_fields)};
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
};
static const struct spec_schema pricebook_schema = {.name = "PriceBook.spec",
                                                    .size = sizeof(ROW),
                                                    .loc_offset = OFF(loc),
                                                    SPEC_FIELDS(pricebook_fields)};
#undef ROW

static const struct spec_kind spec_kinds[] = {
    {.kind = "Fleet", .schema = &fleet_schema, .name_off = offsetof(struct spec_fleet, name)},
    {.kind = "Tenant", .schema = &tenant_schema, .name_off = offsetof(struct spec_tenant, name)},
    {.kind = "PriceBook",
     .schema = &pricebook_schema,
     .name_off = offsetof(struct spec_pricebook, name)},
};
#define NKINDS (sizeof(spec_kinds) / sizeof(spec_kinds[0]))

/* ---- the envelope ---- */

/* Objects read so far, with the YAML node of each one's spec: part. */
struct objlist {
    struct spec_object *items;
    const struct spec_node **specs;
    size_t count, cap;
};

static int push_object(struct ts_arena *a, struct objlist *l, const struct spec_object *o,
                       const struct spec_node *spec)
{
    size_t items_cap = l->cap, specs_cap = l->cap; /* the two arrays grow together */
    if (!ts_arena_grow(a, (void **)&l->items, &items_cap, l->count, sizeof(*l->items)) ||
        !ts_arena_grow(a, (void **)&l->specs, &specs_cap, l->count, sizeof(*l->specs)))
        return 0;
    l->cap = items_cap;
    l->specs[l->count] = spec;
    l->items[l->count++] = *o;
    return 1;
}

static const struct spec_kind *find_kind(const struct spec_kind *kinds, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kinds[i].kind, name) == 0)
            return &kinds[i];
    return NULL;
}

/* metadata: read with the schema walker so it gets the same checks. */
struct metadata {
    const char *name;
};
#define ROW struct metadata
static const struct spec_field metadata_fields[] = {
    {.key = "name",
     .type = SPEC_F_NAME,
     .offset = OFF(name),
     .required = 1,
     .help = "the object's name"},
};
static const struct spec_schema metadata_schema = {.name = "metadata",
                                                   .size = sizeof(ROW),
                                                   .loc_offset = SPEC_NO_LOC,
                                                   SPEC_FIELDS(metadata_fields)};
#undef ROW

enum { ENV_API, ENV_KIND, ENV_META, ENV_SPEC, ENV_KEYS };
static const char *const envelope_names[ENV_KEYS] = {"apiVersion", "kind", "metadata", "spec"};

/* The document's top-level keys and values, by ENV_*. */
struct envelope {
    const struct spec_node *key[ENV_KEYS], *value[ENV_KEYS];
    const char *path; /* "documents[N]" */
};

static int envelope_key(struct spec_ctx *ctx, const struct spec_node *k, const struct spec_node *v,
                        struct envelope *env)
{
    if (k->type != SPEC_NODE_SCALAR) {
        spec_report(ctx, k, env->path, "keys must be plain strings");
        return 1;
    }
    for (int i = 0; i < ENV_KEYS; i++) {
        if (strcmp(k->value, envelope_names[i]) != 0)
            continue;
        if (env->key[i]) {
            spec_report(ctx, k, ts_arena_printf(ctx->arena, "%s.%s", env->path, k->value),
                        "duplicate field (first set at line %d)", env->key[i]->line);
            return 1;
        }
        env->key[i] = k;
        env->value[i] = v;
        return 0;
    }
    for (int i = 0; i < ENV_KEYS; i++)
        if (strcasecmp(k->value, envelope_names[i]) == 0) {
            spec_report(ctx, k, env->path, "unknown field '%.60s' (did you mean '%s'?)", k->value,
                        envelope_names[i]);
            return 1;
        }
    spec_report(ctx, k, env->path,
                "unknown field '%.60s' (a document has apiVersion, kind, "
                "metadata and spec)",
                k->value);
    return 1;
}

/* A required top-level string; NULL (after reporting) when absent or wrong. */
static const char *envelope_string(struct spec_ctx *ctx, const struct spec_node *root,
                                   const struct envelope *env, int which, const char *hint)
{
    const struct spec_node *v = env->value[which];
    const char *name = envelope_names[which];
    if (!v) {
        spec_report(ctx, root, env->path, "missing required field '%s'; it must be %s", name, hint);
        return NULL;
    }
    if (v->type != SPEC_NODE_SCALAR || v->len == 0) {
        spec_report(ctx, v, ts_arena_printf(ctx->arena, "%s.%s", env->path, name),
                    "must be %s, got %s", hint,
                    v->type == SPEC_NODE_SCALAR ? "nothing"
                    : v->type == SPEC_NODE_MAP  ? "a mapping"
                                                : "a list");
        return NULL;
    }
    return v->value;
}

/* apiVersion and kind; the kind, or NULL after reporting. */
static const struct spec_kind *envelope_kind(struct spec_ctx *ctx, const struct spec_node *root,
                                             const struct envelope *env,
                                             const struct spec_kind *kinds, size_t nkinds)
{
    const char *api = envelope_string(ctx, root, env, ENV_API, TS_API_VERSION);
    if (!api)
        return NULL;
    if (strcmp(api, TS_API_VERSION) != 0) {
        spec_report(ctx, env->value[ENV_API],
                    ts_arena_printf(ctx->arena, "%s.apiVersion", env->path),
                    "must be %s, got '%.60s'", TS_API_VERSION, api);
        return NULL;
    }
    char list[200] = "";
    for (size_t i = 0; i < nkinds; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", kinds[i].kind);
    }
    const char *hint = ts_arena_printf(ctx->arena, "one of %s", list);
    const char *kind = envelope_string(ctx, root, env, ENV_KIND, hint);
    if (!kind)
        return NULL;
    const struct spec_kind *k = find_kind(kinds, nkinds, kind);
    if (!k)
        spec_report(ctx, env->value[ENV_KIND], ts_arena_printf(ctx->arena, "%s.kind", env->path),
                    "must be %s; got '%.40s'", hint, kind);
    return k;
}

/* metadata.name, or NULL after reporting; *at gets the name's node. */
static const char *envelope_name(struct spec_ctx *ctx, const struct spec_node *root,
                                 const struct envelope *env, const struct spec_node **at)
{
    const struct spec_node *v = env->value[ENV_META];
    if (!v) {
        spec_report(ctx, root, env->path, "missing required field 'metadata' (with a name)");
        return NULL;
    }
    struct metadata md = {0};
    const char *path = ts_arena_printf(ctx->arena, "%s.metadata", env->path);
    if (spec_schema_read(ctx, v, &metadata_schema, &md, path) != 0)
        return NULL;
    *at = spec_node_get(v, "name");
    return md.name;
}

static void read_document(struct spec_ctx *ctx, const struct spec_doc *doc,
                          const struct spec_kind *kinds, size_t nkinds, size_t index,
                          struct objlist *out)
{
    const struct spec_node *root = doc->root;
    if (!root)
        return; /* an empty document, e.g. a trailing '---' */
    struct envelope env = {{0}, {0}, ts_arena_printf(ctx->arena, "documents[%zu]", index)};
    if (root->type != SPEC_NODE_MAP) {
        spec_report(ctx, root, env.path,
                    "a document must be a mapping with apiVersion, kind, "
                    "metadata and spec");
        return;
    }
    int bad = 0;
    for (size_t i = 0; i + 1 < root->count; i += 2)
        bad += envelope_key(ctx, root->items[i], root->items[i + 1], &env);
    const struct spec_kind *k = envelope_kind(ctx, root, &env, kinds, nkinds);
    if (!k)
        return;
    const struct spec_node *name_node = NULL;
    const char *name = envelope_name(ctx, root, &env, &name_node);
    const struct spec_node *spec = env.value[ENV_SPEC];
    if (!spec)
        spec_report(ctx, root, env.path, "missing required field 'spec'");
    if (bad || !name || !spec)
        return;
    struct spec_object o = {k, ts_arena_alloc(ctx->arena, k->schema->size), name, {0}};
    if (!o.obj)
        return;
    const char *path = ts_arena_printf(ctx->arena, "%s/%s.spec", k->kind, name);
    o.loc = (struct spec_loc){ctx->file, name_node->line, name_node->column,
                              ts_arena_printf(ctx->arena, "%s/%s.metadata.name", k->kind, name)};
    *(const char **)((char *)o.obj + k->name_off) = name;
    if (spec_schema_read(ctx, spec, k->schema, o.obj, path) == 0)
        push_object(ctx->arena, out, &o, spec);
}

static void load_text(const char *text, size_t len, const char *name, const struct spec_kind *kinds,
                      size_t nkinds, struct ts_arena *arena, struct objlist *out,
                      struct ts_diag *diag)
{
    struct spec_doc *docs = NULL;
    size_t ndocs = 0;
    struct ts_error e;
    const char *fname = ts_arena_strdup(arena, name);
    if (spec_yaml_parse(text, len, fname, arena, &docs, &ndocs, &e) != TS_OK) {
        ts_diag_add(diag, &e);
        return;
    }
    size_t used = 0;
    for (size_t i = 0; i < ndocs; i++)
        used += docs[i].root != NULL;
    if (used == 0) {
        ts_diag_addf(diag, TS_SEV_ERROR, TS_INVALID, fname, 0, 0, NULL,
                     "the file holds no YAML "
                     "documents (it is empty or only comments)");
        return;
    }
    struct spec_ctx ctx = {arena, fname, diag};
    for (size_t i = 0; i < ndocs; i++)
        read_document(&ctx, &docs[i], kinds, nkinds, i, out);
}

static void load_files(const char *const *paths, size_t npaths, const struct spec_kind *kinds,
                       size_t nkinds, struct ts_arena *arena, struct objlist *l,
                       struct ts_diag *diag)
{
    for (size_t i = 0; i < npaths; i++) {
        char *text = NULL;
        size_t len = 0;
        struct ts_error e;
        if (ts_file_read(paths[i], TS_INPUT_MAX, &text, &len, &e) != TS_OK) {
            ts_diag_add(diag, &e);
            continue;
        }
        const char *name = strcmp(paths[i], "-") == 0 ? "<stdin>" : paths[i];
        load_text(text, len, name, kinds, nkinds, arena, l, diag);
        free(text);
    }
}

static ts_status loaded(const struct objlist *l, struct spec_object **objs, size_t *nobjs,
                        const struct ts_diag *diag)
{
    *objs = l->items;
    *nobjs = l->count;
    return diag->count || diag->dropped ? TS_INVALID : TS_OK;
}

ts_status spec_load_objects_text(const char *text, size_t len, const char *name,
                                 const struct spec_kind *kinds, size_t nkinds,
                                 struct ts_arena *arena, struct spec_object **objs, size_t *nobjs,
                                 struct ts_diag *diag)
{
    struct objlist l = {0};
    load_text(text, len, name, kinds, nkinds, arena, &l, diag);
    return loaded(&l, objs, nobjs, diag);
}

ts_status spec_load_objects(const char *const *paths, size_t npaths, const struct spec_kind *kinds,
                            size_t nkinds, struct ts_arena *arena, struct spec_object **objs,
                            size_t *nobjs, struct ts_diag *diag)
{
    struct objlist l = {0};
    load_files(paths, npaths, kinds, nkinds, arena, &l, diag);
    return loaded(&l, objs, nobjs, diag);
}

/* ---- list items the model keeps as plain strings ----
 * A tenant's namespaces and trusts are bare strings in the model, so the
 * rules about them run here, on the YAML nodes, and point at the item. */

static int is_tenant(const struct objlist *l, size_t i)
{
    return strcmp(l->items[i].kind->kind, "Tenant") == 0;
}

static const struct spec_node *tenant_item(const struct objlist *l, size_t i, const char *key,
                                           size_t j)
{
    const struct spec_node *list = spec_node_get(l->specs[i], key);
    return list && j < list->count ? list->items[j] : NULL;
}

static void report_item(struct ts_arena *a, struct ts_diag *diag, const struct objlist *l, size_t i,
                        const char *key, size_t j, const char *msg)
{
    const struct spec_node *n = tenant_item(l, i, key, j);
    const struct spec_tenant *t = l->items[i].obj;
    struct spec_loc loc = {t->loc.file, n->line, n->column,
                           ts_arena_printf(a, "%s.%s[%zu]", t->loc.path, key, j)};
    spec_report_loc(diag, &loc, "%s", msg);
}

/* The first earlier tenant that lists namespace ns, or -1. */
static long namespace_owner(const struct objlist *l, size_t before, const char *ns)
{
    for (size_t i = 0; i < before; i++) {
        const struct spec_tenant *u = l->items[i].obj;
        for (size_t b = 0; is_tenant(l, i) && b < u->nnamespaces; b++)
            if (strcmp(u->namespaces[b], ns) == 0)
                return (long)i;
    }
    return -1;
}

static void check_namespace_owners(struct ts_arena *a, const struct objlist *l,
                                   struct ts_diag *diag)
{
    for (size_t i = 0; i < l->count; i++) {
        const struct spec_tenant *t = l->items[i].obj;
        for (size_t j = 0; is_tenant(l, i) && j < t->nnamespaces; j++) {
            long o = namespace_owner(l, i, t->namespaces[j]);
            if (o < 0)
                continue;
            const struct spec_object *owner = &l->items[o];
            report_item(a, diag, l, i, "namespaces", j,
                        ts_arena_printf(a,
                                        "'%s' already "
                                        "belongs to tenant '%s' (%s:%d); a namespace has one owner",
                                        t->namespaces[j], owner->name, owner->loc.file,
                                        owner->loc.line));
        }
    }
}

static int tenant_exists(const struct objlist *l, const char *name)
{
    for (size_t i = 0; i < l->count; i++)
        if (is_tenant(l, i) && strcmp(l->items[i].name, name) == 0)
            return 1;
    return 0;
}

static void check_trusts(struct ts_arena *a, const struct objlist *l, struct ts_diag *diag)
{
    for (size_t i = 0; i < l->count; i++) {
        const struct spec_tenant *t = l->items[i].obj;
        for (size_t j = 0; is_tenant(l, i) && j < t->ntrusts; j++) {
            if (strcmp(t->trusts[j], t->name) == 0)
                report_item(a, diag, l, i, "trusts", j, "a tenant need not list itself");
            else if (!tenant_exists(l, t->trusts[j]))
                report_item(a, diag, l, i, "trusts", j,
                            ts_arena_printf(a, "no tenant named '%s'", t->trusts[j]));
        }
    }
}

/* ---- the tenancy spec ---- */

/* Objects read cleanly: assemble the model and run the cross-document rules. */
static ts_status finish_load(struct spec_model *m, const struct objlist *l, struct spec_model **out,
                             struct ts_diag *diag)
{
    if (diag->count == 0 && diag->dropped == 0) {
        spec_model_assemble(m, l->items, l->count, diag);
        check_namespace_owners(&m->arena, l, diag);
        check_trusts(&m->arena, l, diag);
    }
    if (diag->count || diag->dropped) {
        spec_model_free(m);
        return TS_INVALID;
    }
    *out = m;
    return TS_OK;
}

static struct spec_model *new_model(void)
{
    struct spec_model *m = calloc(1, sizeof(*m));
    if (m)
        ts_arena_init(&m->arena);
    return m;
}

static ts_status no_memory(struct ts_diag *diag)
{
    struct ts_error e;
    ts_err(&e, TS_NOMEM, "out of memory");
    ts_diag_add(diag, &e);
    return TS_NOMEM;
}

ts_status spec_load(const char *const *paths, size_t npaths, struct spec_model **out,
                    struct ts_diag *diag)
{
    struct spec_model *m = new_model();
    if (!m)
        return no_memory(diag);
    struct objlist l = {0};
    load_files(paths, npaths, spec_kinds, NKINDS, &m->arena, &l, diag);
    return finish_load(m, &l, out, diag);
}

ts_status spec_load_text(const char *text, size_t len, const char *name, struct spec_model **out,
                         struct ts_diag *diag)
{
    struct spec_model *m = new_model();
    if (!m)
        return no_memory(diag);
    struct objlist l = {0};
    load_text(text, len, name, spec_kinds, NKINDS, &m->arena, &l, diag);
    return finish_load(m, &l, out, diag);
}

void spec_model_free(struct spec_model *m)
{
    if (!m)
        return;
    ts_arena_free(&m->arena);
    free(m);
}

void spec_doc_reference(struct ts_sbuf *out)
{
    for (size_t i = 0; i < NKINDS; i++)
        spec_schema_doc(out, spec_kinds[i].schema);
}
