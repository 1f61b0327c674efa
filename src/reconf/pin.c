/*
 * pin.c - what the keep candidates of a replan read, built once: each
 * row's template (the instance a kept or new replica copies) and the
 * decisions they keep by. A workload that runs on one card model while its
 * decision now names another (a price change, a model that filled up) is
 * pinned to the model it runs on when it may run there (with its decision's
 * mechanism, or, where the cost objective chose another mechanism too, as
 * decide has it on that model: alt_row): the keep plan then
 * keeps it in place (its own decision row, the running model and profile,
 * which render and admit read; the mechanism's numbers derived again for
 * that model: an MPS share of its SMs, whole GPUs a replica as it runs),
 * and the fresh plan is the other point of
 * the trade (fewer cost, its drains). For the no-drain plan alone, a MIG
 * workload whose decision now names another profile of the model it runs on
 * (its memory grew or shrank) is held at the profile it runs: its
 * instances stay, and a growth is named as not placed (keep.c). Any other
 * row whose running instances its decision cannot keep in place (another
 * mechanism or model, several profiles or models, a pool client or a
 * whole-GPU replica grown) is kept as it runs (as_runs_row): its decision
 * row becomes what runs, and keep.c keeps each instance as it is and names
 * the row. When the fleet cannot hold the spec whole, the rows the plan of
 * what fits left out that run join the no-drain plan's rows (add_left):
 * those on MIG cards of their decision's model at one profile with a
 * template at the decision's profile, held (or, at the same profile, kept)
 * the same way; the others kept as they run.
 */
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"

/* What row runs on now: one model (mixed when several), the running
 * card's mode, a MIG profile name (the first instance's), the most GPU
 * parts a replica has, and the least memory and MPS share an instance
 * has. */
struct runs {
    const char *model, *mode, *profile;
    int mixed, parts, sm;
    double mem;
};

static void note_run(struct runs *r, const struct reconf_card *c, const struct reconf_want *w)
{
    int parts = w->gpu_part + 1 > r->parts ? w->gpu_part + 1 : r->parts;
    if (!r->model) {
        *r = (struct runs){c->model, c->mode, w->profile, 0, parts, w->sm_percent, w->mem_gib};
        return;
    }
    r->parts = parts;
    r->sm = w->sm_percent < r->sm ? w->sm_percent : r->sm;
    r->mem = w->mem_gib < r->mem ? w->mem_gib : r->mem;
    r->mixed |= strcmp(r->model, c->model) || strcmp(r->mode, c->mode) ||
                (r->profile && (!w->profile || strcmp(r->profile, w->profile)));
}

static const struct cat_model *model_named(const struct plan *f, const char *name)
{
    for (size_t i = 0; i < f->ngpus; i++)
        if (!strcmp(f->gpus[i].model->name, name))
            return f->gpus[i].model;
    return NULL;
}

static int allowed(const struct spec_workload *w, const char *model)
{
    int in = !w->ngpu_models;
    for (size_t i = 0; i < w->ngpu_models; i++)
        in |= !strcmp(w->gpu_models[i], model);
    return in && (!w->gpu_model || !strcmp(w->gpu_model, model));
}

/* The pinned template of row r on model m, or 0 when it may not run there
 * as it runs now. */
