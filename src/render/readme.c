/*
 * readme.c - DIR/README.md: what was rendered, for whom, what the cluster
 * needs installed first, and the order to apply it in.
 */
#include "render/internal.h"

#include <stdio.h>
#include <string.h>

/* 1 when a row outside a VM shares its card with this DRA sharing strategy. */
static int uses_strategy(const struct render_ctx *c, const char *strategy)
{
    const struct decide_result *d = c->p->decisions;
    for (size_t i = 0; i < d->nrows; i++) {
        const char *s = entitle_sharing_strategy(d->rows[i].mech);
        if (s && strcmp(s, strategy) == 0 && !entitle_is_vm(&d->rows[i]))
            return 1;
    }
    return 0;
}

static int any_vm(const struct render_ctx *c)
{
    const struct decide_result *d = c->p->decisions;
    for (size_t i = 0; i < d->nrows; i++)
        if (entitle_is_vm(&d->rows[i]))
            return 1;
    return 0;
}

static void prerequisites(const struct render_ctx *c, struct ts_sbuf *o)
{
    ts_sbuf_printf(o, "## What the cluster needs first\n\n"
                      "- Kubernetes 1.34 or later (`resource.k8s.io/v1`; quotas per DeviceClass "
                      "`<class>.deviceclass.resource.k8s.io/devices`).\n");
    if (render__dra(c)) {
        ts_sbuf_puts(o, "- The NVIDIA DRA driver for GPUs (driver `" ENTITLE_DRIVER "`)");
        int mps = uses_strategy(c, "MPS"), ts = uses_strategy(c, "TimeSlicing");
        if (mps || ts)
            ts_sbuf_printf(o, " with feature gates%s%s", mps ? " `MPSSupport=true`" : "",
                           ts ? " `TimeSlicingSettings=true`" : "");
        ts_sbuf_puts(o, "; memory fractions request `capacity.requests.memory`, which needs "
                        "Kubernetes' `DRAConsumableCapacity` gate and a driver that publishes "
                        "memory as consumable capacity.\n");
    }
    if (render__plugin(c))
        ts_sbuf_puts(o, "- The NVIDIA device plugin (GPU operator) with `migStrategy: mixed`, "
                        "pointed at ConfigMap `gpu-operator/tessera-device-plugin-config`.\n");
    ts_sbuf_puts(o, "- Kueue with the `v1beta2` API (ClusterQueue `cohortName`, hierarchical "
                    "Cohorts)");
    if (render__dra(c))
        ts_sbuf_puts(o, " and its DRA integration: merge "
                        "`cluster/kueue-configuration-fragment.yaml` into Kueue's Configuration");
    ts_sbuf_puts(o, ".\n- MIG: tessera's node agent (`deploy/`) partitions the cards and pins "
                    "placements; `labels.sh` takes the GPU operator's mig-manager off each node "
                    "(mig-parted cannot pin placements), so only one of them repartitions. "
                    "`cluster/mig-parted-config.yaml` is the same geometry in mig-parted's "
                    "format, for comparison; `create-mig-instances.sh` applies it by hand.\n");
    if (any_vm(c))
        ts_sbuf_puts(o, "- KubeVirt, with `cluster/kubevirt-permitted-host-devices.yaml` merged "
                        "into its CR (`kubectl patch kubevirt kubevirt -n kubevirt --type merge "
                        "--patch-file cluster/kubevirt-permitted-host-devices.yaml`); MIG-backed "
                        "vGPU types need the NVIDIA vGPU manager on the node (check `mdevctl "
                        "types`).\n");
}

