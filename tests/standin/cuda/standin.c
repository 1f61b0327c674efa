/*
 * standin.c - a stand-in CUDA driver (libcuda.so.1) for machines without a
 * GPU: every entry point of src/util/cuda_abi.h, on host memory. Test code,
 * written plainly. Used by the shim's tests (tests/shim/) and by the fight
 * harness (src/fight/).
 *
 * Contract:
 *   - One device, "Stand-in GPU", 100 SMs, CUDA 13.0 (driver version 13000).
 *     Total memory: env TESSERA_STANDIN_TOTAL_MEM (bytes, or with a K/M/G
 *     binary suffix), default 16 GiB. Allocations beyond it fail with
 *     CUDA_ERROR_OUT_OF_MEMORY; cuMemGetInfo_v2 reports total minus what
 *     this process holds. Device memory is anonymous mmap (touched only if
 *     the program writes it); cuMemcpyHtoD/DtoH copy for real.
 *   - cuGetProcAddress(_v2) returns the stand-in's own functions: for
 *     "cuX" it tries cuX_ptsz (with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_
 *     STREAM), then cuX_v2 (version >= 3020), then cuX (so "cuMemAlloc" at
 *     3010 is the legacy 32-bit cuMemAlloc); "cuCtxCreate" is cuCtxCreate_v4
 *     from 12050 and _v3 from 11040, "cuGraphInstantiate" is
 *     cuGraphInstantiateWithFlags from 12000, _v2 from 11000 and the
 *     unversioned one below (cudaTypedefs.h). The library is linked
 *     -Bsymbolic, so these are its own definitions even under an LD_PRELOAD
 *     interposer; for cuMemAlloc_v2, cuMemCreate and cuCtxCreate_v4 it hands out internal
 *     entry points (another address than dlsym's), as a real driver may.
 *   - VMM: physical memory of cuMemCreate is freed when its handle
 *     references (cuMemCreate, cuMemRetainAllocationHandle) are all released
 *     AND every cuMemMap of it is unmapped (cuMemUnmap unmaps every mapping
 *     starting inside its range), as cuda.h specifies; a sparse array's
 *     tile mapped with cuMemMapArrayAsync counts as a mapping. Sparse arrays
 *     (CUDA_ARRAY3D_SPARSE) hold no memory of their own.
 *   - The legacy unversioned entry points, mipmapped arrays, context limits
 *     and memory pools (cuMemPoolCreate: a free keeps the bytes reserved
 *     until a synchronisation trims the pool to its release threshold):
 *     standin_more.c. cuMemAllocAsync takes from the device's default pool
 *     (release threshold 0: what is freed stays reserved until the next
 *     synchronisation, as with cuda.h's default pool).
 *   - Graph memory (standin_graph.c): cuGraphAddMemAllocNode adds its size
 *     to the graph; an instantiated graph takes its allocations from the
 *     device's graph memory pool at cuGraphUpload or its first launch (or
 *     at cuGraphInstantiateWithParams with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) and
 *     gives them back to the pool at cuGraphExecDestroy; the pool keeps
 *     what it reserved until cuDeviceGraphMemTrim.
 *   - The card: all processes on the machine share ONE stand-in GPU through
 *     the file named by env TESSERA_STANDIN_GPU (default
 *     /tmp/tessera-standin-gpu.lock), laid out and read by ../card.h. It is
 *     ONE first-in first-out timeline in virtual time: a launch is placed at
 *     start = max(now, the end of its stream's earlier work, the card's
 *     free_at) (under flock(LOCK_EX) on the file plus a mutex between the
 *     threads of one process), ends at start + its duration, and returns
 *     AT ONCE, as the real driver queues work on a stream. A process with
 *     1024 kernels unfinished blocks in its next launch until its oldest
 *     ends (a real launch blocks on a full push buffer).
 *   - Streams: each keeps the end of its last work. The legacy NULL stream
 *     (NULL, CU_STREAM_LEGACY) orders with the process's blocking streams
 *     as cuda.h's legacy default stream does (its work waits for theirs and
 *     theirs for its); CU_STREAM_NON_BLOCKING streams only with themselves;
 *     CU_STREAM_PER_THREAD (and NULL on the _ptsz entry points) is one
 *     blocking stream per thread. All contexts of a process are one.
 *     cuStreamSynchronize waits for its stream's end (the NULL stream's:
 *     every blocking stream's too), cuCtxSynchronize for the process's
 *     last end, cuStreamQuery answers CUDA_ERROR_NOT_READY until then;
 *     cuMemcpyHtoD_v2 and cuMemcpyDtoH_v2 wait for the NULL stream first
 *     (synchronous with the host, cuda.h "API synchronization behavior";
 *     copies take no card time). A wait sleeps until about 200 us before
 *     the end and spins the rest, as the real driver spins under its
 *     default CU_CTX_SCHED_AUTO (../card.c), so host wake-up jitter is not
 *     added to device time.
 *   - Kernel duration: a function named "tessera_sleep_us" runs for
 *     *(uint32_t *)kernelParams[0] microseconds; any other function runs for
 *     env TESSERA_STANDIN_KERNEL_US (default 100). Two knobs make the card
 *     noisy (tests of the fight's control): TESSERA_STANDIN_JITTER=PCT
 *     stretches every kernel of a process by one factor drawn per process,
 *     log-uniform in [1, 1 + PCT/100]; TESSERA_STANDIN_STALL=PERIOD_US:STALL_US stalls
 *     the card for the first STALL_US of every PERIOD_US (a kernel started
 *     then waits for the stall's end). cuModuleLoad, cuModuleLoadData,
 *     cuModuleLoadDataEx, cuModuleLoadFatBinary, cuLibraryLoadData and
 *     cuLibraryLoadFromFile accept any non-NULL image; an image in the
 *     stand-in's module format (standin.h) takes its code and __device__
 *     globals from the card at load, until cuModuleUnload / cuLibraryUnload
 *     (standin_module.c); cuModuleGetFunction returns a function for any
 *     name. cuLaunchKernelEx and
 *     cuLaunchCooperativeKernel behave as cuLaunchKernel; the legacy
 *     cuLaunch, cuLaunchGrid and cuLaunchGridAsync run the function without
 *     parameters (so for TESSERA_STANDIN_KERNEL_US), and
 *     cuLaunchCooperativeKernelMultiDevice runs each entry of its list.
 *   - Graphs: tessera_standin_graph_create(us) makes a CUgraphExec whose
 *     cuGraphLaunch queues us microseconds of card time (test hook; the ABI
 *     has no graph building); cuGraphExecDestroy frees it.
 *   - Events: cuEventRecord captures the work on its stream so far and
 *     completes when it ends (at once on an idle stream); cuEventQuery
 *     answers CUDA_ERROR_NOT_READY until then, cuEventSynchronize waits for
 *     it, cuEventElapsedTime gives the device time between two completed
 *     events (NOT_READY before; INVALID_HANDLE for one never recorded or
 *     made with CU_EVENT_DISABLE_TIMING).
 *   - Busy counters (test hook, what the shim's SM limiter reads when NVML
 *     is absent): uint64_t tessera_standin_busy_ns(int pid) is the card
 *     time kernels of process pid have RUN up to now since the lock file
 *     was created (elapsed time only, never work still queued), pid 0 the
 *     whole card. As with the real driver, pid is the
 *     HOST pid: the first field of NSpid in /proc/self/status (the pid in
 *     the namespace of the /proc mount, the host's under `unshare --pid`
 *     without --mount-proc), not getpid() inside a pid namespace;
 *     tessera_standin_launches(pid) counts launches the same way,
 *     tessera_standin_dry_ns(pid) the time pid's queue stood empty between
 *     two of its launches (time it left the card to others), and
 *     unsigned tessera_standin_pending(int pid) the kernels it has queued
 *     that have not ended (pid 0: every process's). The file holds a struct standin_card (../card.h):
 *     header, then 256 per-process slots, each with a ring of its pending
 *     kernels, folded into its busy time once they end; a fresh file is set
 *     up by the first process to map it. Delete the file to reset the
 *     counters.
 *   - Contexts: each cuCtxCreate_v2/_v3/_v4 (_v3 needs at least one
 *     execution affinity parameter, _v4 takes NULL params or exactly one of
 *     execAffinityParams and cigParams, CIG: NOT_SUPPORTED), and the primary
 *     context while retained,
 *     hold env TESSERA_STANDIN_CTX_MEM bytes of the card (default 0).
 *   - Addresses: a freed small block (up to 1 MiB) goes back to malloc at
 *     once, so the next allocation usually gets its address again; with env
 *     TESSERA_STANDIN_QUARANTINE=N it waits behind N other freed blocks
 *     first (addresses not reused at once, as a real driver's need not be).
 *   - size_t tessera_standin_allocated_bytes(void): device memory this
 *     process holds (test hook). uint64_t tessera_standin_mem_bytes(int pid):
 *     device memory process pid holds, from its slot in the card file (test
 *     hook for what NVML's per-process usedGpuMemory reports on a real card;
 *     every byte the stand-in takes is counted, contexts included).
 */
