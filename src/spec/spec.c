/*
 * spec.c - the document envelope, the Fleet/Tenant/PriceBook schemas and the
 * cross-document checks (see spec.h). Field tables here are the single
 * source of truth for the format; docs/spec.md is generated from them.
 */
#include "spec/spec.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/file.h"

const char *const spec_contract_names[] = {"dedicated", "isolated", "shared-trusted",
                                           "best-effort", "vm", NULL};
const char *const spec_data_class_names[] = {"internal", "confidential", "regulated", NULL};
const char *const spec_wkind_names[] = {"inference", "embedding", "training", "fine-tune",
                                        "batch", "dev", NULL};
const char *const spec_isolation_names[] = {"auto", "whole", "mig", "mps", "time-slicing",
                                            "memory-fraction", "vgpu", "cuda-streams", NULL};
static const char *const trust_names[] = {"trusted", "untrusted", NULL};
static const char *const spread_names[] = {"gpu", "node", "none", NULL};
static const char *const share_names[] = {"memory", "compute", "max", NULL};

#define OFF(type, member) offsetof(type, member)
#define CNT(type, member) offsetof(type, member)

/* ---- Tenant ---- */
static const struct spec_field workload_fields[] = {
    {"name", SPEC_F_NAME, OFF(struct spec_workload, name), 0, 1, 0, 0, 0, NULL, NULL,
     "workload name, unique within the tenant"},
    {"kind", SPEC_F_ENUM, OFF(struct spec_workload, kind), 0, 1, 0, 0, 0, spec_wkind_names,
     NULL, "what it does"},
    {"memoryHighWaterGiB", SPEC_F_NUM, OFF(struct spec_workload, memory_gib), 0, 1, 0.01,
     100000, 0, NULL, NULL, "peak GPU memory of one replica without KV cache (weights + activations)"},
    {"kvCacheGiB", SPEC_F_NUM, OFF(struct spec_workload, kv_cache_gib), 0, 0, 0, 100000, 0,
     NULL, NULL, "KV cache one replica keeps on top of the high-water mark"},
    {"p99Ms", SPEC_F_NUM, OFF(struct spec_workload, p99_ms), 0, 0, 0.001, 3600000, 0, NULL,
     NULL, "p99 latency target in milliseconds (omit for none)"},
    {"bestEffort", SPEC_F_BOOL, OFF(struct spec_workload, best_effort), 0, 0, 0, 0, 0, NULL,
     NULL, "no latency or capacity guarantee"},
    {"replicas", SPEC_F_INT, OFF(struct spec_workload, replicas), 0, 0, 1, 1000, 1, NULL, NULL,
     "copies that must run at once"},
    {"spread", SPEC_F_ENUM, OFF(struct spec_workload, spread), 0, 0, 0, 0, 0, spread_names,
     NULL, "replicas on distinct GPUs, distinct nodes, or anywhere"},
    {"gpus", SPEC_F_INT, OFF(struct spec_workload, gpus), 0, 0, 1, 64, 1, NULL, NULL,
     "GPUs one replica needs (more than 1 = multi-GPU)"},
    {"peerToPeer", SPEC_F_BOOL, OFF(struct spec_workload, peer_to_peer), 0, 0, 0, 0, 0, NULL,
     NULL, "needs peer-to-peer / NVLink between its GPUs"},
    {"vm", SPEC_F_BOOL, OFF(struct spec_workload, vm), 0, 0, 0, 0, 0, NULL, NULL,
     "runs inside a virtual machine (KubeVirt)"},
    {"trust", SPEC_F_ENUM, OFF(struct spec_workload, trust), 0, 0, 0, 0, 0, trust_names, NULL,
     "untrusted = handles other parties' data or runs untrusted code"},
    {"schedule", SPEC_F_STR, OFF(struct spec_workload, schedule), 0, 0, 0, 0, 0, NULL, NULL,
     "when it runs, e.g. nightly (omit for always)"},
    {"isolation", SPEC_F_ENUM, OFF(struct spec_workload, isolation), 0, 0, 0, 0, 0,
     spec_isolation_names, NULL, "ask for a mechanism; auto lets the decision table choose"},
    {"computeSlices", SPEC_F_INT, OFF(struct spec_workload, compute_slices), 0, 0, 1, 8, 0,
     NULL, NULL, "MIG: fewest compute slices the latency target needs (0 = size by memory)"},
    {"smPercent", SPEC_F_INT, OFF(struct spec_workload, sm_percent), 0, 0, 1, 100, 0, NULL,
     NULL, "MPS: active thread percentage (0 = proportional to memory)"},
    {"gpuModel", SPEC_F_STR, OFF(struct spec_workload, gpu_model), 0, 0, 0, 0, 0, NULL, NULL,
     "run only on this catalog model"},
    {"pool", SPEC_F_NAME, OFF(struct spec_workload, pool), 0, 0, 0, 0, 0, NULL, NULL,
     "named sharing pool: workloads naming the same pool share one card"},
};
static const struct spec_schema workload_schema = {
    "Workload", sizeof(struct spec_workload), OFF(struct spec_workload, loc),
    SPEC_FIELDS(workload_fields)};

