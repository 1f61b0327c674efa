/*
 * shared.h - a workload other tenants use (Tenant `uses`) billed to them:
 * its hours split among its consumers under the PriceBook's sharedSplit.
 *
 * For each workload with consumers, its micro-GPU-hours of each model and
 * profile (usage.h's wtotals) are divided in proportion to the consumers'
 * weights (`equal`: 1 each; `weight`: each use's weight; `usage`: each
 * consumer's requests in the window, u->requests, or where the workload has
 * none counted each use's weight, the part then marked by_weight), exactly: each gets
 * the floor of its part and the micro-GPU-hours left go one each to the
 * largest remainders (ties to the consumer listed first in the spec), so
 * the parts add up to the workload's hours. The owner gets a passed-on part
 * of minus that sum. `none` (or a spec without PriceBook) splits nothing:
 * the owner pays all.
 */
#ifndef METER_SHARED_H
#define METER_SHARED_H

#include "meter/usage.h"
#include "spec/model.h"
#include "util/arena.h"

struct meter_shared_part {
    const char *tenant;           /* the consumer, or the owner on its passed-on part */
    const char *owner, *workload; /* the shared workload */
    const char *model, *profile;
    int64_t alloc_uh, usage_uh; /* negative on the owner's passed-on part */
    int passed_on;
    int by_weight; /* sharedSplit usage, no requests counted: split by weight */
};

/* The parts of every shared workload in u (parts in arena, *n of them). */
ts_status meter_shared_split(const struct meter_usage *u, const struct spec_model *m,
                             struct ts_arena *arena, struct meter_shared_part **out, size_t *n);

#endif
