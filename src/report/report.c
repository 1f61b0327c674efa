/*
 * report.c - text and JSON renderings of a plan (see report.h).
 */
#include "report/report.h"

#include <jansson.h>
#include "util/jsonwrite.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/names.h"
#include "util/units.h"

static const char *profile_name(const struct decide_row *r, char *buf, size_t size)
{
    if (r->profile)
        snprintf(buf, size, "%s", r->profile->name);
    else if (r->gpus > 1)
        snprintf(buf, size, "whole x%d", r->gpus);
    else if (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU)
        snprintf(buf, size, "whole");
    else
        snprintf(buf, size, "%.0f GiB", r->cap_gib);
    return buf;
}

/* The decision table's columns before the reason. */
enum { COL_TENANT, COL_WORKLOAD, COL_MECH, COL_PROFILE, COL_MODEL, COL_RULE, NCOLS };
static const char *const col_heads[NCOLS] = {"TENANT",  "WORKLOAD",  "MECHANISM",
                                             "PROFILE", "GPU MODEL", "RULE"};

static void row_cells(const struct decide_row *r, char *prof, size_t size, const char *cell[NCOLS])
{
    cell[COL_TENANT] = r->tenant->name;
    cell[COL_WORKLOAD] = r->workload->name;
    cell[COL_MECH] = decide_mech_names[r->mech];
    cell[COL_PROFILE] = profile_name(r, prof, size);
    cell[COL_MODEL] = r->model->name;
    cell[COL_RULE] = r->rule;
}

/* Each column as wide as its widest cell or heading. */
static void col_widths(const struct plan *p, int w[NCOLS])
{
    for (int c = 0; c < NCOLS; c++)
        w[c] = (int)strlen(col_heads[c]);
    for (size_t i = 0; i < p->decisions->nrows; i++) {
        const char *cell[NCOLS];
        char prof[32];
        row_cells(&p->decisions->rows[i], prof, sizeof(prof), cell);
        for (int c = 0; c < NCOLS; c++)
            w[c] = (int)strlen(cell[c]) > w[c] ? (int)strlen(cell[c]) : w[c];
    }
}

/* The cells, each padded to its column but the last (no trailing blanks). */
static void put_cells(const char *const cell[NCOLS], const int w[NCOLS], struct ts_sbuf *out)
{
    for (int c = 0; c + 1 < NCOLS; c++)
        ts_sbuf_printf(out, "%-*s ", w[c], cell[c]);
    ts_sbuf_puts(out, cell[NCOLS - 1]);
}

/* After the last cell, up to its column's end, then " text". */
static void put_last(const char *last, int w, const char *text, struct ts_sbuf *out)
{
    ts_sbuf_printf(out, "%*s %s\n", w - (int)strlen(last), "", text);
}

/* text wrapped at spaces into lines of at most width columns after indent. */
static void put_wrapped(const char *text, int indent, int width, struct ts_sbuf *out)
{
    while (*text) {
        int n = (int)strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ')
                n--;
            if (n == 0) /* one word longer than the line */
                n = (int)strcspn(text, " ");
        }
        ts_sbuf_printf(out, "%*s%.*s\n", indent, "", n, text);
        text += n;
        text += strspn(text, " ");
    }
}

/* width 0: one line a row, the reason last; else reasons wrapped under their row. */
static void text_decisions(const struct plan *p, int width, struct ts_sbuf *out)
{
    int w[NCOLS];
    col_widths(p, w);
    ts_sbuf_puts(out, "Decisions\n");
    put_cells(col_heads, w, out);
    if (width)
        ts_sbuf_puts(out, "\n");
    else
        put_last(col_heads[NCOLS - 1], w[NCOLS - 1], "REASON", out);
    for (size_t i = 0; i < p->decisions->nrows; i++) {
        const struct decide_row *r = &p->decisions->rows[i];
        const char *cell[NCOLS];
        char prof[32];
        row_cells(r, prof, sizeof(prof), cell);
        put_cells(cell, w, out);
        if (width) {
            ts_sbuf_puts(out, "\n");
            put_wrapped(r->reason, 4, width > 24 ? width - 4 : 20, out);
        } else {
            put_last(cell[NCOLS - 1], w[NCOLS - 1], r->reason, out);
        }
    }
}

static void text_instance(const struct plan_gpu *g, const struct plan_inst *in, struct ts_sbuf *out)
{
    char owner[160];
    plan_inst_owner(in, owner, sizeof(owner));
    if (g->mode == PLAN_MIG)
        ts_sbuf_printf(out, "    %-10s @%d:%d  %-32s r%d\n", in->profile->name, in->start, in->size,
                       owner, in->replica);
    else if (in->guest)
        ts_sbuf_printf(out, "    %-10s %5.0f GiB  %-28s r%d (best-effort guest)\n", "time-slice",
                       in->mem_gib, owner, in->replica);
    else if (g->mode == PLAN_MPS)
        ts_sbuf_printf(out, "    %-10s %5.0f GiB  %-28s r%d, %d%% SMs\n", "mps client", in->mem_gib,
                       owner, in->replica, in->sm_percent);
    else if (g->mode == PLAN_WHOLE || g->mode == PLAN_VGPU)
        ts_sbuf_printf(out, "    %-10s %5.1f GiB  %-28s r%d%s%s\n", "whole", in->mem_gib, owner,
                       in->replica, in->row->workload->schedule ? ", " : "",
                       in->row->workload->schedule ? in->row->workload->schedule : "");
    else
        ts_sbuf_printf(out, "    %-10s %5.0f GiB  %-28s r%d\n", "share", in->mem_gib, owner,
                       in->replica);
}

