/*
 * report.h - the plan for people (text) and for programs (JSON, documented
 * in docs/plan-json.md). Both are deterministic: the same plan gives the
 * same bytes.
 */
#ifndef REPORT_REPORT_H
#define REPORT_REPORT_H

#include "plan/plan.h"
#include "util/sbuf.h"

void report_text(const struct plan *p, struct ts_sbuf *out);
/* JSON with sorted keys and two-space indentation. */
ts_status report_json(const struct plan *p, struct ts_sbuf *out);

#endif
