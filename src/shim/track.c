/*
 * track.c - what each live allocation was charged, so the free that names
 * only a pointer (or a VMM handle, or an array) credits exactly that much.
 * Three fixed open-addressing tables in static memory (pages are touched only
 * when used), one per kind, because pointers, handles and arrays are
 * different name spaces. Lock-free: a key is claimed with a compare-and-swap
 * on an empty or deleted cell within PROBE cells of its hash; a free removes
 * the key (leaving a tombstone) before the driver frees the memory, so the
 * driver cannot hand the same address to another thread while the old entry
 * is still there. A full neighbourhood makes put fail: the caller then
 * undoes the allocation and reports CUDA_ERROR_OUT_OF_MEMORY.
 */
#include "shim/shim.h"

#define EMPTY 0ull
#define TOMB UINT64_MAX
#define PROBE 128

struct cell {
    _Atomic uint64_t key;
    _Atomic uint64_t bytes;
};

#define PTR_BITS 17
#define HANDLE_BITS 14
#define ARRAY_BITS 12
static struct cell ptrs[1u << PTR_BITS];
static struct cell handles[1u << HANDLE_BITS];
static struct cell arrays[1u << ARRAY_BITS];

static const struct table {
    struct cell *cells;
    unsigned bits;
} tables[SHIM_TRACK_KINDS] = {
    {ptrs, PTR_BITS},
    {handles, HANDLE_BITS},
    {arrays, ARRAY_BITS},
};

static uint64_t home(const struct table *t, uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> (64 - t->bits);
}

int shim__track_put(enum shim_track_kind k, uint64_t key, uint64_t bytes)
{
    const struct table *t = &tables[k];
    uint64_t mask = (1ull << t->bits) - 1, h = home(t, key);
    if (key == EMPTY || key == TOMB)
        return -1;
    for (uint64_t i = 0; i < PROBE; i++) {
        struct cell *c = &t->cells[(h + i) & mask];
        uint64_t cur = atomic_load(&c->key);
        if (cur != EMPTY && cur != TOMB)
            continue;
        if (atomic_compare_exchange_strong(&c->key, &cur, key)) {
            atomic_store(&c->bytes, bytes);
            return 0;
        }
    }
    return -1;
}

uint64_t shim__track_take(enum shim_track_kind k, uint64_t key)
{
    const struct table *t = &tables[k];
    uint64_t mask = (1ull << t->bits) - 1, h = home(t, key);
    if (key == EMPTY || key == TOMB)
        return 0;
    for (uint64_t i = 0; i < PROBE; i++) {
        struct cell *c = &t->cells[(h + i) & mask];
        uint64_t cur = atomic_load(&c->key);
        if (cur == EMPTY)
            return 0;
        if (cur != key)
            continue;
        uint64_t bytes = atomic_load(&c->bytes);
        if (atomic_compare_exchange_strong(&c->key, &cur, TOMB))
            return bytes;
        return 0;
    }
    return 0;
}
