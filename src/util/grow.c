/*
 * grow.c - doubling heap arrays (see grow.h).
 */
#include "util/grow.h"

#include <stdint.h>
#include <stdlib.h>

int ts_grow(void **items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 1;
    size_t want = *cap ? *cap * 2 : 16;
    if (want > SIZE_MAX / size)
        return 0;
    void *p = realloc(*items, want * size);
    if (!p)
        return 0;
    *items = p;
    *cap = want;
    return 1;
}
