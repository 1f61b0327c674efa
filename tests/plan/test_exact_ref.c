/*
 * test_exact_ref.c - the planner against an exact reference written here
 * (issue 12), independently of plan/: seeded fleets of up to 32 GPUs
 * (A100, H100, A30, L40S; every node eligible for everything) with tenants
 * whose workloads decide to MIG, whole GPUs (multi-GPU too), MPS, memory
 * fractions and time-slicing, best-effort guests among them, sometimes a
 * PriceBook. The reference optimum: every card holds one kind of thing, so
 * per card model it is the whole GPUs plus, for each kind (MIG, MPS,
 * fractions, time-slicing with the guests), the fewest cards an exhaustive
 * branch-and-bound search packs its instances into, with what one card
 * holds checked from the catalog and docs/spec.md (legal MIG starts without
 * overlap, compute slices and profile counts; memory caps, MPS SM shares
 * and clients, one MPS server per tenant, mutual trust, replica spread).
 * For every seed:
 *   - when the reference can place the spec (whole replicas fit on nodes,
 *     enough cards of each model), tessera places it, with the optimum's
 *     card count per model and its cost, and a lower bound no higher;
 *   - when it cannot, tessera refuses with a located reason;
 *   - th_check_plan holds (th_run_text runs it).
 * Also: a job needing 8 GPUs on one node is placed although MIG replicas
 * spread across nodes (whole GPUs go first), and best-effort guests count
 * in the lower bound. TESSERA_SEED=N reruns one seed.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOC "---\napiVersion: tessera.dev/v1alpha1\n"

static unsigned long long rng;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % n;
}

static const char *const models[] = {"a100-80gb", "h100-80gb-sxm", "a30", "l40s"};
static const char *const contracts[] = {"isolated", "shared-trusted", "best-effort",
                                        "shared-trusted"};
static const char *const kinds[] = {"inference", "batch", "embedding", "dev"};

#define PUT(...) (n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__))

static void gen_fleet(char *buf, size_t size, size_t *np)
{
    size_t n = *np;
    PUT("apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n");
    int nodes = 1 + (int)rnd(4), left = 32;
    for (int i = 0; i < nodes && left > 0; i++) {
        PUT("  - name: n%d\n    cudaVersion: \"13.4\"\n    vgpuLicensed: true\n    mps: true\n"
            "    gpus:\n",
            i);
        unsigned first = rnd(4), k = 1 + rnd(2);
        for (unsigned m = 0; m < k && left > 0; m++) {
            int count = 1 + (int)rnd(8);
            count = count > left ? left : count;
            left -= count;
            PUT("    - {model: %s, count: %d}\n", models[(first + m) % 4], count);
        }
    }
    *np = n;
}

static void gen_spec(char *buf, size_t size)
{
    size_t n = 0;
    gen_fleet(buf, size, &n);
    int tenants = 1 + (int)rnd(3);
    for (int t = 0; t < tenants; t++) {
        const char *contract = contracts[rnd(4)];
        PUT(DOC "kind: Tenant\nmetadata: {name: t%d}\nspec:\n  contract: %s\n  namespaces: [t%d]\n",
            t, contract, t);
        if (rnd(2))
            th_put_trusts(buf, size, &n, t, tenants);
        PUT("  workloads:\n");
        int w = 1 + (int)rnd(3);
        for (int k = 0; k < w; k++) {
            PUT("  - {name: w%d, kind: %s, memoryHighWaterGiB: %u, replicas: %u", k, kinds[rnd(4)],
                2 + rnd(60), 1 + rnd(2));
            if (rnd(3) == 0 && strcmp(contract, "best-effort") != 0)
                PUT(", p99Ms: %u", 20 + rnd(200));
            if (rnd(6) == 0)
                PUT(", gpus: %u", 2 + rnd(3));
            if (rnd(4) == 0)
                PUT(", spread: none");
            PUT("}\n");
        }
    }
    if (rnd(2))
        PUT(DOC
            "kind: PriceBook\nmetadata: {name: p}\nspec:\n  currency: EUR\n  prices:\n"
            "  - {model: a100-80gb, perGpuHour: \"2.00\"}\n"
            "  - {model: h100-80gb-sxm, perGpuHour: \"3.50\"}\n"
            "  - {model: a30, perGpuHour: \"0.80\"}\n  - {model: l40s, perGpuHour: \"1.10\"}\n");
}

/* ---- what one card holds, from the catalog and docs/spec.md ---- */

enum kind { K_WHOLE, K_MIG, K_MPS, K_FRACTION, K_TIME };

struct item {
    const struct decide_row *r;
    int kind;
};

