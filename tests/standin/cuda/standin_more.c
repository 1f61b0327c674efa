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
 *     threads; the device runtime's pending launch count (default 2048)
 *     holds STANDIN_PENDING_LAUNCH_BYTES (4 KiB, a launch's parameter
 *     buffer) per launch beyond the default. Raising past the card fails
 *     with CUDA_ERROR_OUT_OF_MEMORY.
 *   - cuCtxCreate and cuCtxDestroy, the unversioned entry points a real
 *     library still exports, are cuCtxCreate_v2 and cuCtxDestroy_v2.
 *   - Green contexts: cuDeviceGetDevResource gives device 0's 100 SMs (the
 *     layout of cuda.h 13.0's CUdevResource: type at byte 0, smCount at
 *     96), cuDevResourceGenerateDesc a descriptor of SM resources,
 *     cuGreenCtxCreate (flags CU_GREEN_CTX_DEFAULT_STREAM, required)
 *     retains the primary context, as cuda.h says, and holds what a
 *     context holds (TESSERA_STANDIN_CTX_MEM) until cuGreenCtxDestroy.
 *   - cuMemGetAllocationPropertiesFromHandle: pinned memory of device 0;
 *     cuMemGetAllocationGranularity: 2 MiB. cuMemMap maps any part of a
 *     handle, offset + size at most its size (cuda.h), so an imported
 *     handle's size can be found by mapping.
 *   - Inter-process memory, modelled for an importer in another process
 *     (each process has its own stand-in card counter): cuIpcGetMemHandle
 *     puts the allocation's size in the handle, cuIpcOpenMemHandle_v2 holds
 *     that many bytes in the importing process until cuIpcCloseMemHandle
 *     (the exporter's memory stays alive while imported);
 *     cuMemExportToShareableHandle (POSIX fd) gives a memfd of the
 *     allocation's size, cuMemImportFromShareableHandle holds that size in
 *     a new VMM record (mappable, released like any handle).
 *     Pools: cuMemPoolExportToShareableHandle gives a memfd,
 *     cuMemPoolImportFromShareableHandle a new (empty) pool; export data
 *     carries the allocation's size, and cuMemPoolImportPointer holds that
 *     many bytes in the importing process until the pointer is freed.
 *     cuMemGetAddressRange_v2 answers for the base of a linear allocation.
 */
#include "standin.h"

#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
#define STANDIN_PENDING_LAUNCH_BYTES 4096ull
#define LIMITS (CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT + 1)

/* Index 3 (the device runtime's sync depth) is not offered: the stand-in
 * is a compute capability 9.0 card, where cuda.h says it is unsupported. */
static const uint64_t defaults[LIMITS] = {1024, 1u << 20, 8u << 20, 0, 2048};
static uint64_t limits[LIMITS] = {1024, 1u << 20, 8u << 20, 0, 2048};
static pthread_mutex_t limit_mutex = PTHREAD_MUTEX_INITIALIZER;

static int limit_offered(CUlimit l) { return (unsigned)l < LIMITS && l != 3; }

/* Device memory held beyond the defaults when limit l is v. */
static uint64_t held(CUlimit l, uint64_t v)
{
    uint64_t extra = v > defaults[l] ? v - defaults[l] : 0;
    uint64_t each = l == CU_LIMIT_STACK_SIZE                         ? THREADS
                    : l == CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT ? STANDIN_PENDING_LAUNCH_BYTES
                                                                     : 1;
    return extra > UINT64_MAX / each ? UINT64_MAX : extra * each;
}

EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    if (!limit_offered(limit))
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
    if (!pvalue || !limit_offered(limit))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&limit_mutex);
    *pvalue = (size_t)limits[limit];
    pthread_mutex_unlock(&limit_mutex);
    return CUDA_SUCCESS;
}

/* ---- memory pools ------------------------------------------------------- */

