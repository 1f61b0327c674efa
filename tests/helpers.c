/*
 * helpers.c - see helpers.h.
 */
#include "helpers.h"
#include "admit/admit.h"
#include "util/file.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *th_src_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("TESSERA_SRC");
    snprintf(buf, sizeof(buf), "%s/%s", root ? root : ".", rel);
    return buf;
}

static void run_rest(struct th_job *j, int solver)
{
    if (j->st == TS_OK)
        j->st = decide_run(j->model, j->cat, &j->d, &j->diag);
    struct plan_options opt = {solver, 20.0};
    if (j->st == TS_OK)
        j->st = plan_build(j->model, j->cat, j->d, &opt, &j->plan, &j->diag);
    const char *bad = j->plan ? th_check_plan(j->plan) : NULL;
    if (bad)
        fail_msg("th_check_plan: %s", bad);
}

void th_run_text(struct th_job *j, const char *yaml, int solver)
{
    memset(j, 0, sizeof(*j));
    j->st = cat_load(NULL, 0, &j->cat, &j->diag);
    if (j->st == TS_OK)
        j->st = spec_load_text(yaml, strlen(yaml), "test.yaml", &j->model, &j->diag);
    run_rest(j, solver);
}

void th_run_file(struct th_job *j, const char *path, int solver)
{
    memset(j, 0, sizeof(*j));
    j->st = cat_load(NULL, 0, &j->cat, &j->diag);
    if (j->st == TS_OK)
        j->st = spec_load(&path, 1, &j->model, &j->diag);
    run_rest(j, solver);
}

void th_free(struct th_job *j)
{
    plan_free(j->plan);
    decide_free(j->d);
    spec_model_free(j->model);
    cat_free(j->cat);
    memset(j, 0, sizeof(*j));
}

const char *th_first_error(const struct th_job *j)
{
    static char buf[2048];
    if (j->diag.count == 0)
        return "";
    ts_error_format(&j->diag.items[0], buf, sizeof(buf));
    return buf;
}

const struct decide_row *th_row(const struct th_job *j, const char *tenant, const char *workload)
{
    for (size_t i = 0; j->d && i < j->d->nrows; i++)
        if (strcmp(j->d->rows[i].tenant->name, tenant) == 0 &&
            strcmp(j->d->rows[i].workload->name, workload) == 0)
            return &j->d->rows[i];
    return NULL;
}

