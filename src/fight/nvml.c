/*
 * nvml.c - the card's SM clock, temperature and power, read once per run
 * through NVML (dlopen of $TESSERA_NVML_LIBRARY when set, as for the agent,
 * else libnvidia-ml.so.1; nothing linked), so the report
 * shows whether the phases ran on the same clocks. Read only: the fight
 * never sets anything on the card. Where NVML or a reading is missing the
 * phase simply has no readings.
 */
#include "fight/internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* NVML's C API (nvml.h): functions return 0 (NVML_SUCCESS) on success. */
#define FIGHT_NVML_CLOCK_SM 1 /* nvmlClockType_t NVML_CLOCK_SM */
#define FIGHT_NVML_TEMP_GPU 0 /* nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU */

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(unsigned int index, void **device);
typedef int (*nvml_clock_fn)(void *device, int type, unsigned int *mhz);
typedef int (*nvml_temp_fn)(void *device, int sensor, unsigned int *celsius);
typedef int (*nvml_power_fn)(void *device, unsigned int *milliwatts);

int fight__nvml_open(struct fight_nvml *n, unsigned int index)
{
    memset(n, 0, sizeof(*n));
    const char *path = getenv("TESSERA_NVML_LIBRARY");
    n->lib = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        return 0;
    nvml_init_fn init = (nvml_init_fn)dlsym(n->lib, "nvmlInit_v2");
    nvml_handle_fn handle = (nvml_handle_fn)dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
    n->shutdown = dlsym(n->lib, "nvmlShutdown");
    if (!init || !handle || init() != 0) {
        fight__nvml_close(n);
        return 0;
    }
    n->inited = 1;
    if (handle(index, &n->dev) != 0) {
        fight__nvml_close(n);
        return 0;
    }
    n->clock = dlsym(n->lib, "nvmlDeviceGetClockInfo");
    n->temp = dlsym(n->lib, "nvmlDeviceGetTemperature");
    n->power = dlsym(n->lib, "nvmlDeviceGetPowerUsage");
    return 1;
}

int fight__nvml_read(const struct fight_nvml *n, double *sm_mhz, double *temp_c, double *power_w)
{
    unsigned int v;
    *sm_mhz = *temp_c = *power_w = -1;
    if (!n->dev)
        return 0;
    if (n->clock && ((nvml_clock_fn)n->clock)(n->dev, FIGHT_NVML_CLOCK_SM, &v) == 0)
        *sm_mhz = v;
    if (n->temp && ((nvml_temp_fn)n->temp)(n->dev, FIGHT_NVML_TEMP_GPU, &v) == 0)
        *temp_c = v;
    if (n->power && ((nvml_power_fn)n->power)(n->dev, &v) == 0)
        *power_w = v / 1000.0;
    return *sm_mhz >= 0 || *temp_c >= 0 || *power_w >= 0;
}

void fight__nvml_close(struct fight_nvml *n)
{
    if (n->inited && n->shutdown)
        ((nvml_init_fn)n->shutdown)();
    if (n->lib)
        dlclose(n->lib);
    memset(n, 0, sizeof(*n));
}
