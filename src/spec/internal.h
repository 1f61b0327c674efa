/*
 * internal.h - what spec.c and fields.c share: the document kinds of a
 * tenancy spec (Fleet, Tenant, PriceBook) with their field tables.
 */
#ifndef SPEC_INTERNAL_H
#define SPEC_INTERNAL_H

#include <stddef.h>
#include "spec/spec.h"

/* Each field table names the struct its rows fill as ROW (#undef after);
 * OFF(member) is where a value goes in it. */
#define OFF(member) offsetof(ROW, member)

extern const struct spec_kind spec__kinds[];
extern const size_t spec__nkinds;

struct ts_arena;
struct ts_diag;
/* For names[0..n) in the order they were read: first[k] is the index of
 * the first name equal to names[k] (k itself when none came before), from
 * a sort (n log n: a spec of thousands of tenants); in a's memory. NULL,
 * reported in diag, when out of memory or names is NULL (the caller's
 * allocation failed). model.c. */
size_t *spec__first_same(struct ts_arena *a, const char *const *names, size_t n,
                         struct ts_diag *diag);

#endif
