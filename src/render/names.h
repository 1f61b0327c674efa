/*
 * names.h - the names render gives things, in one place: DeviceClasses,
 * quota resource names, device-plugin resources, Kueue logical resources,
 * labels, quantities. Admission (later) checks pods against the same names.
 */
#ifndef RENDER_NAMES_H
#define RENDER_NAMES_H

#include <stddef.h>
#include "decide/decide.h"

#define RENDER_DRIVER "gpu.nvidia.com"
#define RENDER_LABEL_TENANT "tessera.dev/tenant"
#define RENDER_LABEL_CONTRACT "tessera.dev/contract"
#define RENDER_LABEL_WORKLOAD "tessera.dev/workload"
#define RENDER_SYSTEM_NS "tessera-system"
#define RENDER_GPU_OPERATOR_NS "gpu-operator"

/* What a decision asks the cluster for, one kind of device per row. */
struct render_kind {
    char device_class[160];   /* DRA DeviceClass, e.g. tessera-h100-80gb-sxm-mig-1g.10gb */
    char plugin_resource[64]; /* device plugin name, e.g. nvidia.com/mig-1g.10gb */
    char kueue_resource[192]; /* Kueue logical resource for the class (DRA) */
    int per_replica;          /* devices one replica claims */
};

/* The kind of device row claims (VM rows included: they use plugin names). */
void render_kind_of(const struct decide_row *r, struct render_kind *k);

/* The class name for mechanism mech on model (profile for MIG, else NULL). */
void render_class_name(const char *model, int mech, const char *profile, char *buf, size_t size);

/* A memory quantity: whole GiB as "10Gi", else MiB ("7424Mi"). */
void render_quantity(double gib, char *buf, size_t size);

/* The node label GPU feature discovery sets for a product name
 * (spaces become '-'), e.g. NVIDIA-H100-80GB-HBM3. */
void render_product_label(const char *product, char *buf, size_t size);

/* 1 when the row runs in a KubeVirt VM. */
int render_is_vm(const struct decide_row *r);

/* A VM row's KubeVirt device: resource name, and the PCI vendor:device
 * selector (whole GPU) or mdev type name (MIG-backed vGPU). */
void render_vm_device(const struct decide_row *r, char *name, size_t nsize, char *selector,
                      size_t ssize);

/* The extended resource a pod of r requests: the VM's KubeVirt device, or
 * the device-plugin name. Returns buf. */
const char *render_resource_of(const struct decide_row *r, char *buf, size_t size);

/* Where the CUDA shim goes in a pod (docs/shim.md): the library on the
 * node, the limit file from the workload's ConfigMap, the shared region. */
#define RENDER_SHIM_LIBRARY "/opt/tessera/lib/libtessera-cuda.so"
#define RENDER_SHIM_LIMITS "/etc/tessera/cuda-limits"
#define RENDER_SHIM_REGION_DIR "/run/tessera"

/* 1 when r's memory cap is enforced by tessera's shim, not the driver: a
 * memory fraction on a driver below CUDA 13.4, or time-slicing. */
int render_needs_shim(const struct decide_row *r);
/* The ConfigMap holding r's limit file: "tessera-cuda-limits-<workload>". */
void render_shim_configmap(const struct decide_row *r, char *buf, size_t size);

#endif