static const struct spec_field use_fields[] = {
    {"tenant", SPEC_F_NAME, OFF(struct spec_use, tenant), 0, 1, 0, 0, 0, NULL, NULL,
     "the tenant that runs the shared workload"},
    {"workload", SPEC_F_NAME, OFF(struct spec_use, workload), 0, 1, 0, 0, 0, NULL, NULL,
     "its workload"},
};
static const struct spec_schema use_schema = {"Use", sizeof(struct spec_use),
                                              OFF(struct spec_use, loc), SPEC_FIELDS(use_fields)};

static const struct spec_field tenant_fields[] = {
    {"displayName", SPEC_F_STR, OFF(struct spec_tenant, display_name), 0, 0, 0, 0, 0, NULL,
     NULL, "human name for reports"},
    {"contract", SPEC_F_ENUM, OFF(struct spec_tenant, contract), 0, 1, 0, 0, 0,
     spec_contract_names, NULL, "what the tenant was sold"},
    {"dataClass", SPEC_F_ENUM, OFF(struct spec_tenant, data_class), 0, 0, 0, 0, 0,
     spec_data_class_names, NULL, "sensitivity of its data"},
    {"namespaces", SPEC_F_NAMES, OFF(struct spec_tenant, namespaces),
     CNT(struct spec_tenant, nnamespaces), 1, 1, 100, 0, NULL, NULL,
     "Kubernetes namespaces (projects) that belong to it"},
    {"trusts", SPEC_F_NAMES, OFF(struct spec_tenant, trusts), CNT(struct spec_tenant, ntrusts),
     0, 0, 1000, 0, NULL, NULL, "tenants it accepts on a shared card (must be mutual)"},
    {"uses", SPEC_F_LIST, OFF(struct spec_tenant, uses), CNT(struct spec_tenant, nuses), 0, 0,
     1000, 0, NULL, &use_schema, "shared workloads of other tenants it consumes"},
    {"workloads", SPEC_F_LIST, OFF(struct spec_tenant, workloads),
     CNT(struct spec_tenant, nworkloads), 0, 0, 1000, 0, NULL, &workload_schema,
     "what it runs"},
};
static const struct spec_schema tenant_schema = {
    "Tenant.spec", sizeof(struct spec_tenant), OFF(struct spec_tenant, loc),
    SPEC_FIELDS(tenant_fields)};

/* ---- Fleet ---- */
static const struct spec_field node_gpu_fields[] = {
    {"model", SPEC_F_STR, OFF(struct spec_node_gpus, model), 0, 1, 0, 0, 0, NULL, NULL,
     "catalog model name (see tessera catalog list)"},
    {"count", SPEC_F_INT, OFF(struct spec_node_gpus, count), 0, 1, 1, 64, 0, NULL, NULL,
     "how many of them"},
};
static const struct spec_schema node_gpu_schema = {
    "NodeGpus", sizeof(struct spec_node_gpus), OFF(struct spec_node_gpus, loc),
    SPEC_FIELDS(node_gpu_fields)};