int th_tmpdir_make(char *dir, size_t size, const char *name)
{
    snprintf(dir, size, "/tmp/tessera-%s-XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

int th_tmpdir_remove(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- the independent validity checker ---- */

static char th_why[1024];

#define TH_BAD(...) (snprintf(th_why, sizeof(th_why), __VA_ARGS__), th_why)

static int th_cuda(const char *v)
{
    int major = 0, minor = 0;
    if (!v || sscanf(v, "%d.%d", &major, &minor) < 1)
        return 0;
    return major * 100 + minor;
}

/* Node and model rules, from docs/spec.md. */
static const char *th_node_rule(const struct plan_gpu *g, const struct plan_inst *in)
{
    const struct decide_row *r = in->row;
    if (!r)
        return NULL;
    if (r->model != g->model)
        return TH_BAD("%s gpu %d: %s/%s decided for %s sits on a %s", g->node->name, g->index,
                      r->tenant->name, r->workload->name, r->model->name, g->model->name);
    if (in->profile && !g->model->mig)
        return TH_BAD("%s gpu %d: MIG instance on a card without MIG", g->node->name, g->index);
    if (r->mech == DECIDE_VGPU && !g->node->vgpu_licensed)
        return TH_BAD("%s/%s: vGPU on node %s, which is not vgpuLicensed", r->tenant->name,
                      r->workload->name, g->node->name);
    if (r->mech == DECIDE_MPS && !g->node->mps_allowed)
        return TH_BAD("%s/%s: MPS on node %s, which has mps: false", r->tenant->name,
                      r->workload->name, g->node->name);
    if (r->mech == DECIDE_MEMORY_FRACTION && r->enforce == DECIDE_ENFORCE_DRIVER &&
        th_cuda(g->node->cuda_version) < 1304)
        return TH_BAD("%s/%s: driver-enforced fraction on node %s (CUDA %s)", r->tenant->name,
                      r->workload->name, g->node->name,
                      g->node->cuda_version ? g->node->cuda_version : "unknown");
    return NULL;
}

static const char *th_check_mig(const struct plan_gpu *g)
{
    unsigned long long used = 0;
    int compute = 0;
    for (size_t k = 0; k < g->ninst; k++) {
        const struct plan_inst *in = &g->inst[k];
        const struct cat_profile *pr = in->profile;
        if (!pr || pr < g->model->profiles || pr >= g->model->profiles + g->model->nprofiles)
            return TH_BAD("%s gpu %d: instance without a profile of %s", g->node->name, g->index,
                          g->model->name);
        int legal = 0;
        for (size_t s = 0; s < pr->nstarts; s++)
            legal |= pr->starts[s] == in->start;
        if (!legal || in->size != pr->mem_units)
            return TH_BAD("%s gpu %d: %s at %d is not a legal placement", g->node->name, g->index,
                          pr->name, in->start);
        unsigned long long mask = ((1ull << pr->mem_units) - 1ull) << in->start;
        if (used & mask || in->start + pr->mem_units > g->model->grid)
            return TH_BAD("%s gpu %d: %s at %d overlaps", g->node->name, g->index, pr->name,
                          in->start);
        used |= mask;
        compute += pr->compute;
        int same = 0;
        for (size_t j = 0; j < g->ninst; j++)
            same += g->inst[j].profile == pr;
        if (same > pr->max_count)
            return TH_BAD("%s gpu %d: %d x %s, at most %d", g->node->name, g->index, same, pr->name,
                          pr->max_count);
        if (in->row && in->row->profile != pr)
            return TH_BAD("%s gpu %d: instance profile differs from its decision", g->node->name,
                          g->index);
    }
    if (compute > g->model->compute_slices)
        return TH_BAD("%s gpu %d: %d compute slices", g->node->name, g->index, compute);
    return NULL;
}

static int th_trust(const struct spec_model *m, const struct decide_row *a,
                    const struct decide_row *b)
{
    return a->tenant == b->tenant || spec_tenants_trust(m, a->tenant->name, b->tenant->name);
}

static const char *th_check_shared(const struct plan *p, const struct plan_gpu *g)
{
    double mem = 0;
    int sm = 0, clients = 0, owners = 0;
    for (size_t k = 0; k < g->ninst; k++) {
        const struct plan_inst *in = &g->inst[k];
        if (!in->row || in->profile)
            return TH_BAD("%s gpu %d: MIG or canary on a non-MIG card", g->node->name, g->index);
        for (size_t j = 0; j < k; j++)
            if (!th_trust(p->model, in->row, g->inst[j].row))
                return TH_BAD("%s gpu %d: %s and %s share it without mutual trust", g->node->name,
                              g->index, in->row->tenant->name, g->inst[j].row->tenant->name);
        if (in->guest)
            continue;
        owners++;
        mem += in->mem_gib;
        sm += in->sm_percent;
        clients++;
        if (in->mem_gib + 1e-9 < (g->mode == PLAN_WHOLE || g->mode == PLAN_VGPU
                                      ? g->model->memory_gib
                                      : in->row->cap_gib))
            return TH_BAD("%s gpu %d: reserves less than its cap", g->node->name, g->index);
    }
    if (g->mode == PLAN_WHOLE || g->mode == PLAN_VGPU) {
        if (owners != 1)
            return TH_BAD("%s gpu %d: whole card with %d owners", g->node->name, g->index, owners);
        return NULL;
    }
    if (g->mode == PLAN_TIME_SLICING)
        for (size_t k = 0; k < g->ninst; k++)
            mem += g->inst[k].guest ? g->inst[k].mem_gib : 0;
    if (mem > g->model->memory_gib + 1e-6)
        return TH_BAD("%s gpu %d: caps %.2f GiB over %.2f GiB", g->node->name, g->index, mem,
                      g->model->memory_gib);
    if (g->mode == PLAN_MPS && (sm > 100 || clients > g->model->mps_max_clients))
        return TH_BAD("%s gpu %d: MPS %d%% / %d clients", g->node->name, g->index, sm, clients);
    return NULL;
}

static const char *th_check_card(const struct plan *p, const struct plan_gpu *g)
{
    for (size_t k = 0; k < g->ninst; k++) {
        const char *bad = th_node_rule(g, &g->inst[k]);
        if (bad)
            return bad;
    }
    if (g->mode == PLAN_FREE)
        return g->ninst ? TH_BAD("%s gpu %d: free but holds", g->node->name, g->index) : NULL;
    if (g->mode == PLAN_MIG)
        return th_check_mig(g);
    return th_check_shared(p, g);
}

/* Replica rep of r: placed once (all parts, one node), spread as asked. */
static const char *th_check_replicas(const struct plan *p, const struct decide_row *r)
{
    int parts = (!r->profile && (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU)) ? r->gpus : 1;
    int reps = r->workload->replicas;
    for (int rep = 0; rep < reps; rep++) {
        int found = 0;
        const struct plan_gpu *first = NULL;
        for (size_t i = 0; i < p->ngpus; i++)
            for (size_t k = 0; k < p->gpus[i].ninst; k++) {
                if (p->gpus[i].inst[k].row != r || p->gpus[i].inst[k].replica != rep)
                    continue;
                found++;
                if (first && first->node != p->gpus[i].node)
                    return TH_BAD("%s/%s replica %d spans nodes", r->tenant->name,
                                  r->workload->name, rep);
                first = first ? first : &p->gpus[i];
                for (size_t j = 0; j < p->ngpus && r->workload->spread != SPEC_SPREAD_NONE; j++)
                    for (size_t l = 0; l < p->gpus[j].ninst; l++) {
                        const struct plan_inst *o = &p->gpus[j].inst[l];
                        int clash = r->workload->spread == SPEC_SPREAD_NODE
                                        ? p->gpus[j].node == p->gpus[i].node
                                        : j == i;
                        if (o->row == r && o->replica != rep && clash)
                            return TH_BAD("%s/%s replicas %d and %d not spread", r->tenant->name,
                                          r->workload->name, rep, o->replica);
                    }
            }
        if (found != parts)
            return TH_BAD("%s/%s replica %d placed %d times, expected %d", r->tenant->name,
                          r->workload->name, rep, found, parts);
    }
    size_t total = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        for (size_t k = 0; k < p->gpus[i].ninst; k++)
            total += p->gpus[i].inst[k].row == r;
    if (total != (size_t)(reps * parts))
        return TH_BAD("%s/%s: %zu instances, expected %d", r->tenant->name, r->workload->name,
                      total, reps * parts);
    return NULL;
}

const char *th_check_plan(const struct plan *p)
{
    int used = 0;
    for (size_t i = 0; i < p->ngpus; i++) {
        const char *bad = th_check_card(p, &p->gpus[i]);
        if (bad)
            return bad;
        used += p->gpus[i].mode != PLAN_FREE;
    }
    for (size_t i = 0; i < p->decisions->nrows; i++) {
        const char *bad = th_check_replicas(p, &p->decisions->rows[i]);
        if (bad)
            return bad;
    }
    if (used != p->summary.gpus_used)
        return TH_BAD("summary says %d cards used, the cards say %d", p->summary.gpus_used, used);
    if (p->summary.lower_bound > used)
        return TH_BAD("lower bound %d above the %d cards used", p->summary.lower_bound, used);
    return NULL;
}

struct admit_policy *th_admit_policy(const char *rel, const char *shim)
{
    struct th_job j;
    th_run_file(&j, th_src_path(rel), PLAN_SOLVER_HEURISTIC);
    if (j.st != TS_OK)
        fail_msg("%s: %s", rel, th_first_error(&j));
    struct admit_options opt = {NULL, shim};
    struct admit_policy *pol = NULL;
    struct ts_error err = {0};
    assert_int_equal(admit_policy_build(j.plan, &opt, &pol, &err), TS_OK);
    th_free(&j); /* the policy owns copies: the plan may go */
    return pol;
}

char *th_read(const char *path, size_t *len)
{
    char *text = NULL;
    struct ts_error err = {0};
    return ts_file_read(path, (size_t)64 << 20, &text, len, &err) == TS_OK ? text : NULL;
}

void th_put_trusts(char *buf, size_t size, size_t *n, int t, int tenants)
{
    *n += (size_t)snprintf(buf + *n, size - *n, "  trusts: [");
    for (int o = 0, c = 0; o < tenants; o++)
        if (o != t)
            *n += (size_t)snprintf(buf + *n, size - *n, "%st%d", c++ ? ", " : "", o);
    *n += (size_t)snprintf(buf + *n, size - *n, "]\n");
}
