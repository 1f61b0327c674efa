/*
 * report.c - the fight's result as text and as JSON (see fight.h; the JSON
 * fields are listed in docs/fight.md). Latencies are microseconds,
 * throughputs per second; the p99 ratio is p99 / baseline p99.
 */
#include "fight/internal.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include "util/jsonfree.h"

static const char *status_name(int st)
{
    static const char *const names[] = {"skipped", "error", "measured", "pass", "fail"};
    return st >= 0 && st <= FIGHT_ST_FAIL ? names[st] : "?";
}

/* The baseline a mechanism is judged against. */
static const struct fight_phase_result *base_of(const struct fight_result *r, int ph)
{
    return &r->ph[fight__baseline_of(ph)];
}

static void text_row(const struct fight_result *r, int ph, struct ts_sbuf *out)
{
    const struct fight_phase_result *p = &r->ph[ph];
    if (p->status <= FIGHT_ST_ERROR) {
        ts_sbuf_printf(out, "%-13s %s: %s\n", p->name, status_name(p->status), p->reason);
        return;
    }
    if (ph == FIGHT_PH_SOLO) {
        ts_sbuf_printf(out, "%-13s %4d  %55s %10.1f\n", p->name, p->ran, "", p->noisy_ops);
        return;
    }
    char ci[48];
    if (p->s.ci_ok)
        snprintf(ci, sizeof ci, "[%.1f, %.1f]", p->s.p99_lo, p->s.p99_hi);
    else /* say why in words, never [nan, nan] */
        snprintf(ci, sizeof ci, "none: needs %zu req", fight_quantile_min_n(0.99, FIGHT_CI_LEVEL));
    ts_sbuf_printf(out, "%-13s %4d %8zu %9.1f %9.1f %-21s %9.1f %10.1f", p->name, p->ran, p->s.n,
                   p->s.p50, p->s.p99, ci, p->s.p999, p->sla_rps);
    if (ph < FIGHT_PH_MECH0) {
        ts_sbuf_puts(out, "\n");
        return;
    }
    const struct fight_phase_result *b = base_of(r, ph);
    ts_sbuf_printf(out, " %10.1f %7.2fx %+7.1f%%  %s%s\n", p->noisy_ops, p->slowdown,
                   b->s.p99 > 0 ? (p->s.p99 / b->s.p99 - 1) * 100 : NAN,
                   p->status == FIGHT_ST_PASS ? "PASS" : "FAIL", p->gating ? "" : " (not gating)");
    if (r->opt.memory)
        ts_sbuf_printf(out, "%-13s sla: %zu failed request%s%s%s%s; noisy held %.0f MiB\n", "",
                       p->sla.errors, p->sla.errors == 1 ? "" : "s", p->sla.errors ? " (" : "",
                       p->sla.errors ? p->sla.first_error : "", p->sla.errors ? ")" : "",
                       p->noisy.mem_mib_max);
    if (p->sla_killed)
        ts_sbuf_printf(out, "%-13s the sla tenant was killed\n", "");
}

void fight_report_text(const struct fight_result *r, struct ts_sbuf *out)
{
    const struct fight_opts *o = &r->opt;
    ts_sbuf_printf(out,
                   "tessera fight: device \"%s\"%s, noisy %s%s, %zu requests (+%zu warm-up), "
                   "repeat %d, seed %llu, tolerance %.1f%%\n",
                   r->device, r->synthetic ? " (synthetic timings)" : "",
                   o->noisy_cmd ? "command" : fight_noisy_name(o->noisy_kind),
                   o->memory ? ", memory fight" : "", o->requests, o->warmup, o->repeat,
                   (unsigned long long)o->seed, o->tolerance * 100);
    ts_sbuf_puts(out, "order:");
    for (size_t i = 0; i < r->norder; i++)
        ts_sbuf_printf(out, " %s", r->order[i]);
    ts_sbuf_printf(out, "\n\n%-13s %4s %8s %9s %9s %-21s %9s %10s %10s %8s %8s\n", "phase", "runs",
                   "requests", "p50 us", "p99 us", "p99 95% CI", "p99.9 us", "sla req/s",
                   "noisy op/s", "slowdown", "p99 move");
    for (int ph = 0; ph < FIGHT_NPHASE; ph++)
        if (ph != FIGHT_PH_MIGBASE || r->ph[ph].status != FIGHT_ST_SKIPPED)
            text_row(r, ph, out);
    ts_sbuf_printf(out, "\nverdict: %s (%s)\n", r->verdict == FIGHT_ST_PASS ? "PASS" : "FAIL",
                   r->verdict_why);
}

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *summary_json(const struct fight_phase_result *p)
{
    json_t *runs = json_array();
    for (int i = 0; i < p->ran && i < FIGHT_REPEAT_MAX; i++)
        json_array_append_new(runs, num(p->p99_runs[i]));
    json_t *ci = p->s.ci_ok ? json_pack("[oo]", num(p->s.p99_lo), num(p->s.p99_hi)) : json_null();
    return json_pack("{s:I s:o s:o s:o s:o s:o s:o s:o s:o s:I s:s s:b s:i}", "requests",
                     (json_int_t)p->s.n, "p50_us", num(p->s.p50), "p99_us", num(p->s.p99),
                     "p99_ci95_us", ci, "p999_us", num(p->s.p999), "mean_us", num(p->s.mean),
                     "max_us", num(p->s.max), "throughput_rps", num(p->sla_rps), "p99_runs_us",
                     runs, "failed_requests", (json_int_t)p->sla.errors, "first_error",
                     p->sla.first_error, "killed", p->sla_killed, "exit_status", p->sla_exit);
}

