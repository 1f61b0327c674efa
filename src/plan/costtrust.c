/*
 * costtrust.c - which pool each alternative of the cost program joins
 * (plan/cost.c). Sharing-pool clients of tenants that do not trust each
 * other never share a card. The bound's program pools them per trust set
 * (tenants joined by mutual trust, union-find): a relaxation, since trust
 * need not be transitive (d2 trusts d0 and d1, they do not trust each
 * other) and a set's clients may then need more cards than it counts. The
 * search's program splits a set that is not a clique into its maximal
 * cliques, one pool each, so that its integer solution is a layout the
 * planner can make (MPS stays one pool per tenant).
 */
#include "plan/cost_int.h"

#include <stdlib.h>
#include "util/grow.h"

static size_t trust_root(size_t *set, size_t i)
{
    while (set[i] != i)
        i = set[i] = set[set[i]];
    return i;
}

static ts_status trust_sets(struct cost *c)
{
    const struct spec_model *m = c->m;
    c->trust = calloc(m->ntenants + 1, sizeof(*c->trust));
    if (!c->trust)
        return TS_NOMEM;
    for (size_t i = 0; i < m->ntenants; i++)
        c->trust[i] = i;
    for (size_t i = 0; i < m->ntenants; i++)
        for (size_t k = 0; k < m->tenants[i].ntrusts; k++) {
            const struct spec_tenant *o = spec_tenant_find(m, m->tenants[i].trusts[k]);
            if (o && spec_tenants_trust(m, m->tenants[i].name, o->name))
                c->trust[trust_root(c->trust, i)] = trust_root(c->trust, (size_t)(o - m->tenants));
        }
    return TS_OK;
}

/* The pool a row's clients join: MPS per tenant, else per trust set. */
static size_t owner_of(struct cost *c, const struct decide_row *x)
{
    size_t t = (size_t)(x->tenant - c->m->tenants);
    return x->mech == DECIDE_MPS ? t : trust_root(c->trust, t);
}

/* Bron-Kerbosch on the members of one trust set (bits; adj: whom each
 * trusts): its maximal cliques appended; 0 when over PLAN_COST_CLIQUES_MAX. */
static int cliques_of(struct cost *c, size_t root, const uint32_t *adj, uint32_t r, uint32_t p,
                      uint32_t x)
{
    if (!p && !x) {
        if (c->nclq == PLAN_COST_CLIQUES_MAX ||
            !ts_grow((void **)&c->clq, &c->clqcap, c->nclq, sizeof(*c->clq)))
            return 0;
        c->clq[c->nclq] = r;
        c->clq_root[c->nclq++] = root;
        return 1;
    }
    uint32_t u = p | x, pivot = adj[__builtin_ctz(u)];
    for (uint32_t cand = p & ~pivot; cand; cand &= cand - 1) {
        uint32_t v = cand & -cand;
        size_t b = (size_t)__builtin_ctz(v);
        if (!cliques_of(c, root, adj, r | v, p & adj[b], x & adj[b]))
            return 0;
        p &= ~v;
        x |= v;
    }
    return 1;
}

/* For the search: each trust set that is not a clique (trust need not be
 * transitive: d2 trusts d0 and d1, they do not trust each other) as its
 * maximal cliques, the pools a layout can make; a set of more than 32
 * tenants, or with too many cliques, stays whole. */
static ts_status cost_cliques(struct cost *c)
{
    const struct spec_model *m = c->m;
    c->cpos = calloc(m->ntenants + 1, sizeof(*c->cpos));
    c->clq_root = calloc(PLAN_COST_CLIQUES_MAX + 1, sizeof(*c->clq_root));
    size_t *who = calloc(m->ntenants + 1, sizeof(*who));
    ts_status st = c->cpos && c->clq_root && who ? TS_OK : TS_NOMEM;
    for (size_t root = 0; st == TS_OK && root < m->ntenants; root++) {
        size_t n = 0;
        for (size_t t = 0; t < m->ntenants; t++)
            if (trust_root(c->trust, t) == root && n <= 32)
                c->cpos[t] = n, who[n++] = t;
        if (n < 3 || n > 32)
            continue;
        uint32_t adj[32] = {0}, all = n == 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1;
        int clique = 1;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                if (i != j &&
                    spec_tenants_trust(m, m->tenants[who[i]].name, m->tenants[who[j]].name))
                    adj[i] |= UINT32_C(1) << j;
        for (size_t i = 0; i < n; i++)
            clique &= (adj[i] | (UINT32_C(1) << i)) == all;
        size_t before = c->nclq;
        if (!clique && !cliques_of(c, root, adj, 0, all, 0))
            c->nclq = before; /* too many: the set stays one pool */
    }
    free(who);
    return st;
}

/* Alternative x's copies, one per pool it may join: a sharing-pool client
 * (not MPS, which is per tenant) of a set split into cliques joins one of
 * its tenant's cliques; else its owner_of. Appended to alt and own. */
static int owned_copies(struct cost *c, const struct decide_row *x, struct decide_row **alt,
                        size_t *n, size_t *cap, size_t *owncap)
{
    size_t t = (size_t)(x->tenant - c->m->tenants), root = trust_root(c->trust, t), added = 0;
    int split = c->search && decide_mech_shares_card(x->mech) && !x->profile &&
                x->mech != DECIDE_MPS;
    for (size_t q = 0; split && q <= c->nclq; q++) {
        int mine = q < c->nclq && c->clq_root[q] == root && (c->clq[q] >> c->cpos[t] & 1);
        if (q == c->nclq && added)
            break;
        if (q < c->nclq && !mine)
            continue;
        if (!ts_grow((void **)alt, cap, *n, sizeof(**alt)) ||
            !ts_grow((void **)&c->own, owncap, *n, sizeof(*c->own)))
            return 0;
        (*alt)[*n] = *x;
        c->own[(*n)++] = q < c->nclq ? c->m->ntenants + q : owner_of(c, x);
        added++;
    }
    if (split)
        return 1;
    if (!ts_grow((void **)alt, cap, *n, sizeof(**alt)) ||
        !ts_grow((void **)&c->own, owncap, *n, sizeof(*c->own)))
        return 0;
    (*alt)[*n] = *x;
    c->own[(*n)++] = owner_of(c, x);
    return 1;
}

/* Every alternative with the pool it joins (c->own), copied per clique
 * where the search's program splits a trust set. */
ts_status plan__cost_owners(struct cost *c)
{
    if (trust_sets(c) != TS_OK || (c->search && cost_cliques(c) != TS_OK))
        return TS_NOMEM;
    struct decide_row *alt = NULL;
    size_t n = 0, cap = 0, owncap = 0;
    for (size_t r = 0; r < c->d->nrows; r++) {
        size_t from = c->first[r];
        c->first[r] = n;
        for (size_t a = from; a < c->first[r + 1]; a++)
            if (!owned_copies(c, &c->alt[a], &alt, &n, &cap, &owncap)) {
                free(alt);
                return TS_NOMEM;
            }
    }
    c->first[c->d->nrows] = n;
    free(c->alt);
    c->alt = alt;
    c->nalt = n;
    c->altcap = cap;
    return TS_OK;
}
