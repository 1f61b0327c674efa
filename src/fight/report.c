/*
 * report.c - the fight's result as text and as JSON (see fight.h; the JSON
 * fields are listed in docs/fight.md). Latencies are microseconds,
 * throughputs per second; a change is the median over paired repeats of
 * p99 / baseline p99 - 1, with its interval, in percent in the text.
 */
#include "fight/internal.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include "util/jsonfree.h"

static const char *status_name(int st)
{
    static const char *const names[] = {"skipped", "error",        "measured", "pass",
                                        "fail",    "inconclusive", "too-noisy"};
    return st >= 0 && st <= FIGHT_ST_NOISY ? names[st] : "?";
}

static const char *verdict_name(int st)
{
    static const char *const names[] = {"PASS", "FAIL", "INCONCLUSIVE", "TOO NOISY"};
    return st >= FIGHT_ST_PASS && st <= FIGHT_ST_NOISY ? names[st - FIGHT_ST_PASS] : "?";
}

static void text_row(const struct fight_result *r, int ph, struct ts_sbuf *out)
{
    const struct fight_phase_result *p = &r->ph[ph];
    if (p->status <= FIGHT_ST_ERROR) {
        ts_sbuf_printf(out, "%-12s %s: %s\n", p->name, status_name(p->status), p->reason);
        return;
    }
    if (ph == FIGHT_PH_SOLO) {
        ts_sbuf_printf(out, "%-12s %4d  %55s %10.1f\n", p->name, p->ran, "", p->noisy_ops);
        return;
    }
    char ci[48];
    if (p->s.ci_ok)
        snprintf(ci, sizeof ci, "[%.1f, %.1f]", p->s.p99_lo, p->s.p99_hi);
    else /* say why in words, never [nan, nan] */
        snprintf(ci, sizeof ci, "none: needs %zu req", fight_quantile_min_n(0.99, FIGHT_CI_LEVEL));
    ts_sbuf_printf(out, "%-12s %4d %8zu %9.1f %9.1f %-21s %9.1f %10.1f", p->name, p->ran, p->s.n,
                   p->s.p50, p->s.p99, ci, p->s.p999, p->sla_rps);
    if (ph >= FIGHT_PH_MECH0)
        ts_sbuf_printf(out, " %10.1f %7.2fx", p->noisy_ops, p->slowdown);
    else if (ph == FIGHT_PH_AA) /* the idle neighbour: no operations, no slowdown */
        ts_sbuf_printf(out, " %10.1f %8s", p->noisy_ops, "-");
    ts_sbuf_puts(out, "\n");
}

/* One line of the judgement table: the change against the baseline. */
static void judge_row(const struct fight_result *r, int ph, struct ts_sbuf *out)
{
    const struct fight_phase_result *p = &r->ph[ph];
    int b = fight__baseline_of(ph);
    if (b < 0 || p->status < FIGHT_ST_MEASURED || p->change.n == 0)
        return;
    const struct fight_change *c = &p->change;
    char iv[64];
    if (c->ok)
        snprintf(iv, sizeof iv, "[%+.1f%%, %+.1f%%] %.1f%%", (c->lo - 1) * 100, (c->hi - 1) * 100,
                 c->level * 100);
    else
        snprintf(iv, sizeof iv, "none: %zu repeats", c->n);
    ts_sbuf_printf(
        out, "%-12s %-12s %+9.1f%% %-30s %s", p->name, r->ph[b].name, (c->est - 1) * 100, iv,
        p->status == FIGHT_ST_MEASURED ? "cost of the mechanism" : verdict_name(p->status));
    if (ph == FIGHT_PH_AA && p->status != FIGHT_ST_PASS)
        ts_sbuf_printf(out, " (the control: within +-%.1f%% both ways needed; too noisy)",
                       (r->opt.control_tol >= 0 ? r->opt.control_tol : r->opt.tolerance) * 100);
    else if (p->status == FIGHT_ST_INCONCLUSIVE && p->repeats_needed)
        ts_sbuf_printf(out, " (about %zu repeats, %zu samples, would decide it)", p->repeats_needed,
                       p->repeats_needed * r->opt.requests);
    else if (p->status == FIGHT_ST_INCONCLUSIVE)
        ts_sbuf_puts(out, " (on the tolerance: no count of repeats decides it)");
    if (ph >= FIGHT_PH_MECH0 && p->status >= FIGHT_ST_PASS && !p->gating)
        ts_sbuf_puts(out, " (not gating)");
    ts_sbuf_puts(out, "\n");
    if (r->opt.memory && ph >= FIGHT_PH_MECH0)
        ts_sbuf_printf(out, "%-12s sla: %zu failed request%s%s%s%s; noisy held %.0f MiB\n", "",
                       p->sla.errors, p->sla.errors == 1 ? "" : "s", p->sla.errors ? " (" : "",
                       p->sla.errors ? p->sla.first_error : "", p->sla.errors ? ")" : "",
                       p->noisy.mem_mib_max);
    if (p->sla_killed)
        ts_sbuf_printf(out, "%-12s the sla tenant was killed\n", "");
}

