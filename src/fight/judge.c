/*
 * judge.c - from pooled runs to verdicts (see fight.h, docs/fight.md):
 * each phase's pooled summary, then the change of its p99 against its
 * baseline over the paired repeats (fight_change_interval), three-way
 * (fight_verdict3) for the A/A control and for each mechanism, the cost of
 * each mechanism for its "alone" phases; then the run's verdict from the
 * gating mechanisms, or NOISY when the control did not pass.
 */
#include "fight/mech.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int fight__baseline_of(int ph)
{
    switch (ph) {
    case FIGHT_PH_AA: return FIGHT_PH_AABASE;
    case FIGHT_PH_SHIMBASE:
    case FIGHT_PH_MPSBASE:
    case FIGHT_PH_MIGBASE:
    case FIGHT_PH_MECH0 + FIGHT_TIMESLICE: return FIGHT_PH_BASE;
    case FIGHT_PH_MECH0 + FIGHT_SHIM: return FIGHT_PH_SHIMBASE;
    case FIGHT_PH_MECH0 + FIGHT_MPS: return FIGHT_PH_MPSBASE;
    case FIGHT_PH_MECH0 + FIGHT_MIG: return FIGHT_PH_MIGBASE;
    default: return -1;
    }
}

int fight__mech_of(int ph)
{
    switch (ph) {
    case FIGHT_PH_SHIMBASE: return FIGHT_SHIM;
    case FIGHT_PH_MPSBASE: return FIGHT_MPS;
    case FIGHT_PH_MIGBASE: return FIGHT_MIG;
    default: return ph >= FIGHT_PH_MECH0 ? ph - FIGHT_PH_MECH0 : -1;
    }
}

static void summarise(struct fight_result *r, int ph)
{
    struct fight_phase_result *p = &r->ph[ph];
    struct ts_error e;
    if (p->status != FIGHT_ST_MEASURED)
        return;
    if (p->sla_secs > 0)
        p->sla_rps = (double)p->sla.n / p->sla_secs;
    if (p->noisy_secs > 0)
        p->noisy_ops /= p->noisy_secs;
    if (ph == FIGHT_PH_SOLO)
        return;
    if (fight_summarise(p->sla.lat_us, p->sla.n, "sla latencies", &p->s, &e) != TS_OK &&
        !(r->opt.memory && p->sla.errors)) {
        p->status = FIGHT_ST_ERROR;
        fight__set_reason(p, e.msg);
    }
}

/* p's change against its baseline b over their paired repeats; 0 when it
 * cannot be computed (p marked error). */
static int change(struct fight_phase_result *p, const struct fight_phase_result *b)
{
    struct ts_error e;
    size_t n = (size_t)(p->ran < b->ran ? p->ran : b->ran);
    if (n > FIGHT_REPEAT_MAX)
        n = FIGHT_REPEAT_MAX;
    if (b->status != FIGHT_ST_MEASURED) {
        p->status = FIGHT_ST_ERROR;
        snprintf(p->reason, sizeof(p->reason), "its baseline %s was not measured", b->name);
        return 0;
    }
    if (fight_change_interval(p->p99_runs, b->p99_runs, n, FIGHT_CI_LEVEL, &p->change, &e) !=
        TS_OK) {
        p->status = FIGHT_ST_ERROR;
        snprintf(p->reason, sizeof(p->reason), "p99 change against %s: %.180s", b->name, e.msg);
        return 0;
    }
    return 1;
}

/* The three-way verdict of p against its baseline at the tolerance. */
static void judge_one(struct fight_result *r, int ph)
{
    struct fight_phase_result *p = &r->ph[ph];
    if (p->status != FIGHT_ST_MEASURED || !change(p, &r->ph[fight__baseline_of(ph)]))
        return;
    p->status = fight_verdict3(&p->change, r->opt.tolerance);
    if (p->status == FIGHT_ST_INCONCLUSIVE)
        p->repeats_needed = fight_repeats_needed(&p->change, r->opt.tolerance, FIGHT_CI_LEVEL);
}

int fight__judge_control(struct fight_result *r)
{
    summarise(r, FIGHT_PH_AABASE);
    summarise(r, FIGHT_PH_AA);
    struct fight_phase_result *aa = &r->ph[FIGHT_PH_AA];
    double tol = r->opt.control_tol >= 0 ? r->opt.control_tol : r->opt.tolerance;
    if (aa->status == FIGHT_ST_MEASURED && change(aa, &r->ph[FIGHT_PH_AABASE]))
        aa->status = fight_verdict_aa(&aa->change, tol);
    if (aa->status == FIGHT_ST_PASS)
        return 1;
    for (int ph = FIGHT_PH_BASE; ph < FIGHT_NPHASE; ph++)
        if (r->ph[ph].status == FIGHT_ST_MEASURED) {
            r->ph[ph].status = FIGHT_ST_SKIPPED;
            fight__set_reason(&r->ph[ph], "not run: the A/A control did not PASS (too noisy)");
        }
    return 0;
}

