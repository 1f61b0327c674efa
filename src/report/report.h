/*
 * report.h - the plan for people (text) and for programs (JSON, documented
 * in docs/plan-json.md, also as a jansson document a caller may add keys
 * to). Both are deterministic: the same plan gives the same bytes.
 */
#ifndef REPORT_REPORT_H
#define REPORT_REPORT_H

#include <jansson.h>
#include "plan/plan.h"
#include "util/sbuf.h"

/* The plan as text, columns sized to their content; each decision's reason
 * last on its row (report_text, width 0) or wrapped to width columns on the
 * lines under its row. */
void report_text(const struct plan *p, struct ts_sbuf *out);
void report_text_width(const struct plan *p, int width, struct ts_sbuf *out);
/* JSON with sorted keys and two-space indentation. */
ts_status report_json(const struct plan *p, struct ts_sbuf *out);

/* The same document as a jansson object, for a caller that adds keys of its
 * own (`plan --current` adds "reconfiguration") before report_json_dump;
 * NULL when out of memory. Release with json_decref. */
json_t *report_json_doc(const struct plan *p);
/* doc as report_json writes it: sorted keys, two-space indentation, reals
 * to 10 significant digits, a final newline (out marked failed and
 * TS_NOMEM when doc is NULL or cannot be written). */
ts_status report_json_dump(const json_t *doc, struct ts_sbuf *out);

#endif