static int pinned_tpl(const struct decide_row *r, const struct plan_inst *fresh_tpl, int fmode,
                      const struct runs *run, const struct cat_model *m, struct plan_inst *out)
{
    *out = *fresh_tpl;
    if (fmode == PLAN_MIG) {
        const struct cat_profile *p = run->profile ? cat_profile_find(m, run->profile) : NULL;
        if (!m->mig || strcmp(run->mode, "mig") || !p || p->memory_gib + 1e-9 < r->need_gib ||
            p->compute < r->workload->compute_slices)
            return 0;
        out->profile = p;
        out->size = p->mem_units;
        out->mem_gib = p->memory_gib;
        return 1;
    }
    if (fresh_tpl->profile)
        return 0; /* a MIG-backed vGPU: not pinned */
    int whole = (fmode == PLAN_WHOLE || fmode == PLAN_VGPU) && !fresh_tpl->guest;
    int ts = r->mech == DECIDE_TIME_SLICING && !strcmp(run->mode, "time-slicing");
    double need = plan_mode_shares_card(fmode) ? r->cap_gib
                  : whole                      ? r->need_gib / run->parts
                                               : r->need_gib;
    if ((!ts && strcmp(run->mode, plan_mode_names[fmode])) || m->memory_gib + 1e-9 < need ||
        (whole && run->parts > SPEC_REPLICA_GPUS_MAX))
        return 0;
    out->mem_gib = whole ? m->memory_gib : fresh_tpl->mem_gib;
    /* the mechanism's numbers on m: an MPS share is of m's SMs */
    out->sm_percent = r->mech == DECIDE_MPS ? decide_mps_sm_percent(r, m) : fresh_tpl->sm_percent;
    return 1;
}

/* A memory fraction pinned to model m: enforced by the driver when every
 * node of the fleet holding m runs CUDA 13.4+ (decide_fraction's rule),
 * else by tessera's shim, which also holds the spec's smPercent; the
 * row's share (0 under the driver). */
static int fraction_on(struct decide_row *r, const struct plan *f, const struct cat_model *m)
{
    r->enforce = DECIDE_ENFORCE_DRIVER;
    for (size_t g = 0; g < f->ngpus && r->enforce == DECIDE_ENFORCE_DRIVER; g++)
        if (f->gpus[g].model == m && decide_card_refuses(r, f->gpus[g].node, m))
            r->enforce = DECIDE_ENFORCE_SHIM;
    return r->sm_percent = r->enforce == DECIDE_ENFORCE_SHIM ? r->workload->sm_percent : 0;
}

/* What the pin changed in the row's numbers, for its reason: "" when
 * nothing but the model (NULL: NOMEM). */
static const char *pinned_numbers(struct ts_arena *a, const struct decide_row *r)
{
    if (r->mech == DECIDE_MPS)
        return ts_arena_printf(a, ": %d%% of its SMs", r->sm_percent);
    if ((r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU) && !r->profile)
        return ts_arena_printf(a, ": %d GPU%s a replica", r->gpus, r->gpus == 1 ? "" : "s");
    if (r->mech == DECIDE_MEMORY_FRACTION)
        return r->enforce == DECIDE_ENFORCE_SHIM ? ": its fraction enforced by tessera's shim"
                                                 : ": its fraction enforced by the driver";
    return "";
}

/* The index of name in the NULL-ended names (plan_mode_names,
 * decide_mech_names), or -1. */
static int index_of(const char *const *names, const char *name)
{
    for (int k = 0; names[k]; k++)
        if (!strcmp(names[k], name))
            return k;
    return -1;
}

/* Row i (its decision on another model and mechanism than it runs on)
 * decided alone on model m, the one it runs on (plan_decide_on: the cost
 * objective's alternative there), when that is the mechanism it runs:
 * the row becomes that decision, its template that decision's instance
 * (*mode its card's mode). 0: not so. */
static int alt_row(struct reconf__keepix *ix, const struct plan *f, size_t i,
                   const struct runs *run, const struct cat_model *m, const struct cat_catalog *cat,
                   struct plan_inst *t, int *mode)
{
    struct decide_row *r = &ix->own.rows[i], a;
    if (!cat || !plan_decide_on(f->model, cat, ix->was[i], m, &ix->a, &a) ||
        (a.mech == DECIDE_VGPU && a.profile))
        return 0;
    int k = index_of(plan_mode_names, decide_mech_names[a.mech]);
    struct plan_inst tpl = {.row = r,
                            .profile = a.profile,
                            .size = a.profile ? a.profile->mem_units : 0,
                            .mem_gib = a.profile ? a.profile->memory_gib
                                       : a.mech == DECIDE_WHOLE || a.mech == DECIDE_VGPU
                                           ? m->memory_gib
                                           : a.cap_gib,
                            .sm_percent = a.sm_percent};
    if (k < 0 || !pinned_tpl(&a, &tpl, k, run, m, t))
        return 0;
    *r = a;
    t->row = r;
    *mode = k;
    return 1;
}

