/*
 * track.c - what each live allocation was charged, so the free that names
 * only a pointer (or a VMM handle, an array, a mapping) credits exactly that
 * much. One growing table per kind, because pointers, handles, arrays and
 * mapped addresses are different name spaces. A table is a list of up to
 * SHIM_TRACK_SEGMENTS open-addressing segments, each twice the size of the
 * one before, mapped (anonymous mmap, no malloc) when the ones before are
 * full around a key, so the table grows instead of refusing. Lock-free: a
 * key is claimed with a compare-and-swap on an empty or deleted cell within
 * PROBE cells of its hash; a free removes the key (leaving a tombstone)
 * before the driver frees the memory, so the driver cannot hand the same
 * address to another thread while the old entry is still there. Each cell
 * carries an aux word: a VMM handle's references (create, retain, each
 * mapping), a mapping's handle.
 */
#include "shim/shim.h"

#include <sys/mman.h>

#define EMPTY 0ull
#define TOMB UINT64_MAX
#define PROBE 128

struct cell {
    _Atomic uint64_t key;
    _Atomic uint64_t bytes;
    _Atomic uint64_t aux;
};

static _Atomic(struct cell *) segs[SHIM_TRACK_KINDS][SHIM_TRACK_SEGMENTS];
static const unsigned first_bits[SHIM_TRACK_KINDS] = {17, 14, 12, 14, 8, 8, 6, 6};

static unsigned bits_of(enum shim_track_kind k, unsigned i) { return first_bits[k] + i; }

static uint64_t home(uint64_t key, unsigned bits)
{
    return (key * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

/* Segment i of kind k, mapped on first use (NULL when mmap fails). */
static struct cell *segment(enum shim_track_kind k, unsigned i, int create)
{
    struct cell *s = atomic_load(&segs[k][i]);
    if (s || !create)
        return s;
    size_t len = sizeof(struct cell) << bits_of(k, i);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    struct cell *want = NULL;
    if (atomic_compare_exchange_strong(&segs[k][i], &want, (struct cell *)p))
        return p;
    munmap(p, len); /* another thread installed it first */
    return want;
}

/* The cell holding key in segment s, or NULL. */
static struct cell *find(struct cell *s, unsigned bits, uint64_t key)
{
    uint64_t mask = (1ull << bits) - 1, h = home(key, bits);
    for (uint64_t i = 0; i < PROBE; i++) {
        struct cell *c = &s[(h + i) & mask];
        uint64_t cur = atomic_load(&c->key);
        if (cur == EMPTY)
            return NULL;
        if (cur == key)
            return c;
    }
    return NULL;
}

static int put_in(struct cell *s, unsigned bits, uint64_t key, uint64_t bytes, uint64_t aux)
{
    uint64_t mask = (1ull << bits) - 1, h = home(key, bits);
    for (uint64_t i = 0; i < PROBE; i++) {
        struct cell *c = &s[(h + i) & mask];
        uint64_t cur = atomic_load(&c->key);
        if (cur != EMPTY && cur != TOMB)
            continue;
        if (atomic_compare_exchange_strong(&c->key, &cur, key)) {
            atomic_store(&c->bytes, bytes);
            atomic_store(&c->aux, aux);
            return 0;
        }
    }
    return -1;
}

int shim__track_put(enum shim_track_kind k, uint64_t key, uint64_t bytes, uint64_t aux)
{
    if (key == EMPTY || key == TOMB)
        return -1;
    for (unsigned i = 0; i < SHIM_TRACK_SEGMENTS; i++) {
        struct cell *s = segment(k, i, 1);
        if (!s)
            return -1;
        if (put_in(s, bits_of(k, i), key, bytes, aux) == 0)
            return 0;
    }
    return -1;
}

/* The live cell of key, in whichever segment holds it. */
static struct cell *lookup(enum shim_track_kind k, uint64_t key)
{
    if (key == EMPTY || key == TOMB)
        return NULL;
    for (unsigned i = 0; i < SHIM_TRACK_SEGMENTS; i++) {
        struct cell *s = segment(k, i, 0), *c;
        if (!s)
            return NULL;
        if ((c = find(s, bits_of(k, i), key)) != NULL)
            return c;
    }
    return NULL;
}

uint64_t shim__track_take(enum shim_track_kind k, uint64_t key, uint64_t *aux)
{
    struct cell *c = lookup(k, key);
    uint64_t cur = key;
    if (!c)
        return 0;
    uint64_t bytes = atomic_load(&c->bytes), a = atomic_load(&c->aux);
    if (!atomic_compare_exchange_strong(&c->key, &cur, TOMB))
        return 0;
    if (aux)
        *aux = a;
    return bytes;
}

int64_t shim__track_ref(enum shim_track_kind k, uint64_t key, int64_t delta)
{
    struct cell *c = lookup(k, key);
    if (!c)
        return -1;
    return (int64_t)atomic_fetch_add(&c->aux, (uint64_t)delta) + delta;
}
