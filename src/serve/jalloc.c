/*
 * jalloc.c - a per-thread bump allocator for jansson during a review.
 *
 * Decoding an AdmissionReview makes thousands of small jansson allocations
 * that all die when the review is answered; malloc and free were a fifth of
 * the webhook's CPU time. While a server thread answers a review, jansson
 * allocates from that thread's 8 MiB region and frees nothing; the region is
 * rewound when the review is done. Outside a review, or when the region is
 * full (a very large body), allocations go to malloc as usual, and free
 * tells the two apart by address. A thread's region is freed when the
 * thread exits (a pthread key destructor).
 */
#include "serve/internal.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>

#define REGION (8u << 20)

static __thread struct {
    char *base;
    size_t used;
    int active;
} region;

static void *region_malloc(size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (region.active && need <= REGION - region.used) {
        void *p = region.base + region.used;
        region.used += need;
        return p;
    }
    return malloc(n);
}

static void region_free(void *p)
{
    if (region.base && (char *)p >= region.base && (char *)p < region.base + REGION)
        return; /* rewound with the region */
    free(p);
}

void serve_jalloc_install(void) { json_set_alloc_funcs(region_malloc, region_free); }

static pthread_key_t region_key;
static pthread_once_t region_once = PTHREAD_ONCE_INIT;

static void make_key(void) { pthread_key_create(&region_key, free); }

void serve_jalloc_begin(void)
{
    if (!region.base) {
        pthread_once(&region_once, make_key);
        region.base = malloc(REGION);
        pthread_setspecific(region_key, region.base);
    }
    region.used = 0;
    region.active = region.base != NULL;
}

void serve_jalloc_end(void)
{
    region.active = 0;
    region.used = 0;
}
