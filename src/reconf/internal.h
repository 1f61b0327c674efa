/*
 * internal.h - what reconf's own files share: the keep candidate of
 * replanning (keep.c), used by replan.c.
 */
#ifndef RECONF_INTERNAL_H
#define RECONF_INTERNAL_H

#include "reconf/reconf.h"

/* The plan that keeps every running instance of cur whose workload fresh's
 * decisions still hold (same mechanism and profile) and places what is
 * missing in free space. *out NULL and *why (in a) when it cannot: a new
 * pool or guest, no room, or the result fails plan_verify. TS_NOMEM only. */
ts_status reconf__keep_plan(const struct plan *fresh, const struct reconf_plan *cur,
                            struct plan **out, const char **why, struct ts_arena *a);

/* 1 when a MIG instance of g other than self overlaps [start, start + size). */
int reconf__overlaps(const struct plan_gpu *g, const struct plan_inst *self, int start, int size);

#endif
