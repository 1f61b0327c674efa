/*
 * apply.c - `tessera agent apply`: bring each planned card of one node to
 * the plan's MIG geometry through NVML.
 *
 * Order of work: read the inventory (NVML, or for a dry run a NodeInventory
 * file); check the whole plan against the node first (unknown node, a card
 * of another model, a profile the card lacks, an instance at a placement
 * the card does not list, a target geometry that overlaps: TS_INVALID
 * before anything changes, check.c); then card by card: keep (no NVML
 * call that changes anything), report MIG mode problems (tessera never
 * changes MIG mode; a pending mode change refuses the card), refuse while
 * processes run on an instance it would destroy (busy.c: pid and name), else
 * destroy (compute instances first, then the GPU instance), create each
 * GPU instance at its placement with a full compute instance, and verify
 * by reading the card again. On a failure it undoes what it did in reverse
 * (destroys what it created, recreates what it destroyed at the same
 * placement with the same compute instance profiles), reads the card again
 * and says what it holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"

/* What one card's change did so far, for rollback. */
struct undo {
    struct inv_gi destroyed[INV_GIS_MAX];
    int ndestroyed;
    int created[INV_GIS_MAX]; /* GI ids */
    int created_profile[INV_GIS_MAX];
    int ncreated;
};

static ts_status find_gi(struct agent_nvml *n, nvmlDevice_t d, int gpu, int profile_id, int id,
                         nvmlGpuInstance_t *out, struct ts_error *err)
{
    nvmlGpuInstance_t gis[INV_GIS_MAX];
    unsigned int count = INV_GIS_MAX;
    nvmlReturn_t r = n->nvmlDeviceGetGpuInstances(d, (unsigned)profile_id, gis, &count);
    if (r != NVML_SUCCESS)
        return agent__nvml_err(n, r, "nvmlDeviceGetGpuInstances", gpu, err);
    for (unsigned int i = 0; i < count && i < INV_GIS_MAX; i++) {
        nvmlGpuInstanceInfo_t info;
        memset(&info, 0, sizeof info);
        r = n->nvmlGpuInstanceGetInfo(gis[i], &info);
        if (r != NVML_SUCCESS)
            return agent__nvml_err(n, r, "nvmlGpuInstanceGetInfo", gpu, err);
        if ((int)info.id == id) {
            *out = gis[i];
            return TS_OK;
        }
    }
    return ts_err(err, TS_NOT_FOUND, "GPU %d has no GPU instance %d any more", gpu, id);
}

/* Compute instances first (NVML refuses to destroy a GPU instance with some). */
ts_status agent__destroy_gi(struct agent_nvml *n, nvmlDevice_t d, int gpu, int profile_id, int id,
                            struct ts_error *err)
{
    nvmlGpuInstance_t gi = NULL;
    ts_status st = find_gi(n, d, gpu, profile_id, id, &gi, err);
    for (unsigned int k = 0; st == TS_OK && k < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; k++) {
        nvmlComputeInstanceProfileInfo_t cp;
        nvmlComputeInstance_t cis[INV_CIS_MAX];
        unsigned int count = INV_CIS_MAX;
        memset(&cp, 0, sizeof cp);
        if (n->nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, k, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cp) != NVML_SUCCESS)
            continue;
        nvmlReturn_t r = n->nvmlGpuInstanceGetComputeInstances(gi, cp.id, cis, &count);
        for (unsigned int i = 0; r == NVML_SUCCESS && i < count && i < INV_CIS_MAX; i++)
            r = n->nvmlComputeInstanceDestroy(cis[i]);
        if (r != NVML_SUCCESS)
            st = agent__nvml_err(n, r, "nvmlComputeInstanceDestroy", gpu, err);
    }
    nvmlReturn_t r = st == TS_OK ? n->nvmlGpuInstanceDestroy(gi) : NVML_SUCCESS;
    return r == NVML_SUCCESS ? st : agent__nvml_err(n, r, "nvmlGpuInstanceDestroy", gpu, err);
}

