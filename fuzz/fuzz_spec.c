/*
 * fuzz_spec.c - libFuzzer target for the tenancy spec loader, and for what
 * runs on every spec that loads: decide, plan (heuristic solver) and
 * plan_verify. A plan that breaks its own rules aborts, so the fuzzer
 * finds planner bugs as well as parser bugs.
 */
#include <stdint.h>
#include <stdlib.h>
#include "catalog/catalog.h"
#include "decide/decide.h"
#include "plan/plan.h"
#include "spec/spec.h"

static struct cat_catalog *catalog(void)
{
    static struct cat_catalog *cat;
    if (!cat) {
        struct ts_diag d = {0};
        if (cat_load(NULL, 0, &cat, &d) != TS_OK)
            abort();
    }
    return cat;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    struct spec_model *m = NULL;
    struct decide_result *d = NULL;
    struct plan *p = NULL;
    if (!diag)
        return 0;
    if (spec_load_text((const char *)data, size, "fuzz.yaml", &m, diag) == TS_OK &&
        decide_run(m, catalog(), &d, diag) == TS_OK) {
        struct plan_options opt = {PLAN_SOLVER_HEURISTIC, 1.0};
        if (plan_build(m, catalog(), d, &opt, &p, diag) == TS_OK) {
            struct ts_error e;
            if (plan_verify(p, &e) != TS_OK || p->summary.gpus_used < p->summary.lower_bound)
                abort();
        }
    }
    plan_free(p);
    decide_free(d);
    spec_model_free(m);
    free(diag);
    return 0;
}