/* A pool of cuMemPoolCreate, or the device's default pool (pools[0], what
 * cuMemAllocAsync takes from; release threshold 0, cannot be destroyed):
 * reserved memory (taken from the card) and the part in use. A free returns its bytes to the pool, not to the card; the
 * pool gives back what it holds beyond max(release threshold, in use) at
 * the next synchronisation (stream, event, context) and beyond
 * max(minBytesToKeep, in use) at cuMemPoolTrimTo, as cuda.h describes. */
#define POOLS_MAX 64
#define POOL_MAGIC 0x504f4f4cu

struct CUmemPoolHandle_st {
    uint32_t magic;
    uint64_t threshold, reserved, used;
};

static struct CUmemPoolHandle_st pools[POOLS_MAX];
static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;

static struct CUmemPoolHandle_st *pool_live(CUmemoryPool p)
{
    for (int i = 0; i < POOLS_MAX && p; i++)
        if (&pools[i] == p && pools[i].magic == POOL_MAGIC)
            return p;
    return NULL;
}

/* Give back what p holds beyond max(keep, used). Under pool_mutex. */
static void pool_trim(struct CUmemPoolHandle_st *p, uint64_t keep)
{
    uint64_t floor = keep > p->used ? keep : p->used;
    if (p->reserved > floor) {
        standin_give_mem(p->reserved - floor);
        p->reserved = floor;
    }
}

void standin_pools_sync(void)
{
    pthread_mutex_lock(&pool_mutex);
    for (int i = 0; i < POOLS_MAX; i++)
        if (pools[i].magic == POOL_MAGIC)
            pool_trim(&pools[i], pools[i].threshold);
    pthread_mutex_unlock(&pool_mutex);
}

CUmemoryPool standin_default_pool(void)
{
    pthread_mutex_lock(&pool_mutex);
    if (pools[0].magic != POOL_MAGIC)
        pools[0] = (struct CUmemPoolHandle_st){POOL_MAGIC, 0, 0, 0};
    pthread_mutex_unlock(&pool_mutex);
    return &pools[0];
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = standin_default_pool();
    return CUDA_SUCCESS;
}

