/*
 * arena.h - a region allocator: many allocations, one free.
 *
 * A spec load, a plan and (later) an admission request each own one arena;
 * everything built for them lives there and goes away with ts_arena_free.
 * Allocation failure returns NULL (callers report TS_NOMEM). Memory is
 * zeroed. Not thread-safe: one arena belongs to one thread at a time.
 */
#ifndef TS_ARENA_H
#define TS_ARENA_H

#include <stddef.h>

struct ts_arena_block;

struct ts_arena {
    struct ts_arena_block *head;
    size_t total; /* bytes handed out, for limits and tests */
};

void ts_arena_init(struct ts_arena *a);
void ts_arena_free(struct ts_arena *a);

/* Zeroed, 16-byte aligned; NULL on overflow or out of memory. */
void *ts_arena_alloc(struct ts_arena *a, size_t size);
/* Zeroed array of n items of size each; NULL on overflow. */
void *ts_arena_array(struct ts_arena *a, size_t n, size_t size);
/* ts_grow for an array in the arena: make *items (cap elements of size
 * bytes, n used) hold at least n + 1, doubling it (from 8) into a new array
 * and copying the n used. 0 when out of memory (nothing changed). */
int ts_arena_grow(struct ts_arena *a, void **items, size_t *cap, size_t n, size_t size);
/* Copies of strings (NUL-terminated); NULL in gives NULL out. */
char *ts_arena_strdup(struct ts_arena *a, const char *s);
char *ts_arena_strndup(struct ts_arena *a, const char *s, size_t n);
char *ts_arena_printf(struct ts_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
