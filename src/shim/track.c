/*
 * track.c - what each live allocation was charged, so the free that names
 * only a pointer (or a VMM handle, an array, a mapping) credits exactly that
 * much. One growing table per kind, because pointers, handles, arrays and
 * mapped addresses are different name spaces. A table is a list of up to
 * SHIM_TRACK_SEGMENTS segments, each twice the size of the one before,
 * mapped (anonymous mmap, no malloc) when a key's bucket is full in every
 * segment before, so the table grows instead of refusing. The first segment
 * is small (a few pages), so the cells in use stay in the cache whether or
 * not the driver hands the same addresses out again.
 *
 * A segment is cut into buckets of BUCKET cells; a key lives in one cell of
 * its home bucket (by hash) in the newest segment with room there (the
 * newest is the largest, holding most keys, so it is looked at first).
 * Lookups scan the key's whole bucket in each segment, newest first (one
 * cache line of keys each), never a run of cells, so a free simply empties
 * its cell: no tombstones, nothing that lengthens later scans. Lock-free: a key is claimed with a compare-and-swap
 * on an empty cell; a free removes the key before the driver frees the
 * memory, so the driver cannot hand the same address to another thread
 * while the old entry is still there. Each cell carries an aux word: a VMM
 * handle's references (create, retain, each mapping), a mapping's handle.
 */
#include "shim/shim.h"

#include <sys/mman.h>

#define EMPTY 0ull
#define BUCKET 8u /* keys per bucket: one 64-byte cache line */

struct val {
    _Atomic uint64_t bytes;
    _Atomic uint64_t aux;
};

/* A segment of 2^bits cells: the keys, then their values. */
struct seg {
    _Atomic uint64_t *keys;
    struct val *vals;
};

static _Atomic(void *) segs[SHIM_TRACK_KINDS][SHIM_TRACK_SEGMENTS];
/* log2 of each kind's first segment (at least 3: one bucket). */
static const unsigned first_bits[SHIM_TRACK_KINDS] = {12, 10, 8, 10, 6, 6, 6, 6};

static unsigned bits_of(enum shim_track_kind k, unsigned i) { return first_bits[k] + i; }

static size_t seg_bytes(unsigned bits)
{
    return ((size_t)1 << bits) * (sizeof(uint64_t) + sizeof(struct val));
}

/* Segment i of kind k, mapped on first use when create (0: none). */
static int segment(enum shim_track_kind k, unsigned i, int create, struct seg *out)
{
    void *s = atomic_load_explicit(&segs[k][i], memory_order_acquire);
    size_t len = seg_bytes(bits_of(k, i));
    if (!s && create) {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 0;
        void *want = NULL;
        if (atomic_compare_exchange_strong(&segs[k][i], &want, p))
            s = p;
        else {
            munmap(p, len); /* another thread installed it first */
            s = want;
        }
    }
    if (!s)
        return 0;
    out->keys = s;
    out->vals = (struct val *)((char *)s + ((size_t)1 << bits_of(k, i)) * sizeof(uint64_t));
    return 1;
}

/* The first cell of key's bucket in a segment of 2^bits cells. */
static uint64_t bucket(uint64_t key, unsigned bits)
{
    return ((key * 0x9E3779B97F4A7C15ull) >> (64 - (bits - 3))) * BUCKET;
}

static int put_in(struct seg s, unsigned bits, uint64_t key, uint64_t bytes, uint64_t aux)
{
    uint64_t b = bucket(key, bits);
    for (uint64_t i = b; i < b + BUCKET; i++) {
        uint64_t cur = atomic_load_explicit(&s.keys[i], memory_order_relaxed);
        if (cur != EMPTY)
            continue;
        if (atomic_compare_exchange_strong(&s.keys[i], &cur, key)) {
            atomic_store_explicit(&s.vals[i].bytes, bytes, memory_order_relaxed);
            atomic_store_explicit(&s.vals[i].aux, aux, memory_order_release);
            return 0;
        }
    }
    return -1;
}

/* Segments of kind k mapped so far (0..n-1, installed in order). */
static _Atomic unsigned nsegs[SHIM_TRACK_KINDS];

/* Map segment i of k after the i before it: 1 when it is there now. */
static int grow(enum shim_track_kind k, unsigned i)
{
    struct seg s;
    if (i >= SHIM_TRACK_SEGMENTS || !segment(k, i, 1, &s))
        return 0;
    unsigned cur = i;
    atomic_compare_exchange_strong(&nsegs[k], &cur, i + 1);
    return 1;
}

int shim__track_put(enum shim_track_kind k, uint64_t key, uint64_t bytes, uint64_t aux)
{
    struct seg s;
    if (key == EMPTY)
        return -1;
    for (;;) {
        unsigned n = atomic_load_explicit(&nsegs[k], memory_order_acquire);
        for (unsigned i = n; i-- > 0;) /* the newest, largest segment first */
            if (segment(k, i, 0, &s) && put_in(s, bits_of(k, i), key, bytes, aux) == 0)
                return 0;
        if (!grow(k, n))
            return -1;
    }
}

/* The cell of key (its key word; *v its values), or NULL. */
static _Atomic uint64_t *lookup(enum shim_track_kind k, uint64_t key, struct val **v)
{
    struct seg s;
    if (key == EMPTY)
        return NULL;
    for (unsigned i = atomic_load_explicit(&nsegs[k], memory_order_acquire); i-- > 0;) {
        if (!segment(k, i, 0, &s))
            continue;
        uint64_t b = bucket(key, bits_of(k, i));
        for (uint64_t j = b; j < b + BUCKET; j++)
            if (atomic_load_explicit(&s.keys[j], memory_order_acquire) == key) {
                *v = &s.vals[j];
                return &s.keys[j];
            }
    }
    return NULL;
}

uint64_t shim__track_take(enum shim_track_kind k, uint64_t key, uint64_t *aux)
{
    struct val *v;
    _Atomic uint64_t *c = lookup(k, key, &v);
    uint64_t cur = key;
    if (!c)
        return 0;
    uint64_t bytes = atomic_load(&v->bytes), a = atomic_load(&v->aux);
    if (!atomic_compare_exchange_strong(c, &cur, EMPTY))
        return 0;
    if (aux)
        *aux = a;
    return bytes;
}

int64_t shim__track_ref(enum shim_track_kind k, uint64_t key, int64_t delta)
{
    struct val *v;
    if (!lookup(k, key, &v))
        return -1;
    return (int64_t)atomic_fetch_add(&v->aux, (uint64_t)delta) + delta;
}