static const struct spec_field node_fields[] = {
    {"name", SPEC_F_DNS, OFF(struct spec_fleet_node, name), 0, 1, 0, 0, 0, NULL, NULL,
     "Kubernetes node name"},
    {"gpus", SPEC_F_LIST, OFF(struct spec_fleet_node, gpus), CNT(struct spec_fleet_node, ngpus),
     1, 1, 16, 0, NULL, &node_gpu_schema, "GPU models and counts, in index order"},
    {"cudaVersion", SPEC_F_STR, OFF(struct spec_fleet_node, cuda_version), 0, 0, 0, 0, 0, NULL,
     NULL, "driver's CUDA version, e.g. \"13.4\" (memory-enforced fractions need 13.4+)"},
    {"vgpuLicensed", SPEC_F_BOOL, OFF(struct spec_fleet_node, vgpu_licensed), 0, 0, 0, 0, 0,
     NULL, NULL, "NVIDIA vGPU licensed on this node"},
    {"mps", SPEC_F_BOOL, OFF(struct spec_fleet_node, mps_allowed), 0, 0, 0, 0, 1, NULL, NULL,
     "MPS control daemons may run here"},
    {"canary", SPEC_F_STR, OFF(struct spec_fleet_node, canary), 0, 0, 0, 0, 0, NULL, NULL,
     "MIG profile kept free on this node (overrides the fleet's)"},
};
static const struct spec_schema node_schema = {
    "Node", sizeof(struct spec_fleet_node), OFF(struct spec_fleet_node, loc),
    SPEC_FIELDS(node_fields)};

static const struct spec_field fleet_fields[] = {
    {"nodes", SPEC_F_LIST, OFF(struct spec_fleet, nodes), CNT(struct spec_fleet, nnodes), 1, 1,
     10000, 0, NULL, &node_schema, "the GPU nodes"},
    {"canary", SPEC_F_STR, OFF(struct spec_fleet, canary), 0, 0, 0, 0, 0, NULL, NULL,
     "MIG profile kept free on every node with MIG cards, for canary rollouts"},
};
static const struct spec_schema fleet_schema = {
    "Fleet.spec", sizeof(struct spec_fleet), OFF(struct spec_fleet, loc),
    SPEC_FIELDS(fleet_fields)};

/* ---- PriceBook ---- */
static const struct spec_field price_fields[] = {
    {"model", SPEC_F_STR, OFF(struct spec_price, model), 0, 1, 0, 0, 0, NULL, NULL,
     "catalog model name"},
    {"perGpuHour", SPEC_F_MONEY, OFF(struct spec_price, per_gpu_hour), 0, 1, 0, 0, 0, NULL,
     NULL, "price of one whole GPU for one hour, e.g. \"2.50\""},
};
static const struct spec_schema price_schema = {
    "Price", sizeof(struct spec_price), OFF(struct spec_price, loc), SPEC_FIELDS(price_fields)};

static const struct spec_field pricebook_fields[] = {
    {"currency", SPEC_F_STR, OFF(struct spec_pricebook, currency), 0, 1, 0, 0, 0, NULL, NULL,
     "ISO 4217 code, e.g. EUR"},
    {"prices", SPEC_F_LIST, OFF(struct spec_pricebook, prices),
     CNT(struct spec_pricebook, nprices), 1, 1, 1000, 0, NULL, &price_schema,
     "price per GPU model"},
    {"migShareBasis", SPEC_F_ENUM, OFF(struct spec_pricebook, mig_share), 0, 0, 0, 0, 0,
     share_names, NULL, "a MIG instance's share of its card: memory slices, compute slices, or the larger"},
};
static const struct spec_schema pricebook_schema = {
    "PriceBook.spec", sizeof(struct spec_pricebook), OFF(struct spec_pricebook, loc),
    SPEC_FIELDS(pricebook_fields)};

static const struct spec_kind spec_kinds[] = {
    {"Fleet", &fleet_schema, OFF(struct spec_fleet, name)},
    {"Tenant", &tenant_schema, OFF(struct spec_tenant, name)},
    {"PriceBook", &pricebook_schema, OFF(struct spec_pricebook, name)},
};
#define NKINDS (sizeof(spec_kinds) / sizeof(spec_kinds[0]))

