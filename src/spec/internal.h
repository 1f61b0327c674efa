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

#endif