/* The host's stalls of the SLA tenant while it waited to send (open loop). */
static void host_rows(const struct fight_result *r, struct ts_sbuf *out)
{
    int any = 0;
    for (int ph = 0; ph < FIGHT_NPHASE; ph++) {
        const struct fight_phase_result *p = &r->ph[ph];
        if (p->host_n == 0 || !(p->sla_secs > 0))
            continue;
        if (!any++)
            ts_sbuf_printf(out,
                           "\nhost (the sla tenant's CPU taken for over %d us while it waited to "
                           "send): stalls per second, ms stalled per second, requests after one\n",
                           FIGHT_HOST_GAP_US);
        ts_sbuf_printf(out, "%-12s %7.1f %7.2f %7.2f%%\n", p->name,
                       (double)p->host_stalls / p->sla_secs, p->host_stall_us / 1000 / p->sla_secs,
                       100.0 * (double)p->host_stalls / (double)p->host_n);
    }
}

static void card_rows(const struct fight_result *r, struct ts_sbuf *out)
{
    int any = 0;
    for (int ph = 0; ph < FIGHT_NPHASE; ph++) {
        const struct fight_phase_result *p = &r->ph[ph];
        if (p->nvml_n == 0)
            continue;
        if (!any++)
            ts_sbuf_puts(out, "\ncard (NVML, end of each run): SM clock MHz min-max, "
                              "temperature C max, power W mean\n");
        ts_sbuf_printf(out, "%-12s %5.0f-%-5.0f %5.0f %7.1f\n", p->name, p->sm_mhz_min,
                       p->sm_mhz_max, p->temp_c_max, p->power_w_sum / p->nvml_n);
    }
}

static void warm_rows(const struct fight_result *r, struct ts_sbuf *out)
{
    ts_sbuf_printf(out,
                   "\nwarm-up requests per run (until the medians of two windows of %d agreed "
                   "within %.0f%%):\n",
                   FIGHT_WARM_WINDOW, FIGHT_WARM_STEADY * 100);
    for (int ph = 0; ph < FIGHT_NPHASE; ph++) {
        const struct fight_phase_result *p = &r->ph[ph];
        if (p->status < FIGHT_ST_MEASURED || ph == FIGHT_PH_SOLO)
            continue;
        ts_sbuf_printf(out, "%-12s", p->name);
        for (int i = 0; i < p->ran && i < FIGHT_REPEAT_MAX; i++)
            ts_sbuf_printf(out, " %zu", p->warm_runs[i]);
        if (p->unsteady)
            ts_sbuf_printf(out, "  (%d not steady by --warmup)", p->unsteady);
        ts_sbuf_puts(out, "\n");
    }
}

