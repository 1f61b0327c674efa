/*
 * meter_ctx.h - the metering context the meter fuzz targets share: one
 * node with a MIG card (two tenants' instances), an MPS card and a
 * time-sliced card, planned once per process.
 */
#ifndef FUZZ_METER_CTX_H
#define FUZZ_METER_CTX_H

#include <stdlib.h>
#include <string.h>
#include "catalog/catalog.h"
#include "decide/decide.h"
#include "meter/attrib.h"
#include "plan/plan.h"
#include "spec/spec.h"

static const char spec[] =
    "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
    "  nodes: [{name: n1, mps: true, gpus: [{model: h100-80gb-sxm, count: 3}]}]\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: lab}\nspec:\n"
    "  contract: isolated\n  namespaces: [lab]\n  workloads:\n"
    "  - {name: big, kind: inference, memoryHighWaterGiB: 30, p99Ms: 100, trust: untrusted}\n"
    "  - {name: s, kind: inference, memoryHighWaterGiB: 8, p99Ms: 100, trust: untrusted}\n"
    "  - {name: t, kind: inference, memoryHighWaterGiB: 8, p99Ms: 100, trust: untrusted}\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: team}\nspec:\n"
    "  contract: shared-trusted\n  namespaces: [team]\n  workloads:\n"
    "  - {name: a, kind: inference, memoryHighWaterGiB: 20, p99Ms: 100, isolation: mps, "
    "smPercent: 30}\n"
    "  - {name: b, kind: inference, memoryHighWaterGiB: 20, p99Ms: 100, isolation: mps, "
    "smPercent: 70}\n---\n"
    "apiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: dev}\nspec:\n"
    "  contract: best-effort\n  namespaces: [dev]\n  workloads:\n"
    "  - {name: nb, kind: dev, memoryHighWaterGiB: 10}\n"
    "  - {name: nb2, kind: dev, memoryHighWaterGiB: 10}\n";

/* The context, built on first use; aborts if the fixed spec fails. */
static const struct meter_ctx *fuzz_meter_ctx(void)
{
    static struct meter_ctx ctx;
    if (ctx.model)
        return &ctx;
    static struct cat_catalog *cat;
    static struct spec_model *m;
    static struct decide_result *d;
    static struct plan *p;
    struct ts_diag diag = {0};
    struct plan_options opt = {PLAN_SOLVER_HEURISTIC, 1.0};
    if (cat_load(NULL, 0, &cat, &diag) != TS_OK ||
        spec_load_text(spec, strlen(spec), "f.yaml", &m, &diag) != TS_OK ||
        decide_run(m, cat, &d, &diag) != TS_OK || plan_build(m, cat, d, &opt, &p, &diag) != TS_OK)
        abort();
    /* no time window (max_age_ms, max_ahead_ms 0): every stamp is explored */
    ctx = (struct meter_ctx){.model = m, .cat = cat, .plan = p};
    return &ctx;
}

#endif
