/*
 * standin.h - what the files of the stand-in driver share (test code): the
 * device-memory accounting of standin.c, used by standin_more.c for the
 * legacy entry points, mipmapped arrays and context limits.
 */
#ifndef STANDIN_H
#define STANDIN_H

#include "util/cuda_abi.h"

#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))
#define VMM_MAGIC 0x564d4d31u
#define ARRAY_MAGIC 0x41525231u
#define MIPMAP_MAGIC 0x4d49504du

struct record;

/* Take n bytes of the card (0), or -1 when they do not fit. */
int standin_take_mem(uint64_t n);
/* Give back n bytes taken with standin_take_mem. */
void standin_give_mem(uint64_t n);
/* n bytes of device memory (low: below 4 GiB); NULL when out of memory. */
void *standin_map_bytes(uint64_t n, int low);
int standin_unmap_bytes(void *ptr);
/* A live record of kind magic holding size bytes; NULL: out of memory. */
struct record *standin_record_new(uint32_t magic, uint64_t size);
/* Drop one reference of the live record p of kind magic. */
CUresult standin_record_free(const void *p, uint32_t magic);
/* Memory pools (standin_more.c): take n bytes for an allocation from pool
 * (0; -1 bad pool; -2 card full), give them back to the pool, and trim
 * every pool to its release threshold (at a synchronisation). */
int standin_pool_take(CUmemoryPool pool, uint64_t n);
void standin_pool_put(CUmemoryPool pool, uint64_t n);
void standin_pools_sync(void);
/* Device 0's default memory pool (cuMemAllocAsync's). */
CUmemoryPool standin_default_pool(void);
/* n bytes of host storage for a pool allocation (no card accounting). */
void *standin_pool_block(uint64_t n, CUmemoryPool pool);
/* An executable graph: a test graph's kernel time (tessera_standin_graph_
 * create) or an instantiated graph's allocations (standin_graph.c). */
struct CUgraphExec_st {
    uint32_t us;
    uint64_t alloc; /* bytes of its allocation nodes */
    int uploaded;   /* alloc taken from the graph memory pool */
};
/* Take g's allocations from the graph pool (0), -1 when the card is full. */
int standin_graph_upload(CUgraphExec g);
/* Give them back to the pool (kept reserved until a trim). */
void standin_graph_release(CUgraphExec g);
/* Bytes of the linear allocation whose base is p (0 when it is none). */
uint64_t standin_block_size(const void *p);
/* Bytes of the live record p of kind magic (0 when it is none). */
uint64_t standin_record_size(const void *p, uint32_t magic);
/* What one context holds on the card (TESSERA_STANDIN_CTX_MEM). */
uint64_t standin_ctx_mem(void);
/* Bytes of one element of format f, 0 for an unknown format. */
uint64_t standin_format_size(CUarray_format f);

/* The stand-in's module image (standin_module.c), what a cubin's code and
 * __device__ globals are to the real driver: NUL-terminated text whose
 * first line is STANDIN_MODULE_MAGIC, then one line each of
 *     global NAME BYTES      a __device__ global of BYTES bytes
 *     code BYTES             the module's code on the card
 * (blank and '#' lines skipped). cuModuleLoad* and cuLibraryLoad* take the
 * sum from the card at load (CUDA_ERROR_OUT_OF_MEMORY when it does not
 * fit; CUDA_ERROR_INVALID_IMAGE for a malformed line) and give it back at
 * cuModuleUnload / cuLibraryUnload. Any other image takes nothing. */
#define STANDIN_MODULE_MAGIC "tessera-standin-module"
/* The bytes image takes (0 for another format); *bad when malformed. */
uint64_t standin_image_bytes(const void *image, int *bad);

#endif