/* Row i pinned to what it runs on, when it may be: its decision on that
 * model, or decided again there (another mechanism, alt_row). */
static int pin_row(struct reconf__keepix *ix, const struct plan *f, size_t i,
                   const struct runs *run, const struct cat_catalog *cat)
{
    struct decide_row *r = &ix->own.rows[i];
    const struct cat_model *m;
    struct plan_inst t;
    int mode = ix->mode[i];
    const char *was = r->model->name;
    if (!ix->has[i] || !run->model || run->mixed || !strcmp(run->model, r->model->name) ||
        !allowed(r->workload, run->model) || !(m = model_named(f, run->model)) ||
        (!pinned_tpl(r, &ix->tpl[i], ix->mode[i], run, m, &t) &&
         !alt_row(ix, f, i, run, m, cat, &t, &mode)))
        return 1;
    ix->mode[i] = mode;
    r->model = m;
    r->profile = t.profile;
    r->sm_percent = t.sm_percent;
    if (ix->mode[i] == PLAN_WHOLE || ix->mode[i] == PLAN_VGPU)
        r->gpus = run->parts; /* whole GPUs of m a replica, as it runs */
    if (r->mech == DECIDE_MEMORY_FRACTION)
        t.sm_percent = fraction_on(r, f, m);
    r->reason = ts_arena_printf(&ix->a,
                                "%s; kept on the %s it runs on (replanning: the decision's %s "
                                "would move it)%s",
                                r->reason, m->name, was, pinned_numbers(&ix->a, r));
    ix->tpl[i] = t;
    ix->pinned++;
    return r->reason != NULL;
}

/* Row i held at the one MIG profile of its model it runs on, when that is
 * not its decision's (hold: the no-drain plan). */
static int hold_row(struct reconf__keepix *ix, size_t i, const struct runs *run)
{
    struct decide_row *r = &ix->own.rows[i];
    struct plan_inst *t = &ix->tpl[i];
    const struct cat_profile *p;
    if (!ix->has[i] || ix->mode[i] != PLAN_MIG || !t->profile || !run->model || run->mixed ||
        !run->profile || strcmp(run->mode, "mig") || strcmp(run->model, r->model->name) ||
        !strcmp(run->profile, t->profile->name) || !(p = cat_profile_find(r->model, run->profile)))
        return 1;
    ix->wanted[i] = t->profile;
    r->profile = t->profile = p;
    t->size = p->mem_units;
    t->mem_gib = p->memory_gib;
    r->reason = ts_arena_printf(&ix->a,
                                "%s; kept at its running profile %s (replanning within "
                                "--max-drains: its new size %s %s)",
                                r->reason, p->name, ix->wanted[i]->name,
                                plan_profile_holds(p, r) ? "would drain its card"
                                                         : "is not placed");
    ix->pinned++;
    return r->reason != NULL;
}

/* 1 when row i runs (hold), as pin_row and hold_row left it, in a way its
 * decision cannot keep: several models, modes or profiles, or another
 * model, mode or MIG profile than its template's (or none: left out), or
 * a pool client that grew (memory or MPS share) or whole GPUs that grew in
 * number: keeping its instances at the new size would overfill its card. */
static int runs_otherwise(const struct reconf__keepix *ix, size_t i, const struct runs *run)
{
    const struct decide_row *r = &ix->own.rows[i];
    const struct plan_inst *t = &ix->tpl[i];
    if (!run->model || !r->workload->replicas)
        return 0;
    if (!ix->has[i] || run->mixed)
        return 1;
    return strcmp(run->model, r->model->name) || strcmp(run->mode, plan_mode_names[ix->mode[i]]) ||
           (t->profile && (!run->profile || strcmp(run->profile, t->profile->name))) ||
           (ix->mode[i] == PLAN_WHOLE && run->parts != r->gpus) ||
           (plan_mode_shares_card(ix->mode[i]) &&
            (run->mem + 1e-6 < t->mem_gib || run->sm < t->sm_percent));
}