void fight_report_text(const struct fight_result *r, struct ts_sbuf *out)
{
    const struct fight_opts *o = &r->opt;
    char load[64];
    if (o->arrival == FIGHT_ARRIVE_CLOSED)
        snprintf(load, sizeof load, "closed loop");
    else
        snprintf(load, sizeof load, "open loop, %s at %g req/s", fight_arrival_name(o->arrival),
                 o->rate);
    ts_sbuf_printf(out,
                   "tessera fight: device \"%s\"%s, noisy %s (depth %d)%s, sla %s, %zu requests "
                   "a run (warm-up up to %zu), repeat %d, seed %llu, tolerance %.1f%% (A/A "
                   "control %.1f%%)\n",
                   r->device, r->synthetic ? " (synthetic timings)" : "",
                   o->noisy_cmd ? "command" : fight_noisy_name(o->noisy_kind), o->noisy_depth,
                   o->memory ? ", memory fight" : "", load, o->requests, o->warmup, o->repeat,
                   (unsigned long long)o->seed, o->tolerance * 100,
                   (o->control_tol >= 0 ? o->control_tol : o->tolerance) * 100);
    ts_sbuf_puts(out, "order:");
    for (size_t i = 0; i < r->norder; i++)
        ts_sbuf_printf(out, " %s", r->order[i]);
    ts_sbuf_printf(out, "\n\n%-12s %4s %8s %9s %9s %-21s %9s %10s %10s %8s\n", "phase", "runs",
                   "requests", "p50 us", "p99 us", "p99 95% CI (pooled)", "p99.9 us", "sla req/s",
                   "noisy op/s", "slowdown");
    for (int ph = 0; ph < FIGHT_NPHASE; ph++)
        if (r->ph[ph].status != FIGHT_ST_SKIPPED || ph >= FIGHT_PH_MECH0 || ph < FIGHT_PH_SHIMBASE)
            text_row(r, ph, out);
    ts_sbuf_printf(out, "\n%-12s %-12s %10s %-30s %s\n", "phase", "against", "p99 change",
                   "interval (coverage)", "verdict");
    for (int ph = 0; ph < FIGHT_NPHASE; ph++)
        judge_row(r, ph, out);
    warm_rows(r, out);
    host_rows(r, out);
    card_rows(r, out);
    ts_sbuf_printf(out, "\nverdict: %s (%s)\n", verdict_name(r->verdict), r->verdict_why);
}

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *summary_json(const struct fight_phase_result *p)
{
    json_t *runs = json_array(), *warm = json_array();
    for (int i = 0; i < p->ran && i < FIGHT_REPEAT_MAX; i++) {
        json_array_append_new(runs, num(p->p99_runs[i]));
        json_array_append_new(warm, json_integer((json_int_t)p->warm_runs[i]));
    }
    json_t *ci = p->s.ci_ok ? json_pack("[oo]", num(p->s.p99_lo), num(p->s.p99_hi)) : json_null();
    json_t *j = json_pack("{s:I s:o s:o s:o s:o s:o s:o s:o s:o s:I s:s s:b s:i}", "requests",
                          (json_int_t)p->s.n, "p50_us", num(p->s.p50), "p99_us", num(p->s.p99),
                          "p99_ci95_us", ci, "p999_us", num(p->s.p999), "mean_us", num(p->s.mean),
                          "max_us", num(p->s.max), "throughput_rps", num(p->sla_rps), "p99_runs_us",
                          runs, "failed_requests", (json_int_t)p->sla.errors, "first_error",
                          p->sla.first_error, "killed", p->sla_killed, "exit_status", p->sla_exit);
    json_object_set_new(j, "warmup_runs", warm);
    json_object_set_new(j, "warmup_unsteady", json_integer(p->unsteady));
    return j;
}

static json_t *change_json(const struct fight_result *r, const struct fight_phase_result *p)
{
    const struct fight_change *c = &p->change;
    json_t *j = json_pack(
        "{s:I s:o s:o s:o s:o}", "repeats", (json_int_t)c->n, "ratio", num(c->est), "interval",
        c->ok ? json_pack("[oo]", num(c->lo), num(c->hi)) : json_null(), "coverage",
        c->ok ? num(c->level) : json_null(), "tolerance_ratio", num(1 + r->opt.tolerance));
    if (p->status == FIGHT_ST_INCONCLUSIVE)
        json_object_set_new(j, "repeats_needed", json_integer((json_int_t)p->repeats_needed));
    return j;
}