/* A compute instance of ci_profile_id, or (-1) the one spanning all slices. */
static ts_status create_ci(struct agent_nvml *n, nvmlGpuInstance_t gi, int gpu, int slices,
                           int ci_profile_id, struct ts_error *err)
{
    for (unsigned int k = 0; k < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; k++) {
        nvmlComputeInstanceProfileInfo_t cp;
        nvmlComputeInstance_t ci;
        memset(&cp, 0, sizeof cp);
        if (n->nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, k, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cp) != NVML_SUCCESS)
            continue;
        if (ci_profile_id >= 0 ? (int)cp.id != ci_profile_id : (int)cp.sliceCount != slices)
            continue;
        nvmlReturn_t r = n->nvmlGpuInstanceCreateComputeInstance(gi, cp.id, &ci);
        return r == NVML_SUCCESS
                   ? TS_OK
                   : agent__nvml_err(n, r, "nvmlGpuInstanceCreateComputeInstance", gpu, err);
    }
    return ts_err(err, TS_NOT_FOUND, "GPU %d: no compute instance profile of %d slices", gpu,
                  slices);
}

/* A GPU instance at pl with compute instances (ci_ids: profile IDs, or one
 * full one when nci is 0); *id gets its ID. */
static ts_status create_gi(struct agent_nvml *n, nvmlDevice_t d, int gpu, const struct inv_gi *spec,
                           int *id, struct ts_error *err)
{
    nvmlGpuInstancePlacement_t pl = {(unsigned)spec->pl.start, (unsigned)spec->pl.size};
    nvmlGpuInstance_t gi;
    nvmlGpuInstanceInfo_t info;
    nvmlReturn_t r = n->nvmlDeviceCreateGpuInstanceWithPlacement(d, (unsigned)spec->profile_id, &pl,
                                                                 &gi);
    if (r != NVML_SUCCESS)
        return agent__nvml_err(n, r, "nvmlDeviceCreateGpuInstanceWithPlacement", gpu, err);
    memset(&info, 0, sizeof info);
    r = n->nvmlGpuInstanceGetInfo(gi, &info);
    *id = r == NVML_SUCCESS ? (int)info.id : -1;
    ts_status st = spec->nci ? TS_OK : create_ci(n, gi, gpu, spec->slices, -1, err);
    for (int k = 0; st == TS_OK && k < spec->nci; k++)
        st = create_ci(n, gi, gpu, spec->ci[k].slices, spec->ci[k].profile_id, err);
    if (st != TS_OK && n->nvmlGpuInstanceDestroy(gi) == NVML_SUCCESS)
        *id = -1; /* gone again: nothing for the rollback to undo */
    else if (st != TS_OK)
        agent__destroy_gi(n, d, gpu, spec->profile_id, *id, NULL);
    return st;
}

static const struct inv_gi *gi_by_id(const struct inv_gpu *g, int id)
{
    for (int i = 0; i < g->ngi; i++)
        if (g->gi[i].id == id)
            return &g->gi[i];
    return NULL;
}

static ts_status run_step(struct agent_nvml *n, nvmlDevice_t d, const struct inv_gpu *before,
                          const struct reconf_step *s, struct undo *u, struct ts_error *err)
{
    if (s->kind == RECONF_DESTROY) {
        const struct inv_gi *gi = gi_by_id(before, s->gi_id);
        ts_status st = agent__destroy_gi(n, d, before->index, gi->profile_id, gi->id, err);
        if (st == TS_OK)
            u->destroyed[u->ndestroyed++] = *gi;
        return st;
    }
    struct inv_gi spec = {0};
    const struct inv_profile *p = NULL;
    for (int i = 0; i < before->nprof; i++)
        p = before->prof[i].id == s->profile_id ? &before->prof[i] : p;
    spec.profile_id = s->profile_id;
    spec.slices = p ? p->slices : 0;
    spec.pl = s->pl;
    int id = -1;
    ts_status st = create_gi(n, d, before->index, &spec, &id, err);
    if (id >= 0) {
        u->created_profile[u->ncreated] = s->profile_id;
        u->created[u->ncreated++] = id;
    }
    return st;
}

/* Undo in reverse: destroy what was created, recreate what was destroyed. */
static void rollback(struct agent_nvml *n, nvmlDevice_t d, int gpu, const struct undo *u,
                     struct ts_sbuf *log)
{
    for (int i = u->ncreated - 1; i >= 0; i--) {
        struct ts_error e = {0};
        if (agent__destroy_gi(n, d, gpu, u->created_profile[i], u->created[i], &e) != TS_OK)
            ts_sbuf_printf(log, "  rollback: could not destroy GPU instance %d: %s\n",
                           u->created[i], e.msg);
    }
    for (int i = u->ndestroyed - 1; i >= 0; i--) {
        struct ts_error e = {0};
        int id;
        const struct inv_gi *gi = &u->destroyed[i];
        if (create_gi(n, d, gpu, gi, &id, &e) != TS_OK)
            ts_sbuf_printf(log, "  rollback: could not recreate %s at %d:%d: %s\n", gi->profile,
                           gi->pl.start, gi->pl.size, e.msg);
        else
            ts_sbuf_printf(log,
                           "  rollback: recreated %s at %d:%d (new GPU instance %d, new "
                           "MIG device UUIDs)\n",
                           gi->profile, gi->pl.start, gi->pl.size, id);
    }
}