static void text_gpus(const struct plan *p, struct ts_sbuf *out)
{
    ts_sbuf_puts(out, "\nLayout\n");
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        ts_sbuf_printf(out, "%s gpu %d  %s  %s%s\n", g->node->name, g->index, g->model->name,
                       plan_mode_names[g->mode], g->sharing ? " + time-slicing" : "");
        for (size_t k = 0; k < g->ninst; k++) /* MIG instances come in start order */
            text_instance(g, &g->inst[k], out);
    }
}

/* A saving against a baseline; a negative one says what it means. */
static void text_saving(struct ts_sbuf *out, const char *label, int base, int used, double pct,
                        const char *why_more)
{
    if (used <= base)
        ts_sbuf_printf(out, "  %-18s %d GPU%s, %.0f%% less hardware\n", label, base - used,
                       base - used == 1 ? "" : "s", pct);
    else
        ts_sbuf_printf(out, "  %-18s none: the plan uses %d GPU%s more (%s)\n", label, used - base,
                       used - base == 1 ? "" : "s", why_more);
}

static void text_summary(const struct plan_summary *s, const char *currency, struct ts_sbuf *out)
{
    ts_sbuf_printf(out,
                   "\nSummary\n"
                   "  GPUs used          %d of %d\n"
                   "  naive              %d (one guaranteed GPU per workload)\n"
                   "  dedicated          %d (one GPU per replica, times its GPUs)\n",
                   s->gpus_used, s->gpus_total, s->naive, s->dedicated);
    text_saving(out, "saving", s->naive, s->gpus_used, s->savings_percent,
                "naive counts a workload's replicas once, so it is no layout the fleet could run");
    text_saving(out, "saving, dedicated", s->dedicated, s->gpus_used, s->savings_dedicated_percent,
                "canary slices and replica spread hold cards that one card per replica does not");
    if (s->cost_per_hour >= 0)
        ts_sbuf_printf(
            out, "  cost               %.2f %s per hour (the used cards at PriceBook prices)\n",
            (double)s->cost_per_hour / TS_MICRO, currency);
    if (plan_has_cost_bound(s) && s->cost_gap_percent >= 0)
        ts_sbuf_printf(out,
                       "  cost lower bound   %.2f %s per hour (gap %.1f%%: no plan of these "
                       "workloads on their card models costs less)\n",
                       (double)s->cost_lower_bound / TS_MICRO, currency, s->cost_gap_percent);
    else if (plan_has_cost_bound(s))
        ts_sbuf_printf(out,
                       "  cost lower bound   0.00 %s per hour (no gap in percent: a plan on the "
                       "free cards alone might cost nothing)\n",
                       currency);
    ts_sbuf_printf(out,
                   "  lower bound        %d%s\n"
                   "  solver             %s\n"
                   "  reserved, unused   %.1f GiB (reserved for workloads beyond their need)\n"
                   "  idle               %.1f GiB (on used cards, reserved by nobody)\n",
                   s->lower_bound,
                   s->optimal ? " (the plan meets it: optimal)" : " (the plan may not be optimal)",
                   s->solver, s->reserved_unused_gib, s->idle_gib);
}

void report_text(const struct plan *p, struct ts_sbuf *out) { report_text_width(p, 0, out); }

void report_text_width(const struct plan *p, int width, struct ts_sbuf *out)
{
    text_decisions(p, width, out);
    text_gpus(p, out);
    text_summary(&p->summary, p->model->pricebook ? p->model->pricebook->currency : "", out);
}

/* ---- JSON ---- */

static json_t *round_to(double v, double unit) { return json_real(round(v / unit) * unit); }

static json_t *json_decision(const struct decide_row *r)
{
    static const char *const enforce[] = {"none", "driver", "shim"};
    json_t *o = json_object();
    json_object_set_new(o, "tenant", json_string(r->tenant->name));
    json_object_set_new(o, "workload", json_string(r->workload->name));
    json_object_set_new(o, "mechanism", json_string(decide_mech_names[r->mech]));
    json_object_set_new(o, "profile", r->profile ? json_string(r->profile->name) : json_null());
    json_object_set_new(o, "gpuModel", json_string(r->model->name));
    json_object_set_new(o, "gpus", json_integer(r->gpus));
    json_object_set_new(o, "replicas", json_integer(r->workload->replicas));
    json_object_set_new(o, "rule", json_string(r->rule));
    json_object_set_new(o, "reason", json_string(r->reason));
    json_object_set_new(o, "needGiB", round_to(r->need_gib, 0.01));
    json_object_set_new(o, "capGiB", round_to(r->cap_gib, 0.01));
    json_object_set_new(o, "smPercent", json_integer(r->sm_percent));
    json_object_set_new(o, "securityBoundary", json_boolean(r->security_boundary));
    json_object_set_new(o, "enforcement", json_string(enforce[r->enforce]));
    return o;
}