static void order(const struct render_ctx *c, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "\n## Apply, in this order\n\n`deploy/install` runs each node's `labels.sh` "
                    "and applies this tree; the other node scripts are yours to run. By hand:\n\n"
                    "1. For each node (drained if its MIG layout changes):\n");
    const struct spec_fleet *fl = c->p->model->fleet;
    for (size_t i = 0; i < fl->nnodes; i++) {
        const char *n = fl->nodes[i].name;
        int mig = 0, mps = 0;
        for (size_t g = 0; g < c->p->ngpus; g++) {
            mig |= c->p->gpus[g].node == &fl->nodes[i] && c->p->gpus[g].mode == PLAN_MIG;
            mps |= c->p->gpus[g].node == &fl->nodes[i] && c->p->gpus[g].mode == PLAN_MPS;
        }
        ts_sbuf_printf(o, "   - `%s`: `nodes/%s/labels.sh`", n, n);
        if (mig) /* the agent partitions; the script is for a node without it */
            ts_sbuf_printf(o,
                           " (the agent makes its MIG instances; without the agent, "
                           "`nodes/%s/create-mig-instances.sh`)",
                           n);
        if (mps)
            ts_sbuf_printf(o, ", `nodes/%s/prep-mps.sh`", n);
        ts_sbuf_puts(o, "\n");
    }
    ts_sbuf_puts(o, "2. `kubectl apply -k .` (cluster objects, then tenants, then node "
                    "ConfigMaps).\n");
    if (any_vm(c))
        ts_sbuf_puts(o, "3. The KubeVirt patch above; then start the VMs in `tenants/*/"
                        "virtualmachines.yaml` (rendered Halted: add disks and memory first).\n");
}

static void tenants(const struct render_ctx *c, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "\n## Tenants\n\n| tenant | contract | namespace | workload | mechanism | "
                    "device | replicas |\n|---|---|---|---|---|---|---|\n");
    const struct decide_result *d = c->p->decisions;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        struct entitle_kind k;
        entitle_kind_of(r, &k);
        ts_sbuf_printf(o, "| %s | %s | %s | %s | %s (%s) | `%s` | %d |\n", r->tenant->name,
                       spec_contract_names[r->tenant->contract], r->workload->namespace_,
                       r->workload->name, decide_mech_names[r->mech], r->rule,
                       entitle_is_vm(r) ? "KubeVirt VM"
                       : render__dra(c) ? k.device_class
                                        : k.plugin_resource,
                       r->workload->replicas);
    }
    ts_sbuf_puts(o, "\nEvery namespace's ResourceQuota and LimitRange list every GPU resource "
                    "of this render: what the plan entitles the namespace to, and 0 for the "
                    "rest (the DRA driver's own classes `gpu.nvidia.com` and `mig.nvidia.com` "
                    "included), so a tenant cannot take a device it was not planned. A second "
                    "ResourceQuota, `tessera-priority-classes`, allows no pod of a PriorityClass "
                    "the tenant's `podSecurity.priorityClasses` does not name (a higher class "
                    "would preempt other tenants' pods).\n");
}

/* Limits of the device plugin the reader must know about. */
static void warnings(const struct render_ctx *c, struct ts_sbuf *o)
{
    int guests = 0;
    for (size_t i = 0; i < c->p->ngpus; i++)
        guests |= c->p->gpus[i].sharing;
    if (!render__plugin(c) || !guests)
        return;
    ts_sbuf_puts(o, "\n## Device-plugin caveat\n\nThe device plugin applies one sharing "
                    "config to every whole GPU of a node. On a node where best-effort guests "
                    "time-slice a whole card, that card is advertised as `nvidia.com/gpu.shared`, "
                    "so its owner requests `nvidia.com/gpu.shared` too and priority (Kueue "
                    "preemption) keeps the owner first. The DRA objects do not have this limit.\n");
}

/* The pod side of tessera's CUDA shim, for workloads whose memory cap it
 * enforces. */
