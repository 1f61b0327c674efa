/*
 * graph.c - graph memory. Allocation nodes (cuGraphAddMemAllocNode) take
 * their memory from the device's graph memory pool when the executable
 * graph is uploaded or first launched, and the pool keeps what it reserved
 * until cuDeviceGraphMemTrim. The shim remembers each graph's allocation
 * bytes and hands them to the executable graphs instantiated from it (by
 * any of the driver's instantiate entry points);
 * before the first upload or launch of an executable graph it charges what
 * the pool cannot serve from its spare reserve (refusing the upload or
 * launch with CUDA_ERROR_OUT_OF_MEMORY when the limit has no room, after a
 * trim), and after every upload, launch, destroy and trim it settles the
 * charge to the pool's reserve as the driver reports it
 * (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT of device 0), so allocation nodes
 * the shim did not see (stream capture) are charged after the fact. Not a
 * fast path for graphs with allocations: one mutex. One device (0).
 */
#include "shim/shim.h"

#include <pthread.h>

static pthread_mutex_t graph_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t charged; /* for the graph pool's reserve */

static cuuint64_t pool_attr(CUgraphMem_attribute a)
{
    static void *_Atomic fn;
    void *f = atomic_load(&fn);
    cuuint64_t v = 0;
    if (!f) {
        f = shim__driver_sym("cuDeviceGetGraphMemAttribute");
        atomic_store(&fn, f);
    }
    if (f)
        ((__typeof__(&cuDeviceGetGraphMemAttribute))f)(0, a, &v);
    return v;
}

static void trim(void)
{
    __typeof__(&cuDeviceGraphMemTrim) fn = SHIM_REAL(cuDeviceGraphMemTrim);
    if (fn)
        fn(0);
}

/* The charge follows the pool's reserve (trimmed when over). Locked. */
static void settle_locked(void)
{
    uint64_t want = pool_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
    if (want > charged && shim__reserve(want - charged) != CUDA_SUCCESS) {
        trim();
        want = pool_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
        if (want > charged && shim__reserve(want - charged) != CUDA_SUCCESS) {
            shim__log("graph memory: the driver holds %llu bytes more than the limit allows",
                      (unsigned long long)(want - charged));
            want = charged;
        }
    }
    if (want < charged)
        shim__unreserve(charged - want);
    charged = want;
}

static void settle(void)
{
    if (!shim__limited())
        return;
    pthread_mutex_lock(&graph_mutex);
    settle_locked();
    pthread_mutex_unlock(&graph_mutex);
}

/* Charge what g's first upload needs beyond the pool's spare reserve:
 * CUDA_SUCCESS (the caller uploads, then settles) or out of memory. */
static CUresult before_upload(CUgraphExec g)
{
    uint64_t key = (uint64_t)(uintptr_t)g;
    if (!shim__limited() || shim__track_ref(SHIM_TRACK_EXEC, key, 0) != 0)
        return CUDA_SUCCESS; /* unknown (no allocation nodes seen) or uploaded */
    uint64_t need = shim__track_take(SHIM_TRACK_EXEC, key, NULL);
    shim__track_put(SHIM_TRACK_EXEC, key, need, 0);
    pthread_mutex_lock(&graph_mutex);
    cuuint64_t res = pool_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
    cuuint64_t used = pool_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
    uint64_t spare = res > used ? res - used : 0, more = need > spare ? need - spare : 0;
    CUresult r = shim__reserve(more);
    if (r != CUDA_SUCCESS) {
        trim();
        settle_locked();
        r = shim__reserve(more);
    }
    if (r == CUDA_SUCCESS)
        charged += more;
    pthread_mutex_unlock(&graph_mutex);
    return r;
}

static void uploaded(CUgraphExec g)
{
    shim__track_ref(SHIM_TRACK_EXEC, (uint64_t)(uintptr_t)g, 1);
    settle();
}

CUresult shim__graph_before_launch(CUgraphExec g, CUstream stream, int ptsz)
{
    __typeof__(&cuGraphUpload) up = ptsz ? SHIM_REAL(cuGraphUpload_ptsz) : SHIM_REAL(cuGraphUpload);
    if (!shim__limited() || !up || shim__track_ref(SHIM_TRACK_EXEC, (uint64_t)(uintptr_t)g, 0) == 1)
        return CUDA_SUCCESS; /* uploaded already: nothing more to allocate */
    CUresult r = before_upload(g);
    if (r != CUDA_SUCCESS)
        return r;
    r = up(g, stream); /* the allocations are made (and charged) before the kernels run */
    uploaded(g);
    return r;
}

SHIM_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                            const CUgraphNode *dependencies, size_t numDependencies,
                                            CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    __typeof__(&cuGraphAddMemAllocNode) fn = SHIM_REAL(cuGraphAddMemAllocNode);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
    if (r == CUDA_SUCCESS && shim__limited()) {
        uint64_t key = (uint64_t)(uintptr_t)hGraph;
        uint64_t n = shim__track_take(SHIM_TRACK_GRAPH, key, NULL) + nodeParams->bytesize;
        shim__track_put(SHIM_TRACK_GRAPH, key, n, 0);
    }
    return r;
}

