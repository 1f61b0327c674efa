/*
 * arena.c - block-chained region allocator (see arena.h).
 * Blocks grow to at least 64 KiB; a request larger than that gets a block
 * of its own. Every block is freed by ts_arena_free.
 */
#include "util/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_MIN (64 * 1024)
#define ALIGN 16

struct ts_arena_block {
    struct ts_arena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void ts_arena_init(struct ts_arena *a)
{
    a->head = NULL;
    a->total = 0;
}

void ts_arena_free(struct ts_arena *a)
{
    struct ts_arena_block *b = a->head;
    while (b) {
        struct ts_arena_block *next = b->next;
        free(b);
        b = next;
    }
    ts_arena_init(a);
}

void *ts_arena_alloc(struct ts_arena *a, size_t size)
{
    if (size > SIZE_MAX / 2)
        return NULL;
    size_t need = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (need == 0)
        need = ALIGN;
    struct ts_arena_block *b = a->head;
    if (!b || b->size - b->used < need) {
        size_t cap = need > BLOCK_MIN ? need : BLOCK_MIN;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->size = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += need;
    a->total += need;
    memset(p, 0, need);
    return p;
}

void *ts_arena_array(struct ts_arena *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / 2 / size)
        return NULL;
    return ts_arena_alloc(a, n * size);
}

int ts_arena_grow(struct ts_arena *a, void **items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 1;
    size_t want = *cap ? *cap * 2 : 8;
    void *p = ts_arena_array(a, want, size);
    if (!p)
        return 0;
    if (n)
        memcpy(p, *items, n * size);
    *items = p;
    *cap = want;
    return 1;
}

char *ts_arena_strndup(struct ts_arena *a, const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *p = ts_arena_alloc(a, n + 1);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *ts_arena_strdup(struct ts_arena *a, const char *s)
{
    return s ? ts_arena_strndup(a, s, strlen(s)) : NULL;
}

char *ts_arena_printf(struct ts_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = ts_arena_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