static void geometry_text(const struct inv_gpu *g, struct ts_sbuf *out)
{
    if (g->ngi == 0)
        ts_sbuf_puts(out, " no GPU instances");
    for (int i = 0; i < g->ngi; i++)
        ts_sbuf_printf(out, "%s %s at %d:%d", i ? "," : "", g->gi[i].profile, g->gi[i].pl.start,
                       g->gi[i].pl.size);
}

static int same_geometry(const struct inv_gpu *a, const struct inv_gpu *b)
{
    if (a->ngi != b->ngi)
        return 0;
    for (int i = 0; i < a->ngi; i++)
        if (a->gi[i].profile_id != b->gi[i].profile_id || a->gi[i].pl.start != b->gi[i].pl.start)
            return 0;
    return 1;
}

/* One card; 0 when it ends as planned, 2 when refused as busy (*nbusy:
 * its busy instances), else 1. */
static int change_card(struct agent_nvml *n, const struct inv_gpu *before,
                       const struct reconf_card *t, const struct reconf_diff *diff,
                       const struct cat_catalog *cat, const char *journal, int *nbusy,
                       struct ts_sbuf *log)
{
    struct ts_error e = {0};
    nvmlDevice_t d;
    nvmlReturn_t r = n->nvmlDeviceGetHandleByIndex_v2((unsigned)before->index, &d);
    if (r != NVML_SUCCESS) {
        agent__nvml_err(n, r, "nvmlDeviceGetHandleByIndex_v2", before->index, &e);
        ts_sbuf_printf(log, "  failed: %s\n", e.msg);
        return 1;
    }
    *nbusy = agent__busy(n, d, before, diff, log, &e);
    if (*nbusy)
        return *nbusy < 0 ? 1 : 2;
    struct undo u;
    memset(&u, 0, sizeof u);
    ts_status st = journal ? agent__journal_begin(journal, before, diff, &e) : TS_OK;
    if (st != TS_OK) {
        ts_sbuf_printf(log, "  failed: %s\n", e.msg);
        return 1;
    }
    for (int k = 0; st == TS_OK && k < diff->nstep; k++)
        st = run_step(n, d, before, &diff->step[k], &u, &e);
    struct inv_gpu *now = calloc(1, sizeof *now);
    struct reconf_diff check;
    int bad = st != TS_OK || !now;
    if (!bad && agent__gpu_read(n, (unsigned)before->index, now, &e) == TS_OK) {
        reconf_diff_card(now, t, cat, &check);
        if (check.verdict != RECONF_KEEP)
            st = ts_err(&e, TS_INTERNAL,
                        "verification failed: GPU %d does not match the plan "
                        "after the change (%s)",
                        before->index, reconf_verdict_names[check.verdict]);
    } else if (!bad) {
        st = TS_INTERNAL;
    }
    if (st != TS_OK && now) {
        ts_sbuf_printf(log, "  failed: %s\n", e.msg);
        rollback(n, d, before->index, &u, log);
        if (agent__gpu_read(n, (unsigned)before->index, now, &e) == TS_OK) {
            ts_sbuf_printf(log, "  GPU %d is left with:", before->index);
            geometry_text(now, log);
            ts_sbuf_printf(log, "\n  %s\n",
                           same_geometry(now, before) ? "the previous geometry is restored"
                                                      : "the previous geometry is NOT restored");
        } else {
            ts_sbuf_printf(log, "  state unknown: %s\n", e.msg);
        }
    } else if (st == TS_OK) {
        ts_sbuf_printf(log, "  done, verified: GPU %d holds", before->index);
        geometry_text(now, log);
        ts_sbuf_puts(log, "\n");
    }
    free(now);
    if (journal)
        agent__journal_end(journal);
    return st != TS_OK || bad;
}

static void log_steps(const struct reconf_card *t, const struct reconf_diff *d, int dry,
                      struct ts_sbuf *log)
{
    ts_sbuf_printf(log, "GPU %d: reconfigure%s\n  1. drain the card\n", t->index,
                   dry ? " (dry run: nothing changed)" : "");
    for (int k = 0; k < d->nstep; k++) {
        ts_sbuf_printf(log, "  %d. ", k + 2);
        reconf_step_text(&d->step[k], log);
        ts_sbuf_puts(log, "\n");
    }
}