/* ---- the envelope ---- */

struct objlist {
    struct spec_object *items;
    size_t count, cap;
};

static int push_object(struct ts_arena *a, struct objlist *l, const struct spec_object *o)
{
    if (l->count == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        struct spec_object *n = ts_arena_array(a, ncap, sizeof(*n));
        if (!n)
            return 0;
        if (l->count)
            memcpy(n, l->items, l->count * sizeof(*n));
        l->items = n;
        l->cap = ncap;
    }
    l->items[l->count++] = *o;
    return 1;
}

static const struct spec_kind *find_kind(const struct spec_kind *kinds, size_t n,
                                         const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kinds[i].kind, name) == 0)
            return &kinds[i];
    return NULL;
}

struct envelope {
    const char *api_version, *kind, *name;
    const struct spec_node *spec;
};

static int envelope_key(struct spec_ctx *ctx, const struct spec_node *k,
                        const struct spec_node *v, struct envelope *env, const char *path)
{
    if (k->type != SPEC_NODE_SCALAR) {
        spec_report(ctx, k, path, "keys must be plain strings");
        return 1;
    }
    const char *key = k->value;
    const char **slot = strcmp(key, "apiVersion") == 0 ? &env->api_version
                        : strcmp(key, "kind") == 0     ? &env->kind
                                                       : NULL;
    if (slot) {
        if (v->type != SPEC_NODE_SCALAR || v->len == 0) {
            spec_report(ctx, v, key, "must be a string");
            return 1;
        }
        *slot = v->value;
        return 0;
    }
    if (strcmp(key, "spec") == 0) {
        env->spec = v;
        return 0;
    }
    if (strcmp(key, "metadata") == 0) {
        const struct spec_node *name = spec_node_get(v, "name");
        int bad = 0;
        for (size_t i = 0; v->type == SPEC_NODE_MAP && i + 1 < v->count; i += 2)
            if (strcmp(v->items[i]->value, "name") != 0) {
                spec_report(ctx, v->items[i], "metadata", "unknown field '%.60s'",
                            v->items[i]->value);
                bad++;
            }
        if (!name || name->type != SPEC_NODE_SCALAR || !spec_is_dns_label(name->value)) {
            spec_report(ctx, name ? name : v, "metadata.name",
                        "must be a name (lowercase letters, digits and '-', at most 63)");
            return bad + 1;
        }
        env->name = name->value;
        return bad;
    }
    spec_report(ctx, k, path, "unknown field '%.60s' (a document has apiVersion, kind, "
                "metadata and spec)", key);
    return 1;
}

static void read_document(struct spec_ctx *ctx, const struct spec_doc *doc,
                          const struct spec_kind *kinds, size_t nkinds, size_t index,
                          struct objlist *out)
{
    const struct spec_node *root = doc->root;
    if (!root)
        return; /* an empty document, e.g. a trailing '---' */
    char *docpath = ts_arena_printf(ctx->arena, "documents[%zu]", index);
    if (root->type != SPEC_NODE_MAP) {
        spec_report(ctx, root, docpath, "a document must be a mapping");
        return;
    }
    struct envelope env = {0};
    int bad = 0;
    for (size_t i = 0; i + 1 < root->count; i += 2)
        bad += envelope_key(ctx, root->items[i], root->items[i + 1], &env, docpath);
    if (!env.api_version || strcmp(env.api_version, SPEC_API_VERSION) != 0) {
        spec_report(ctx, root, docpath, "apiVersion must be %s", SPEC_API_VERSION);
        return;
    }
    const struct spec_kind *k = env.kind ? find_kind(kinds, nkinds, env.kind) : NULL;
    if (!k) {
        char list[200] = "";
        for (size_t i = 0; i < nkinds; i++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", kinds[i].kind);
        }
        spec_report(ctx, root, docpath, "kind must be one of %s; got '%.40s'", list,
                    env.kind ? env.kind : "");
        return;
    }
    if (!env.spec) {
        spec_report(ctx, root, docpath, "missing required field 'spec'");
        return;
    }
    if (bad || !env.name)
        return;
    struct spec_object o = {k, ts_arena_alloc(ctx->arena, k->schema->size), env.name, {0}};
    if (!o.obj)
        return;
    const char *path = ts_arena_printf(ctx->arena, "%s/%s.spec", k->kind, env.name);
    o.loc = (struct spec_loc){ctx->file, root->line, root->column, path};
    *(const char **)((char *)o.obj + k->name_off) = env.name;
    if (spec_schema_read(ctx, env.spec, k->schema, o.obj, path) == 0)
        push_object(ctx->arena, out, &o);
}