#include "standin.h"
#include "../card.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u

/* ---- memory ------------------------------------------------------------- */

static _Atomic uint64_t allocated;
static void publish_mem(void);
static void wait_legacy(void);
static pthread_once_t total_once = PTHREAD_ONCE_INIT;
static uint64_t total_mem = 16ull << 30;

static void read_total(void)
{
    const char *s = getenv("TESSERA_STANDIN_TOTAL_MEM");
    if (!s || !*s)
        return;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (v)
        total_mem = (uint64_t)v << shift;
}

static uint64_t total(void)
{
    pthread_once(&total_once, read_total);
    return total_mem;
}

int standin_take_mem(uint64_t n)
{
    uint64_t cur = atomic_load(&allocated);
    do {
        if (n > total() || cur > total() - n)
            return -1;
    } while (!atomic_compare_exchange_weak(&allocated, &cur, cur + n));
    publish_mem();
    return 0;
}

/* Device memory: n bytes with a header that remembers n in the 8 bytes
 * before the pointer and how it was made in the 8 before those; small
 * blocks from malloc, large ones from an anonymous mapping (untouched pages
 * cost nothing). low: below 4 GiB, for the legacy 32-bit entry points
 * (MAP_32BIT; NULL where the platform has none). */
#define SMALL (1u << 20)
#define SMALL_HDR 64u

static char *get_block(uint64_t n, int low, uint64_t *how)
{
    int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    if (!low && n <= SMALL) {
        char *p = malloc(n + SMALL_HDR);
        *how = 0;
        return p ? p + SMALL_HDR : NULL;
    }
#ifdef MAP_32BIT
    fl |= low ? MAP_32BIT : 0;
#else
    if (low)
        return NULL;
#endif
    char *p = mmap(NULL, n + PAGE, PROT_READ | PROT_WRITE, fl, -1, 0);
    *how = 1;
    return p != MAP_FAILED ? p + PAGE : NULL;
}

void *standin_map_bytes(uint64_t n, int low)
{
    if (n == 0 || n > (1ull << 46) || standin_take_mem(n) != 0)
        return NULL;
    uint64_t how = 0;
    char *q = get_block(n, low, &how);
    if (!q) {
        standin_give_mem(n);
        return NULL;
    }
    memcpy(q - 8, &n, 8);
    memcpy(q - 16, &how, 8);
    return q;
}

/* Host storage for n bytes of pool (the pool already accounted them):
 * how has bit 1 set and the pool sits in the 8 bytes before how. */
void *standin_pool_block(uint64_t n, CUmemoryPool pool)
{
    uint64_t how = 0;
    char *q = n && n <= (1ull << 46) ? get_block(n, 0, &how) : NULL;
    if (!q)
        return NULL;
    how |= 2;
    memcpy(q - 8, &n, 8);
    memcpy(q - 16, &how, 8);
    memcpy(q - 24, &pool, sizeof(pool));
    return q;
}