/* Every card of the node checked before anything changes. */
static ts_status check_plan(const struct reconf_plan *p, const struct inv_node *inv,
                            const struct cat_catalog *cat, const char *node,
                            struct reconf_diff *diffs, struct ts_error *err)
{
    int found = 0;
    for (int i = 0; i < p->n; i++) {
        if (strcmp(p->t[i].node, node) != 0)
            continue;
        found++;
        reconf_diff_card(inv_gpu_at(inv, p->t[i].index), &p->t[i], cat, &diffs[i]);
        int v = diffs[i].verdict;
        if (v == RECONF_NO_CARD || v == RECONF_WRONG_MODEL || v == RECONF_NO_PROFILE)
            return ts_err_at(err, TS_INVALID, NULL, 0, 0, NULL, "%s", diffs[i].why);
        if (v == RECONF_CHANGE &&
            agent__check_change(inv_gpu_at(inv, p->t[i].index), &diffs[i], err) != TS_OK)
            return TS_INVALID;
    }
    if (!found)
        return ts_err(err, TS_INVALID, "the plan has no GPU on node '%s'", node);
    return TS_OK;
}

/* The node's state: NVML's, or (dry runs) the NodeInventory given. */
static ts_status read_node(struct agent_nvml *n, const struct agent_apply_opts *opts,
                           struct inv_node *inv, struct ts_error *err)
{
    if (!opts->inventory)
        return agent_inventory_read(n, opts->node, inv, err);
    if (!opts->dry_run)
        return ts_err(err, TS_INVALID, "an inventory file is only for --dry-run");
    *inv = *opts->inventory;
    return TS_OK;
}

/* One card: 0 kept, 3 changed (or would be, dry), 2 busy, 1 failed. */
static int apply_card(struct agent_nvml *n, const struct inv_node *inv, const struct reconf_card *t,
                      const struct reconf_diff *d, const struct cat_catalog *cat,
                      const struct agent_apply_opts *o, struct ts_sbuf *log)
{
    char why[TS_MSG_MAX];
    int nbusy = 0;
    if (d->verdict == RECONF_KEEP) {
        ts_sbuf_printf(log, "GPU %d: keep (matches the plan; not touched)\n", t->index);
        return 0;
    }
    if (d->verdict != RECONF_CHANGE) {
        ts_sbuf_printf(log, "GPU %d: cannot apply: %s\n", t->index, d->why);
        return 1;
    }
    if (agent__mode_pending(inv_gpu_at(inv, t->index), why, sizeof why)) {
        ts_sbuf_printf(log, "GPU %d: cannot apply: %s\n", t->index, why);
        return 1;
    }
    log_steps(t, d, o->dry_run, log);
    int r = o->dry_run
                ? 0
                : change_card(n, inv_gpu_at(inv, t->index), t, d, cat, o->journal, &nbusy, log);
    if (o->report && nbusy > 0)
        o->report->busy_instances += nbusy;
    return r ? r : 3;
}

static void count(struct agent_apply_report *r, int outcome)
{
    if (r) {
        r->kept += outcome == 0;
        r->failed += outcome == 1;
        r->busy += outcome == 2;
        r->changed += outcome == 3;
    }
}

ts_status agent_apply(struct agent_nvml *n, const struct reconf_plan *p,
                      const struct cat_catalog *cat, const struct agent_apply_opts *opts,
                      struct ts_sbuf *log, struct ts_error *err)
{
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct reconf_diff *diffs = calloc((size_t)p->n + 1, sizeof *diffs);
    ts_status st = inv && diffs ? read_node(n, opts, inv, err)
                                : ts_err(err, TS_NOMEM, "out of memory");
    if (st == TS_OK)
        st = check_plan(p, inv, cat, opts->node, diffs, err);
    int failed = 0;
    for (int i = 0; st == TS_OK && i < p->n; i++) {
        if (strcmp(p->t[i].node, opts->node) != 0)
            continue;
        int outcome = apply_card(n, inv, &p->t[i], &diffs[i], cat, opts, log);
        count(opts->report, outcome);
        failed += outcome == 1 || outcome == 2;
    }
    if (st == TS_OK && failed)
        st = ts_err(err, TS_INTERNAL, "%d card%s of node %s not brought to the plan (see above)",
                    failed, failed == 1 ? "" : "s", opts->node);
    free(inv);
    free(diffs);
    return st;
}
