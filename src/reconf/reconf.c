/*
 * reconf.c - the plan's MIG geometry per card, read from a built plan or
 * from `tessera plan -o json` output (docs/plan-json.md), and its
 * difference with what a card holds (struct inv_gpu): keep, or the steps
 * (drain, destroy, create) that turn one into the other. Instances that
 * are in both (same profile ID at the same start) stay; destroys come
 * before creates. Also the `plan --current` report built on that.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "reconf/internal.h"
#include "util/jsonread.h"

const char *const reconf_verdict_names[] = {"keep",    "change",      "mig-disabled", "mig-enabled",
                                            "no-card", "wrong-model", "no-profile"};

void reconf_plan_release(struct reconf_plan *p)
{
    ts_arena_free(&p->arena);
    p->t = NULL;
    p->idx = NULL;
    p->n = 0;
}

/* The tenant holding a card without MIG (see struct reconf_card). */
static void set_owner(struct reconf_card *t, const struct plan_gpu *g)
{
    for (size_t k = 0; !t->mig && k < g->ninst; k++) {
        const struct plan_inst *in = &g->inst[k];
        if (in->guest || !in->row)
            continue;
        if (t->owner && strcmp(t->owner, in->row->tenant->name) != 0) {
            t->owner = "shared";
            t->owner_workload = NULL;
            return;
        }
        if (!t->owner) {
            t->owner = in->row->tenant->name;
            t->owner_workload = in->row->workload->name;
        }
    }
}

static struct reconf_want want_of(const struct plan_inst *in)
{
    int mig = in->profile != NULL;
    return (struct reconf_want){mig ? in->profile->name : NULL,
                                mig ? in->start : -1,
                                mig ? in->size : 0,
                                in->row ? in->row->tenant->name : NULL,
                                in->row ? in->row->workload->name : NULL,
                                in->replica,
                                in->gpu_part,
                                in->guest,
                                !in->row,
                                in->sm_percent,
                                in->mem_gib};
}

/* One planned card: its MIG geometry (want) and every occupant (held). */
static int card_from_plan(struct ts_arena *a, const struct plan_gpu *g, struct reconf_card *t)
{
    *t = (struct reconf_card){.node = g->node->name,
                              .model = g->model->name,
                              .mode = plan_mode_names[g->mode],
                              .index = g->index,
                              .mig = g->mode == PLAN_MIG};
    set_owner(t, g);
    t->want = ts_arena_array(a, g->ninst + 1, sizeof(*t->want));
    t->held = ts_arena_array(a, g->ninst + 1, sizeof(*t->held));
    if (!t->want || !t->held)
        return 0;
    for (size_t k = 0; k < g->ninst; k++) {
        t->held[t->nheld++] = want_of(&g->inst[k]);
        if (t->mig)
            t->want[t->nwant++] = want_of(&g->inst[k]);
    }
    return 1;
}

ts_status reconf_plan_from_plan(const struct plan *p, struct reconf_plan *out, struct ts_error *err)
{
    ts_arena_init(&out->arena);
    out->n = 0;
    out->node = NULL;
    out->idx = NULL;
    out->t = ts_arena_array(&out->arena, p->ngpus + 1, sizeof(*out->t));
    int ok = out->t != NULL;
    for (size_t i = 0; ok && i < p->ngpus; i++)
        ok = card_from_plan(&out->arena, &p->gpus[i], &out->t[out->n++]);
    if (!ok || !reconf__plan_index(out)) {
        reconf_plan_release(out);
        return ts_err(err, TS_NOMEM, "out of memory");
    }
    return TS_OK;
}

/* ---- reading plan JSON ----------------------------------------------------- */

/* A string field copied into the arena; null allowed when nullable. */
static ts_status plan_str(const struct ts_jread *r, struct ts_arena *a, json_t *o, const char *key,
                          const char *path, int nullable, const char **out)
{
    char buf[256];
    *out = NULL;
    if (nullable && json_is_null(json_object_get(o, key)))
        return TS_OK;
    ts_status st = ts_jread_str(r, o, key, path, buf, sizeof buf);
    if (st == TS_OK && !(*out = ts_arena_strdup(a, buf)))
        st = ts_err(r->err, TS_NOMEM, "out of memory");
    return st;
}

/* o[key] absent (0), else an integer in [lo, hi]. */
static ts_status opt_int(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                         int lo, int hi, int *out)
{
    *out = 0;
    return json_object_get(o, key) ? ts_jread_int(r, o, key, path, lo, hi, out) : TS_OK;
}