/* Row i kept as it runs (hold): its decision row becomes what runs (the
 * first instance's model, mechanism and profile), its instances stay each
 * as it is (keep.c), and its decision is named as not applied. */
static int as_runs_row(struct reconf__keepix *ix, const struct plan *f, size_t i,
                       const struct runs *run)
{
    struct decide_row *r = &ix->own.rows[i];
    const struct cat_model *m = model_named(f, run->model);
    int mech = index_of(decide_mech_names, run->mode);
    if (!m || mech < 0)
        return 1; /* a card the fleet has no more: not kept */
    r->model = m;
    r->profile = run->profile ? cat_profile_find(m, run->profile) : NULL;
    r->gpus = mech == DECIDE_WHOLE || mech == DECIDE_VGPU ? run->parts : 1;
    r->cap_gib = decide_mech_shares_card(mech) ? run->mem : r->cap_gib;
    r->security_boundary = !decide_mech_shares_card(mech); /* as decide.c has it */
    if (mech != r->mech) /* a shim-enforced fraction runs anywhere */
        r->enforce = mech == DECIDE_MEMORY_FRACTION ? DECIDE_ENFORCE_SHIM : DECIDE_ENFORCE_NONE;
    r->mech = mech;
    r->reason = ts_arena_printf(&ix->a,
                                "%s; kept as it runs (%s%s%s on %s%s; replanning within "
                                "--max-drains)",
                                r->reason, run->mode, run->profile ? " " : "",
                                run->profile ? run->profile : "", m->name,
                                run->mixed ? ", and more" : "");
    ix->tpl[i] = (struct plan_inst){.row = r, .profile = r->profile};
    ix->has[i] = ix->as_runs[i] = 1;
    ix->mode[i] = PLAN_FREE;
    ix->pinned++;
    return r->reason != NULL;
}

static int pin(struct reconf__keepix *ix, const struct plan *f, const struct reconf_plan *cur,
               int hold, const struct cat_catalog *cat)
{
    size_t n = ix->own.nrows;
    struct runs *run = calloc(n + 1, sizeof(*run));
    int ok = run != NULL;
    for (int c = 0; ok && c < cur->n; c++)
        for (int h = 0; !cur->t[c].removed && h < cur->t[c].nheld; h++) {
            int row = reconf__row(&ix->rows, cur->t[c].held[h].tenant, cur->t[c].held[h].workload);
            if (row >= 0)
                note_run(&run[row], &cur->t[c], &cur->t[c].held[h]);
        }
    for (size_t i = 0; ok && i < n; i++) {
        ok = pin_row(ix, f, i, &run[i], cat) && (!hold || hold_row(ix, i, &run[i]));
        if (ok && hold && runs_otherwise(ix, i, &run[i]))
            ok = as_runs_row(ix, f, i, &run[i]);
    }
    free(run);
    return ok;
}

/* Each row's template: the fresh plan's first instance and its card's mode. */
static void templates(struct reconf__keepix *ix, const struct plan *f)
{
    for (size_t i = f->ngpus; i-- > 0;)
        for (size_t k = f->gpus[i].ninst; k-- > 0;)
            if (f->gpus[i].inst[k].row) {
                size_t row = (size_t)(f->gpus[i].inst[k].row - f->decisions->rows);
                ix->tpl[row] = f->gpus[i].inst[k];
                ix->tpl[row].row = &ix->d->rows[row];
                ix->has[row] = 1;
                ix->mode[row] = f->gpus[i].mode;
            }
}

/* 1 when a row left out (decided r) runs as run says on MIG cards of its
 * decision's model, at one profile of it: held at that profile. */
static int keeps_left(const struct decide_row *r, const struct runs *run)
{
    return r->mech == DECIDE_MIG && r->profile && run->model && !run->mixed && run->profile &&
           !strcmp(run->mode, "mig") && !strcmp(run->model, r->model->name) &&
           cat_profile_find(r->model, run->profile) != NULL;
}

/* The rows left out (hold only) that run, appended to ix->own: those
 * keeps_left takes with a template at the decision's profile (pin's
 * hold_row then holds them at the profile they run), the others with none
 * (pin keeps them as they run); 0: NOMEM. */
