/*
 * check.c - a running plan (a previous `tessera plan -o json`) checked
 * against the fleet and the catalog before replanning relies on it, by the
 * rules a new plan passes (plan_verify's MIG geometry, memory and SM caps,
 * each replica part once, its parts numbered from 0 and on one node) and
 * by where it says it runs: each card a GPU of a fleet node, of the model
 * the fleet has there, in a mode the node allows (decide's rule), listed
 * once. Plan
 * JSON's numbers and flags must be ones a plan writes: a MIG instance
 * reserves its profile's memory, a client its cap, a guest rides a whole or
 * time-slicing card, the canary is a MIG slice of no tenant. Every
 * problem is reported, each naming its JSON path, the card (node and GPU
 * index) and the instance. The running spec is not at hand, so what only
 * it decides (trust, spread) is not checked.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decide/decide.h"
#include "reconf/reconf.h"
#include "util/jsonread.h"

/* How far a MIG instance's memoryGiB may be from its profile's: a plan
 * writes the catalog's figure, which has two decimals. (Absent or 0, the
 * profile's is meant: it is what the instance has.) */
#define MIG_MEM_SLACK_GIB 0.005

/* An instance named in a message: profile, placement, tenant/workload rN. */
#define LABEL_MAX (2 * TS_K8S_NAME_MAX + 160)

struct chk {
    const struct reconf_plan *p;
    const struct spec_model *m;
    const struct cat_catalog *cat;
    const char *file;
    struct ts_diag *diag;
    const struct spec_fleet_node **nodes; /* the fleet's nodes by name */
};

/* "3g.40gb at 4:4 (client-a/chat r0)", "mps client client-b/embed r1 part 0". */
static void label(const struct reconf_want *w, char *buf, size_t size)
{
    char who[2 * TS_K8S_NAME_MAX + 48];
    if (w->tenant && w->workload)
        snprintf(who, sizeof who, "%s/%s r%d%s", w->tenant, w->workload, w->replica,
                 w->gpu_part ? " (a later GPU part)" : "");
    else
        snprintf(who, sizeof who, "%s", w->canary ? "the canary" : "no tenant");
    if (w->profile && w->start >= 0)
        snprintf(buf, size, "%s at %d:%d (%s)", w->profile, w->start, w->size, who);
    else
        snprintf(buf, size, "%s", who);
}