/* After an instantiation of graph into *exec answered r: the executable
 * graph is handed the graph's allocation bytes. Returns r. */
static CUresult instantiated(CUresult r, CUgraphExec *exec, CUgraph graph)
{
    if (r != CUDA_SUCCESS || !shim__limited() || !exec)
        return r;
    uint64_t key = (uint64_t)(uintptr_t)graph, n = shim__track_take(SHIM_TRACK_GRAPH, key, NULL);
    if (n) {
        shim__track_put(SHIM_TRACK_GRAPH, key, n, 0);
        shim__track_put(SHIM_TRACK_EXEC, (uint64_t)(uintptr_t)*exec, n, 0);
    }
    return r;
}

SHIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                 unsigned long long flags)
{
    __typeof__(&cuGraphInstantiateWithFlags) fn = SHIM_REAL(cuGraphInstantiateWithFlags);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    return instantiated(fn(phGraphExec, hGraph, flags), phGraphExec, hGraph);
}

SHIM_EXPORT CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUgraphNode *phErrorNode, char *logBuffer,
                                        size_t bufferSize)
{
    __typeof__(&cuGraphInstantiate) fn = SHIM_REAL(cuGraphInstantiate);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    return instantiated(fn(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), phGraphExec,
                        hGraph);
}

SHIM_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUgraphNode *phErrorNode, char *logBuffer,
                                           size_t bufferSize)
{
    __typeof__(&cuGraphInstantiate_v2) fn = SHIM_REAL(cuGraphInstantiate_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    return instantiated(fn(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), phGraphExec,
                        hGraph);
}

static CUresult upload(CUgraphExec g, CUstream s, __typeof__(&cuGraphUpload) fn);

/* cuGraphInstantiateWithParams(_ptsz): with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
 * the driver would allocate at once, before the shim could charge; so it
 * instantiates without the flag and uploads through the shim (charged, or
 * refused: the executable graph is destroyed and the instantiation fails
 * with CUDA_ERROR_OUT_OF_MEMORY, result_out CUDA_GRAPH_INSTANTIATE_ERROR). */
static CUresult with_params(CUgraphExec *exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
                            __typeof__(&cuGraphInstantiateWithParams) fn,
                            __typeof__(&cuGraphUpload) up)
{
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!shim__limited() || !p || !exec || !(p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
        return instantiated(fn(exec, graph, p), exec, graph);
    p->flags &= ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    CUresult r = instantiated(fn(exec, graph, p), exec, graph);
    p->flags |= CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    if (r != CUDA_SUCCESS)
        return r;
    r = upload(*exec, p->hUploadStream, up);
    if (r != CUDA_SUCCESS) {
        cuGraphExecDestroy(*exec);
        *exec = NULL;
        p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    }
    return r;
}

SHIM_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return with_params(phGraphExec, hGraph, instantiateParams,
                       SHIM_REAL(cuGraphInstantiateWithParams), SHIM_REAL(cuGraphUpload));
}

SHIM_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(
    CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return with_params(phGraphExec, hGraph, instantiateParams,
                       SHIM_REAL(cuGraphInstantiateWithParams_ptsz), SHIM_REAL(cuGraphUpload_ptsz));
}

static CUresult upload(CUgraphExec g, CUstream s, __typeof__(&cuGraphUpload) fn)
{
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = before_upload(g);
    if (r != CUDA_SUCCESS)
        return r;
    r = fn(g, s);
    if (shim__limited())
        uploaded(g);
    return r;
}

SHIM_EXPORT CUresult cuGraphUpload(CUgraphExec g, CUstream s)
{
    return upload(g, s, SHIM_REAL(cuGraphUpload));
}

SHIM_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec g, CUstream s)
{
    return upload(g, s, SHIM_REAL(cuGraphUpload_ptsz));
}

SHIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec g)
{
    __typeof__(&cuGraphExecDestroy) fn = SHIM_REAL(cuGraphExecDestroy);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(g);
    if (r == CUDA_SUCCESS && shim__limited()) {
        shim__track_take(SHIM_TRACK_EXEC, (uint64_t)(uintptr_t)g, NULL);
        settle();
    }
    return r;
}

SHIM_EXPORT CUresult cuGraphDestroy(CUgraph g)
{
    __typeof__(&cuGraphDestroy) fn = SHIM_REAL(cuGraphDestroy);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(g);
    if (r == CUDA_SUCCESS && shim__limited())
        shim__track_take(SHIM_TRACK_GRAPH, (uint64_t)(uintptr_t)g, NULL);
    return r;
}

SHIM_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    __typeof__(&cuDeviceGraphMemTrim) fn = SHIM_REAL(cuDeviceGraphMemTrim);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(device);
    settle();
    return r;
}