/* o[key] absent (0), else a boolean. */
static ts_status opt_bool(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                          int *out)
{
    char p[TS_PATH_MAX];
    json_t *v = json_object_get(o, key);
    *out = json_is_true(v);
    ts_json_path(p, sizeof p, path, key, -1);
    return !v || json_is_boolean(v) ? TS_OK : ts_jread_bad(r, p, "expected true or false");
}

/* o[key] absent (0), else a number from 0 to CAT_MEMORY_GIB_MAX. */
static ts_status opt_gib(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                         double *out)
{
    char p[TS_PATH_MAX];
    json_t *v = json_object_get(o, key);
    *out = json_number_value(v);
    ts_json_path(p, sizeof p, path, key, -1);
    if (!v || (json_is_number(v) && *out >= 0 && *out <= CAT_MEMORY_GIB_MAX))
        return TS_OK;
    return ts_jread_bad(r, p, "expected a number from 0 to %d", CAT_MEMORY_GIB_MAX);
}

/* What plan JSON adds to the geometry (a NodeConfig has none of it):
 * replica numbers, memory and shares, flags; each checked when present. */
static ts_status plan_inst_extra(const struct ts_jread *r, json_t *o, const char *path,
                                 struct reconf_want *w)
{
    ts_status st = opt_int(r, o, "replica", path, 0, PLAN_MAX_INSTANCES, &w->replica);
    if (st == TS_OK)
        st = opt_int(r, o, "gpuPart", path, 0, SPEC_NODE_GPUS_MAX, &w->gpu_part);
    if (st == TS_OK)
        st = opt_int(r, o, "smPercent", path, 0, 100, &w->sm_percent);
    if (st == TS_OK)
        st = opt_gib(r, o, "memoryGiB", path, &w->mem_gib);
    if (st == TS_OK)
        st = opt_bool(r, o, "guest", path, &w->guest);
    if (st == TS_OK)
        st = opt_bool(r, o, "canary", path, &w->canary);
    return st;
}

static ts_status plan_inst(const struct ts_jread *r, struct ts_arena *a, json_t *o,
                           const char *path, int mig, struct reconf_want *w)
{
    ts_status st = ts_jread_obj(r, o, path);
    w->start = -1;
    if (st == TS_OK)
        st = plan_str(r, a, o, "profile", path, !mig, &w->profile);
    if (st == TS_OK && mig)
        st = ts_jread_int(r, o, "start", path, 0, TS_MIG_GRID_MAX - 1, &w->start);
    if (st == TS_OK && mig)
        st = ts_jread_int(r, o, "size", path, 1, TS_MIG_GRID_MAX, &w->size);
    if (st == TS_OK)
        st = plan_str(r, a, o, "tenant", path, 1, &w->tenant);
    if (st == TS_OK)
        st = plan_str(r, a, o, "workload", path, 1, &w->workload);
    if (st == TS_OK)
        st = plan_inst_extra(r, o, path, w);
    return st;
}

/* node: the NodeConfig's node (its cards name none), or NULL: the card's. */
static ts_status plan_gpu(const struct ts_jread *r, struct ts_arena *a, json_t *o, const char *path,
                          const char *node, struct reconf_card *t)
{
    json_t *insts;
    ts_status st = ts_jread_obj(r, o, path);
    t->node = node;
    if (st == TS_OK && !node)
        st = plan_str(r, a, o, "node", path, 0, &t->node);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "index", path, 0, RECONF_GPU_INDEX_MAX, &t->index);
    if (st == TS_OK)
        st = plan_str(r, a, o, "model", path, 0, &t->model);
    if (st == TS_OK)
        st = plan_str(r, a, o, "mode", path, 0, &t->mode);
    if (st == TS_OK && json_object_get(o, "sharing"))
        st = plan_str(r, a, o, "sharing", path, 0, &t->sharing);
    if (st == TS_OK)
        st = ts_jread_arr(r, o, "instances", path, RECONF_CARD_INSTANCES_MAX, &insts);
    if (st != TS_OK)
        return st;
    t->mig = strcmp(t->mode, "mig") == 0;
    t->want = ts_arena_array(a, json_array_size(insts) + 1, sizeof(*t->want));
    t->held = ts_arena_array(a, json_array_size(insts) + 1, sizeof(*t->held));
    if (!t->want || !t->held)
        return ts_err(r->err, TS_NOMEM, "out of memory");
    for (size_t i = 0; st == TS_OK && i < json_array_size(insts); i++) {
        char ip[TS_PATH_MAX];
        ts_json_path(ip, sizeof ip, path, "instances", (long)i);
        st = plan_inst(r, a, json_array_get(insts, i), ip, t->mig, &t->held[t->nheld++]);
        if (t->mig)
            t->want[t->nwant++] = t->held[t->nheld - 1];
    }
    return st;
}