static void shim_section(const struct render_ctx *c, struct ts_sbuf *o)
{
    const struct decide_result *d = c->p->decisions;
    const struct decide_row *first = NULL;
    for (size_t i = 0; i < d->nrows && !first; i++)
        if (entitle_needs_shim(&d->rows[i]))
            first = &d->rows[i];
    if (!first)
        return;
    char cm[300];
    entitle_shim_configmap(first, cm, sizeof(cm));
    ts_sbuf_printf(o, "\n## Memory caps the driver does not enforce\n\nThese workloads share "
                      "a card whose driver cannot enforce their memory cap (time-slicing, or "
                      "memory fractions below CUDA 13.4); tessera's CUDA shim does "
                      "(docs/shim.md). Each has a ConfigMap `tessera-cuda-limits-<workload>` "
                      "with its limit file (in the tenant's `cuda-limits.yaml`):\n\n");
    for (size_t i = 0; i < d->nrows; i++)
        if (entitle_needs_shim(&d->rows[i]))
            ts_sbuf_printf(o, "- %s/%s\n", d->rows[i].workload->namespace_,
                           d->rows[i].workload->name);
    ts_sbuf_printf(o,
                   "\nInstall `libtessera-cuda.so` at `%s` on the GPU nodes, and give each "
                   "pod of these workloads (here `%s`) the shim, its limit file read-only "
                   "and a region shared by the pod's processes:\n\n```yaml\n"
                   "    spec:\n      containers:\n      - name: main\n        env:\n"
                   "        - {name: LD_PRELOAD, value: %s}\n        volumeMounts:\n"
                   "        - {name: tessera-shim, mountPath: %s, readOnly: true}\n"
                   "        - {name: tessera-limits, mountPath: /etc/tessera, readOnly: true}\n"
                   "        - {name: tessera-region, mountPath: %s}\n"
                   "        - {name: tessera-pids, mountPath: %s, readOnly: true}\n"
                   "      volumes:\n"
                   "      - {name: tessera-shim, hostPath: {path: %s, type: File}}\n"
                   "      - name: tessera-limits\n        configMap: {name: %s, items: "
                   "[{key: cuda-limits, path: cuda-limits}]}\n"
                   "      - {name: tessera-region, emptyDir: {medium: Memory}}\n"
                   "      - {name: tessera-pids, hostPath: {path: %s, type: Directory}}\n```\n\n"
                   "The pid map (written by the node agent) lets the shim find its "
                   "processes in NVML's per-process utilisation for the SM share. "
                   "Run the webhook with `--shim-path %s`: it then denies any other "
                   "LD_PRELOAD.\n",
                   ENTITLE_SHIM_LIBRARY, first->workload->name, ENTITLE_SHIM_LIBRARY,
                   ENTITLE_SHIM_LIBRARY, ENTITLE_SHIM_REGION_DIR, ENTITLE_SHIM_PID_MAP_DIR,
                   ENTITLE_SHIM_LIBRARY, cm, ENTITLE_SHIM_PID_MAP_DIR, ENTITLE_SHIM_LIBRARY);
}

/* MPS under the device plugin: its MPS daemon gives every client of a card
 * an equal part, so the plan's active thread percentage and pinned-memory
 * cap per workload go in the clients' environment (the DRA claims carry
 * them as the driver's mpsConfig). */
static void mps_section(const struct render_ctx *c, struct ts_sbuf *o)
{
    const struct decide_result *d = c->p->decisions;
    int n = 0;
    for (size_t i = 0; render__plugin(c) && i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        if (r->mech != DECIDE_MPS)
            continue;
        if (n++ == 0)
            ts_sbuf_puts(o, "\n## MPS shares under the device plugin\n\nThe device plugin's "
                            "MPS daemon gives each client of a card an equal part. Set each "
                            "MPS workload's share and pinned-memory cap from the plan in its "
                            "containers' environment (`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`, "
                            "`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`, which MPS clients read at "
                            "start):\n\n| workload | "
                            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE | "
                            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT |\n|---|---|---|\n");
        ts_sbuf_printf(o, "| %s/%s | `%d` | `0=%.0fM` |\n", r->workload->namespace_,
                       r->workload->name, r->sm_percent, r->cap_gib * 1024.0);
    }
    if (n)
        ts_sbuf_puts(o, "\n```yaml\n        env:\n"
                        "        - {name: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, value: \"<share>\"}\n"
                        "        - {name: CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, value: \"0=<cap>M\"}\n"
                        "```\n");
}

ts_status render__readme(struct render_ctx *c)
{
    struct render_file *f = render__file(c->t, "README.md");
    if (!f)
        return TS_NOMEM;
    struct ts_sbuf *o = &f->body;
    const struct plan_summary *s = &c->p->summary;
    ts_sbuf_printf(o,
                   "# GPU tenancy rendered by tessera\n\nDevice API: %s. %zu tenants, %zu "
                   "workloads; %d of %d GPUs used (naive %d, dedicated %d, lower bound "
                   "%d).\nGenerated "
                   "files: do not edit; change the spec and render again.\n\n",
                   render_api_names[c->opt->api], c->p->model->ntenants, c->p->decisions->nrows,
                   s->gpus_used, s->gpus_total, s->naive, s->dedicated, s->lower_bound);
    prerequisites(c, o);
    order(c, o);
    tenants(c, o);
    warnings(c, o);
    shim_section(c, o);
    mps_section(c, o);
    return ts_sbuf_status(o);
}