/* TESSERA_STANDIN_QUARANTINE=N: a small block freed waits behind N others
 * before it goes back to malloc, so an address is handed out again only
 * after N more frees (a driver whose addresses are not reused at once;
 * bench/shim_bench.sh). Returns the block to free now (NULL: none). */
static pthread_mutex_t quarantine_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t quarantine_once = PTHREAD_ONCE_INIT;
static void **quarantine;
static size_t quarantine_len, quarantine_at;

static void quarantine_init(void)
{
    const char *s = getenv("TESSERA_STANDIN_QUARANTINE");
    size_t n = s ? strtoul(s, NULL, 10) : 0;
    quarantine = n ? calloc(n, sizeof(void *)) : NULL;
    quarantine_len = quarantine ? n : 0;
}

static void *quarantined(void *block)
{
    pthread_once(&quarantine_once, quarantine_init);
    if (!quarantine_len)
        return block;
    pthread_mutex_lock(&quarantine_mutex);
    void *out = quarantine[quarantine_at];
    quarantine[quarantine_at] = block;
    quarantine_at = (quarantine_at + 1) % quarantine_len;
    pthread_mutex_unlock(&quarantine_mutex);
    return out;
}

int standin_unmap_bytes(void *ptr)
{
    char *q = ptr;
    uint64_t n, how;
    if (!q)
        return -1;
    memcpy(&n, q - 8, 8);
    memcpy(&how, q - 16, 8);
    if (how & 2) {
        CUmemoryPool pool;
        memcpy(&pool, q - 24, sizeof(pool));
        standin_pool_put(pool, n);
    } else {
        standin_give_mem(n);
    }
    if ((how & 1) == 0)
        free(quarantined(q - SMALL_HDR));
    else
        munmap(q - PAGE, n + PAGE);
    return 0;
}

/* Trusts p to be a block of standin_map_bytes or standin_pool_block (the
 * callers' contract, like cuMemFree's). */
uint64_t standin_block_size(const void *p)
{
    uint64_t n = 0;
    if (p)
        memcpy(&n, (const char *)p - 8, 8);
    return n;
}

void standin_give_mem(uint64_t n)
{
    atomic_fetch_sub(&allocated, n);
    publish_mem();
}

