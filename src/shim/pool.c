/*
 * pool.c - memory pools keep what is freed. A free from a pool returns its
 * bytes to the pool, not to the card: the driver releases the reserve
 * beyond max(release threshold, in use) only at the next synchronisation,
 * and beyond max(minBytesToKeep, in use) at cuMemPoolTrimTo. So beside each
 * allocation's charge (mem.c) the shim charges, per pool, the reserve the
 * pool holds beyond its allocations, as the driver reports it
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT - USED_MEM_CURRENT), settled after
 * every allocation and free from the pool, every change of its attributes,
 * every trim and every synchronisation. When the limit has no room for the
 * reserve, the pool is trimmed to its allocations instead. Not a fast path:
 * one mutex orders the settlements. The synchronisation hooks also let the
 * in-flight bound (inflight.c) forget the launches that have run. Pools are per-process, at most
 * SHIM_POOLS; cuMemAllocAsync's is the device's current pool (mem.c).
 */
#include "shim/shim.h"

#include <pthread.h>

static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
    CUmemoryPool pool;
    uint64_t excess; /* charged for the pool's reserve beyond its allocations */
} pools[SHIM_POOLS];
static _Atomic int npools;

static CUresult get_attr(CUmemoryPool pool, CUmemPool_attribute a, cuuint64_t *v)
{
    static void *_Atomic fn;
    void *f = atomic_load(&fn);
    if (!f) {
        f = shim__driver_sym("cuMemPoolGetAttribute");
        atomic_store(&fn, f);
    }
    return f ? ((__typeof__(&cuMemPoolGetAttribute))f)(pool, a, v) : CUDA_ERROR_NOT_FOUND;
}

/* The pool's reserve beyond its allocations, per the driver (0 unknown). */
static uint64_t excess_now(CUmemoryPool pool)
{
    cuuint64_t reserved = 0, used = 0;
    if (get_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
        get_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS)
        return 0;
    return reserved > used ? reserved - used : 0;
}

/* The slot of pool (added when add is set), or -1. Under pool_mutex. */
static int slot_of(CUmemoryPool pool, int add)
{
    int n = atomic_load(&npools);
    for (int i = 0; i < n; i++)
        if (pools[i].pool == pool)
            return i;
    static int warned;
    if (add && n == SHIM_POOLS && !warned) {
        warned = 1;
        shim__log("more than %d memory pools: the reserve of the others is not charged",
                  SHIM_POOLS);
    }
    if (!add || n == SHIM_POOLS)
        return -1;
    pools[n].pool = pool;
    pools[n].excess = 0;
    atomic_store(&npools, n + 1);
    return n;
}

static void settle_slot(int i)
{
    CUmemoryPool pool = pools[i].pool;
    uint64_t want = excess_now(pool), had = pools[i].excess;
    if (want > had && shim__reserve(want - had) != CUDA_SUCCESS) {
        __typeof__(&cuMemPoolTrimTo) trim = SHIM_REAL(cuMemPoolTrimTo);
        if (trim)
            trim(pool, 0);
        want = excess_now(pool);
        if (want > had && shim__reserve(want - had) != CUDA_SUCCESS)
            want = had; /* cannot happen: a trim keeps only allocations */
    }
    if (want < had)
        shim__unreserve(had - want);
    pools[i].excess = want;
}

void shim__pool_settle(CUmemoryPool pool)
{
    pthread_mutex_lock(&pool_mutex);
    int i = slot_of(pool, 1);
    if (i >= 0)
        settle_slot(i);
    pthread_mutex_unlock(&pool_mutex);
}

void shim__pool_lend(CUmemoryPool pool, uint64_t n)
{
    pthread_mutex_lock(&pool_mutex);
    int i = slot_of(pool, 0);
    if (i >= 0) {
        uint64_t k = n < pools[i].excess ? n : pools[i].excess;
        pools[i].excess -= k;
        shim__unreserve(k);
    }
    pthread_mutex_unlock(&pool_mutex);
}

/* Every pool, after a synchronisation (nothing to do before any pool). */
static void settle_all(void)
{
    if (atomic_load(&npools) == 0)
        return;
    pthread_mutex_lock(&pool_mutex);
    for (int i = 0; i < atomic_load(&npools); i++)
        settle_slot(i);
    pthread_mutex_unlock(&pool_mutex);
}

SHIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    __typeof__(&cuMemPoolSetAttribute) fn = SHIM_REAL(cuMemPoolSetAttribute);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(pool, attr, value);
    if (r == CUDA_SUCCESS && shim__limited())
        shim__pool_settle(pool);
    return r;
}

SHIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    __typeof__(&cuMemPoolTrimTo) fn = SHIM_REAL(cuMemPoolTrimTo);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(pool, minBytesToKeep);
    if (r == CUDA_SUCCESS && shim__limited())
        shim__pool_settle(pool);
    return r;
}

/* A destroyed pool's reserve goes back to the card: credit it, forget it. */
SHIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    __typeof__(&cuMemPoolDestroy) fn = SHIM_REAL(cuMemPoolDestroy);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(pool);
    pthread_mutex_lock(&pool_mutex);
    int i = r == CUDA_SUCCESS ? slot_of(pool, 0) : -1;
    if (i >= 0) {
        int last = atomic_load(&npools) - 1;
        shim__unreserve(pools[i].excess);
        pools[i] = pools[last];
        atomic_store(&npools, last);
    }
    pthread_mutex_unlock(&pool_mutex);
    return r;
}

SHIM_EXPORT CUresult cuCtxSynchronize(void)
{
    __typeof__(&cuCtxSynchronize) fn = SHIM_REAL(cuCtxSynchronize);
    CUresult r = fn ? fn() : CUDA_ERROR_NOT_INITIALIZED;
    settle_all();
    shim__inflight_reap();
    return r;
}

SHIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    __typeof__(&cuCtxSynchronize_v2) fn = SHIM_REAL(cuCtxSynchronize_v2);
    CUresult r = fn ? fn(ctx) : CUDA_ERROR_NOT_INITIALIZED;
    settle_all();
    shim__inflight_reap();
    return r;
}

SHIM_EXPORT CUresult cuStreamSynchronize(CUstream stream)
{
    __typeof__(&cuStreamSynchronize) fn = SHIM_REAL(cuStreamSynchronize);
    CUresult r = fn ? fn(stream) : CUDA_ERROR_NOT_INITIALIZED;
    settle_all();
    shim__inflight_reap();
    return r;
}

SHIM_EXPORT CUresult cuEventSynchronize(CUevent event)
{
    __typeof__(&cuEventSynchronize) fn = SHIM_REAL(cuEventSynchronize);
    CUresult r = fn ? fn(event) : CUDA_ERROR_NOT_INITIALIZED;
    settle_all();
    shim__inflight_reap();
    return r;
}