int reconf_text_is_plan(const char *text, size_t len)
{
    json_t *doc = json_loadb(text, len, 0, NULL);
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    int is = kind && strcmp(kind, "Plan") == 0;
    json_decref(doc);
    return is;
}

/* kind Plan, or NodeConfig with its node in out->node. */
static ts_status plan_kind(const struct ts_jread *r, json_t *doc, struct reconf_plan *out)
{
    char kind[32];
    ts_status st = ts_jread_obj(r, doc, "");
    if (st == TS_OK)
        st = ts_jread_str(r, doc, "kind", "", kind, sizeof kind);
    if (st == TS_OK && strcmp(kind, "NodeConfig") == 0)
        return plan_str(r, &out->arena, doc, "node", "", 0, &out->node);
    if (st == TS_OK && strcmp(kind, "Plan"))
        st = ts_jread_bad(r, "kind",
                          "expected Plan (tessera plan -o json) or NodeConfig (tessera render's "
                          "nodes/NODE/agent.json)");
    return st;
}

static ts_status plan_doc(const struct ts_jread *r, json_t *doc, struct reconf_plan *out)
{
    json_t *gpus;
    ts_status st = plan_kind(r, doc, out);
    if (st == TS_OK)
        st = ts_jread_arr(r, doc, "gpus", "", RECONF_PLAN_GPUS_MAX, &gpus);
    if (st != TS_OK)
        return st;
    out->t = ts_arena_array(&out->arena, json_array_size(gpus) + 1, sizeof(*out->t));
    if (!out->t)
        return ts_err(r->err, TS_NOMEM, "out of memory");
    for (size_t i = 0; st == TS_OK && i < json_array_size(gpus); i++) {
        char ip[TS_PATH_MAX];
        ts_json_path(ip, sizeof ip, "", "gpus", (long)i);
        st = plan_gpu(r, &out->arena, json_array_get(gpus, i), ip, out->node, &out->t[out->n++]);
    }
    return st;
}

ts_status reconf_plan_parse(const char *text, size_t len, const char *file, struct reconf_plan *out,
                            struct ts_error *err)
{
    json_t *doc;
    ts_arena_init(&out->arena);
    out->t = NULL;
    out->idx = NULL;
    out->n = 0;
    out->node = NULL;
    ts_status st = ts_jread_load(text, len, file, &doc, err);
    if (st != TS_OK)
        return st;
    struct ts_jread r = {file, err};
    st = plan_doc(&r, doc, out);
    json_decref(doc);
    if (st == TS_OK && !reconf__plan_index(out))
        st = ts_err(err, TS_NOMEM, "out of memory");
    if (st != TS_OK)
        reconf_plan_release(out);
    return st;
}

/* ---- the difference -------------------------------------------------------- */

const struct inv_gpu *inv_gpu_at(const struct inv_node *inv, int index)
{
    for (int i = 0; inv && i < inv->ngpu; i++)
        if (inv->gpu[i].index == index)
            return &inv->gpu[i];
    return NULL;
}

