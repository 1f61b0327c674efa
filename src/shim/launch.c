/*
 * launch.c - the legacy launch entry points cuda.h (13.0) still declares
 * and the driver still exports, deprecated but callable: cuLaunch,
 * cuLaunchGrid, cuLaunchGridAsync and cuLaunchCooperativeKernelMultiDevice.
 * Each passes the SM share's gate (sm.c) like the modern launches and is
 * then tracked by the in-flight bound (inflight.c); the multi-device one
 * once per kernel of its list.
 */
#include "shim/shim.h"

SHIM_EXPORT CUresult cuLaunch(CUfunction f)
{
    __typeof__(&cuLaunch) fn = SHIM_REAL(cuLaunch);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    shim__sm_gate();
    return shim__sm_launched(NULL, fn(f));
}

SHIM_EXPORT CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height)
{
    __typeof__(&cuLaunchGrid) fn = SHIM_REAL(cuLaunchGrid);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    shim__sm_gate();
    return shim__sm_launched(NULL, fn(f, grid_width, grid_height));
}

SHIM_EXPORT CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height,
                                       CUstream hStream)
{
    __typeof__(&cuLaunchGridAsync) fn = SHIM_REAL(cuLaunchGridAsync);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    shim__sm_gate();
    return shim__sm_launched(hStream, fn(f, grid_width, grid_height, hStream));
}

SHIM_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *launchParamsList,
                                                          unsigned int numDevices,
                                                          unsigned int flags)
{
    __typeof__(&cuLaunchCooperativeKernelMultiDevice) fn = SHIM_REAL(
        cuLaunchCooperativeKernelMultiDevice);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    for (unsigned i = 0; launchParamsList && i < numDevices; i++)
        shim__sm_gate();
    CUresult r = fn(launchParamsList, numDevices, flags);
    for (unsigned i = 0; launchParamsList && i < numDevices; i++)
        shim__sm_launched(launchParamsList[i].hStream, r);
    return r;
}
