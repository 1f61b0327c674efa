/*
 * hold.c - plan_build's last try: cards held back for the sharing-pool
 * replicas that spread across nodes while whole GPUs and MIG are placed.
 * Those go first, first fit, and can fill every card of a node a pool
 * replica with `spread: node` needs although a layout exists (multi-GPU
 * whole replicas on the first node, MIG on the next, no node left for the
 * second pool replica). Here each such replica has one card held first: on
 * the node with the most free cards it may use among those not yet holding
 * one for its workload, the node's last such card (so a multi-GPU replica
 * keeps the first ones together). The held cards are free again before the
 * pools are placed.
 */
#include "plan/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 1 for a pool client placed by the pool phase whose replicas must sit on
 * distinct nodes. */
static int spreads_by_node(const struct decide_row *r)
{
    return plan__in_pool(r) && !plan__is_guest(r) && !r->workload->pool &&
           r->workload->spread == SPEC_SPREAD_NODE;
}

/* Cards [i, end) of one node: the free ones r may use, and the last. */
static size_t free_for(const struct plan *p, size_t i, size_t end, const struct decide_row *r,
                       size_t *last)
{
    size_t n = 0;
    for (size_t k = i; k < end; k++)
        if (p->gpus[k].mode == PLAN_FREE && p->gpus[k].model == r->model &&
            plan__eligible(r, &p->gpus[k])) {
            n++;
            *last = k;
        }
    return n;
}

static size_t node_end(const struct plan *p, size_t i)
{
    size_t j = i + 1;
    while (j < p->ngpus && p->gpus[j].node == p->gpus[i].node)
        j++;
    return j;
}

/* Hold one card for r on the best node not in used[] (a node's first card
 * marks it); 0 when no node has one. */
static int hold_one(struct plan_build *b, const struct decide_row *r, char *used)
{
    struct plan *p = b->p;
    size_t best = SIZE_MAX, best_n = 0, best_node = 0;
    for (size_t i = 0; i < p->ngpus; i = node_end(p, i)) {
        size_t last = 0, n = used[i] ? 0 : free_for(p, i, node_end(p, i), r, &last);
        if (n > best_n) {
            best_n = n;
            best = last;
            best_node = i;
        }
    }
    if (best == SIZE_MAX)
        return 0;
    used[best_node] = 1;
    p->gpus[best].mode = PLAN_MPS; /* not free: whole GPUs and MIG pass it */
    b->held[b->nheld++] = best;
    return 1;
}

ts_status plan__hold(struct plan_build *b)
{
    char *used = malloc(b->p->ngpus + 1);
    b->nheld = 0;
    b->held = ts_arena_array(&b->p->arena, b->p->ngpus + 1, sizeof(*b->held));
    if (!used || !b->held) {
        free(used);
        return TS_NOMEM;
    }
    for (size_t i = 0; i < b->d->nrows; i++) {
        const struct decide_row *r = &b->d->rows[i];
        if (!spreads_by_node(r))
            continue;
        memset(used, 0, b->p->ngpus + 1);
        for (int k = 0; k < r->workload->replicas && hold_one(b, r, used); k++)
            ;
    }
    free(used);
    return TS_OK;
}

void plan__hold_release(struct plan_build *b)
{
    for (size_t i = 0; i < b->nheld; i++)
        b->p->gpus[b->held[i]].mode = PLAN_FREE;
    b->nheld = 0;
}

int plan__hold_wanted(const struct decide_result *d)
{
    for (size_t i = 0; i < d->nrows; i++)
        if (spreads_by_node(&d->rows[i]) && d->rows[i].workload->replicas > 1)
            return 1;
    return 0;
}
