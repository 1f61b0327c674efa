/*
 * test_pool_sums.c - a pool class's card configurations listed two ways
 * agree: by asking plan__pool_fits of every step, and by the sums the
 * enumeration keeps as it goes (plan__pool_sums: memory, MPS SM shares and
 * clients, spread replicas at most one a card, tenants that may not share a
 * card). On seeded random specs (tenants that trust each other or not,
 * MPS, time-slicing and guests, named pools, spread replicas), every
 * sharing class decide makes lists the same configurations in the same
 * order, or runs out of steps in both; and again with its memory caps
 * moved off decide's quarter GiB (a running plan's caps, replanned, are
 * the instances' own), where sums and the fits test might round apart. A
 * class of over PLAN_CFG_SUMS_TYPES_MAX types gets no sums. A failing seed
 * prints itself.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plan/internal.h"

#define SEEDS 300
#define STEPS 20000

static unsigned long long rng;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % n;
}

static const char *const models[] = {"a100-80gb", "l40s", "h200-141gb", "a30"};
static const char *const contracts[] = {"shared-trusted", "best-effort", "shared-trusted"};
static const char *const kinds[] = {"inference", "batch", "dev", "embedding"};

#define PUT(...) (n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__))

/* One node of one model; tenants of sharing contracts. */
static void gen_spec(char *buf, size_t size)
{
    size_t n = 0;
    PUT("apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n"
        "  - name: n0\n    gpus: [{model: %s, count: 64}]\n",
        models[rnd(4)]);
    int tenants = 1 + (int)rnd(3);
    for (int t = 0; t < tenants; t++) {
        const char *contract = contracts[rnd(3)];
        PUT("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t%d}\n"
            "spec:\n  contract: %s\n  namespaces: [t%d]\n",
            t, contract, t);
        if (tenants > 1 && rnd(2))
            th_put_trusts(buf, size, &n, t, tenants);
        PUT("  workloads:\n");
        int w = 2 + (int)rnd(6);
        for (int k = 0; k < w; k++) {
            PUT("  - {name: w%d, kind: %s, memoryHighWaterGiB: %u.%u, replicas: %u", k,
                kinds[rnd(4)], 1 + rnd(18), rnd(10), 1 + rnd(4));
            if (rnd(2) && strcmp(contract, "best-effort") != 0)
                PUT(", p99Ms: %u", 50 + rnd(200));
            if (rnd(3) == 0)
                PUT(", spread: none");
            if (rnd(8) == 0)
                PUT(", pool: t%d-p", t);
            PUT("}\n");
        }
    }
}

/* configs listed with sums (1) or without: 1 when listed, configs in c. */
static int listed(const struct plan_pool_class *pc, int with_sums, struct plan_cfg *c)
{
    struct plan_cfg_sums sums;
    assert_non_null(plan__pool_sums(pc, &sums));
    *c = (struct plan_cfg){.ntypes = pc->ntypes,
                           .demand = pc->demand,
                           .fits = plan__pool_fits,
                           .ctx = pc,
                           .sums = with_sums ? &sums : NULL,
                           .max_steps = STEPS};
    int ok = plan__cfg_enumerate(c);
    plan__cfg_sums_free(&sums);
    return ok;
}

/* The class of d's rows on model with mechanism mech; 1 when it has any. */
static int pool_class(const struct th_job *j, int mech, const struct decide_row **rows, int *demand,
                      struct plan_pool_class *pc)
{
    *pc = (struct plan_pool_class){j->model, NULL, mech, rows, 0, demand, NULL};
    for (size_t r = 0; r < j->d->nrows; r++) {
        const struct decide_row *x = &j->d->rows[r];
        if (x->mech != mech || x->gpus != 1)
            continue;
        pc->model = x->model;
        rows[pc->ntypes] = x;
        demand[pc->ntypes++] = x->workload->replicas;
    }
    return pc->ntypes > 0;
}

/* pc listed with sums and without: the same configurations in the same
 * order (fails the test otherwise); 1 when listed. */
static int same_lists(const struct plan_pool_class *pc, int seed, const char *what)
{
    struct plan_cfg a, b;
    int la = listed(pc, 1, &a), lb = listed(pc, 0, &b);
    if (la != lb || a.nconfigs != b.nconfigs ||
        (la && memcmp(a.configs, b.configs, a.nconfigs * pc->ntypes * sizeof(int))))
        fail_msg("seed %d, %s, %s: with sums %d (%zu configurations), without %d (%zu)", seed,
                 decide_mech_names[pc->mech], what, la, a.nconfigs, lb, b.nconfigs);
    plan__cfg_free(&a);
    plan__cfg_free(&b);
    return la;
}

static void test_sums_list_what_fits_lists(void **state)
{
    (void)state;
    static char buf[32768];
    int classes = 0, compared = 0;
    for (int seed = 0; seed < SEEDS; seed++) {
        rng = 0x5eed0000ull + (unsigned long long)seed;
        gen_spec(buf, sizeof(buf));
        struct th_job j;
        th_run_text(&j, buf, PLAN_SOLVER_HEURISTIC);
        for (int mech = DECIDE_MPS; j.d && mech <= DECIDE_TIME_SLICING; mech++) {
            const struct decide_row *rows[64];
            int demand[64];
            struct plan_pool_class pc;
            if (j.d->nrows > 64 || !pool_class(&j, mech, rows, demand, &pc))
                continue;
            classes++;
            compared += same_lists(&pc, seed, "decide's caps");
            struct decide_row moved[64];
            for (size_t t = 0; t < pc.ntypes; t++) {
                moved[t] = *rows[t];
                moved[t].cap_gib = rows[t]->cap_gib * (0.6 + 0.1 * rnd(7)) + 0.1 * rnd(10);
                rows[t] = &moved[t];
            }
            same_lists(&pc, seed, "caps off the quarter GiB");
        }
        th_free(&j);
    }
    /* the seeds reach both mechanisms and list most classes whole */
    assert_true(classes > SEEDS / 2);
    assert_true(compared > classes / 2);
}

/* Too many types for sums: none made, and the class is listed by its fits
 * test alone (its walk ends at its step cap). */
static void test_no_sums_past_the_types_cap(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j,
                "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
                "  nodes:\n  - name: n0\n    gpus: [{model: a100-80gb, count: 8}]\n---\n"
                "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t}\nspec:\n"
                "  contract: best-effort\n  namespaces: [t]\n  workloads:\n"
                "  - {name: w, kind: dev, memoryHighWaterGiB: 3}\n",
                PLAN_SOLVER_HEURISTIC);
    assert_non_null(j.d);
    size_t n = PLAN_CFG_SUMS_TYPES_MAX + 1;
    const struct decide_row **rows = calloc(n, sizeof(*rows));
    int *demand = calloc(n, sizeof(*demand));
    assert_non_null(rows);
    assert_non_null(demand);
    for (size_t t = 0; t < n; t++) {
        rows[t] = &j.d->rows[0];
        demand[t] = 1;
    }
    struct plan_pool_class pc = {j.model, j.d->rows[0].model, j.d->rows[0].mech, rows, n, demand,
                                 NULL};
    struct plan_cfg_sums sums;
    assert_null(plan__pool_sums(&pc, &sums));
    assert_null(sums.use);
    assert_null(sums.apart);
    pc.ntypes = PLAN_CFG_SUMS_TYPES_MAX;
    assert_non_null(plan__pool_sums(&pc, &sums));
    plan__cfg_sums_free(&sums);
    free(rows);
    free(demand);
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums_list_what_fits_lists),
        cmocka_unit_test(test_no_sums_past_the_types_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