EXPORT size_t tessera_standin_allocated_bytes(void) { return (size_t)atomic_load(&allocated); }

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = standin_map_bytes(bytesize, 0);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t widthBytes,
                                   size_t height, unsigned int elementSizeBytes)
{
    if (!dptr || !pitch || widthBytes == 0 || height == 0 ||
        (elementSizeBytes != 4 && elementSizeBytes != 8 && elementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (widthBytes + 511) / 512 * 512;
    CUresult r = cuMemAlloc_v2(dptr, p * height);
    if (r == CUDA_SUCCESS)
        *pitch = p;
    return r;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    (void)flags;
    return cuMemAlloc_v2(dptr, bytesize);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    return cuMemAllocFromPoolAsync(dptr, bytesize, standin_default_pool(), stream);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    return cuMemAllocAsync(dptr, bytesize, stream);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream stream)
{
    (void)stream;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int r = standin_pool_take(pool, bytesize);
    if (r != 0)
        return r == -1 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
    void *p = standin_pool_block(bytesize, pool);
    if (!p) {
        standin_pool_put(pool, bytesize);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream stream)
{
    return cuMemAllocFromPoolAsync(dptr, bytesize, pool, stream);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return standin_unmap_bytes((void *)(uintptr_t)dptr) == 0 ? CUDA_SUCCESS
                                                             : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
    (void)stream;
    return cuMemFree_v2(dptr);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
    return cuMemFreeAsync(dptr, stream);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *total_bytes = (size_t)total();
    *free_bytes = (size_t)(total() - atomic_load(&allocated));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    wait_legacy();
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    wait_legacy();
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

/* VMM handles and arrays: heap records of their size, kept in a list of
 * the live ones, so a bad handle (or one of the other kind) is refused, not
 * followed. A VMM record is like the driver's allocation: its handle
 * references (cuMemCreate 1, cuMemRetainAllocationHandle +1, cuMemRelease
 * -1) and its mappings (cuMemMap +1, cuMemUnmap -1) both keep the physical
 * memory; it is freed when the last of either goes. */
#define LIVE_MAX 4096
#define MAPS_MAX 4096

struct record {
    uint32_t magic;
    uint64_t size;
    int refs, maps; /* VMM: handle references, mappings (under live_mutex) */
};

static struct record *live[LIVE_MAX];
static struct {
    CUdeviceptr va;
    size_t size;
    struct record *r;
} maps[MAPS_MAX];
static pthread_mutex_t live_mutex = PTHREAD_MUTEX_INITIALIZER;

/* A live record holding size bytes of device memory; NULL: out of memory. */
struct record *standin_record_new(uint32_t magic, uint64_t size)
{
    if (standin_take_mem(size) != 0)
        return NULL;
    struct record *r = calloc(1, sizeof(*r));
    int added = 0;
    if (r) {
        r->magic = magic;
        r->size = size;
        r->refs = 1;
        pthread_mutex_lock(&live_mutex);
        for (int i = 0; i < LIVE_MAX && !added; i++)
            if (!live[i]) {
                live[i] = r;
                added = 1;
            }
        pthread_mutex_unlock(&live_mutex);
    }
    if (!added) {
        free(r);
        standin_give_mem(size);
        return NULL;
    }
    return r;
}

/* Index of the live record p of kind magic, or -1 (under live_mutex). */
static int live_index(const void *p, uint32_t magic)
{
    for (int i = 0; i < LIVE_MAX && p; i++)
        if (live[i] == p && live[i]->magic == magic)
            return i;
    return -1;
}

uint64_t standin_record_size(const void *p, uint32_t magic)
{
    pthread_mutex_lock(&live_mutex);
    int i = live_index(p, magic);
    uint64_t n = i < 0 ? 0 : live[i]->size;
    pthread_mutex_unlock(&live_mutex);
    return n;
}

/* Drop one handle reference (drop_ref) or one mapping of r; free its
 * memory when neither is left. Under live_mutex. */
static void record_unref(struct record *r, int drop_ref)
{
    if (drop_ref)
        r->refs--;
    else
        r->maps--;
    if (r->refs > 0 || r->maps > 0)
        return;
    int i = live_index(r, r->magic);
    if (i >= 0)
        live[i] = NULL;
    standin_give_mem(r->size);
    free(r);
}

/* Release one reference of the live record p of kind magic. */
CUresult standin_record_free(const void *p, uint32_t magic)
{
    pthread_mutex_lock(&live_mutex);
    int i = live_index(p, magic);
    struct record *r = i < 0 || live[i]->refs <= 0 ? NULL : live[i];
    if (r)
        record_unref(r, 1);
    pthread_mutex_unlock(&live_mutex);
    return r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)flags;
    if (!handle || !prop || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct record *v = standin_record_new(VMM_MAGIC, size);
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    return standin_record_free((const void *)(uintptr_t)handle, VMM_MAGIC);
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    if (!ptr || size == 0 || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult res = CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&live_mutex);
    int i = live_index((const void *)(uintptr_t)handle, VMM_MAGIC);
    struct record *v = i < 0 || live[i]->refs <= 0 ? NULL : live[i];
    if (v && (offset > v->size || size > v->size - offset))
        res = CUDA_ERROR_INVALID_VALUE;
    for (int k = 0; v && res == CUDA_ERROR_INVALID_HANDLE && k < MAPS_MAX; k++)
        if (!maps[k].r) {
            maps[k].va = ptr, maps[k].size = size, maps[k].r = v;
            v->maps++;
            res = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&live_mutex);
    return v && res == CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_OUT_OF_MEMORY : res;
}

/* Unmap every mapping inside [ptr, ptr + size). */
EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    int found = 0;
    pthread_mutex_lock(&live_mutex);
    for (int k = 0; k < MAPS_MAX; k++)
        if (maps[k].r && maps[k].va >= ptr && maps[k].va - ptr < size) {
            struct record *r = maps[k].r;
            maps[k].r = NULL;
            record_unref(r, 0);
            found = 1;
        }
    pthread_mutex_unlock(&live_mutex);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A sparse tile's identity (FNV-1a over the resource and subresource). */
static CUdeviceptr tile_key(const CUarrayMapInfo *m)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *parts[2] = {(const unsigned char *)&m->resource,
                                     (const unsigned char *)&m->subresource};
    size_t lens[2] = {sizeof(m->resource), sizeof(m->subresource)};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < lens[k]; i++)
            h = (h ^ parts[k][i]) * 1099511628211ull;
    return h | 1;
}

/* One tile operation: map a live handle's memory into it, or unmap it. */
static CUresult map_tile(const CUarrayMapInfo *m)
{
    CUdeviceptr key = tile_key(m);
    CUresult res = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&live_mutex);
    if (m->memOperationType == CU_MEM_OPERATION_TYPE_UNMAP) {
        for (int k = 0; k < MAPS_MAX; k++)
            if (maps[k].r && maps[k].va == key) {
                struct record *r = maps[k].r;
                maps[k].r = NULL;
                record_unref(r, 0);
                res = CUDA_SUCCESS;
                break;
            }
    } else if (m->memOperationType == CU_MEM_OPERATION_TYPE_MAP) {
        int i = live_index((const void *)(uintptr_t)m->memHandle.memHandle, VMM_MAGIC);
        struct record *v = i < 0 || live[i]->refs <= 0 ? NULL : live[i];
        res = v ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_HANDLE;
        for (int k = 0; v && k < MAPS_MAX; k++)
            if (!maps[k].r) {
                maps[k].va = key, maps[k].size = 1, maps[k].r = v;
                v->maps++;
                res = CUDA_SUCCESS;
                break;
            }
    }
    pthread_mutex_unlock(&live_mutex);
    return res;
}

/* Sparse tiles: each mapping keeps its handle's memory like cuMemMap. */
EXPORT CUresult cuMemMapArrayAsync(CUarrayMapInfo *mapInfoList, unsigned int count,
                                   CUstream hStream)
{
    (void)hStream;
    if (!mapInfoList || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++) {
        CUresult r = map_tile(&mapInfoList[i]);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemMapArrayAsync_ptsz(CUarrayMapInfo *mapInfoList, unsigned int count,
                                        CUstream hStream)
{
    return cuMemMapArrayAsync(mapInfoList, count, hStream);
}

/* A new reference to the allocation mapped at addr. */
EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)addr;
    struct record *r = NULL;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&live_mutex);
    for (int k = 0; k < MAPS_MAX && !r; k++)
        if (maps[k].r && a >= maps[k].va && a - maps[k].va < maps[k].size)
            r = maps[k].r;
    if (r)
        r->refs++;
    pthread_mutex_unlock(&live_mutex);
    if (r)
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)r;
    return r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Arrays: records of their size (above). */
uint64_t standin_format_size(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
    }
}

static CUresult make_array(CUarray *out, size_t w, size_t h, size_t d, CUarray_format f,
                           unsigned ch, unsigned flags)
{
    uint64_t n = standin_format_size(f);
    if (!out || w == 0 || n == 0 || (ch != 1 && ch != 2 && ch != 4))
        return CUDA_ERROR_INVALID_VALUE;
    n *= (uint64_t)w * (h ? h : 1) * (d ? d : 1) * ch;
    if (flags & CUDA_ARRAY3D_SPARSE)
        n = 0; /* tiles are backed by VMM handles (cuMemMapArrayAsync) */
    struct record *a = standin_record_new(ARRAY_MAGIC, n);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = (CUarray)a;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuArrayCreate_v2(CUarray *array, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    if (!desc)
        return CUDA_ERROR_INVALID_VALUE;
    return make_array(array, desc->Width, desc->Height, 1, desc->Format, desc->NumChannels, 0);
}

EXPORT CUresult cuArray3DCreate_v2(CUarray *array, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    if (!desc)
        return CUDA_ERROR_INVALID_VALUE;
    return make_array(array, desc->Width, desc->Height, desc->Depth, desc->Format,
                      desc->NumChannels, desc->Flags);
}

EXPORT CUresult cuArrayDestroy(CUarray array) { return standin_record_free(array, ARRAY_MAGIC); }

/* ---- device, context, errors --------------------------------------------- */

static int initialised;
struct CUctx_st {
    int dev;
};
static struct CUctx_st primary;

EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    initialised = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    static const char n[] = "Stand-in GPU";
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    size_t k = (size_t)len - 1 < sizeof(n) - 1 ? (size_t)len - 1 : sizeof(n) - 1;
    memcpy(name, n, k);
    name[k] = '\0';
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev)
{
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *value = attrib == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT             ? 100
             : attrib == CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR ? 2048
                                                                            : 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)total();
    return CUDA_SUCCESS;
}