static int add_left(struct reconf__keepix *ix, const struct reconf_plan *cur,
                    const struct decide_row *const *left, size_t nleft)
{
    struct decide_result l = {.rows = malloc((nleft + 1) * sizeof(*l.rows)), .nrows = nleft};
    struct runs *run = calloc(nleft + 1, sizeof(*run));
    struct reconf__rows lix = {0};
    int ok = l.rows && run;
    for (size_t i = 0; ok && i < nleft; i++)
        l.rows[i] = *left[i];
    ok = ok && reconf__rows_index(&l, &lix);
    for (int c = 0; ok && c < cur->n; c++)
        for (int h = 0; !cur->t[c].removed && h < cur->t[c].nheld; h++) {
            int row = reconf__row(&lix, cur->t[c].held[h].tenant, cur->t[c].held[h].workload);
            if (row >= 0)
                note_run(&run[row], &cur->t[c], &cur->t[c].held[h]);
        }
    for (size_t i = 0; ok && i < nleft; i++) {
        if (!run[i].model)
            continue;
        size_t k = ix->own.nrows++;
        const struct cat_profile *p = left[i]->profile;
        ix->own.rows[k] = *left[i];
        ix->was[k] = left[i];
        if (!keeps_left(left[i], &run[i]))
            continue;
        ix->tpl[k] = (struct plan_inst){
            .row = &ix->own.rows[k], .profile = p, .size = p->mem_units, .mem_gib = p->memory_gib};
        ix->has[k] = 1;
        ix->mode[k] = PLAN_MIG;
    }
    reconf__rows_free(&lix);
    free(l.rows);
    free(run);
    return ok;
}

int reconf__keepix_build(const struct plan *f, const struct reconf_plan *cur,
                         struct reconf__keepix *ix, int hold, const struct decide_row *const *left,
                         size_t nleft, const struct cat_catalog *cat)
{
    size_t n = f->decisions->nrows, all = n + (hold ? nleft : 0);
    memset(ix, 0, sizeof *ix);
    ts_arena_init(&ix->a);
    ix->own.rows = malloc((all + 1) * sizeof(*ix->own.rows));
    ix->own.nrows = n;
    ix->tpl = calloc(all + 1, sizeof(*ix->tpl));
    ix->has = calloc(all + 1, 1);
    ix->mode = calloc(all + 1, sizeof(*ix->mode));
    ix->wanted = calloc(all + 1, sizeof(*ix->wanted));
    ix->as_runs = calloc(all + 1, 1);
    ix->was = calloc(all + 1, sizeof(*ix->was));
    ix->nfresh = n;
    if (!ix->own.rows || !ix->tpl || !ix->has || !ix->mode || !ix->wanted || !ix->as_runs ||
        !ix->was)
        return 0;
    if (n)
        memcpy(ix->own.rows, f->decisions->rows, n * sizeof(*ix->own.rows));
    for (size_t i = 0; i < n; i++)
        ix->was[i] = &f->decisions->rows[i];
    if ((hold && nleft && !add_left(ix, cur, left, nleft)) ||
        !reconf__rows_index(&ix->own, &ix->rows))
        return 0;
    ix->d = &ix->own;
    templates(ix, f);
    if (!pin(ix, f, cur, hold, cat))
        return 0;
    /* nothing pinned, held or added: the fresh plan's rows, as they are */
    if (!ix->pinned && ix->own.nrows == n) {
        ix->d = f->decisions;
        for (size_t i = 0; i < n; i++)
            ix->tpl[i].row = &f->decisions->rows[i];
    }
    ix->rows.d = ix->d;
    return 1;
}

void reconf__keepix_free(struct reconf__keepix *ix)
{
    free(ix->own.rows);
    free(ix->tpl);
    free(ix->has);
    free(ix->mode);
    free(ix->wanted);
    free(ix->as_runs);
    free(ix->was);
    reconf__rows_free(&ix->rows);
    ts_arena_free(&ix->a);
    memset(ix, 0, sizeof *ix);
}