/* cuDeviceSetMemPool is not offered: the current pool is the default one. */
EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return cuDeviceGetDefaultMemPool(pool, dev);
}

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!pool || !props)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_mutex);
    struct CUmemPoolHandle_st *p = NULL;
    for (int i = 1; i < POOLS_MAX && !p; i++)
        if (pools[i].magic != POOL_MAGIC)
            p = &pools[i];
    if (p)
        *p = (struct CUmemPoolHandle_st){POOL_MAGIC, 0, 0, 0};
    pthread_mutex_unlock(&pool_mutex);
    if (p)
        *pool = p;
    return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    pthread_mutex_lock(&pool_mutex);
    struct CUmemPoolHandle_st *p = pool == &pools[0] ? NULL : pool_live(pool);
    if (p) {
        standin_give_mem(p->reserved - p->used);
        p->magic = 0;
    }
    pthread_mutex_unlock(&pool_mutex);
    return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    pthread_mutex_lock(&pool_mutex);
    struct CUmemPoolHandle_st *p = pool_live(pool);
    int ok = p && value && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    if (ok)
        p->threshold = *(const cuuint64_t *)value;
    pthread_mutex_unlock(&pool_mutex);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    pthread_mutex_lock(&pool_mutex);
    struct CUmemPoolHandle_st *p = pool_live(pool);
    int ok = p && value;
    if (ok && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        *(cuuint64_t *)value = p->threshold;
    else if (ok && attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
        *(cuuint64_t *)value = p->reserved;
    else if (ok && attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
        *(cuuint64_t *)value = p->used;
    else
        ok = 0;
    pthread_mutex_unlock(&pool_mutex);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    pthread_mutex_lock(&pool_mutex);
    struct CUmemPoolHandle_st *p = pool_live(pool);
    if (p)
        pool_trim(p, minBytesToKeep);
    pthread_mutex_unlock(&pool_mutex);
    return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* n bytes in pool: from its reserve, growing it from the card as needed.
 * 0, -1 for a bad pool, -2 when the card is full. */
int standin_pool_take(CUmemoryPool pool, uint64_t n)
{
    int r = -1;
    pthread_mutex_lock(&pool_mutex);
    struct CUmemPoolHandle_st *p = pool_live(pool);
    if (p) {
        uint64_t spare = p->reserved - p->used;
        r = 0;
        if (spare < n && standin_take_mem(n - spare) != 0)
            r = -2;
        else if (spare < n)
            p->reserved += n - spare;
        if (r == 0)
            p->used += n;
    }
    pthread_mutex_unlock(&pool_mutex);
    return r;
}

/* n bytes of pool are free again (kept reserved until a sync or a trim). */
void standin_pool_put(CUmemoryPool pool, uint64_t n)
{
    pthread_mutex_lock(&pool_mutex);
    struct CUmemPoolHandle_st *p = pool_live(pool);
    if (p)
        p->used -= n <= p->used ? n : p->used;
    pthread_mutex_unlock(&pool_mutex);
}

/* ---- virtual address ranges --------------------------------------------- */

/* Addresses only (no memory): a bump allocator from 0x600000000000. */
static CUdeviceptr next_va = 0x600000000000ull;

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                    CUdeviceptr addr, unsigned long long flags)
{
    (void)alignment, (void)addr;
    if (!ptr || size == 0 || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&limit_mutex);
    *ptr = next_va;
    next_va += (size + 0x1fffff) & ~(CUdeviceptr)0x1fffff;
    pthread_mutex_unlock(&limit_mutex);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    return ptr && size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- inter-process memory ----------------------------------------------- */

#define IPC_MAGIC 0x43504931u

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    uint64_t n = standin_block_size((void *)(uintptr_t)dptr);
    if (!dptr || !n)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = dptr;
    if (psize)
        *psize = (size_t)n;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    size_t n = 0;
    uint32_t magic = IPC_MAGIC;
    if (!pHandle || cuMemGetAddressRange_v2(NULL, &n, dptr) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, &magic, 4);
    memcpy(pHandle->reserved + 8, &n, sizeof(n));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    uint32_t magic;
    size_t n;
    (void)Flags;
    memcpy(&magic, handle.reserved, 4);
    memcpy(&n, handle.reserved + 8, sizeof(n));
    if (!pdptr || magic != IPC_MAGIC || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = standin_map_bytes(n, 0);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    return dptr && standin_unmap_bytes((void *)(uintptr_t)dptr) == 0 ? CUDA_SUCCESS
                                                                     : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                             CUmemGenericAllocationHandle handle, int handleType,
                                             unsigned long long flags)
{
    uint64_t n = standin_record_size((const void *)(uintptr_t)handle, VMM_MAGIC);
    if (!shareableHandle || flags != 0 || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    if (!n)
        return CUDA_ERROR_INVALID_HANDLE;
    int fd = (int)syscall(SYS_memfd_create, "standin-vmm", 1u /* MFD_CLOEXEC */);
    if (fd < 0 || ftruncate(fd, (off_t)n) != 0) {
        if (fd >= 0)
            close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *(int *)shareableHandle = fd;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                               int shHandleType)
{
    struct statx st; /* not fstat, which needs glibc 2.33 (src/shim/glibc_compat.h) */
    int fd = (int)(intptr_t)osHandle;
    if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
        statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, &st) != 0 || st.stx_size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct record *r = standin_record_new(VMM_MAGIC, (uint64_t)st.stx_size);
    if (!r)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)r;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                                 int handleType, unsigned long long flags)
{
    if (!handle_out || !pool_live(pool) || flags != 0 ||
        handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = (int)syscall(SYS_memfd_create, "standin-pool", 1u /* MFD_CLOEXEC */);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *(int *)handle_out = fd;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                   int handleType, unsigned long long flags)
{
    CUmemPoolProps props;
    (void)handle;
    if (!pool_out || flags != 0 || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    memset(&props, 0, sizeof(props));
    return cuMemPoolCreate(pool_out, &props);
}

EXPORT CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr)
{
    size_t n = 0;
    uint32_t magic = POOL_MAGIC;
    if (!shareData_out || cuMemGetAddressRange_v2(NULL, &n, ptr) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    memset(shareData_out, 0, sizeof(*shareData_out));
    memcpy(shareData_out->reserved, &magic, 4);
    memcpy(shareData_out->reserved + 8, &n, sizeof(n));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                       CUmemPoolPtrExportData *shareData)
{
    uint32_t magic;
    size_t n;
    if (!ptr_out || !shareData || !pool_live(pool))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(&magic, shareData->reserved, 4);
    memcpy(&n, shareData->reserved + 8, sizeof(n));
    if (magic != POOL_MAGIC || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = standin_map_bytes(n, 0);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr_out = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* ---- contexts: the unversioned entry points, green contexts ------------- */

EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return cuCtxCreate_v2(pctx, flags, dev);
}

EXPORT CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

#define DESCS_MAX 64
#define GREEN_MAGIC 0x4752454eu
#define RESOURCE_SM_AT 96 /* the union in cuda.h 13.0's CUdevResource */

struct CUdevResourceDesc_st {
    unsigned sms;
};
struct CUgreenCtx_st {
    uint32_t magic;
};

/* Descriptors live as long as the process (cuda.h has no call to free one). */
static struct CUdevResourceDesc_st descs[DESCS_MAX];
static int ndescs;

EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, int type)
{
    int t = CU_DEV_RESOURCE_TYPE_SM;
    unsigned sm[3] = {100, 1, 1}; /* smCount, minSmPartitionSize, coscheduled alignment */
    if (!resource || type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_VALUE;
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    memset(resource, 0, RESOURCE_SM_AT + sizeof(sm));
    memcpy(resource, &t, sizeof(t));
    memcpy((char *)resource + RESOURCE_SM_AT, sm, sizeof(sm));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources,
                                          unsigned int nbResources)
{
    int t = 0;
    unsigned sms = 0;
    if (!phDesc || !resources || nbResources != 1)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(&t, resources, sizeof(t));
    memcpy(&sms, (const char *)resources + RESOURCE_SM_AT, sizeof(sms));
    if (t != CU_DEV_RESOURCE_TYPE_SM || sms == 0 || sms > 100)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&limit_mutex);
    struct CUdevResourceDesc_st *d = ndescs < DESCS_MAX ? &descs[ndescs++] : NULL;
    if (d)
        d->sms = sms;
    pthread_mutex_unlock(&limit_mutex);
    if (d)
        *phDesc = d;
    return d ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static int desc_live(CUdevResourceDesc d)
{
    return d >= &descs[0] && d < &descs[DESCS_MAX] && d->sms > 0;
}

EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
                                 unsigned int flags)
{
    CUcontext primary;
    if (!phCtx || !desc_live(desc) || flags != CU_GREEN_CTX_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = cuDevicePrimaryCtxRetain(&primary, dev);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgreenCtx_st *g = calloc(1, sizeof(*g));
    if (!g || standin_take_mem(standin_ctx_mem()) != 0) {
        free(g);
        cuDevicePrimaryCtxRelease_v2(dev);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g->magic = GREEN_MAGIC;
    *phCtx = g;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    if (!hCtx || hCtx->magic != GREEN_MAGIC)
        return CUDA_ERROR_INVALID_CONTEXT;
    hCtx->magic = 0;
    free(hCtx);
    standin_give_mem(standin_ctx_mem());
    return cuDevicePrimaryCtxRelease_v2(0);
}

/* ---- a handle's properties ---------------------------------------------- */

EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                       CUmemGenericAllocationHandle handle)
{
    if (!prop || !standin_record_size((const void *)(uintptr_t)handle, VMM_MAGIC))
        return CUDA_ERROR_INVALID_VALUE;
    memset(prop, 0, sizeof(*prop));
    prop->type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
    prop->location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE, device 0 */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                              int option)
{
    if (!granularity || !prop || (option != 0 && option != 1))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = 2u << 20;
    return CUDA_SUCCESS;
}
