/*
 * entitle.h - what a decision entitles a tenant to, named once for the
 * module that writes it (render) and the one that enforces it (admit):
 * DeviceClasses, quota and device-plugin resource names, Kueue logical
 * resources, labels, quantities, the CUDA shim's paths, and the rule for
 * what one container may request. Pure functions of a decision row.
 */
#ifndef ENTITLE_ENTITLE_H
#define ENTITLE_ENTITLE_H

#include <stddef.h>
#include "decide/decide.h"
#include "util/names.h"

#define ENTITLE_DRIVER "gpu.nvidia.com"
/* The apiVersion of the DRA driver's opaque configs (GpuConfig,
 * MigDeviceConfig). */
#define ENTITLE_CONFIG_API "resource.nvidia.com/v1beta1"
#define ENTITLE_LABEL_TENANT TS_API_GROUP "/tenant"
#define ENTITLE_LABEL_CONTRACT TS_API_GROUP "/contract"
#define ENTITLE_LABEL_WORKLOAD TS_API_GROUP "/workload"
#define ENTITLE_LABEL_MANAGED TS_API_GROUP "/managed" /* on nodes tessera configures */
#define ENTITLE_SYSTEM_NS "tessera-system"
#define ENTITLE_GPU_OPERATOR_NS "gpu-operator"

/* What a decision asks the cluster for, one kind of device per row. */
struct entitle_kind {
    char device_class[160];   /* DRA DeviceClass, e.g. tessera-h100-80gb-sxm-mig-1g.10gb */
    char plugin_resource[64]; /* device plugin name, e.g. nvidia.com/mig-1g.10gb */
    char kueue_resource[192]; /* Kueue logical resource for the class (DRA) */
    int per_replica;          /* devices one replica claims */
};

/* The kind of device row claims (VM rows included: they use plugin names). */
void entitle_kind_of(const struct decide_row *r, struct entitle_kind *k);

/* The DRA driver's sharing strategy a claim of mech carries: "MPS",
 * "TimeSlicing" (time-slicing and memory fractions), or NULL when mech does
 * not share a card (decide_mech_shares_card). */
const char *entitle_sharing_strategy(int mech);

/* The Kueue logical resource of DeviceClass cls: "tessera.dev/<cls>". */
void entitle_kueue_resource(const char *cls, char *buf, size_t size);

/* The class name for mechanism mech on model (profile for MIG, else NULL). */
void entitle_class_name(const char *model, int mech, const char *profile, char *buf, size_t size);

/* A memory quantity: whole GiB as "10Gi", else MiB ("7424Mi"). */
void entitle_quantity(double gib, char *buf, size_t size);

/* The node label GPU feature discovery sets for a product name
 * (spaces become '-'), e.g. NVIDIA-H100-80GB-HBM3. */
void entitle_product_label(const char *product, char *buf, size_t size);

/* 1 when the row runs in a KubeVirt VM. */
int entitle_is_vm(const struct decide_row *r);

/* A VM row's KubeVirt device: resource name, and the PCI vendor:device
 * selector (whole GPU) or mdev type name (MIG-backed vGPU). */
void entitle_vm_device(const struct decide_row *r, char *name, size_t nsize, char *selector,
                       size_t ssize);

/* The extended resource a pod of r requests: the VM's KubeVirt device, or
 * the device-plugin name. Returns buf. */
const char *entitle_resource_of(const struct decide_row *r, char *buf, size_t size);

/* Where the CUDA shim goes in a pod (docs/shim.md): the library on the
 * node, the limit file from the workload's ConfigMap, the shared region. */
#define ENTITLE_SHIM_LIBRARY "/opt/tessera/lib/libtessera-cuda.so"
#define ENTITLE_SHIM_LIMITS "/etc/tessera/cuda-limits"
#define ENTITLE_SHIM_REGION_DIR "/run/tessera"
/* The node's pid map folder (the agent's --pid-map-out is PID_MAP_DIR/pid-map),
 * mounted read-only at the same path in the pod. */
#define ENTITLE_SHIM_PID_MAP_DIR "/run/tessera-pids"

/* What one container of r may request of its resource (render's
 * LimitRange maximum, admit's per-container check): GiB of
 * nvidia.com/gpu.memory for a memory fraction outside a VM (*memory = 1),
 * else devices (*memory = 0). */
double entitle_per_container(const struct decide_row *r, int *memory);

/* 1 when r's memory cap is enforced by tessera's shim, not the driver: a
 * memory fraction on a driver below CUDA 13.4, or time-slicing. */
int entitle_needs_shim(const struct decide_row *r);
/* The ConfigMap holding r's limit file: "tessera-cuda-limits-<workload>". */
#define ENTITLE_SHIM_CONFIGMAP_PREFIX "tessera-cuda-limits-"
void entitle_shim_configmap(const struct decide_row *r, char *buf, size_t size);
/* The key of that ConfigMap holding the limit file. */
#define ENTITLE_SHIM_LIMITS_KEY "cuda-limits"
/* r's limit file as render writes it and admission requires it to stay
 * (docs/shim.md); the size it needs at most. */
#define ENTITLE_SHIM_LIMITS_TEXT_MAX 640
void entitle_shim_limits_text(const struct decide_row *r, char *buf, size_t size);

#endif