static int kind_of(const struct decide_row *r)
{
    if (r->profile)
        return K_MIG;
    switch (r->mech) {
    case DECIDE_MPS: return K_MPS;
    case DECIDE_MEMORY_FRACTION: return K_FRACTION;
    case DECIDE_TIME_SLICING: return K_TIME;
    default: return K_WHOLE;
    }
}

/* Starts for profiles p[k..n) on a card whose taken units are `used`. */
static int starts_exist(const struct cat_profile *const *p, int n, int k, unsigned long long used)
{
    if (k == n)
        return 1;
    for (size_t s = 0; s < p[k]->nstarts; s++) {
        unsigned long long m = ((1ull << p[k]->mem_units) - 1) << p[k]->starts[s];
        if (!(used & m) && starts_exist(p, n, k + 1, used | m))
            return 1;
    }
    return 0;
}

static int mig_card_ok(const struct item *const *on, int n)
{
    const struct cat_profile *p[64];
    int compute = 0;
    for (int i = 0; i < n; i++) {
        int same = 0;
        for (int j = 0; j < n; j++)
            same += on[j]->r->profile == on[i]->r->profile;
        if (same > on[i]->r->profile->max_count)
            return 0;
        p[i] = on[i]->r->profile;
        compute += p[i]->compute;
    }
    return compute <= on[0]->r->model->compute_slices && starts_exist(p, n, 0, 0);
}

static int pool_card_ok(const struct spec_model *sm, const struct item *const *on, int n)
{
    double mem = 0;
    int smp = 0;
    for (int i = 0; i < n; i++) {
        const struct decide_row *r = on[i]->r;
        for (int j = 0; j < i; j++) {
            const struct decide_row *o = on[j]->r;
            if (o == r && r->workload->spread != SPEC_SPREAD_NONE)
                return 0;
            if (!spec_tenants_trust(sm, o->tenant->name, r->tenant->name))
                return 0;
            if (on[i]->kind == K_MPS && o->tenant != r->tenant)
                return 0;
        }
        mem += r->cap_gib;
        smp += r->sm_percent;
    }
    if (mem > on[0]->r->model->memory_gib + 1e-9)
        return 0;
    return on[0]->kind != K_MPS || (smp <= 100 && n <= on[0]->r->model->mps_max_clients);
}

/* ---- exhaustive bin packing ---- */

#define MAXB 64

struct bpp {
    const struct spec_model *sm;
    const struct item *items;
    int n;
    const struct item *bins[MAXB][64];
    int fill[MAXB];
    int best;
};

static int card_ok(struct bpp *s, int b)
{
    const struct item *const *on = s->bins[b];
    if (s->fill[b] > 32)
        return 0;
    if (on[0]->kind == K_MIG) {
        for (int i = 0; i < s->fill[b]; i++)
            for (int j = 0; j < i; j++)
                if (on[i]->r == on[j]->r && on[i]->r->workload->spread != SPEC_SPREAD_NONE)
                    return 0;
        return mig_card_ok(on, s->fill[b]);
    }
    return pool_card_ok(s->sm, on, s->fill[b]);
}

static void bpp_dfs(struct bpp *s, int i, int bins)
{
    if (bins >= s->best)
        return;
    if (i == s->n) {
        s->best = bins;
        return;
    }
    for (int b = 0; b <= bins && b < MAXB; b++) {
        if (b == bins && bins + 1 >= s->best)
            break;
        s->bins[b][s->fill[b]++] = &s->items[i];
        if (card_ok(s, b))
            bpp_dfs(s, i + 1, b == bins ? bins + 1 : bins);
        s->fill[b]--;
    }
}

/* Fewest cards for the items (all of one model and kind). */
static int bpp_min(const struct spec_model *sm, const struct item *items, int n)
{
    static struct bpp s;
    memset(&s, 0, sizeof(s));
    s.sm = sm;
    s.items = items;
    s.n = n;
    s.best = n + 1;
    bpp_dfs(&s, 0, 0);
    return n ? s.best : 0;
}

/* ---- the reference optimum and its feasibility ---- */

static int model_cards(const struct spec_model *sm, const char *model)
{
    int c = 0;
    for (size_t i = 0; i < sm->fleet->nnodes; i++)
        for (size_t g = 0; g < sm->fleet->nodes[i].ngpus; g++)
            c += strcmp(sm->fleet->nodes[i].gpus[g].model, model) == 0
                     ? sm->fleet->nodes[i].gpus[g].count
                     : 0;
    return c;
}

