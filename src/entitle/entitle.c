/*
 * entitle.c - see entitle.h.
 */
#include "entitle/entitle.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void entitle_class_name(const char *model, int mech, const char *profile, char *buf, size_t size)
{
    if (mech == DECIDE_MIG || (mech == DECIDE_VGPU && profile))
        snprintf(buf, size, "tessera-%s-mig-%s", model, profile);
    else
        snprintf(buf, size, "tessera-%s-%s", model,
                 mech == DECIDE_VGPU ? "whole" : decide_mech_names[mech]);
}

const char *entitle_sharing_strategy(int mech)
{
    if (!decide_mech_shares_card(mech))
        return NULL;
    return mech == DECIDE_MPS ? "MPS" : "TimeSlicing";
}

void entitle_kueue_resource(const char *cls, char *buf, size_t size)
{
    snprintf(buf, size, TS_API_GROUP "/%s", cls);
}

void entitle_kind_of(const struct decide_row *r, struct entitle_kind *k)
{
    const char *profile = r->profile ? r->profile->name : NULL;
    entitle_class_name(r->model->name, r->mech, profile, k->device_class, sizeof(k->device_class));
    entitle_kueue_resource(k->device_class, k->kueue_resource, sizeof(k->kueue_resource));
    k->per_replica = r->profile ? 1 : r->gpus;
    if (profile)
        snprintf(k->plugin_resource, sizeof(k->plugin_resource), "nvidia.com/mig-%s", profile);
    else if (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU)
        snprintf(k->plugin_resource, sizeof(k->plugin_resource), "nvidia.com/gpu");
    else if (r->mech == DECIDE_MEMORY_FRACTION)
        snprintf(k->plugin_resource, sizeof(k->plugin_resource), "nvidia.com/gpu.memory");
    else
        snprintf(k->plugin_resource, sizeof(k->plugin_resource), "nvidia.com/gpu.shared");
}

void entitle_quantity(double gib, char *buf, size_t size)
{
    if (fabs(gib - round(gib)) < 1e-9)
        snprintf(buf, size, "%.0fGi", round(gib));
    else
        snprintf(buf, size, "%.0fMi", ceil(gib * 1024.0 - 1e-6));
}

void entitle_product_label(const char *product, char *buf, size_t size)
{
    snprintf(buf, size, "%s", product);
    for (char *p = buf; *p; p++)
        if (*p == ' ')
            *p = '-';
}

void entitle_vm_device(const struct decide_row *r, char *name, size_t nsize, char *selector,
                       size_t ssize)
{
    char shortname[64] = "GPU";
    sscanf(r->model->display, "NVIDIA %63s", shortname);
    if (r->profile) { /* MIG-backed vGPU type, e.g. "NVIDIA H100-1-20C" */
        int g = 0, gb = 0;
        sscanf(r->profile->name, "%dg.%dgb", &g, &gb);
        snprintf(selector, ssize, "NVIDIA %s-%d-%dC", shortname, g, gb);
    } else {
        snprintf(selector, ssize, "10DE:%s",
                 r->model->pci_device_id ? r->model->pci_device_id : "0000");
    }
    snprintf(name, nsize, "nvidia.com/%s", r->profile ? selector : r->model->display);
    for (char *p = name + strlen("nvidia.com/"); *p; p++)
        *p = *p == ' ' ? '_' : (char)toupper((unsigned char)*p);
}

const char *entitle_resource_of(const struct decide_row *r, char *buf, size_t size)
{
    char selector[256];
    struct entitle_kind k;
    if (entitle_is_vm(r)) {
        entitle_vm_device(r, buf, size, selector, sizeof(selector));
    } else {
        entitle_kind_of(r, &k);
        snprintf(buf, size, "%s", k.plugin_resource);
    }
    return buf;
}

int entitle_is_vm(const struct decide_row *r)
{
    return r->mech == DECIDE_VGPU || r->workload->vm || r->tenant->contract == SPEC_CONTRACT_VM;
}

int entitle_needs_shim(const struct decide_row *r)
{
    return !entitle_is_vm(r) &&
           (r->mech == DECIDE_TIME_SLICING ||
            (r->mech == DECIDE_MEMORY_FRACTION && r->enforce == DECIDE_ENFORCE_SHIM));
}

void entitle_shim_configmap(const struct decide_row *r, char *buf, size_t size)
{
    snprintf(buf, size, ENTITLE_SHIM_CONFIGMAP_PREFIX "%s", r->workload->name);
}

void entitle_shim_limits_text(const struct decide_row *r, char *buf, size_t size)
{
    char mem[64], sm[32] = "";
    entitle_quantity(r->cap_gib, mem, sizeof(mem));
    if (r->sm_percent > 0) /* throughput shaping between time-sliced tenants (docs/shim.md) */
        snprintf(sm, sizeof(sm), "smPercent = %d\n", r->sm_percent);
    const struct spec_enforcement *e = &r->tenant->enforcement;
    snprintf(buf, size,
             "# tessera: %s/%s, %s (%s)\nversion = 1\nmemoryLimit = %s\n%s"
             "region = %s/cuda.region\npidMap = %s/pid-map\ntenant = %s\nworkload = %s\n"
             "onMemoryViolation = %s\nonSmViolation = %s\n",
             r->tenant->name, r->workload->name, decide_mech_names[r->mech], r->rule, mem, sm,
             ENTITLE_SHIM_REGION_DIR, ENTITLE_SHIM_PID_MAP_DIR, r->tenant->name, r->workload->name,
             spec_memory_action_names[e->on_memory], spec_sm_action_names[e->on_sm]);
}

double entitle_per_container(const struct decide_row *r, int *memory)
{
    struct entitle_kind k;
    entitle_kind_of(r, &k);
    *memory = r->mech == DECIDE_MEMORY_FRACTION && !entitle_is_vm(r);
    return *memory ? r->cap_gib : k.per_replica;
}
