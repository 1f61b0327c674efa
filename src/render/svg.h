/*
 * svg.h - the fleet as a picture: one row per card, its memory as cells
 * coloured by tenant and labelled with profile and workload, a legend of
 * tenants. Deterministic output (colours follow spec order).
 */
#ifndef RENDER_SVG_H
#define RENDER_SVG_H

#include "plan/plan.h"
#include "util/sbuf.h"

void render_svg(const struct plan *p, struct ts_sbuf *out);

#endif
