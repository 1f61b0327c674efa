/*
 * nvml_abi.h - the part of NVIDIA's NVML ABI (libnvidia-ml.so.1) that the
 * agent uses, declared here so nothing needs NVIDIA's headers to build.
 *
 * Two users: the agent (agent/nvml.c loads the library with dlopen and
 * resolves AGENT_NVML_FUNCS by name) and the stand-in library for machines
 * without a GPU (tests/standin/nvml/), which implements the same list.
 * Values, struct layouts and the versioned symbol names are those of the
 * public nvml.h (driver R470 and later). Layouts matter: the real driver
 * writes into these structs, so a wrong size corrupts memory; the static
 * asserts below pin the sizes of the x86-64/aarch64 ABI.
 */
#ifndef AGENT_NVML_ABI_H
#define AGENT_NVML_ABI_H

#include <stddef.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
};

/* Opaque handles. */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

/* Buffer sizes nvml.h fixes: part of the ABI, not tessera's caps. */
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

/* Versioned structs: the version word is sizeof | version << 24. */
#define NVML_ABI_VERSION(type, ver) ((unsigned int)(sizeof(type) | ((unsigned int)(ver) << 24)))

enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };

typedef int nvmlComputeMode_t;
enum {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
};

/* GPU-instance profile kinds (the `profile` argument of
 * nvmlDeviceGetGpuInstanceProfileInfoV; the profile *ID* is info.id). */
enum {
    NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0x0,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE = 0x1,
    NVML_GPU_INSTANCE_PROFILE_3_SLICE = 0x2,
    NVML_GPU_INSTANCE_PROFILE_4_SLICE = 0x3,
    NVML_GPU_INSTANCE_PROFILE_7_SLICE = 0x4,
    NVML_GPU_INSTANCE_PROFILE_8_SLICE = 0x5,
    NVML_GPU_INSTANCE_PROFILE_6_SLICE = 0x6,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 0x8,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 0x9,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX = 0xA,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX = 0xB,
    NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX = 0xC,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME = 0xD,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME = 0xE,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME = 0xF,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME = 0x10,
    NVML_GPU_INSTANCE_PROFILE_COUNT = 0x11
};

/* Compute-instance profile kinds; the engine profile is always SHARED. */
enum {
    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0x0,
    NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 0x1,
    NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 0x2,
    NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 0x3,
    NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 0x4,
    NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE = 0x5,
    NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE = 0x6,
    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7,
    NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x8
};
enum { NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0 };

typedef struct {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

typedef struct {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain, bus, device;
    unsigned int pciDeviceId; /* device << 16 | vendor */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct {
    unsigned int start, size; /* memory slices */
} nvmlGpuInstancePlacement_t;

typedef struct {
    unsigned int version; /* nvmlGpuInstanceProfileInfo_v2 */
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;            /* MiB */
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE]; /* e.g. "MIG 1g.10gb" */
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2 NVML_ABI_VERSION(nvmlGpuInstanceProfileInfo_v2_t, 2)

typedef struct {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
    unsigned int start, size;
} nvmlComputeInstancePlacement_t;

typedef struct {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id;
    unsigned int profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

/* nvmlProcessInfo_v2_t, what nvmlDeviceGetComputeRunningProcesses_v3 fills. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes */
    unsigned int gpuInstanceId;       /* 0xFFFFFFFF when not MIG */
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152, "profile info v2 layout");
_Static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB) == 48, "memorySizeMB");
_Static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24, "nvmlGpuInstanceInfo_t layout");
_Static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32, "nvmlComputeInstanceInfo_t layout");
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36, "CI profile info layout");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t layout");

/* Utilisation (the enforcement's SM share, agent/sm.c): nvml.h's
 * nvmlProcessUtilizationSample_t and nvmlSample_t, named apart because the
 * stand-in's nvml_util.c declares nvml.h's names itself. A process sample:
 * smUtil the percent of the sample period the process's kernels ran,
 * timeStamp the CPU time in microseconds. A card sample's value is typed
 * by nvmlValueType_t (GPU utilisation: unsigned int, percent). */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} agent_nvml_proc_sample_t;
typedef struct {
    unsigned long long timeStamp;
    union {
        double dVal;
        unsigned int uiVal;
        unsigned long ulVal;
        unsigned long long ullVal;
        signed long long sllVal;
        signed int siVal;
    } sampleValue;
} agent_nvml_sample_t;
enum { NVML_GPU_UTILIZATION_SAMPLES = 1 };
enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5
};
_Static_assert(sizeof(agent_nvml_proc_sample_t) == 32, "process utilisation sample layout");
_Static_assert(sizeof(agent_nvml_sample_t) == 16, "nvmlSample_t layout");

