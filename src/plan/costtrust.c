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

/* ---- a pool group's parts that never share a card ---- */

static size_t tenant_of(const struct cost *c, const struct decide_row *x)
{
    return (size_t)(x->tenant - c->m->tenants);
}

/* Marks the tenants of group gi's clients (a class's workloads are its
 * column's together: one part) in seen, joined in set; their count. */
static size_t group_tenants(struct cost *c, int gi, size_t *set, unsigned char *seen, size_t *who)
{
    size_t n = 0;
    for (size_t r = 0; r < c->d->nrows; r++) {
        size_t q = c->cls[r], a = c->first[q];
        while (a < c->first[q + 1] && c->grp[a] != gi)
            a++;
        if (a == c->first[q + 1])
            continue;
        size_t t = tenant_of(c, &c->d->rows[r]), rep = tenant_of(c, &c->alt[a]);
        if (!seen[t])
            who[n++] = t;
        seen[t] = 1;
        set[trust_root(set, t)] = trust_root(set, rep);
    }
    return n;
}

/* Group gi split into its parts: tenants joined by mutual trust among
 * those with clients in it (and by a class of alike workloads). A card's
 * clients trust each other pairwise, so they lie in one part: parts never
 * share a card, and each part's cards are counted alone. Where a trust
 * set's tenants are joined through one with no client in the group (dev-0
 * and dev-2 both trust team-0, the 1,000-GPU trace fleet), its clients
 * were one group and a card could hold both as a fluid. The first part
 * keeps gi; -1 on out of memory. */
static int split_group(struct cost *c, int gi, size_t *set, unsigned char *seen, size_t *who)
{
    const struct spec_model *m = c->m;
    for (size_t i = 0; i < m->ntenants; i++) {
        set[i] = i;
        seen[i] = 0;
    }
    size_t n = group_tenants(c, gi, set, seen, who);
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++)
            if (spec_tenants_trust(m, m->tenants[who[i]].name, m->tenants[who[k]].name))
                set[trust_root(set, who[i])] = trust_root(set, who[k]);
    size_t first = n ? trust_root(set, who[0]) : 0;
    for (size_t i = 0; i < n; i++) {
        size_t root = trust_root(set, who[i]);
        if (root == first || seen[root] == 2)
            continue;
        if (!ts_grow((void **)&c->gs, &c->gscap, c->ngs, sizeof(*c->gs)))
            return -1;
        int part = (int)c->ngs++;
        c->gs[part] = c->gs[gi];
        seen[root] = 2; /* the part has its group */
        for (size_t a = 0; a < c->nalt; a++)
            if (c->grp[a] == gi && trust_root(set, tenant_of(c, &c->alt[a])) == root)
                c->grp[a] = part;
    }
    return 0;
}

int plan__cost_split_groups(struct cost *c)
{
    size_t nt = c->m->ntenants, ngs = c->ngs;
    size_t *set = calloc(nt + 1, sizeof(*set)), *who = calloc(nt + 1, sizeof(*who));
    unsigned char *seen = calloc(nt + 1, 1);
    int ok = set && who && seen;
    for (size_t g = 0; ok && g < ngs; g++)
        ok = split_group(c, (int)g, set, seen, who) == 0;
    free(set);
    free(who);
    free(seen);
    return ok;
}