/* Multi-GPU replicas of model onto nodes (free[] cards each), exhaustively. */
static int whole_fits(const int *need, int n, int *free_, int nodes)
{
    if (n == 0)
        return 1;
    for (int k = 0; k < nodes; k++)
        if (free_[k] >= need[0]) {
            free_[k] -= need[0];
            int ok = whole_fits(need + 1, n - 1, free_, nodes);
            free_[k] += need[0];
            if (ok)
                return 1;
        }
    return 0;
}

static int whole_placeable(const struct spec_model *sm, const struct decide_result *d,
                           const char *model)
{
    int need[256], n = 0, free_[64] = {0}, nodes = 0;
    for (size_t i = 0; i < d->nrows; i++)
        if (kind_of(&d->rows[i]) == K_WHOLE && strcmp(d->rows[i].model->name, model) == 0)
            for (int k = 0; k < d->rows[i].workload->replicas && n < 256; k++)
                need[n++] = d->rows[i].gpus;
    for (size_t i = 0; i < sm->fleet->nnodes && nodes < 64; i++, nodes++)
        for (size_t g = 0; g < sm->fleet->nodes[i].ngpus; g++)
            if (strcmp(sm->fleet->nodes[i].gpus[g].model, model) == 0)
                free_[nodes] += sm->fleet->nodes[i].gpus[g].count;
    for (int a = 1; a < n; a++) /* biggest first */
        for (int b = a; b > 0 && need[b - 1] < need[b]; b--) {
            int t = need[b];
            need[b] = need[b - 1];
            need[b - 1] = t;
        }
    return whole_fits(need, n, free_, nodes);
}

/* The optimum's cards on model, or -1 when the fleet cannot hold them. */
static int ref_model(const struct spec_model *sm, const struct decide_result *d,
                     const struct cat_model *model)
{
    static struct item items[512];
    int total = 0;
    for (int kind = K_WHOLE; kind <= K_TIME; kind++) {
        int n = 0;
        for (size_t i = 0; i < d->nrows; i++) {
            const struct decide_row *r = &d->rows[i];
            if (r->model != model || kind_of(r) != kind)
                continue;
            for (int k = 0; k < r->workload->replicas && n < 512; k++) {
                items[n++] = (struct item){r, kind};
                total += kind == K_WHOLE ? r->gpus : 0;
            }
        }
        if (kind != K_WHOLE)
            total += bpp_min(sm, items, n);
    }
    if (total > model_cards(sm, model->name) || !whole_placeable(sm, d, model->name))
        return -1;
    return total;
}

static int plan_cards(const struct plan *p, const struct cat_model *model)
{
    int c = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        c += p->gpus[i].model == model && p->gpus[i].mode != PLAN_FREE;
    return c;
}

static int64_t price_of(const struct spec_model *sm, const struct cat_model *model)
{
    for (size_t k = 0; sm->pricebook && k < sm->pricebook->nprices; k++)
        if (strcmp(sm->pricebook->prices[k].model, model->name) == 0)
            return sm->pricebook->prices[k].per_gpu_hour;
    return -1;
}

struct tally {
    int planned, refused, proven;
};

/* Compare a plan with the reference, model by model. */
static void compare(unsigned seed, const struct th_job *j, int total, int64_t cost)
{
    const struct plan_summary *s = &j->plan->summary;
    for (size_t m = 0; m < j->cat->nmodels; m++) {
        const struct cat_model *model = &j->cat->models[m];
        if (model_cards(j->model, model->name) == 0)
            continue;
        int want = ref_model(j->model, j->d, model), got = plan_cards(j->plan, model);
        if (got != want)
            fail_msg("seed %u: %s: %d cards, the optimum is %d", seed, model->name, got, want);
    }
    if (s->gpus_used != total)
        fail_msg("seed %u: %d cards, the optimum is %d", seed, s->gpus_used, total);
    if (s->lower_bound > total)
        fail_msg("seed %u: lower bound %d above the optimum %d", seed, s->lower_bound, total);
    if (j->model->pricebook && s->cost_per_hour != cost)
        fail_msg("seed %u: cost %lld, the optimum's %lld", seed, (long long)s->cost_per_hour,
                 (long long)cost);
    if (s->optimal != (s->gpus_used <= s->lower_bound))
        fail_msg("seed %u: optimal says %d with %d used, bound %d", seed, s->optimal, s->gpus_used,
                 s->lower_bound);
}

