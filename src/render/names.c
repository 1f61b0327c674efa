/*
 * names.c - see names.h.
 */
#include "render/names.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void render_class_name(const char *model, int mech, const char *profile, char *buf, size_t size)
{
    if (mech == DECIDE_MIG || (mech == DECIDE_VGPU && profile))
        snprintf(buf, size, "tessera-%s-mig-%s", model, profile);
    else
        snprintf(buf, size, "tessera-%s-%s", model,
                 mech == DECIDE_VGPU ? "whole" : decide_mech_names[mech]);
}

void render_kind_of(const struct decide_row *r, struct render_kind *k)
{
    const char *profile = r->profile ? r->profile->name : NULL;
    render_class_name(r->model->name, r->mech, profile, k->device_class, sizeof(k->device_class));
    snprintf(k->kueue_resource, sizeof(k->kueue_resource), "tessera.dev/%s", k->device_class);
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

void render_quantity(double gib, char *buf, size_t size)
{
    if (fabs(gib - round(gib)) < 1e-9)
        snprintf(buf, size, "%.0fGi", round(gib));
    else
        snprintf(buf, size, "%.0fMi", ceil(gib * 1024.0 - 1e-6));
}

void render_product_label(const char *product, char *buf, size_t size)
{
    snprintf(buf, size, "%s", product);
    for (char *p = buf; *p; p++)
        if (*p == ' ')
            *p = '-';
}