static json_t *phase_json(const struct fight_result *r, int ph)
{
    const struct fight_phase_result *p = &r->ph[ph];
    json_t *j = json_pack("{s:s s:s s:i}", "name", p->name, "status", status_name(p->status),
                          "runs", p->ran);
    if (p->reason[0])
        json_object_set_new(j, "reason", json_string(p->reason));
    if (p->status < FIGHT_ST_MEASURED)
        return j;
    if (ph != FIGHT_PH_SOLO)
        json_object_set_new(j, "sla", summary_json(p));
    if (ph == FIGHT_PH_SOLO || ph >= FIGHT_PH_MECH0)
        json_object_set_new(j, "noisy",
                            json_pack("{s:o s:o s:o s:I}", "throughput_ops", num(p->noisy_ops),
                                      "slowdown", num(ph == FIGHT_PH_SOLO ? 1.0 : p->slowdown),
                                      "mem_mib_max", num(p->noisy.mem_mib_max), "errors",
                                      (json_int_t)p->noisy.errors));
    if (ph >= FIGHT_PH_MECH0) {
        const struct fight_phase_result *b = base_of(r, ph);
        json_object_set_new(j, "baseline", json_string(b->name));
        json_object_set_new(j, "p99_ratio", num(b->s.p99 > 0 ? p->s.p99 / b->s.p99 : NAN));
        json_object_set_new(j, "gating", json_boolean(p->gating));
    }
    return j;
}

ts_status fight_report_json(const struct fight_result *r, struct ts_sbuf *out, struct ts_error *err)
{
    const struct fight_opts *o = &r->opt;
    json_t *order = json_array(), *phases = json_array();
    for (size_t i = 0; i < r->norder; i++)
        json_array_append_new(order, json_string(r->order[i]));
    for (int ph = 0; ph < FIGHT_NPHASE; ph++)
        json_array_append_new(phases, phase_json(r, ph));
    json_t *cfg = json_pack("{s:s s:b s:b s:I s:I s:i s:I s:f s:i s:i}", "noisy_kind",
                            o->noisy_cmd ? "command" : fight_noisy_name(o->noisy_kind), "synthetic",
                            r->synthetic, "memory", o->memory, "requests", (json_int_t)o->requests,
                            "warmup", (json_int_t)o->warmup, "repeat", o->repeat, "seed",
                            (json_int_t)o->seed, "tolerance", o->tolerance, "sla_share",
                            o->sla_share, "noisy_share", o->noisy_share);
    json_t *root = json_pack(
        "{s:i s:s s:o s:o s:o s:s s:s s:s}", "version", 1, "device", r->device, "config", cfg,
        "order", order, "phases", phases, "percentiles", "type 7 (linear between order statistics)",
        "verdict", r->verdict == FIGHT_ST_PASS ? "PASS" : "FAIL", "verdict_reason", r->verdict_why);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (!text)
        return ts_err(err, TS_NOMEM, "cannot build the JSON report");
    ts_sbuf_puts(out, text);
    ts_sbuf_puts(out, "\n");
    json_free_text(text);
    return ts_sbuf_status(out);
}