static json_t *card_json(const struct fight_phase_result *p)
{
    if (p->nvml_n == 0)
        return json_null();
    return json_pack("{s:i s:o s:o s:o s:o}", "readings", p->nvml_n, "sm_mhz_min",
                     num(p->sm_mhz_min), "sm_mhz_max", num(p->sm_mhz_max), "temp_c_max",
                     num(p->temp_c_max), "power_w_mean", num(p->power_w_sum / p->nvml_n));
}

static json_t *host_json(const struct fight_phase_result *p)
{
    if (p->host_n == 0 || !(p->sla_secs > 0))
        return json_null();
    return json_pack("{s:I s:I s:o s:o}", "requests", (json_int_t)p->host_n, "stalled_requests",
                     (json_int_t)p->host_stalls, "stalls_per_s",
                     num((double)p->host_stalls / p->sla_secs), "stalled_ms_per_s",
                     num(p->host_stall_us / 1000 / p->sla_secs));
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
    if (ph == FIGHT_PH_SOLO || ph == FIGHT_PH_AA || ph >= FIGHT_PH_MECH0)
        json_object_set_new(j, "noisy",
                            json_pack("{s:o s:o s:o s:I}", "throughput_ops", num(p->noisy_ops),
                                      "slowdown",
                                      num(ph == FIGHT_PH_SOLO ? 1.0
                                          : ph == FIGHT_PH_AA ? NAN
                                                              : p->slowdown),
                                      "mem_mib_max", num(p->noisy.mem_mib_max), "errors",
                                      (json_int_t)p->noisy.errors));
    json_object_set_new(j, "card", card_json(p));
    if (ph != FIGHT_PH_SOLO)
        json_object_set_new(j, "host", host_json(p));
    int b = fight__baseline_of(ph);
    if (b >= 0 && p->change.n > 0) {
        json_object_set_new(j, "baseline", json_string(r->ph[b].name));
        json_object_set_new(j, "p99_ratio", num(p->s.p99 / r->ph[b].s.p99));
        json_object_set_new(j, "change", change_json(r, p));
    }
    if (ph >= FIGHT_PH_MECH0)
        json_object_set_new(j, "gating", json_boolean(p->gating));
    return j;
}

static json_t *config_json(const struct fight_result *r)
{
    const struct fight_opts *o = &r->opt;
    json_t *cfg = json_pack("{s:s s:b s:b s:I s:I s:i s:I s:f s:i s:i}", "noisy_kind",
                            o->noisy_cmd ? "command" : fight_noisy_name(o->noisy_kind), "synthetic",
                            r->synthetic, "memory", o->memory, "requests", (json_int_t)o->requests,
                            "warmup", (json_int_t)o->warmup, "repeat", o->repeat, "seed",
                            (json_int_t)o->seed, "tolerance", o->tolerance, "sla_share",
                            o->sla_share, "noisy_share", o->noisy_share);
    json_object_set_new(cfg, "noisy_depth", json_integer(o->noisy_depth));
    json_object_set_new(cfg, "control_tolerance",
                        json_real(o->control_tol >= 0 ? o->control_tol : o->tolerance));
    json_object_set_new(cfg, "arrival", json_string(fight_arrival_name(o->arrival)));
    json_object_set_new(cfg, "rate", num(o->arrival == FIGHT_ARRIVE_CLOSED ? NAN : o->rate));
    return cfg;
}

ts_status fight_report_json(const struct fight_result *r, struct ts_sbuf *out, struct ts_error *err)
{
    json_t *order = json_array(), *phases = json_array();
    for (size_t i = 0; i < r->norder; i++)
        json_array_append_new(order, json_string(r->order[i]));
    for (int ph = 0; ph < FIGHT_NPHASE; ph++)
        json_array_append_new(phases, phase_json(r, ph));
    json_t *root = json_pack("{s:i s:s s:o s:o s:o s:s s:s s:s}", "version", 2, "device", r->device,
                             "config", config_json(r), "order", order, "phases", phases,
                             "percentiles", "type 7 (linear between order statistics)", "verdict",
                             verdict_name(r->verdict), "verdict_reason", r->verdict_why);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (!text)
        return ts_err(err, TS_NOMEM, "cannot build the JSON report");
    ts_sbuf_puts(out, text);
    ts_sbuf_puts(out, "\n");
    json_free_text(text);
    return ts_sbuf_status(out);
}