/* X(return type, symbol, parameter list): every NVML function the agent
 * resolves. The stand-in implements the same list. */
#define AGENT_NVML_FUNCS(X)                                                                        \
    X(nvmlReturn_t, nvmlInit_v2, (void))                                                           \
    X(nvmlReturn_t, nvmlShutdown, (void))                                                          \
    X(const char *, nvmlErrorString, (nvmlReturn_t result))                                        \
    X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *count))                                  \
    X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device))     \
    X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length))     \
    X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length))     \
    X(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci))           \
    X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))         \
    X(nvmlReturn_t, nvmlDeviceGetMigMode,                                                          \
      (nvmlDevice_t device, unsigned int *current, unsigned int *pending))                         \
    X(nvmlReturn_t, nvmlDeviceGetComputeMode, (nvmlDevice_t device, nvmlComputeMode_t * mode))     \
    X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,                                       \
      (nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos))                        \
    X(nvmlReturn_t, nvmlSystemGetProcessName, (unsigned int pid, char *name, unsigned int length)) \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstanceProfileInfoV,                                          \
      (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info))          \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstancePossiblePlacements_v2,                                 \
      (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,        \
       unsigned int *count))                                                                       \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstances,                                                     \
      (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *instances,                  \
       unsigned int *count))                                                                       \
    X(nvmlReturn_t, nvmlGpuInstanceGetInfo, (nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t * info))  \
    X(nvmlReturn_t, nvmlGpuInstanceGetComputeInstanceProfileInfo,                                  \
      (nvmlGpuInstance_t gi, unsigned int profile, unsigned int engProfile,                        \
       nvmlComputeInstanceProfileInfo_t *info))                                                    \
    X(nvmlReturn_t, nvmlGpuInstanceGetComputeInstances,                                            \
      (nvmlGpuInstance_t gi, unsigned int profileId, nvmlComputeInstance_t *instances,             \
       unsigned int *count))                                                                       \
    X(nvmlReturn_t, nvmlComputeInstanceGetInfo_v2,                                                 \
      (nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t * info))                                \
    X(nvmlReturn_t, nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int *count))    \
    X(nvmlReturn_t, nvmlDeviceGetMigDeviceHandleByIndex,                                           \
      (nvmlDevice_t device, unsigned int index, nvmlDevice_t *mig))                                \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstanceId, (nvmlDevice_t mig, unsigned int *id))              \
    X(nvmlReturn_t, nvmlDeviceGetComputeInstanceId, (nvmlDevice_t mig, unsigned int *id))          \
    X(nvmlReturn_t, nvmlDeviceCreateGpuInstanceWithPlacement,                                      \
      (nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,   \
       nvmlGpuInstance_t *gi))                                                                     \
    X(nvmlReturn_t, nvmlGpuInstanceCreateComputeInstance,                                          \
      (nvmlGpuInstance_t gi, unsigned int profileId, nvmlComputeInstance_t *ci))                   \
    X(nvmlReturn_t, nvmlGpuInstanceDestroy, (nvmlGpuInstance_t gi))                                \
    X(nvmlReturn_t, nvmlComputeInstanceDestroy, (nvmlComputeInstance_t ci))

/* X(return type, symbol, parameter list, what goes unchecked without it):
 * functions the agent uses when the driver has them (NULL otherwise); a
 * driver without one still runs the agent, which says what it cannot check. */
#define AGENT_NVML_OPTIONAL(X)                                                              \
    X(nvmlReturn_t, nvmlDeviceGetMPSComputeRunningProcesses_v3,                             \
      (nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos),                 \
      "MPS clients on an instance are not seen by the busy check")                          \
    X(nvmlReturn_t, nvmlDeviceGetProcessUtilization,                                        \
      (nvmlDevice_t device, agent_nvml_proc_sample_t * utilization, unsigned int *count,    \
       unsigned long long lastSeenTimeStamp),                                               \
      "the SM share is not judged")                                                         \
    X(nvmlReturn_t, nvmlDeviceGetSamples,                                                   \
      (nvmlDevice_t device, int type, unsigned long long lastSeenTimeStamp, int *valueType, \
       unsigned int *count, agent_nvml_sample_t *samples),                                  \
      "the SM share is not judged")

#endif