static json_t *json_instance(const struct plan_gpu *g, const struct plan_inst *in)
{
    json_t *o = json_object();
    json_object_set_new(o, "profile", in->profile ? json_string(in->profile->name) : json_null());
    json_object_set_new(o, "start", g->mode == PLAN_MIG ? json_integer(in->start) : json_null());
    json_object_set_new(o, "size", g->mode == PLAN_MIG ? json_integer(in->size) : json_null());
    json_object_set_new(o, "tenant", in->row ? json_string(in->row->tenant->name) : json_null());
    json_object_set_new(o, "workload",
                        in->row ? json_string(in->row->workload->name) : json_null());
    json_object_set_new(o, "replica", json_integer(in->replica));
    json_object_set_new(o, "gpuPart", json_integer(in->gpu_part));
    json_object_set_new(o, "memoryGiB", round_to(in->mem_gib, 0.01));
    json_object_set_new(o, "smPercent", json_integer(in->sm_percent));
    json_object_set_new(o, "guest", json_boolean(in->guest));
    json_object_set_new(o, "canary", json_boolean(in->row == NULL));
    return o;
}

static json_t *json_gpu(const struct plan_gpu *g)
{
    json_t *o = json_object(), *insts = json_array();
    json_object_set_new(o, "node", json_string(g->node->name));
    json_object_set_new(o, "index", json_integer(g->index));
    json_object_set_new(o, "model", json_string(g->model->name));
    json_object_set_new(o, "mode", json_string(plan_mode_names[g->mode]));
    json_object_set_new(o, "sharing", json_string(g->sharing ? "time-slicing" : "none"));
    for (size_t k = 0; k < g->ninst; k++)
        json_array_append_new(insts, json_instance(g, &g->inst[k]));
    json_object_set_new(o, "instances", insts);
    return o;
}

static json_t *json_summary(const struct plan *p)
{
    const struct plan_summary *s = &p->summary;
    json_t *o = json_object();
    const struct spec_pricebook *pb = p->model->pricebook;
    json_object_set_new(o, "costPerHour",
                        s->cost_per_hour >= 0 ? json_real((double)s->cost_per_hour / TS_MICRO)
                                              : json_null());
    json_object_set_new(o, "currency", pb ? json_string(pb->currency) : json_null());
    int bound = plan_has_cost_bound(s);
    json_object_set_new(o, "costLowerBound",
                        bound ? json_real((double)s->cost_lower_bound / TS_MICRO) : json_null());
    json_object_set_new(o, "costGapPercent",
                        bound && s->cost_gap_percent >= 0 ? round_to(s->cost_gap_percent, 0.1)
                                                          : json_null());
    json_object_set_new(o, "gpusUsed", json_integer(s->gpus_used));
    json_object_set_new(o, "gpusTotal", json_integer(s->gpus_total));
    json_object_set_new(o, "naiveGpus", json_integer(s->naive));
    json_object_set_new(o, "savingsPercent", round_to(s->savings_percent, 0.1));
    json_object_set_new(o, "dedicatedGpus", json_integer(s->dedicated));
    json_object_set_new(o, "savingsVsDedicatedPercent",
                        round_to(s->savings_dedicated_percent, 0.1));
    json_object_set_new(o, "lowerBound", json_integer(s->lower_bound));
    json_object_set_new(o, "optimal", json_boolean(s->optimal));
    json_object_set_new(o, "solver", json_string(s->solver));
    json_object_set_new(o, "reservedUnusedGiB", round_to(s->reserved_unused_gib, 0.01));
    json_object_set_new(o, "idleGiB", round_to(s->idle_gib, 0.01));
    return o;
}

json_t *report_json_doc(const struct plan *p)
{
    json_t *root = json_object(), *decisions = json_array(), *gpus = json_array();
    json_object_set_new(root, "apiVersion", json_string(TS_API_VERSION));
    json_object_set_new(root, "kind", json_string("Plan"));
    json_object_set_new(root, "summary", json_summary(p));
    for (size_t i = 0; i < p->decisions->nrows; i++)
        json_array_append_new(decisions, json_decision(&p->decisions->rows[i]));
    for (size_t i = 0; i < p->ngpus; i++)
        json_array_append_new(gpus, json_gpu(&p->gpus[i]));
    json_object_set_new(root, "decisions", decisions);
    json_object_set_new(root, "gpus", gpus);
    return root;
}

ts_status report_json_dump(const json_t *doc, struct ts_sbuf *out)
{
    return ts_json_write(doc, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_REAL_PRECISION(10), out);
}

ts_status report_json(const struct plan *p, struct ts_sbuf *out)
{
    json_t *root = report_json_doc(p);
    ts_status st = report_json_dump(root, out);
    json_decref(root);
    return st;
}