static void verdict(struct reconf_diff *d, int v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void verdict(struct reconf_diff *d, int v, const char *fmt, ...)
{
    va_list ap;
    d->verdict = v;
    va_start(ap, fmt);
    vsnprintf(d->why, sizeof d->why, fmt, ap);
    va_end(ap);
}

/* 1 when the card is not the model the plan put there. */
static int wrong_model(const struct inv_gpu *g, const struct reconf_card *t,
                       const struct cat_catalog *cat, struct reconf_diff *d)
{
    const struct cat_model *pm = cat && t->model ? cat_model_find(cat, t->model) : NULL;
    const struct cat_model *cm = cat ? cat_model_find(cat, g->name) : NULL;
    if (!pm || pm == cm)
        return 0;
    verdict(d, RECONF_WRONG_MODEL,
            "the plan puts a %s on GPU %d of node %s, but the card is "
            "'%s' (%s)",
            t->model, t->index, t->node, g->name, cm ? cm->name : "not in the catalog");
    return 1;
}

static int mode_mismatch(const struct inv_gpu *g, const struct reconf_card *t,
                         struct reconf_diff *d)
{
    if (!t->mig && g->mig_current == 1 && strcmp(t->mode, "free") != 0) {
        verdict(d, RECONF_MIG_ON,
                "the plan uses GPU %d whole (%s) but its MIG mode is enabled: "
                "an operator must disable it (nvidia-smi -i %d -mig 0); tessera never changes "
                "MIG mode",
                t->index, t->mode, g->index);
        return 1;
    }
    if (t->mig && g->mig_current != 1) {
        verdict(d, RECONF_MIG_OFF,
                "the plan gives GPU %d a MIG geometry but its MIG mode is %s "
                "(pending %s): an operator must enable it (nvidia-smi -i %d -mig 1); tessera "
                "never changes MIG mode",
                t->index, g->mig_current < 0 ? "unsupported" : "disabled",
                g->mig_pending == 1 ? "enabled" : "disabled", g->index);
        return 1;
    }
    return 0;
}

static void add_step(struct reconf_diff *d, int kind, int gi_id, const struct inv_profile *p,
                     const char *name, struct inv_placement pl)
{
    struct reconf_step *s = &d->step[d->nstep++];
    s->kind = kind;
    s->gi_id = gi_id;
    s->profile_id = p ? p->id : -1;
    ts_copy(s->profile, sizeof s->profile, name);
    s->pl = pl;
    d->ndestroy += kind == RECONF_DESTROY;
    d->ncreate += kind == RECONF_CREATE;
}

void reconf_diff_card(const struct inv_gpu *g, const struct reconf_card *t,
                      const struct cat_catalog *cat, struct reconf_diff *d)
{
    const struct inv_profile *want_p[INV_GIS_MAX] = {0};
    int matched[INV_GIS_MAX] = {0}, kept[INV_GIS_MAX] = {0};
    memset(d, 0, sizeof *d);
    if (!g) {
        verdict(d, RECONF_NO_CARD, "node %s has no GPU %d", t->node, t->index);
        return;
    }
    if (wrong_model(g, t, cat, d) || mode_mismatch(g, t, d) || !t->mig)
        return;
    if (t->nwant > INV_GIS_MAX) {
        verdict(d, RECONF_NO_PROFILE, "the plan puts %d instances on GPU %d", t->nwant, t->index);
        return;
    }
    for (int w = 0; w < t->nwant; w++)
        if (!(want_p[w] = inv_profile_for(g, t->want[w].profile, t->want[w].size))) {
            verdict(d, RECONF_NO_PROFILE, "GPU %d ('%s') offers no MIG profile %s of size %d",
                    t->index, g->name, t->want[w].profile, t->want[w].size);
            return;
        }
    for (int i = 0; i < g->ngi; i++)
        for (int w = 0; w < t->nwant && !kept[i]; w++)
            if (!matched[w] && want_p[w]->id == g->gi[i].profile_id &&
                t->want[w].start == g->gi[i].pl.start)
                matched[w] = kept[i] = 1;
    for (int i = 0; i < g->ngi; i++)
        if (!kept[i])
            add_step(d, RECONF_DESTROY, g->gi[i].id, NULL, g->gi[i].profile, g->gi[i].pl);
    for (int w = 0; w < t->nwant; w++)
        if (!matched[w])
            add_step(d, RECONF_CREATE, -1, want_p[w], want_p[w]->name,
                     (struct inv_placement){t->want[w].start, t->want[w].size});
    d->verdict = d->nstep ? RECONF_CHANGE : RECONF_KEEP;
}

void reconf_step_text(const struct reconf_step *s, struct ts_sbuf *out)
{
    if (s->kind == RECONF_DESTROY)
        ts_sbuf_printf(out, "destroy GPU instance %d (%s at %d:%d) and its compute instances",
                       s->gi_id, s->profile, s->pl.start, s->pl.size);
    else
        ts_sbuf_printf(out, "create %s (profile ID %d) at %d:%d with a full compute instance",
                       s->profile, s->profile_id, s->pl.start, s->pl.size);
}

const struct reconf_want *reconf_plan_find(const struct reconf_plan *p, const char *node, int index,
                                           int start)
{
    const struct reconf_card *t = reconf_plan_card(p, node, index);
    for (int k = 0; t && k < t->nwant; k++)
        if (t->want[k].start == start)
            return &t->want[k];
    return NULL;
}

/* ---- plan --current --------------------------------------------------------- */

enum { RC_KEEP, RC_CHANGE, RC_OPERATOR, RC_UNKNOWN, RC_N };

static const struct inv_node *node_inventory_of(const struct inv_node *inv, int ninv,
                                                const char *node)
{
    for (int i = 0; i < ninv; i++)
        if (strcmp(inv[i].node, node) == 0)
            return &inv[i];
    return NULL;
}

/* The diff of target t (verdict -1: no inventory for its node); its class. */
static int report_card(const struct reconf_card *t, const struct inv_node *inv, int ninv,
                       const struct cat_catalog *cat, struct reconf_diff *d)
{
    const struct inv_node *ni = node_inventory_of(inv, ninv, t->node);
    if (!ni) {
        memset(d, 0, sizeof *d);
        d->verdict = -1;
        snprintf(d->why, sizeof d->why, "no inventory for node %s", t->node);
        return RC_UNKNOWN;
    }
    reconf_diff_card(inv_gpu_at(ni, t->index), t, cat, d);
    return d->verdict == RECONF_KEEP     ? RC_KEEP
           : d->verdict == RECONF_CHANGE ? RC_CHANGE
                                         : RC_OPERATOR;
}

void reconf_text(const struct reconf_plan *p, const struct inv_node *inv, int ninv,
                 const struct cat_catalog *cat, struct ts_sbuf *out)
{
    int count[RC_N] = {0}, destroys = 0, creates = 0;
    struct reconf_diff d;
    ts_sbuf_printf(out, "\nReconfiguration (against %d inventor%s):\n", ninv,
                   ninv == 1 ? "y" : "ies");
    for (int i = 0; i < p->n; i++) {
        const struct reconf_card *t = &p->t[i];
        int c = report_card(t, inv, ninv, cat, &d);
        count[c]++;
        destroys += d.ndestroy;
        creates += d.ncreate;
        ts_sbuf_printf(out, "  %s GPU %d (%s): ", t->node, t->index, t->model);
        if (c == RC_KEEP) {
            ts_sbuf_puts(out, "keep\n");
            continue;
        }
        if (c != RC_CHANGE) {
            ts_sbuf_printf(out, "%s: %s\n", c == RC_UNKNOWN ? "unknown" : "operator", d.why);
            continue;
        }
        ts_sbuf_puts(out, "reconfigure\n");
        if (d.ndestroy) /* only a destroy can disturb a pod: creates take free slices */
            ts_sbuf_puts(out, "    1. drain the card (its pods are evicted)\n");
        for (int k = 0; k < d.nstep; k++) {
            ts_sbuf_printf(out, "    %d. ", k + 1 + (d.ndestroy > 0));
            reconf_step_text(&d.step[k], out);
            ts_sbuf_puts(out, "\n");
        }
    }
    ts_sbuf_printf(out,
                   "Cards: %d keep, %d reconfigure (%d destroy, %d create), %d need an "
                   "operator, %d without inventory\n",
                   count[RC_KEEP], count[RC_CHANGE], destroys, creates, count[RC_OPERATOR],
                   count[RC_UNKNOWN]);
}

static json_t *step_json(const struct reconf_step *s)
{
    if (s->kind == RECONF_DESTROY)
        return json_pack("{s:s, s:i, s:s, s:i, s:i}", "action", "destroy", "gpuInstance", s->gi_id,
                         "profile", s->profile, "start", s->pl.start, "size", s->pl.size);
    return json_pack("{s:s, s:s, s:i, s:i, s:i}", "action", "create", "profile", s->profile,
                     "profileId", s->profile_id, "start", s->pl.start, "size", s->pl.size);
}

json_t *reconf_json(const struct reconf_plan *p, const struct inv_node *inv, int ninv,
                    const struct cat_catalog *cat)
{
    static const char *const cls[] = {"keep", "reconfigure", "operator", "unknown"};
    int count[RC_N] = {0}, destroys = 0, creates = 0;
    json_t *cards = json_array();
    struct reconf_diff d;
    for (int i = 0; i < p->n; i++) {
        const struct reconf_card *t = &p->t[i];
        int c = report_card(t, inv, ninv, cat, &d);
        json_t *steps = json_array();
        count[c]++;
        destroys += d.ndestroy;
        creates += d.ncreate;
        if (c == RC_CHANGE && d.ndestroy)
            json_array_append_new(steps, json_pack("{s:s}", "action", "drain"));
        for (int k = 0; k < d.nstep; k++)
            json_array_append_new(steps, step_json(&d.step[k]));
        json_array_append_new(cards,
                              json_pack("{s:s, s:i, s:s, s:s, s:s?, s:o}", "node", t->node, "index",
                                        t->index, "model", t->model, "action", cls[c], "reason",
                                        c >= RC_OPERATOR ? d.why : NULL, "steps", steps));
    }
    return json_pack("{s:o, s:{s:i, s:i, s:i, s:i, s:i, s:i}}", "cards", cards, "counts", "keep",
                     count[RC_KEEP], "reconfigure", count[RC_CHANGE], "operator",
                     count[RC_OPERATOR], "unknown", count[RC_UNKNOWN], "destroy", destroys,
                     "create", creates);
}
