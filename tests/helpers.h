/*
 * helpers.h - small helpers shared by the cmocka unit tests: paths to the
 * source tree and fixtures, loading the worked example, decide + plan in
 * one call.
 */
#ifndef TESTS_HELPERS_H
#define TESTS_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "catalog/catalog.h"
#include "decide/decide.h"
#include "plan/plan.h"
#include "spec/spec.h"

/* $TESSERA_SRC/rel (static buffer, valid until the next call). */
const char *th_src_path(const char *rel);

/* Everything from one spec text: catalog (built-in), model, decisions, plan.
 * Fields after a failed stage stay NULL; diag holds the errors. */
struct th_job {
    struct cat_catalog *cat;
    struct spec_model *model;
    struct decide_result *d;
    struct plan *plan;
    struct ts_diag diag;
    ts_status st;
};
void th_run_text(struct th_job *j, const char *yaml, int solver);
void th_run_file(struct th_job *j, const char *path, int solver);
void th_free(struct th_job *j);

/* The admission policy of the spec at $TESSERA_SRC/rel, with --shim-path
 * shim and the default runtime class (the plan is freed before it is
 * used); fails the test when it cannot be built. */
struct admit_policy;
struct admit_policy *th_admit_policy(const char *rel, const char *shim);

/* An independent validity checker, written from docs/spec.md and the
 * catalog, not from the planner's plan_verify: MIG placements legal for the
 * card's profile placement list, no overlaps, per-profile counts and compute
 * within the card; pool memory sums within card memory, MPS shares and
 * clients; only mutually trusting tenants on a shared card; node
 * eligibility (vGPU on vgpuLicensed nodes, MPS where mps is allowed,
 * driver-enforced fractions on CUDA 13.4+, each instance on its decided
 * model); every replica placed once with all its GPU parts on one node;
 * replica spread. NULL when the plan holds, else what is wrong (static). */
const char *th_check_plan(const struct plan *p);

/* "  trusts: [...]\n" naming every tenant t0 .. t(tenants - 1) but t,
 * written at buf + *n (buf holds size bytes), *n moved past it: a tenant of
 * a generated spec that trusts every other. */
void th_put_trusts(char *buf, size_t size, size_t *n, int t, int tenants);

/* The first diag message, for asserts ("" when none). */
const char *th_first_error(const struct th_job *j);

/* The decision of tenant/workload, or NULL. */
const struct decide_row *th_row(const struct th_job *j, const char *tenant, const char *workload);

/* The whole file at path, NUL-terminated, its length in *len; NULL when it
 * cannot be read (or passes 64 MiB). */
char *th_read(const char *path, size_t *len);

/* A fresh folder /tmp/tessera-NAME-XXXXXX into dir (0, or -1 on failure),
 * and removing it with everything in it (for cmocka group setup/teardown). */
int th_tmpdir_make(char *dir, size_t size, const char *name);
int th_tmpdir_remove(const char *dir);

#endif