static void bad(struct chk *c, int card, int inst, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An error at gpus[card] (.instances[inst] when inst >= 0). */
static void bad(struct chk *c, int card, int inst, const char *fmt, ...)
{
    const struct reconf_card *t = &c->p->t[card];
    char gp[TS_PATH_MAX], path[TS_PATH_MAX], msg[TS_MSG_MAX], what[LABEL_MAX] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ts_json_path(gp, sizeof gp, "", "gpus", card);
    ts_json_path(path, sizeof path, gp, "instances", inst);
    if (inst >= 0)
        label(&t->held[inst], what, sizeof what);
    ts_diag_addf(c->diag, TS_SEV_ERROR, TS_INVALID, c->file, 0, 0, inst >= 0 ? path : gp,
                 "running plan: node %s GPU %d%s%s: %s", t->node, t->index, inst >= 0 ? ", " : "",
                 what, msg);
}

/* ---- where: node, GPU index, model, once ---------------------------------- */

static int cmp_node(const void *a, const void *b)
{
    return strcmp((*(const struct spec_fleet_node *const *)a)->name,
                  (*(const struct spec_fleet_node *const *)b)->name);
}

static const struct spec_fleet_node *node_named(const struct chk *c, const char *name)
{
    size_t lo = 0, hi = c->m->fleet->nnodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = strcmp(c->nodes[mid]->name, name);
        if (k == 0)
            return c->nodes[mid];
        if (k < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The fleet's model name at GPU index of node n (NULL past its cards);
 * *count: the node's cards. */
static const char *fleet_model_at(const struct spec_fleet_node *n, int index, int *count)
{
    const char *at = NULL;
    *count = 0;
    for (size_t g = 0; g < n->ngpus; g++) {
        if (index >= *count && index < *count + n->gpus[g].count)
            at = n->gpus[g].model;
        *count += n->gpus[g].count;
    }
    return at;
}

/* The catalog model the running plan names for the card (its geometry is
 * checked against it), or NULL when unknown; the card not being one of the
 * fleet's, or of another model there, is reported. */
static const struct cat_model *card_model(struct chk *c, int i)
{
    const struct reconf_card *t = &c->p->t[i];
    const struct spec_fleet_node *n = node_named(c, t->node);
    const struct cat_model *pm = cat_model_find(c->cat, t->model);
    const char *fm = NULL;
    int count = 0;
    if (!n && !t->removed)
        bad(c, i, -1, "the fleet has no node '%s' (a node that left the fleet: --removed-node %s)",
            t->node, t->node);
    else if (n && !(fm = fleet_model_at(n, t->index, &count)))
        bad(c, i, -1, "node %s has %d GPU%s in the fleet (indexes 0 to %d), no GPU %d", t->node,
            count, count == 1 ? "" : "s", count - 1, t->index);
    if (!pm)
        bad(c, i, -1, "model '%s' is not in the catalog", t->model);
    else if (fm && cat_model_find(c->cat, fm) != pm)
        bad(c, i, -1, "the running plan has a %s here, but the fleet's card is a %s", t->model, fm);
    return pm;
}

static int cmp_card(const void *a, const void *b, void *arg)
{
    const struct reconf_plan *p = arg;
    int x = *(const int *)a, y = *(const int *)b;
    int k = strcmp(p->t[x].node, p->t[y].node);
    if (!k)
        k = (p->t[x].index > p->t[y].index) - (p->t[x].index < p->t[y].index);
    return k ? k : (x > y) - (x < y);
}

/* Each card listed once: sorted by (node, index, position), a card listed
 * again is its run's later neighbour. */
static int check_once(struct chk *c)
{
    int *order = malloc(((size_t)c->p->n + 1) * sizeof(*order)), first = 0;
    if (!order)
        return 0;
    for (int i = 0; i < c->p->n; i++)
        order[i] = i;
    qsort_r(order, (size_t)c->p->n, sizeof(*order), cmp_card, (void *)c->p);
    for (int k = 1; k < c->p->n; k++) {
        const struct reconf_card *a = &c->p->t[order[k - 1]], *b = &c->p->t[order[k]];
        if (a->index != b->index || strcmp(a->node, b->node)) {
            first = k;
            continue;
        }
        bad(c, order[k], -1, "the card is listed twice (first at gpus[%d])", order[first]);
    }
    free(order);
    return 1;
}

/* ---- what: the card's mode and its instances ------------------------------ */

/* Plan JSON (not a NodeConfig, which gives geometry only): its numbers and
 * flags are checked too. */
static int from_json(const struct chk *c) { return c->p->node == NULL; }

/* The node allows the card's mode (vgpu: licensed, mps: allowed), by
 * decide's rule for a row of that mechanism. */
static void check_node(struct chk *c, int i, const struct cat_model *pm, int mode)
{
    const struct reconf_card *t = &c->p->t[i];
    const struct spec_fleet_node *n = node_named(c, t->node);
    struct decide_row trial = {.mech = mode == PLAN_VGPU ? DECIDE_VGPU : DECIDE_MPS, .model = pm};
    const char *why;
    if (n && pm && (mode == PLAN_VGPU || mode == PLAN_MPS) &&
        (why = decide_card_refuses(&trial, n, pm)))
        bad(c, i, -1, "mode %s on node %s: %s", t->mode, t->node, why);
}

/* Plan JSON's "sharing": none, or time-slicing on a whole card its guests
 * ride. */
static void check_sharing(struct chk *c, int i, int mode)
{
    const struct reconf_card *t = &c->p->t[i];
    int guests = 0;
    if (!t->sharing)
        return;
    for (int k = 0; k < t->nheld; k++)
        guests += t->held[k].guest;
    if (strcmp(t->sharing, "none") && strcmp(t->sharing, "time-slicing"))
        bad(c, i, -1, "sharing '%s' is not none or time-slicing", t->sharing);
    else if (mode == PLAN_WHOLE && guests && strcmp(t->sharing, "time-slicing"))
        bad(c, i, -1, "best-effort guests ride this whole card, but sharing is '%s'", t->sharing);
    else if (!strcmp(t->sharing, "time-slicing") && (mode != PLAN_WHOLE || !guests))
        bad(c, i, -1, "sharing time-slicing is for a whole card with best-effort guests");
}

/* One occupant of plan JSON: its flags and memory as a plan writes them. */
static void check_occupant(struct chk *c, int i, int k, int mode)
{
    const struct reconf_card *t = &c->p->t[i];
    const struct reconf_want *w = &t->held[k];
    if (w->canary && w->tenant)
        bad(c, i, k, "the canary slice names no tenant");
    else if (w->canary && mode != PLAN_MIG)
        bad(c, i, k, "the canary slice is a MIG instance, not on a card in %s mode", t->mode);
    else if (!w->canary && !w->tenant)
        bad(c, i, k, "names no tenant and is not the canary slice");
    if (w->guest && mode != PLAN_WHOLE && mode != PLAN_TIME_SLICING)
        bad(c, i, k, "a best-effort guest rides a whole or time-slicing card, not one in %s mode",
            t->mode);
    if (w->gpu_part > 0 && mode != PLAN_WHOLE && mode != PLAN_VGPU)
        bad(c, i, k, "gpuPart %d: only whole cards hold the later GPUs of a replica", w->gpu_part);
    if (mode != PLAN_MIG && mode != PLAN_FREE && w->tenant && !(w->mem_gib > 0))
        bad(c, i, k, "reserves no memory (memoryGiB %.2f)", w->mem_gib);
}

static int mode_index(const char *mode)
{
    for (int i = 0; plan_mode_names[i]; i++)
        if (strcmp(plan_mode_names[i], mode) == 0)
            return i;
    return -1;
}

static void starts_text(const struct cat_profile *pr, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t s = 0; s < pr->nstarts && len + 8 < size; s++)
        len += (size_t)snprintf(buf + len, size - len, "%s%d", s ? ", " : "", pr->starts[s]);
}

/* One MIG instance: a profile of the model, its size, inside the card, at
 * one of its starts. The profile, or NULL when it has none. */
static const struct cat_profile *mig_inst(struct chk *c, int i, int k, const struct cat_model *pm)
{
    const struct reconf_want *w = &c->p->t[i].held[k];
    const struct cat_profile *pr = cat_profile_find(pm, w->profile);
    char starts[160];
    if (!pr) {
        bad(c, i, k, "a %s has no MIG profile '%s'", pm->name, w->profile);
        return NULL;
    }
    if (w->size != pr->mem_units)
        bad(c, i, k, "size %d, but %s takes %d units", w->size, pr->name, pr->mem_units);
    starts_text(pr, starts, sizeof starts);
    if (w->start + pr->mem_units > pm->grid)
        bad(c, i, k, "runs past the card's %d units (%d from unit %d)", pm->grid, pr->mem_units,
            w->start);
    else if (!cat_profile_allows(pr, w->start))
        bad(c, i, k, "%s cannot start at unit %d on a %s (its starts: %s)", pr->name, w->start,
            pm->name, starts);
    if (from_json(c) && w->mem_gib != 0 && fabs(w->mem_gib - pr->memory_gib) > MIG_MEM_SLACK_GIB)
        bad(c, i, k, "memoryGiB %.2f, but a %s instance has %.2f GiB", w->mem_gib, pr->name,
            pr->memory_gib);
    return pr;
}

/* A MIG card: each instance, no two overlapping, counts and compute
 * slices within the card. */
static void check_mig(struct chk *c, int i, const struct cat_model *pm)
{
    const struct reconf_card *t = &c->p->t[i];
    const struct cat_profile *pr[RECONF_CARD_INSTANCES_MAX];
    int compute = 0;
    for (int k = 0; k < t->nheld && k < RECONF_CARD_INSTANCES_MAX; k++) {
        char other[LABEL_MAX];
        if (!(pr[k] = mig_inst(c, i, k, pm)))
            continue;
        compute += pr[k]->compute;
        for (int j = 0; j < k; j++) {
            int a = t->held[j].start, b = t->held[k].start;
            if (!pr[j] || a + pr[j]->mem_units <= b || b + pr[k]->mem_units <= a)
                continue;
            label(&t->held[j], other, sizeof other);
            bad(c, i, k, "overlaps %s (gpus[%d].instances[%d])", other, i, j);
        }
    }
    for (int k = 0; k < t->nheld && k < RECONF_CARD_INSTANCES_MAX; k++) {
        int same = 0, seen = 0;
        for (int j = 0; pr[k] && j < t->nheld; j++) {
            same += pr[j] == pr[k];
            seen |= j < k && pr[j] == pr[k];
        }
        if (pr[k] && !seen && same > pr[k]->max_count)
            bad(c, i, -1, "%d instances of %s; a %s holds at most %d", same, pr[k]->name, pm->name,
                pr[k]->max_count);
    }
    if (compute > pm->compute_slices)
        bad(c, i, -1, "its instances take %d compute slices; a %s has %d", compute, pm->name,
            pm->compute_slices);
}

/* A card off MIG: no MIG instance; a shared card's memory caps and MPS
 * shares within the card (a guest on a whole card reserves nothing). */
static void check_shared(struct chk *c, int i, const struct cat_model *pm, int mode)
{
    const struct reconf_card *t = &c->p->t[i];
    double mem = 0;
    int sm = 0;
    for (int k = 0; k < t->nheld; k++) {
        const struct reconf_want *w = &t->held[k];
        if (w->profile)
            bad(c, i, k, "a MIG profile on a card in %s mode", t->mode);
        if (mode != PLAN_WHOLE || !w->guest)
            mem += w->mem_gib;
        sm += mode == PLAN_MPS ? w->sm_percent : 0;
    }
    if (mode != PLAN_VGPU && mem > pm->memory_gib + 1e-6)
        bad(c, i, -1, "its instances reserve %.2f GiB; a %s has %.2f", mem, pm->name,
            pm->memory_gib);
    if (sm > 100)
        bad(c, i, -1, "its MPS shares add up to %d%%", sm);
}

static void check_card(struct chk *c, int i)
{
    const struct reconf_card *t = &c->p->t[i];
    const struct cat_model *pm = card_model(c, i);
    int mode = mode_index(t->mode);
    for (int k = 0; k < t->nheld; k++)
        if (!t->held[k].tenant != !t->held[k].workload)
            bad(c, i, k, "tenant and workload must both be set, or both null");
    if (mode < 0)
        bad(c, i, -1,
            "mode '%s' is not one of free, mig, whole, mps, time-slicing, "
            "memory-fraction, vgpu",
            t->mode);
    else if (mode == PLAN_FREE && t->nheld)
        bad(c, i, -1, "a free card holds %d instance%s", t->nheld, t->nheld == 1 ? "" : "s");
    else if (pm && mode == PLAN_MIG && !pm->mig)
        bad(c, i, -1, "mode mig, but a %s has no MIG", pm->name);
    else if (pm && mode == PLAN_MIG)
        check_mig(c, i, pm);
    else if (pm && mode != PLAN_FREE)
        check_shared(c, i, pm, mode);
    if (mode < 0 || !from_json(c))
        return;
    check_node(c, i, pm, mode);
    check_sharing(c, i, mode);
    for (int k = 0; k < t->nheld; k++)
        check_occupant(c, i, k, mode);
}

/* ---- each replica part once ----------------------------------------------- */

struct part {
    const struct reconf_want *w;
    int card, inst;
};

static int cmp_part(const void *a, const void *b)
{
    const struct part *x = a, *y = b;
    int k = strcmp(x->w->tenant, y->w->tenant);
    if (!k)
        k = strcmp(x->w->workload, y->w->workload);
    if (!k)
        k = (x->w->replica > y->w->replica) - (x->w->replica < y->w->replica);
    if (!k)
        k = (x->w->gpu_part > y->w->gpu_part) - (x->w->gpu_part < y->w->gpu_part);
    if (!k)
        k = (x->card > y->card) - (x->card < y->card);
    return k ? k : (x->inst > y->inst) - (x->inst < y->inst);
}

static int same_replica(const struct reconf_want *x, const struct reconf_want *y)
{
    return x->replica == y->replica && !strcmp(x->tenant, y->tenant) &&
           !strcmp(x->workload, y->workload);
}

static int same_part(const struct part *x, const struct part *y)
{
    return x->w->gpu_part == y->w->gpu_part && same_replica(x->w, y->w);
}

static int check_parts(struct chk *c)
{
    size_t n = 0, total = 0;
    for (int i = 0; i < c->p->n; i++)
        total += (size_t)c->p->t[i].nheld;
    struct part *s = malloc((total + 1) * sizeof(*s));
    if (!s)
        return 0;
    for (int i = 0; i < c->p->n; i++)
        for (int k = 0; k < c->p->t[i].nheld; k++)
            if (c->p->t[i].held[k].tenant && c->p->t[i].held[k].workload)
                s[n++] = (struct part){&c->p->t[i].held[k], i, k};
    qsort(s, n, sizeof(*s), cmp_part);
    for (size_t k = 0; k < n; k++) {
        const struct reconf_want *w = s[k].w;
        if (k > 0 && same_part(&s[k - 1], &s[k]))
            bad(c, s[k].card, s[k].inst, "this replica part is also at gpus[%d].instances[%d]",
                s[k - 1].card, s[k - 1].inst);
        else if (w->gpu_part > 0 &&
                 !(k > 0 && same_replica(s[k - 1].w, w) && s[k - 1].w->gpu_part == w->gpu_part - 1))
            bad(c, s[k].card, s[k].inst, "gpuPart %d, but %s/%s r%d has no gpuPart %d", w->gpu_part,
                w->tenant, w->workload, w->replica, w->gpu_part - 1);
        else if (w->gpu_part > 0 && strcmp(c->p->t[s[k].card].node, c->p->t[s[k - 1].card].node))
            bad(c, s[k].card, s[k].inst,
                "gpuPart %d is on node %s, gpuPart %d of the same replica on node %s: a "
                "replica's GPUs are one pod's, on one node",
                w->gpu_part, c->p->t[s[k].card].node, w->gpu_part - 1, c->p->t[s[k - 1].card].node);
    }
    free(s);
    return 1;
}

ts_status reconf_plan_remove_node(struct reconf_plan *p, const struct spec_model *m,
                                  const char *node, struct ts_error *err)
{
    int n = 0;
    for (size_t i = 0; i < m->fleet->nnodes; i++)
        if (!strcmp(m->fleet->nodes[i].name, node))
            return ts_err(err, TS_INVALID,
                          "--removed-node %s: the fleet still has node %s (remove it from the "
                          "Fleet first)",
                          node, node);
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->t[i].node, node)) {
            p->t[i].removed = 1;
            n++;
        }
    if (!n)
        return ts_err(err, TS_INVALID, "--removed-node %s: the running plan has no card on node %s",
                      node, node);
    return TS_OK;
}

ts_status reconf_plan_check(const struct reconf_plan *p, const struct spec_model *m,
                            const struct cat_catalog *cat, const char *file, struct ts_diag *diag)
{
    const struct spec_fleet *f = m->fleet;
    struct chk c = {p, m, cat, file, diag, malloc((f->nnodes + 1) * sizeof(*c.nodes))};
    int before = ts_diag_errors(diag), ok = c.nodes != NULL;
    for (size_t i = 0; ok && i < f->nnodes; i++)
        c.nodes[i] = &f->nodes[i];
    if (ok)
        qsort(c.nodes, f->nnodes, sizeof(*c.nodes), cmp_node);
    for (int i = 0; ok && i < p->n; i++)
        check_card(&c, i);
    ok = ok && check_once(&c) && check_parts(&c);
    free(c.nodes);
    if (!ok) {
        ts_diag_addf(diag, TS_SEV_ERROR, TS_NOMEM, file, 0, 0, NULL, "out of memory");
        return TS_NOMEM;
    }
    return ts_diag_errors(diag) > before ? TS_INVALID : TS_OK;
}
