/*
 * jalloc.c - bounded decode memory: jansson allocates from a region during
 * a review.
 *
 * Decoding an AdmissionReview makes thousands of small jansson allocations
 * that all die when the review is answered; malloc and free were a fifth of
 * the webhook's CPU time. While a server thread answers a review, jansson
 * allocates from a region of SERVE_DECODE_MEM bytes and frees nothing; the
 * region is rewound when the review is done. There are at most
 * SERVE_DECODES_MAX regions (fewer with fewer threads), handed out by a
 * semaphore: a review waits for one, so the memory of the decodes in
 * flight is bounded whatever arrives. A review that needs more than its
 * region gets no more (jansson sees out of memory) and serve_jalloc_end
 * says so, for a 400 naming the limit. Outside a review allocations go to
 * malloc as usual, and free tells the two apart by address. The regions
 * live as long as the process.
 */
#include "serve/internal.h"

#include <jansson.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>

static struct {
    sem_t free_slots;
    pthread_mutex_t lock;
    char *base[SERVE_DECODES_MAX];
    int busy[SERVE_DECODES_MAX];
    unsigned n;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static __thread struct {
    char *base;
    size_t used;
    int active, over, slot;
} region;

static void *region_malloc(size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (!region.active)
        return malloc(n);
    if (need <= SERVE_DECODE_MEM - region.used) {
        void *p = region.base + region.used;
        region.used += need;
        return p;
    }
    region.over = 1;
    return NULL;
}

static void region_free(void *p)
{
    if (region.base && (char *)p >= region.base && (char *)p < region.base + SERVE_DECODE_MEM)
        return; /* rewound with the region */
    free(p);
}

void serve_jalloc_install(unsigned threads)
{
    pool.n = threads < SERVE_DECODES_MAX ? (threads ? threads : 1) : SERVE_DECODES_MAX;
    sem_init(&pool.free_slots, 0, pool.n);
    json_set_alloc_funcs(region_malloc, region_free);
}

unsigned serve_jalloc_slots(void) { return pool.n; }

void serve_jalloc_begin(void)
{
    while (sem_wait(&pool.free_slots) != 0)
        ; /* EINTR */
    pthread_mutex_lock(&pool.lock);
    int slot = 0;
    while (pool.busy[slot])
        slot++;
    pool.busy[slot] = 1;
    if (!pool.base[slot])
        pool.base[slot] = malloc(SERVE_DECODE_MEM);
    pthread_mutex_unlock(&pool.lock);
    region.slot = slot;
    region.base = pool.base[slot];
    region.used = 0;
    region.over = 0;
    region.active = region.base != NULL;
}

int serve_jalloc_end(void)
{
    int over = region.over;
    region.active = 0;
    region.used = 0;
    region.over = 0;
    region.base = NULL;
    pthread_mutex_lock(&pool.lock);
    pool.busy[region.slot] = 0;
    pthread_mutex_unlock(&pool.lock);
    sem_post(&pool.free_slots);
    return over;
}
