/*
 * nvml_util.h - what the stand-in NVML's utilisation (nvml_util.c) needs
 * from the rest of the stand-in (nvml_standin.c). Test code.
 */
#ifndef STANDIN_NVML_UTIL_H
#define STANDIN_NVML_UTIL_H

#include "agent/nvml_abi.h"

/* The index of GPU device, *mig its MIG mode; -1 when device is no GPU. */
int standin_nvml_gpu(nvmlDevice_t device, int *mig);

#endif
