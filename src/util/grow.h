/*
 * grow.h - room for one more element in a heap array that doubles.
 *
 * The one way tessera grows its lists (scrape samples, usage totals,
 * custody facts, rendered files, metering devices):
 *
 *     if (!ts_grow((void **)&list->items, &list->cap, list->n, sizeof(*list->items)))
 *         return TS_NOMEM;
 *     list->items[list->n++] = item;
 */
#ifndef TS_GROW_H
#define TS_GROW_H

#include <stddef.h>

/* Make *items (cap elements of size bytes, n used) hold at least n + 1:
 * double it (from 16) when full. 0 when out of memory (nothing changed). */
int ts_grow(void **items, size_t *cap, size_t n, size_t size);

#endif
