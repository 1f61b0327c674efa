/*
 * standin_more.c - the stand-in driver's other allocators (test code): the
 * legacy unversioned entry points the real library still exports (32-bit
 * pointers and sizes, below 4 GiB), mipmapped arrays, and the context
 * limits that size device memory (cuCtxSetLimit). Contract:
 *   - cuMemAlloc, cuMemAllocPitch, cuMemFree, cuArrayCreate, cuArray3DCreate
 *     take the _v1 types of cuda.h; their memory is the card's like the _v2
 *     calls' (a legacy pointer may be freed with cuMemFree_v2 too).
 *   - cuMipmappedArrayCreate holds the sum of its levels (each dimension
 *     halved per level, at least 1); cuMipmappedArrayDestroy frees it.
 *   - cuCtxSetLimit: the malloc heap (default 8 MiB) and the printf FIFO
 *     (default 1 MiB) hold what they are set to beyond the default; the
 *     stack (default 1 KiB a thread) holds the excess x 100 SMs x 2048
 *     threads. Raising past the card fails with CUDA_ERROR_OUT_OF_MEMORY.
 */
#include "standin.h"

#include <pthread.h>
#include <stddef.h>

/* ---- legacy ------------------------------------------------------------- */

EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = standin_map_bytes(bytesize, 1);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((uintptr_t)p > UINT32_MAX) {
        standin_unmap_bytes(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr_v1)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                unsigned int WidthInBytes, unsigned int Height,
                                unsigned int ElementSizeBytes)
{
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t pitch = ((uint64_t)WidthInBytes + 511) / 512 * 512;
    if (pitch * Height > UINT32_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuMemAlloc(dptr, (unsigned)(pitch * Height));
    if (r == CUDA_SUCCESS)
        *pPitch = (unsigned)pitch;
    return r;
}

EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    return dptr && standin_unmap_bytes((void *)(uintptr_t)dptr) == 0 ? CUDA_SUCCESS
                                                                     : CUDA_ERROR_INVALID_VALUE;
}

static CUresult legacy_array(CUarray *out, uint64_t w, uint64_t h, uint64_t d, CUarray_format f,
                             unsigned ch)
{
    uint64_t n = standin_format_size(f);
    if (!out || w == 0 || n == 0 || (ch != 1 && ch != 2 && ch != 4))
        return CUDA_ERROR_INVALID_VALUE;
    n *= w * (h ? h : 1) * (d ? d : 1) * ch;
    struct record *a = standin_record_new(ARRAY_MAGIC, n);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = (CUarray)a;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *desc)
{
    if (!desc)
        return CUDA_ERROR_INVALID_VALUE;
    return legacy_array(pHandle, desc->Width, desc->Height, 1, desc->Format, desc->NumChannels);
}

EXPORT CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *desc)
{
    if (!desc)
        return CUDA_ERROR_INVALID_VALUE;
    return legacy_array(pHandle, desc->Width, desc->Height, desc->Depth, desc->Format,
                        desc->NumChannels);
}

/* ---- mipmapped arrays --------------------------------------------------- */

static uint64_t level(uint64_t x, unsigned l) { return x >> l ? x >> l : 1; }

EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                       const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                       unsigned int numMipmapLevels)
{
    if (!pHandle || !desc || desc->Width == 0 || numMipmapLevels == 0 || numMipmapLevels > 32)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t el = standin_format_size(desc->Format) * desc->NumChannels, n = 0;
    if (el == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned l = 0; l < numMipmapLevels; l++)
        n += el * level(desc->Width, l) * level(desc->Height ? desc->Height : 1, l) *
             level(desc->Depth ? desc->Depth : 1, l);
    struct record *m = standin_record_new(MIPMAP_MAGIC, n);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pHandle = (CUmipmappedArray)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    return standin_record_free(h, MIPMAP_MAGIC);
}

/* ---- context limits ----------------------------------------------------- */

#define THREADS (100ull * 2048ull)

static const uint64_t defaults[3] = {1024, 1u << 20, 8u << 20};
static uint64_t limits[3] = {1024, 1u << 20, 8u << 20};
static pthread_mutex_t limit_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Device memory held beyond the defaults when limit l is v. */
static uint64_t held(CUlimit l, uint64_t v)
{
    uint64_t extra = v > defaults[l] ? v - defaults[l] : 0;
    return l == CU_LIMIT_STACK_SIZE ? extra * THREADS : extra;
}

EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    if ((unsigned)limit > CU_LIMIT_MALLOC_HEAP_SIZE)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (limit == CU_LIMIT_STACK_SIZE && value > (1u << 20))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&limit_mutex);
    uint64_t before = held(limit, limits[limit]), after = held(limit, value);
    if (after > before && standin_take_mem(after - before) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (after < before)
        standin_give_mem(before - after);
    if (r == CUDA_SUCCESS)
        limits[limit] = value;
    pthread_mutex_unlock(&limit_mutex);
    return r;
}

EXPORT CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    if (!pvalue || (unsigned)limit > CU_LIMIT_MALLOC_HEAP_SIZE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&limit_mutex);
    *pvalue = (size_t)limits[limit];
    pthread_mutex_unlock(&limit_mutex);
    return CUDA_SUCCESS;
}
