/*
 * standin_graph.c - the stand-in driver's graph memory (test code): graphs
 * that hold only allocation nodes, instantiated into executable graphs
 * whose allocations come from the device's graph memory pool at upload or
 * first launch. The pool's reserve grows from the card as needed, is
 * reused by later uploads, and goes back to the card only at
 * cuDeviceGraphMemTrim (what cuda.h describes for the real pool). Every
 * instantiate entry point a 12.x / 13.x driver exports is here:
 * cuGraphInstantiate, _v2, cuGraphInstantiateWithFlags and
 * cuGraphInstantiateWithParams (_ptsz), which with
 * CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD takes the allocations at once.
 */
#include "standin.h"

#include <pthread.h>
#include <stdlib.h>

struct CUgraph_st {
    uint64_t alloc;
};
struct CUgraphNode_st {
    int unused;
};

static pthread_mutex_t graph_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t reserved, used, next_va = 0x7e0000000000ull;
static struct CUgraphNode_st alloc_node;

EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *phGraph = calloc(1, sizeof(struct CUgraph_st));
    return *phGraph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
    if (!hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    free(hGraph);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies, size_t numDependencies,
                                       CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    (void)dependencies, (void)numDependencies;
    if (!phGraphNode || !hGraph || !nodeParams || nodeParams->bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_mutex);
    hGraph->alloc += nodeParams->bytesize;
    nodeParams->dptr = next_va;
    next_va += (nodeParams->bytesize + 0xfffff) & ~0xfffffull;
    pthread_mutex_unlock(&graph_mutex);
    *phGraphNode = &alloc_node;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                            unsigned long long flags)
{
    (void)flags;
    if (!phGraphExec || !hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExec g = calloc(1, sizeof(*g));
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->alloc = hGraph->alloc;
    *phGraphExec = g;
    return CUDA_SUCCESS;
}

/* cuda.h's cuGraphInstantiate of 10.0 and _v2 of 11.0: no flags, an error
 * node and a log buffer (left empty: nothing here fails to instantiate). */
EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    if (phErrorNode)
        *phErrorNode = NULL;
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}

EXPORT CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                   CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    return cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

/* With CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD the graph is uploaded at once
 * (its allocations taken from the graph pool); a card without room fails
 * the instantiation (result_out CUDA_GRAPH_INSTANTIATE_ERROR). */
EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    if (!instantiateParams)
        return CUDA_ERROR_INVALID_VALUE;
    instantiateParams->hErrNode_out = NULL;
    instantiateParams->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    cuuint64_t flags = instantiateParams->flags;
    CUresult r = cuGraphInstantiateWithFlags(
        phGraphExec, hGraph, flags & ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
    if (r == CUDA_SUCCESS && (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
        standin_graph_upload(*phGraphExec) != 0) {
        free(*phGraphExec);
        *phGraphExec = NULL;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS)
        instantiateParams->result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
    return r;
}

EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
}

int standin_graph_upload(CUgraphExec g)
{
    int r = 0;
    pthread_mutex_lock(&graph_mutex);
    if (!g->uploaded && g->alloc) {
        uint64_t spare = reserved - used;
        if (spare < g->alloc && standin_take_mem(g->alloc - spare) != 0)
            r = -1;
        else if (spare < g->alloc)
            reserved += g->alloc - spare;
        if (r == 0) {
            used += g->alloc;
            g->uploaded = 1;
        }
    }
    pthread_mutex_unlock(&graph_mutex);
    return r;
}

void standin_graph_release(CUgraphExec g)
{
    pthread_mutex_lock(&graph_mutex);
    if (g->uploaded)
        used -= g->alloc;
    g->uploaded = 0;
    pthread_mutex_unlock(&graph_mutex);
}

EXPORT CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    (void)hStream;
    if (!hGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    return standin_graph_upload(hGraphExec) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return cuGraphUpload(hGraphExec, hStream);
}

EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&graph_mutex);
    standin_give_mem(reserved - used);
    reserved = used;
    pthread_mutex_unlock(&graph_mutex);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                             void *value)
{
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value || (unsigned)attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_mutex);
    int is_used = attr == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT ||
                  attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH;
    *(cuuint64_t *)value = is_used ? used : reserved;
    pthread_mutex_unlock(&graph_mutex);
    return CUDA_SUCCESS;
}

/* Only the high watermarks can be set, and only to 0 (a reset). */
EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                             void *value)
{
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    int high = attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH ||
               attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH;
    if (!value || !high || *(const cuuint64_t *)value != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}