/* What one context holds on the card: env TESSERA_STANDIN_CTX_MEM (bytes,
 * K/M/G suffix), default 0 (the tests that count the card's bytes exactly
 * create no context; the context probe sets it). */
static uint64_t ctx_mem(void)
{
    const char *s = getenv("TESSERA_STANDIN_CTX_MEM");
    if (!s || !*s)
        return 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    return (uint64_t)v << shift;
}

uint64_t standin_ctx_mem(void) { return ctx_mem(); }

static int primary_refs;
static pthread_mutex_t ctx_mutex = PTHREAD_MUTEX_INITIALIZER;

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&ctx_mutex);
    if (primary_refs == 0 && standin_take_mem(ctx_mem()) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else
        primary_refs++;
    pthread_mutex_unlock(&ctx_mutex);
    if (r == CUDA_SUCCESS)
        *ctx = &primary;
    return r;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&ctx_mutex);
    int ok = primary_refs > 0;
    if (ok && --primary_refs == 0)
        standin_give_mem(ctx_mem());
    pthread_mutex_unlock(&ctx_mutex);
    (void)ok; /* releasing an unretained primary context: nothing to do */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (standin_take_mem(ctx_mem()) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ctx = calloc(1, sizeof(struct CUctx_st));
    if (!*ctx)
        standin_give_mem(ctx_mem());
    return *ctx ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Execution affinity: SM counts only, 1..100 SMs. */
static int affinity_ok(const CUexecAffinityParam *p, int n)
{
    if (!p || n < 1)
        return 0;
    for (int i = 0; i < n; i++)
        if (p[i].type != 0 || p[i].param.smCount.val < 1 || p[i].param.smCount.val > 100)
            return 0;
    return 1;
}

EXPORT CUresult cuCtxCreate_v3(CUcontext *ctx, CUexecAffinityParam *paramsArray, int numParams,
                               unsigned int flags, CUdevice dev)
{
    if (!affinity_ok(paramsArray, numParams))
        return CUDA_ERROR_INVALID_VALUE;
    return cuCtxCreate_v2(ctx, flags, dev);
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *ctx, CUctxCreateParams *ctxCreateParams,
                               unsigned int flags, CUdevice dev)
{
    const CUctxCreateParams *p = ctxCreateParams;
    if (p && (p->execAffinityParams != NULL) == (p->cigParams != NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (p && p->cigParams)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (p && !affinity_ok(p->execAffinityParams, p->numExecAffinityParams))
        return CUDA_ERROR_INVALID_VALUE;
    return cuCtxCreate_v2(ctx, flags, dev);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx != &primary) {
        free(ctx);
        standin_give_mem(ctx_mem());
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    (void)ctx;
    return CUDA_SUCCESS;
}

/* Every context is on the one device. */
EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **str)
{
    static const struct {
        CUresult code;
        const char *text;
    } tab[] = {
        {CUDA_SUCCESS, "no error"},
        {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
        {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
        {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
        {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
        {CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
        {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
        {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
        {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
        {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    };
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (tab[i].code == error) {
            *str = tab[i].text;
            return CUDA_SUCCESS;
        }
    *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- streams and events: the process's view of the card's timeline ----- */

/* A stream: when its last work ends (card clock), and its flags. The legacy
 * NULL stream (NULL or CU_STREAM_LEGACY) is `legacy`; the per-thread
 * default stream (CU_STREAM_PER_THREAD, or NULL on a _ptsz entry point) one
 * per thread. All contexts of the process are one (the stand-in has one
 * device and models no context switch). */
struct CUstream_st {
    _Atomic uint64_t end;
    unsigned flags;
};
struct CUevent_st {
    uint64_t at; /* when the work it captured ends */
    unsigned flags;
    int recorded;
};

static struct CUstream_st legacy;
static _Atomic uint64_t blocking_end; /* last end on any blocking stream */
static _Atomic uint64_t process_end;  /* last end on any stream */
static _Thread_local struct CUstream_st per_thread;

static uint64_t now_ns(void) { return standin_card_now_ns(); }

static void raise_to(_Atomic uint64_t *v, uint64_t t)
{
    uint64_t cur = atomic_load(v);
    while (cur < t && !atomic_compare_exchange_weak(v, &cur, t))
        ;
}

static struct CUstream_st *stream_of(CUstream s)
{
    if (s == CU_STREAM_PER_THREAD)
        return &per_thread;
    return s == NULL || s == CU_STREAM_LEGACY ? &legacy : s;
}

/* When new work on s may start, as cuda.h's legacy default stream orders
 * it: work on the NULL stream waits for all earlier work on blocking
 * streams, and work on a blocking stream (flags 0, the per-thread default
 * stream too) for earlier work on the NULL stream; a CU_STREAM_NON_BLOCKING
 * stream only for its own. */
static uint64_t stream_after(struct CUstream_st *s)
{
    uint64_t own = atomic_load(&s->end), leg = atomic_load(&legacy.end);
    if (s == &legacy)
        return own > atomic_load(&blocking_end) ? own : atomic_load(&blocking_end);
    if (s->flags & CU_STREAM_NON_BLOCKING)
        return own;
    return own > leg ? own : leg;
}

/* When the work on s submitted so far ends (what a synchronisation waits
 * for): the NULL stream's includes the blocking streams'. */
static uint64_t stream_done(struct CUstream_st *s)
{
    return s == &legacy ? stream_after(s) : atomic_load(&s->end);
}

static void stream_put(struct CUstream_st *s, uint64_t end)
{
    raise_to(&s->end, end);
    if (s != &legacy && !(s->flags & CU_STREAM_NON_BLOCKING))
        raise_to(&blocking_end, end);
    raise_to(&process_end, end);
}

/* A synchronous call (cuMemcpyHtoD_v2, cuMemcpyDtoH_v2) waits for the NULL
 * stream's work first (cuda.h, "API synchronization behavior"). */
static void wait_legacy(void) { standin_card_wait_until(stream_done(&legacy)); }

EXPORT CUresult cuCtxSynchronize(void)
{
    standin_card_wait_until(atomic_load(&process_end));
    standin_pools_sync();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    (void)ctx;
    return cuCtxSynchronize();
}

EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int flags)
{
    if (!stream)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    *stream = calloc(1, sizeof(struct CUstream_st));
    if (!*stream)
        return CUDA_ERROR_OUT_OF_MEMORY;
    (*stream)->flags = flags;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream stream)
{
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    free(stream); /* its queued work still runs (cuda.h) */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream stream)
{
    standin_card_wait_until(stream_done(stream_of(stream)));
    standin_pools_sync();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamQuery(CUstream stream)
{
    return now_ns() >= stream_done(stream_of(stream)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

EXPORT CUresult cuEventCreate(CUevent *event, unsigned int flags)
{
    if (!event)
        return CUDA_ERROR_INVALID_VALUE;
    *event = calloc(1, sizeof(struct CUevent_st));
    if (!*event)
        return CUDA_ERROR_OUT_OF_MEMORY;
    (*event)->flags = flags;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent event)
{
    if (!event)
        return CUDA_ERROR_INVALID_HANDLE;
    free(event);
    return CUDA_SUCCESS;
}

/* The event captures the work on stream so far: it completes when that
 * ends (at once on an idle stream). */
EXPORT CUresult cuEventRecord(CUevent event, CUstream stream)
{
    if (!event)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t now = now_ns(), at = stream_after(stream_of(stream));
    event->at = at > now ? at : now;
    event->recorded = 1;
    return CUDA_SUCCESS;
}

/* Not recorded: nothing captured, complete (cuda.h, cuEventRecord). */
EXPORT CUresult cuEventQuery(CUevent event)
{
    if (!event)
        return CUDA_ERROR_INVALID_HANDLE;
    return !event->recorded || now_ns() >= event->at ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

EXPORT CUresult cuEventSynchronize(CUevent event)
{
    if (!event)
        return CUDA_ERROR_INVALID_HANDLE;
    if (event->recorded)
        standin_card_wait_until(event->at);
    standin_pools_sync();
    return CUDA_SUCCESS;
}

/* Device time between two completed events (cuda.h's errors). */
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    if (!ms || !start || !end)
        return CUDA_ERROR_INVALID_VALUE;
    if (!start->recorded || !end->recorded ||
        ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    if (cuEventQuery(start) != CUDA_SUCCESS || cuEventQuery(end) != CUDA_SUCCESS)
        return CUDA_ERROR_NOT_READY;
    *ms = (float)(((double)end->at - (double)start->at) / 1e6);
    return CUDA_SUCCESS;
}

/* ---- the card: modules, launches, busy counters -------------------------- */

struct CUfunc_st {
    int sleep_kernel;
};

/* Test knob TESSERA_STANDIN_JITTER=PCT: this process's kernels all run
 * longer by one factor drawn once, log-uniform in [1, 1 + PCT/100] (a card
 * whose clocks differ from one run to the next). 1 when unset. */
static double jitter_factor(void)
{
    static double factor;
    if (factor > 0)
        return factor;
    const char *s = getenv("TESSERA_STANDIN_JITTER");
    double pct = s && *s ? strtod(s, NULL) : 0;
    uint64_t z = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ now_ns();
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    factor = exp(log1p(pct > 0 ? pct / 100 : 0) * (double)(z >> 11) / 9007199254740992.0);
    return factor;
}

/* Test knob TESSERA_STANDIN_STALL=PERIOD_US:STALL_US: the card stalls for
 * the first STALL_US of every PERIOD_US of the monotonic clock (as during
 * a preemption or a clock drop); a kernel started in a stall waits for its
 * end. Returns when the kernel may start. */
static uint64_t after_stall(uint64_t t)
{
    const char *s = getenv("TESSERA_STANDIN_STALL");
    char *end;
    uint64_t period = s ? strtoull(s, &end, 10) * 1000u : 0, stall;
    if (!period || *end != ':')
        return t;
    stall = strtoull(end + 1, NULL, 10) * 1000u;
    uint64_t into = t % period;
    return into < stall ? t - into + stall : t;
}

/* Queue a kernel of us microseconds (stretched by the jitter) on stream:
 * placed on the card's timeline after the stream's earlier work, it
 * returns at once. */
static CUresult run_on_card(uint32_t us, CUstream stream)
{
    struct standin_card *c = standin_card_map();
    if (!c)
        return CUDA_ERROR_UNKNOWN;
    struct CUstream_st *s = stream_of(stream);
    uint64_t dur = (uint64_t)((double)us * 1000 * jitter_factor());
    uint64_t end = standin_card_submit(c, standin_card_host_pid(), stream_after(s), dur,
                                       after_stall);
    if (!end)
        return CUDA_ERROR_UNKNOWN;
    stream_put(s, end);
    return CUDA_SUCCESS;
}

/* Write this process's device memory into its card slot (claimed once per
 * process, again after a fork), as NVML would report it. */
static void publish_mem(void)
{
    static struct standin_card_slot *_Atomic mine;
    static _Atomic int mine_pid;
    struct standin_card *c = standin_card_map();
    if (!c)
        return;
    int pid = (int)getpid();
    if (!mine || mine_pid != pid) {
        standin_card_lock(c);
        mine = standin_card_slot(c, pid, 1);
        mine_pid = pid;
        standin_card_unlock(c);
    }
    if (mine)
        atomic_store(&mine->mem, atomic_load(&allocated));
}

EXPORT uint64_t tessera_standin_mem_bytes(int pid)
{
    return standin_card_mem_bytes(standin_card_map(), pid);
}

EXPORT uint64_t tessera_standin_busy_ns(int pid)
{
    return standin_card_busy_ns(standin_card_map(), pid, now_ns());
}

EXPORT uint64_t tessera_standin_dry_ns(int pid)
{
    return standin_card_dry_ns(standin_card_map(), pid);
}

EXPORT uint64_t tessera_standin_launches(int pid)
{
    return standin_card_launches(standin_card_map(), pid);
}

EXPORT unsigned tessera_standin_pending(int pid)
{
    return standin_card_pending(standin_card_map(), pid, now_ns());
}

EXPORT CUgraphExec tessera_standin_graph_create(uint32_t us)
{
    CUgraphExec g = calloc(1, sizeof(*g));
    if (g)
        g->us = us;
    return g;
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec graph)
{
    if (!graph)
        return CUDA_ERROR_INVALID_HANDLE;
    standin_graph_release(graph);
    free(graph);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name)
{
    if (!fn || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module)
        return CUDA_ERROR_INVALID_HANDLE;
    /* two kinds of function, shared by every module: nothing to free */
    static struct CUfunc_st sleep_fn = {1}, other_fn = {0};
    *fn = strcmp(name, "tessera_sleep_us") == 0 ? &sleep_fn : &other_fn;
    return CUDA_SUCCESS;
}

static uint32_t kernel_us(CUfunction f, void **params)
{
    if (f->sleep_kernel && params && params[0])
        return *(const uint32_t *)params[0];
    const char *s = getenv("TESSERA_STANDIN_KERNEL_US");
    return s && *s ? (uint32_t)strtoul(s, NULL, 10) : 100u;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, void **params, CUstream stream)
{
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz)
        return CUDA_ERROR_INVALID_VALUE;
    return run_on_card(kernel_us(f, params), stream);
}

/* On a _ptsz entry point the NULL stream is the per-thread default one. */
static CUstream ptsz(CUstream s) { return s ? s : CU_STREAM_PER_THREAD; }

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                               unsigned int gridDimZ, unsigned int blockDimX,
                               unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream stream, void **kernelParams,
                               void **extra)
{
    (void)sharedMemBytes, (void)extra;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, kernelParams,
                  stream);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream stream,
                                    void **kernelParams, void **extra)
{
    return cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                          sharedMemBytes, ptsz(stream), kernelParams, extra);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                 void **extra)
{
    (void)extra;
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                  config->blockDimY, config->blockDimZ, kernelParams, config->hStream);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    CUlaunchConfig c = *config;
    c.hStream = ptsz(c.hStream);
    return cuLaunchKernelEx(&c, f, kernelParams, extra);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream stream, void **kernelParams)
{
    (void)sharedMemBytes;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, kernelParams,
                  stream);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream stream, void **kernelParams)
{
    return cuLaunchCooperativeKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                     blockDimZ, sharedMemBytes, ptsz(stream), kernelParams);
}

EXPORT CUresult cuLaunch(CUfunction f) { return launch(f, 1, 1, 1, 1, 1, 1, NULL, NULL); }

EXPORT CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height)
{
    return cuLaunchGridAsync(f, grid_width, grid_height, NULL);
}

EXPORT CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream)
{
    if (grid_width <= 0 || grid_height <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, (unsigned)grid_width, (unsigned)grid_height, 1, 1, 1, 1, NULL, hStream);
}

EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *launchParamsList,
                                                     unsigned int numDevices, unsigned int flags)
{
    (void)flags;
    if (!launchParamsList || numDevices != 1) /* the stand-in has one device */
        return CUDA_ERROR_INVALID_VALUE;
    const CUDA_LAUNCH_PARAMS *p = launchParamsList;
    return launch(p->function, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                  p->blockDimZ, p->kernelParams, p->hStream);
}

EXPORT CUresult cuGraphLaunch(CUgraphExec graph, CUstream stream)
{
    if (!graph)
        return CUDA_ERROR_INVALID_HANDLE;
    if (standin_graph_upload(graph) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return run_on_card(graph->us, stream);
}

EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream)
{
    return cuGraphLaunch(graph, ptsz(stream));
}

/* ---- cuGetProcAddress ---------------------------------------------------- */

#define FN(name)             \
    {                        \
#name, (void *)&name \
    }
static const struct {
    const char *name;
    void *fn;
} procs[] = {
    FN(cuInit),
    FN(cuDriverGetVersion),
    FN(cuDeviceGet),
    FN(cuDeviceGetCount),
    FN(cuDeviceGetName),
    FN(cuDeviceGetAttribute),
    FN(cuDeviceTotalMem_v2),
    FN(cuDevicePrimaryCtxRetain),
    FN(cuDevicePrimaryCtxRelease_v2),
    FN(cuCtxCreate_v2),
    FN(cuCtxCreate_v3),
    FN(cuCtxCreate_v4),
    FN(cuCtxDestroy_v2),
    FN(cuCtxCreate), /* the unversioned ones (standin_more.c) */
    FN(cuCtxDestroy),
    FN(cuCtxSetCurrent),
    FN(cuCtxGetDevice),
    FN(cuCtxSynchronize),
    FN(cuCtxSynchronize_v2),
    FN(cuGetErrorString),
    FN(cuGetProcAddress),
    FN(cuGetProcAddress_v2),
    FN(cuMemAlloc_v2),
    FN(cuMemAllocPitch_v2),
    FN(cuMemAllocManaged),
    FN(cuMemAllocAsync),
    FN(cuMemAllocAsync_ptsz),
    FN(cuMemAllocFromPoolAsync),
    FN(cuMemAllocFromPoolAsync_ptsz),
    FN(cuMemFree_v2),
    FN(cuMemFreeAsync),
    FN(cuMemFreeAsync_ptsz),
    FN(cuMemCreate),
    FN(cuMemRelease),
    FN(cuMemMap),
    FN(cuMemUnmap),
    FN(cuMemRetainAllocationHandle),
    FN(cuMemMapArrayAsync),
    FN(cuMemMapArrayAsync_ptsz),
    FN(cuArrayCreate_v2),
    FN(cuArray3DCreate_v2),
    FN(cuArrayDestroy),
    FN(cuMemAlloc),
    FN(cuMemAllocPitch),
    FN(cuMemFree),
    FN(cuArrayCreate),
    FN(cuArray3DCreate),
    FN(cuMipmappedArrayCreate),
    FN(cuMipmappedArrayDestroy),
    FN(cuCtxSetLimit),
    FN(cuMemPoolCreate),
    FN(cuDeviceGetMemPool),
    FN(cuDeviceGetDefaultMemPool),
    FN(cuMemPoolDestroy),
    FN(cuMemPoolSetAttribute),
    FN(cuMemPoolGetAttribute),
    FN(cuMemPoolTrimTo),
    FN(cuMemAddressReserve),
    FN(cuIpcGetMemHandle),
    FN(cuIpcOpenMemHandle_v2),
    FN(cuIpcOpenMemHandle),
    FN(cuIpcCloseMemHandle),
    FN(cuMemGetAddressRange_v2),
    FN(cuMemExportToShareableHandle),
    FN(cuMemPoolExportToShareableHandle),
    FN(cuMemPoolImportFromShareableHandle),
    FN(cuMemPoolExportPointer),
    FN(cuMemPoolImportPointer),
    FN(cuMemImportFromShareableHandle),
    FN(cuMemAddressFree),
    FN(cuGraphCreate),
    FN(cuGraphDestroy),
    FN(cuGraphAddMemAllocNode),
    FN(cuGraphInstantiateWithFlags),
    FN(cuGraphInstantiate),
    FN(cuGraphInstantiate_v2),
    FN(cuGraphInstantiateWithParams),
    FN(cuGraphInstantiateWithParams_ptsz),
    FN(cuGraphUpload),
    FN(cuGraphUpload_ptsz),
    FN(cuDeviceGraphMemTrim),
    FN(cuDeviceGetGraphMemAttribute),
    FN(cuDeviceSetGraphMemAttribute),
    FN(cuCtxGetLimit),
    FN(cuMemGetInfo_v2),
    FN(cuMemcpyHtoD_v2),
    FN(cuMemcpyDtoH_v2),
    FN(cuModuleLoadData),
    FN(cuModuleLoadDataEx),
    FN(cuModuleLoad),
    FN(cuModuleLoadFatBinary),
    FN(cuModuleUnload),
    FN(cuLibraryLoadData),
    FN(cuLibraryLoadFromFile),
    FN(cuLibraryUnload),
    FN(cuModuleGetFunction),
    FN(cuLaunchKernel),
    FN(cuLaunchKernel_ptsz),
    FN(cuLaunchKernelEx),
    FN(cuLaunchKernelEx_ptsz),
    FN(cuLaunchCooperativeKernel),
    FN(cuLaunchCooperativeKernel_ptsz),
    FN(cuGraphLaunch),
    FN(cuGraphLaunch_ptsz),
    FN(cuStreamCreate),
    FN(cuStreamDestroy_v2),
    FN(cuStreamSynchronize),
    FN(cuStreamQuery),
    FN(cuEventCreate),
    FN(cuEventDestroy_v2),
    FN(cuEventRecord),
    FN(cuEventSynchronize),
    FN(cuEventQuery),
    FN(cuEventElapsedTime),
};

/* Like the real driver, cuGetProcAddress may hand out an internal entry
 * point rather than the exported symbol: for cuMemAlloc_v2 and
 * cuMemCreate these thunks (same behaviour, another address). */
static CUresult internal_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    return cuMemAlloc_v2(dptr, bytesize);
}

static CUresult internal_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    return cuMemCreate(handle, size, prop, flags);
}

static CUresult internal_cuCtxCreate_v4(CUcontext *ctx, CUctxCreateParams *params,
                                        unsigned int flags, CUdevice dev)
{
    return cuCtxCreate_v4(ctx, params, flags, dev);
}

static void *internal(void *fn)
{
    if (fn == (void *)&cuCtxCreate_v4)
        return (void *)&internal_cuCtxCreate_v4;
    if (fn == (void *)&cuMemAlloc_v2)
        return (void *)&internal_cuMemAlloc_v2;
    if (fn == (void *)&cuMemCreate)
        return (void *)&internal_cuMemCreate;
    return fn;
}

static void *find_proc(const char *name, const char *suffix)
{
    char want[128];
    size_t n = strlen(name), k = strlen(suffix);
    if (n + k >= sizeof(want))
        return NULL;
    memcpy(want, name, n);
    memcpy(want + n, suffix, k + 1);
    for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
        if (strcmp(procs[i].name, want) == 0)
            return procs[i].fn;
    return NULL;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        p = find_proc(symbol, "_ptsz");
    if (!p && strcmp(symbol, "cuCtxCreate") == 0)
        p = find_proc(symbol, cudaVersion >= 12050 ? "_v4" : cudaVersion >= 11040 ? "_v3" : "");
    if (!p && strcmp(symbol, "cuGraphInstantiate") == 0) /* cudaTypedefs.h */
        p = cudaVersion >= 12000   ? find_proc("cuGraphInstantiateWithFlags", "")
            : cudaVersion >= 11000 ? find_proc(symbol, "_v2")
                                   : find_proc(symbol, "");
    if (!p && cudaVersion >= 3020)
        p = find_proc(symbol, "_v2");
    if (!p)
        p = find_proc(symbol, "");
    *pfn = internal(p);
    if (status)
        *status = p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