static ts_status load_text(const char *text, size_t len, const char *name,
                           const struct spec_kind *kinds, size_t nkinds,
                           struct ts_arena *arena, struct objlist *out, struct ts_diag *diag)
{
    struct spec_doc *docs = NULL;
    size_t ndocs = 0;
    struct ts_error e;
    if (memchr(text, '\0', len)) {
        ts_err_at(&e, TS_INVALID, name, 0, 0, NULL, "file contains NUL bytes (binary?)");
        ts_diag_add(diag, &e);
        return TS_INVALID;
    }
    const char *fname = ts_arena_strdup(arena, name);
    if (spec_yaml_parse(text, len, fname, arena, &docs, &ndocs, &e) != TS_OK) {
        ts_diag_add(diag, &e);
        return e.code;
    }
    struct spec_ctx ctx = {arena, fname, diag};
    for (size_t i = 0; i < ndocs; i++)
        read_document(&ctx, &docs[i], kinds, nkinds, i, out);
    return TS_OK;
}

ts_status spec_load_objects_text(const char *text, size_t len, const char *name,
                                 const struct spec_kind *kinds, size_t nkinds,
                                 struct ts_arena *arena, struct spec_object **objs,
                                 size_t *nobjs, struct ts_diag *diag)
{
    struct objlist l = {0};
    load_text(text, len, name, kinds, nkinds, arena, &l, diag);
    *objs = l.items;
    *nobjs = l.count;
    return diag->count || diag->dropped ? TS_INVALID : TS_OK;
}

ts_status spec_load_objects(const char *const *paths, size_t npaths,
                            const struct spec_kind *kinds, size_t nkinds,
                            struct ts_arena *arena, struct spec_object **objs,
                            size_t *nobjs, struct ts_diag *diag)
{
    struct objlist l = {0};
    for (size_t i = 0; i < npaths; i++) {
        char *text = NULL;
        size_t len = 0;
        struct ts_error e;
        if (ts_file_read(paths[i], TS_INPUT_MAX, &text, &len, &e) != TS_OK) {
            ts_diag_add(diag, &e);
            continue;
        }
        load_text(text, len, paths[i], kinds, nkinds, arena, &l, diag);
        free(text);
    }
    *objs = l.items;
    *nobjs = l.count;
    return diag->count || diag->dropped ? TS_INVALID : TS_OK;
}

/* ---- the tenancy spec ---- */

static ts_status finish_load(struct spec_model *m, struct spec_object *objs, size_t n,
                             struct spec_model **out, struct ts_diag *diag)
{
    if (diag->count == 0 && diag->dropped == 0)
        spec_model_assemble(m, objs, n, diag);
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
    struct spec_object *objs = NULL;
    size_t n = 0;
    spec_load_objects(paths, npaths, spec_kinds, NKINDS, &m->arena, &objs, &n, diag);
    return finish_load(m, objs, n, out, diag);
}

ts_status spec_load_text(const char *text, size_t len, const char *name,
                         struct spec_model **out, struct ts_diag *diag)
{
    struct spec_model *m = new_model();
    if (!m)
        return no_memory(diag);
    struct spec_object *objs = NULL;
    size_t n = 0;
    spec_load_objects_text(text, len, name, spec_kinds, NKINDS, &m->arena, &objs, &n, diag);
    return finish_load(m, objs, n, out, diag);
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