/* Mechanisms: three-way on latency, or on failures in the memory fight. */
static void judge_mechs(struct fight_result *r)
{
    double solo = r->ph[FIGHT_PH_SOLO].noisy_ops;
    for (int ph = FIGHT_PH_SHIMBASE; ph < FIGHT_PH_MECH0; ph++) /* the costs */
        if (r->ph[ph].status == FIGHT_ST_MEASURED)
            change(&r->ph[ph], &r->ph[FIGHT_PH_BASE]);
    for (int m = 0; m < FIGHT_NMECH; m++) {
        struct fight_phase_result *p = &r->ph[FIGHT_PH_MECH0 + m];
        if (p->status != FIGHT_ST_MEASURED)
            continue;
        p->slowdown = p->noisy_ops > 0 ? solo / p->noisy_ops : 0;
        if (!r->opt.memory) {
            judge_one(r, FIGHT_PH_MECH0 + m);
            continue;
        }
        change(p, &r->ph[fight__baseline_of(FIGHT_PH_MECH0 + m)]); /* reported only */
        p->status = p->sla.errors == 0 && !p->sla_killed && p->s.n > 0 ? FIGHT_ST_PASS
                                                                       : FIGHT_ST_FAIL;
    }
}

static void say(struct fight_result *r, int verdict, const char *why, const char *name)
{
    r->verdict = verdict;
    snprintf(r->verdict_why, sizeof(r->verdict_why), "%s%s%.200s", name ? name : "",
             name ? ": " : "", why);
}

static const char *why_not(const struct fight_result *r, const struct fight_phase_result *p)
{
    if (p->status == FIGHT_ST_INCONCLUSIVE)
        return "the p99 change's interval straddles the tolerance";
    if (p->status != FIGHT_ST_FAIL)
        return p->reason[0] ? p->reason : "did not run";
    return r->opt.memory ? "the sla tenant saw a failed allocation or was killed"
                         : "the p99 change's interval lies above the tolerance";
}

/* Too noisy: why, with the host's stalls of the control's runs when the
 * tenant measured them. */
static void say_noisy(struct fight_result *r)
{
    const struct fight_phase_result *a = &r->ph[FIGHT_PH_AABASE], *b = &r->ph[FIGHT_PH_AA];
    double secs = a->sla_secs + b->sla_secs;
    size_t n = a->host_n + b->host_n, stalls = a->host_stalls + b->host_stalls;
    char host[160] = "";
    if (n && secs > 0)
        snprintf(host, sizeof(host),
                 "; meanwhile the host took the sla tenant's CPU %.1f times a second (%.2f ms "
                 "a second) while it waited to send",
                 (double)stalls / secs, (a->host_stall_us + b->host_stall_us) / 1000 / secs);
    say(r, FIGHT_ST_NOISY,
        "too noisy: the A/A control (the sla tenant beside an idle neighbour) "
        "did not PASS, so no mechanism was judged",
        NULL);
    size_t len = strlen(r->verdict_why);
    snprintf(r->verdict_why + len, sizeof(r->verdict_why) - len, "%s", host);
}

static void verdict(struct fight_result *r)
{
    const struct fight_phase_result *aa = &r->ph[FIGHT_PH_AA];
    if (aa->status != FIGHT_ST_PASS) {
        say_noisy(r);
        return;
    }
    unsigned gate = r->opt.expect, ran = 0;
    for (int m = 0; m < FIGHT_NMECH; m++)
        if (r->ph[FIGHT_PH_MECH0 + m].status >= FIGHT_ST_PASS)
            ran |= 1u << m;
    if (!gate)
        gate = (ran & ~1u) ? (ran & ~1u) : ran;
    say(r, FIGHT_ST_PASS,
        r->opt.memory ? "no gating mechanism let an sla allocation fail"
                      : "every gating mechanism kept the sla p99 change's interval within the "
                        "tolerance",
        NULL);
    if (!gate)
        say(r, FIGHT_ST_FAIL, "no mechanism ran", NULL);
    for (int m = FIGHT_NMECH - 1; m >= 0; m--) {
        struct fight_phase_result *p = &r->ph[FIGHT_PH_MECH0 + m];
        if (!(gate & (1u << m)))
            continue;
        p->gating = 1;
        int worse = p->status == FIGHT_ST_INCONCLUSIVE ? r->verdict != FIGHT_ST_FAIL
                                                       : p->status != FIGHT_ST_PASS;
        if (worse)
            say(r, p->status == FIGHT_ST_INCONCLUSIVE ? FIGHT_ST_INCONCLUSIVE : FIGHT_ST_FAIL,
                why_not(r, p), p->name);
    }
}

void fight__judge(struct fight_result *r)
{
    for (int ph = FIGHT_PH_BASE; ph < FIGHT_NPHASE; ph++)
        summarise(r, ph);
    if (r->ph[FIGHT_PH_AA].status == FIGHT_ST_PASS)
        judge_mechs(r);
    verdict(r);
}