static void one_seed(unsigned seed, struct tally *t)
{
    static char buf[32768];
    rng = seed * 0x9E3779B97F4A7C15ull + 7;
    gen_spec(buf, sizeof(buf));
    struct th_job j;
    th_run_text(&j, buf, PLAN_SOLVER_AUTO);
    if (!j.d) { /* decide refused: not the planner's business here */
        th_free(&j);
        return;
    }
    int total = 0, feasible = 1;
    int64_t cost = 0;
    for (size_t m = 0; m < j.cat->nmodels; m++) {
        const struct cat_model *model = &j.cat->models[m];
        int c = model_cards(j.model, model->name) ? ref_model(j.model, j.d, model) : 0;
        feasible &= c >= 0;
        total += c;
        cost += (int64_t)c * price_of(j.model, model);
    }
    if (!feasible) {
        if (j.st == TS_OK)
            fail_msg("seed %u: the reference cannot place it, tessera did", seed);
        if (j.diag.count == 0 || !j.diag.items[0].file[0])
            fail_msg("seed %u: refused without a located reason", seed);
        t->refused++;
    } else if (j.st != TS_OK) {
        fail_msg("seed %u: the reference places it in %d cards, tessera refused: %s\n%s", seed,
                 total, th_first_error(&j), buf);
    } else {
        compare(seed, &j, total, cost);
        t->planned++;
        t->proven += j.plan->summary.optimal;
    }
    th_free(&j);
}

static void test_reference_optimum(void **state)
{
    (void)state;
    struct tally t = {0, 0, 0};
    const char *one = getenv("TESSERA_SEED");
    if (one) {
        one_seed((unsigned)atoi(one), &t);
        return;
    }
    for (unsigned seed = 1; seed <= 200; seed++)
        one_seed(seed, &t);
    printf("reference: %d planned at the optimum (%d proven by the bound), %d refused\n", t.planned,
           t.proven, t.refused);
    assert_true(t.planned >= 60);
}

/* ---- joint placement and guests in the bound ---- */

static const char *joint_spec =
    "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n"
    "  - name: n0\n    gpus: [{model: a100-80gb, count: 8}]\n"
    "  - name: n1\n    gpus: [{model: a100-80gb, count: 8}]\n"
    "  - name: n2\n    gpus: [{model: a100-80gb, count: 2}]\n" DOC
    "kind: Tenant\nmetadata: {name: a}\nspec:\n  contract: isolated\n  namespaces: [a]\n"
    "  workloads:\n"
    "  - {name: small, kind: inference, memoryHighWaterGiB: 9, p99Ms: 100, replicas: 2, "
    "spread: node}\n"
    "  - {name: big, kind: batch, memoryHighWaterGiB: 70, gpus: 8, replicas: 1}\n";

/* MIG first would open a card on n0 and n1 for the spread replicas and
 * leave no node with 8 free cards; whole GPUs first place both. */
static void test_whole_before_mig(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j, joint_spec, PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    const struct spec_fleet_node *big = NULL;
    int parts = 0, mig = 0;
    for (size_t i = 0; i < j.plan->ngpus; i++) {
        const struct plan_gpu *g = &j.plan->gpus[i];
        mig += g->mode == PLAN_MIG;
        if (g->mode != PLAN_WHOLE)
            continue;
        assert_true(big == NULL || big == g->node); /* all 8 on one node */
        big = g->node;
        parts++;
    }
    assert_int_equal(parts, 8);
    assert_int_equal(mig, 2);
    assert_int_equal(j.plan->summary.gpus_used, 10);
    assert_int_equal(j.plan->summary.lower_bound, 10);
    assert_true(j.plan->summary.optimal);
    th_free(&j);
}

/* Three best-effort guests of 30 GiB: 90 GiB, two 80 GiB cards at least
 * (they used to count as free, bound 0). */
static void test_guests_in_bound(void **state)
{
    (void)state;
    static const char *spec =
        "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n"
        "  - name: n0\n    gpus: [{model: a100-80gb, count: 4}]\n" DOC
        "kind: Tenant\nmetadata: {name: b}\nspec:\n  contract: best-effort\n  namespaces: [b]\n"
        "  workloads:\n  - {name: dev, kind: dev, memoryHighWaterGiB: 30, replicas: 3, "
        "spread: none}\n";
    struct th_job j;
    th_run_text(&j, spec, PLAN_SOLVER_AUTO);
    assert_int_equal(j.st, TS_OK);
    const struct decide_row *r = th_row(&j, "b", "dev");
    assert_non_null(r);
    assert_int_equal(r->mech, DECIDE_TIME_SLICING);
    int want = (int)(3 * r->cap_gib / 80.0 + 1.0 - 1e-9); /* ceil of 3 caps / 80 GiB */
    assert_true(want >= 2);
    assert_int_equal(j.plan->summary.lower_bound, want);
    assert_int_equal(j.plan->summary.gpus_used, want);
    assert_true(j.plan->summary.optimal);
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_before_mig),
        cmocka_unit_test(test_guests_in_bound),
        cmocka_unit_test(test_reference_optimum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
