/*
 * check.c - what a card's change must satisfy before the agent makes any
 * NVML call that changes it: every instance it creates at a placement the
 * card itself lists for that profile (the inventory's placement list, read
 * from NVML or the NodeInventory), and the target geometry (the instances
 * it keeps plus those it creates) free of overlapping memory slices; and,
 * separately, MIG mode settled (current and pending the same: a change
 * applied while `nvidia-smi -mig` awaits a reset is lost at the reset).
 * Pure: reads the inventory and the steps.
 */
#include <stdio.h>
#include <string.h>
#include "agent/internal.h"

static const struct inv_profile *profile_of(const struct inv_gpu *g, int id)
{
    for (int i = 0; i < g->nprof; i++)
        if (g->prof[i].id == id)
            return &g->prof[i];
    return NULL;
}

static int listed(const struct inv_profile *p, struct inv_placement pl)
{
    for (int i = 0; i < p->npl; i++)
        if (p->pl[i].start == pl.start && p->pl[i].size == pl.size)
            return 1;
    return 0;
}

/* "0:4, 4:4" */
static void placements_text(const struct inv_profile *p, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < p->npl && n < cap; i++) {
        int w = snprintf(out + n, cap - n, "%s%d:%d", i ? ", " : "", p->pl[i].start, p->pl[i].size);
        n += w > 0 ? (size_t)w : 0;
    }
}

static ts_status check_create(const struct inv_gpu *g, const struct reconf_step *s,
                              struct ts_error *err)
{
    const struct inv_profile *p = profile_of(g, s->profile_id);
    char list[256];
    if (!p)
        return ts_err(err, TS_INVALID, "GPU %d offers no profile %s (ID %d)", g->index, s->profile,
                      s->profile_id);
    if (listed(p, s->pl))
        return TS_OK;
    placements_text(p, list, sizeof list);
    return ts_err(err, TS_INVALID,
                  "GPU %d cannot hold %s at %d:%d: its placements for %s are %s; "
                  "nothing was changed",
                  g->index, s->profile, s->pl.start, s->pl.size, s->profile, list);
}

static int destroyed(const struct reconf_diff *d, int gi_id)
{
    for (int k = 0; k < d->nstep; k++)
        if (d->step[k].kind == RECONF_DESTROY && d->step[k].gi_id == gi_id)
            return 1;
    return 0;
}

struct piece {
    const char *profile;
    struct inv_placement pl;
    int kept;
};

/* The target geometry: kept instances, then created ones. */
static int target_pieces(const struct inv_gpu *g, const struct reconf_diff *d, struct piece *out,
                         int cap)
{
    int n = 0;
    for (int i = 0; i < g->ngi && n < cap; i++)
        if (!destroyed(d, g->gi[i].id))
            out[n++] = (struct piece){g->gi[i].profile, g->gi[i].pl, 1};
    for (int k = 0; k < d->nstep && n < cap; k++)
        if (d->step[k].kind == RECONF_CREATE)
            out[n++] = (struct piece){d->step[k].profile, d->step[k].pl, 0};
    return n;
}

static int overlap(struct inv_placement a, struct inv_placement b)
{
    return a.start < b.start + b.size && b.start < a.start + a.size;
}

ts_status agent__check_change(const struct inv_gpu *g, const struct reconf_diff *d,
                              struct ts_error *err)
{
    struct piece p[3 * INV_GIS_MAX];
    for (int k = 0; k < d->nstep; k++)
        if (d->step[k].kind == RECONF_CREATE && check_create(g, &d->step[k], err) != TS_OK)
            return TS_INVALID;
    int n = target_pieces(g, d, p, (int)(sizeof p / sizeof p[0]));
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (overlap(p[i].pl, p[j].pl))
                return ts_err(err, TS_INVALID,
                              "GPU %d: %s at %d:%d would overlap %s at %d:%d (%s); "
                              "nothing was changed",
                              g->index, p[j].profile, p[j].pl.start, p[j].pl.size, p[i].profile,
                              p[i].pl.start, p[i].pl.size, p[i].kept ? "kept" : "also created");
    return TS_OK;
}

int agent__mode_pending(const struct inv_gpu *g, char *why, size_t cap)
{
    if (g->mig_pending == g->mig_current)
        return 0;
    snprintf(why, cap,
             "MIG mode change pending (current %s, pending %s): the change would be lost at "
             "the GPU reset; reset the GPU (or undo the mode change) first",
             g->mig_current == 1 ? "enabled" : "disabled",
             g->mig_pending == 1 ? "enabled" : "disabled");
    return 1;
}
