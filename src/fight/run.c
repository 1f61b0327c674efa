/*
 * run.c - the fight's plan and its execution (see fight.h).
 *
 * Phases: "baseline" (the SLA tenant alone on the card), "noisy-solo" (the
 * neighbour alone, for its slowdown), "mig-baseline" (the SLA tenant alone
 * on its MIG instance, when MIG runs: a smaller device is its own
 * baseline), then one phase per mechanism with both tenants. Mechanisms
 * that cannot run here are skipped with the reason (mech.c probes them).
 * The runs, repeat times each, go in an order shuffled by the seed;
 * samples of a phase's runs are pooled. A run starts the neighbour, waits
 * for its first line (at most 10 s), then the SLA tenant; the first warmup
 * SLA samples are dropped, and the neighbour's throughput counts its lines
 * while the SLA tenant was measured. The verdict compares p99s
 * (fight_within); which mechanisms gate it is decided in verdict().
 */
#include "fight/mech.h"

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const noisy_names[] = {"matmul", "stream", "burst"};
static const char *const mech_names[] = {"timeslice", "shim", "mps", "mig"};

int fight_noisy_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, noisy_names[i]) == 0)
            return i;
    return -1;
}

const char *fight_noisy_name(int kind) { return kind >= 0 && kind < 3 ? noisy_names[kind] : "?"; }

int fight_mech_parse(const char *s)
{
    for (int i = 0; i < FIGHT_NMECH; i++)
        if (strcmp(s, mech_names[i]) == 0)
            return i;
    return -1;
}

const char *fight_mech_name(int mech)
{
    return mech >= 0 && mech < FIGHT_NMECH ? mech_names[mech] : "?";
}

void fight_opts_default(struct fight_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->driver = "libcuda.so.1";
    o->mechs = (1u << FIGHT_NMECH) - 1;
    o->tolerance = 0.10;
    o->seed = 1;
    o->repeat = 1;
    o->requests = 2000;
    o->warmup = 100;
    o->phase_ms = 60000;
    o->solo_ms = 2000;
    o->sla_share = 70;
    o->noisy_share = 30;
    o->noisy_mem_frac = 0.30;
}

/* splitmix64: small, seedable, the same everywhere. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static ts_status series_append(struct fight_series *dst, const struct fight_series *src,
                               size_t from, struct ts_error *err)
{
    for (size_t i = from; i < src->n; i++) {
        ts_status st = fight_series_push(dst, src->lat_us[i], src->gpu_us[i], err);
        if (st != TS_OK)
            return st;
    }
    if (src->errors && !dst->errors)
        memcpy(dst->first_error, src->first_error, sizeof(dst->first_error));
    dst->errors += src->errors;
    if (src->mem_mib_max > dst->mem_mib_max)
        dst->mem_mib_max = src->mem_mib_max;
    return TS_OK;
}

/* The worker's argv for role (in c->argv; the request count in c->reqbuf). */
static char **worker_argv(struct fight_ctx *c, const char *role)
{
    const struct fight_opts *o = c->o;
    size_t n = 0;
    char **a = c->argv;
    snprintf(c->reqbuf, sizeof(c->reqbuf), "%zu", o->requests + o->warmup);
    a[n++] = (char *)o->self;
    a[n++] = "fight";
    a[n++] = "--worker";
    a[n++] = (char *)role;
    a[n++] = "--driver";
    a[n++] = (char *)o->driver;
    a[n++] = "--noisy-kind";
    a[n++] = (char *)fight_noisy_name(o->noisy_kind);
    a[n++] = "--requests";
    a[n++] = c->reqbuf;
    if (o->synthetic)
        a[n++] = "--synthetic";
    if (o->memory)
        a[n++] = "--memory";
    if (c->kernels[0]) {
        a[n++] = "--kernels";
        a[n++] = c->kernels;
    }
    a[n] = NULL;
    return a;
}

static ts_status start(struct fight_ctx *c, struct fight_tenant *t, int sla, int ph,
                       struct ts_error *err)
{
    struct fight_env env;
    fight__mech_env(c, ph, sla, &env);
    const char *cmd = sla ? c->o->sla_cmd : c->o->noisy_cmd;
    char **argv = cmd ? NULL : worker_argv(c, sla ? "sla" : "noisy");
    return fight__tenant_start(t, sla ? "sla tenant" : "noisy tenant", argv, cmd, env.v, err);
}

/* Pump whichever tenants are open for up to ms. */
static ts_status pump(struct fight_tenant *a, struct fight_tenant *b, int ms, struct ts_error *err)
{
    struct pollfd p[2];
    struct fight_tenant *t[2] = {a, b};
    nfds_t n = 0;
    for (int i = 0; i < 2; i++)
        if (t[i] && t[i]->fd >= 0)
            p[n++] = (struct pollfd){t[i]->fd, POLLIN, 0};
    if (n == 0)
        return TS_OK;
    poll(p, n, ms);
    ts_status st = TS_OK;
    for (int i = 0; i < 2 && st == TS_OK; i++)
        if (t[i] && t[i]->fd >= 0)
            st = fight__tenant_pump(t[i], err);
    return st;
}

/* What one run measured, before pooling. */
struct window {
    double t0, t1; /* ms: SLA measured from t0 to t1 */
    size_t n0, n1; /* noisy samples at t0 and t1 */
    int capped;    /* the phase hit --phase-time */
};

static ts_status wait_lead(struct fight_tenant *noisy, struct ts_error *err)
{
    double until = fight__now_ms() + 10000;
    ts_status st = TS_OK;
    while (st == TS_OK && noisy->fd >= 0 && noisy->rd.line == 0 && fight__now_ms() < until)
        st = pump(noisy, NULL, 50, err);
    return st;
}

static ts_status measure(struct fight_ctx *c, struct fight_tenant *sla, struct fight_tenant *noisy,
                         struct window *w, struct ts_error *err)
{
    double start = fight__now_ms(), limit = start + (double)c->o->phase_ms;
    w->t0 = -1;
    if (!sla) {
        w->t0 = start;
        w->n0 = noisy->s.n;
        limit = start + (double)c->o->solo_ms;
    }
    while (fight__now_ms() < limit && (sla ? sla->fd >= 0 : noisy->fd >= 0)) {
        ts_status st = pump(sla, noisy, 20, err);
        if (st != TS_OK)
            return st;
        if (sla && w->t0 < 0 && sla->s.n >= c->o->warmup) {
            w->t0 = fight__now_ms();
            w->n0 = noisy ? noisy->s.n : 0;
        }
    }
    w->capped = sla && sla->fd >= 0;
    w->t1 = fight__now_ms();
    w->n1 = noisy ? noisy->s.n : 0;
    if (w->t0 < 0)
        w->t0 = w->t1;
    return TS_OK;
}

static void describe_exit(const struct fight_tenant *t, char *buf, size_t size)
{
    if (WIFSIGNALED(t->status))
        snprintf(buf, size, "killed by signal %d", WTERMSIG(t->status));
    else
        snprintf(buf, size, "exit status %d", WEXITSTATUS(t->status));
}

/* Fold one run into its phase's pool. */
static ts_status pool(struct fight_ctx *c, struct fight_phase_result *p, struct fight_tenant *sla,
                      struct fight_tenant *noisy, const struct window *w, struct ts_error *err)
{
    double secs = (w->t1 - w->t0) / 1000;
    if (noisy) {
        p->noisy_ops += (double)(w->n1 - w->n0);
        p->noisy_secs += secs;
        /* Only its errors and memory are reported: its samples are not copied. */
        if (series_append(&p->noisy, &noisy->s, noisy->s.n, err) != TS_OK)
            return TS_INTERNAL;
    }
    if (!sla)
        return TS_OK;
    p->sla_exit = WIFEXITED(sla->status) ? WEXITSTATUS(sla->status) : -1;
    if (WIFSIGNALED(sla->status) && !w->capped)
        p->sla_killed = 1;
    size_t from = c->o->warmup < sla->s.n ? c->o->warmup : sla->s.n;
    size_t before = p->sla.n;
    if (series_append(&p->sla, &sla->s, from, err) != TS_OK)
        return TS_INTERNAL;
    p->sla_secs += secs;
    struct fight_summary s;
    if (p->ran < FIGHT_REPEAT_MAX &&
        fight_summarise(p->sla.lat_us + before, p->sla.n - before, "run", &s, NULL) == TS_OK)
        p->p99_runs[p->ran] = s.p99;
    if (!c->o->memory && !p->sla_killed && p->sla_exit != 0) {
        char how[64];
        describe_exit(sla, how, sizeof(how));
        return ts_err(err, TS_IO, "the sla tenant failed (%s)", how);
    }
    return TS_OK;
}

static ts_status run_once(struct fight_ctx *c, int ph, struct ts_error *err)
{
    struct fight_phase_result *p = &c->r->ph[ph];
    int has_sla = ph != FIGHT_PH_SOLO, has_noisy = ph == FIGHT_PH_SOLO || ph >= FIGHT_PH_MECH0;
    struct fight_tenant sla, noisy;
    memset(&sla, 0, sizeof(sla));
    memset(&noisy, 0, sizeof(noisy));
    sla.fd = noisy.fd = -1;
    struct window w = {0};
    ts_status st = fight__mech_begin(c, ph, err);
    if (st == TS_OK && has_noisy && (st = start(c, &noisy, 0, ph, err)) == TS_OK)
        st = wait_lead(&noisy, err);
    if (st == TS_OK && has_sla)
        st = start(c, &sla, 1, ph, err);
    if (st == TS_OK)
        st = measure(c, has_sla ? &sla : NULL, has_noisy ? &noisy : NULL, &w, err);
    fight__tenant_stop(&sla, w.capped ? SIGTERM : 0);
    fight__tenant_stop(&noisy, SIGTERM);
    fight__mech_end(c, ph);
    if (st == TS_OK)
        st = pool(c, p, has_sla ? &sla : NULL, has_noisy ? &noisy : NULL, &w, err);
    p->ran++;
    fight__tenant_release(&sla);
    fight__tenant_release(&noisy);
    return st;
}

/* Phase runs in a seeded random order. */
static void plan_order(struct fight_ctx *c, int *list, size_t *n)
{
    *n = 0;
    for (int rep = 0; rep < c->o->repeat; rep++)
        for (int ph = 0; ph < FIGHT_NPHASE; ph++)
            if (c->r->ph[ph].status == FIGHT_ST_MEASURED)
                list[(*n)++] = ph;
    uint64_t s = c->o->seed;
    for (size_t i = *n; i > 1; i--) {
        size_t j = (size_t)(next_rand(&s) % i);
        int t = list[i - 1];
        list[i - 1] = list[j];
        list[j] = t;
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

int fight__baseline_of(int ph)
{
    return ph == FIGHT_PH_MECH0 + FIGHT_MIG ? FIGHT_PH_MIGBASE : FIGHT_PH_BASE;
}

/* PASS/FAIL of each mechanism, then which gate the verdict. */
static void judge(struct fight_result *r)
{
    double solo = r->ph[FIGHT_PH_SOLO].noisy_ops;
    for (int m = 0; m < FIGHT_NMECH; m++) {
        struct fight_phase_result *p = &r->ph[FIGHT_PH_MECH0 + m];
        const struct fight_phase_result *b = &r->ph[fight__baseline_of(FIGHT_PH_MECH0 + m)];
        if (p->status != FIGHT_ST_MEASURED)
            continue;
        p->slowdown = p->noisy_ops > 0 ? solo / p->noisy_ops : 0;
        int ok = b->status == FIGHT_ST_MEASURED && p->s.n > 0 &&
                 fight_within(b->s.p99, p->s.p99, r->opt.tolerance);
        if (r->opt.memory) /* the memory fight is about failures, not latency */
            ok = p->sla.errors == 0 && !p->sla_killed && p->s.n > 0;
        p->status = ok ? FIGHT_ST_PASS : FIGHT_ST_FAIL;
    }
}

static void verdict(struct fight_result *r)
{
    unsigned gate = r->opt.expect, ran = 0;
    for (int m = 0; m < FIGHT_NMECH; m++)
        if (r->ph[FIGHT_PH_MECH0 + m].status >= FIGHT_ST_PASS)
            ran |= 1u << m;
    if (!gate)
        gate = (ran & ~1u) ? (ran & ~1u) : ran;
    r->verdict = FIGHT_ST_PASS;
    snprintf(r->verdict_why, sizeof(r->verdict_why), "%s",
             r->opt.memory ? "no gating mechanism let an sla allocation fail"
                           : "every gating mechanism kept the sla p99 within the tolerance");
    if (!gate) {
        r->verdict = FIGHT_ST_FAIL;
        snprintf(r->verdict_why, sizeof(r->verdict_why), "no mechanism ran");
    }
    for (int m = FIGHT_NMECH - 1; m >= 0; m--) {
        struct fight_phase_result *p = &r->ph[FIGHT_PH_MECH0 + m];
        if (!(gate & (1u << m)))
            continue;
        p->gating = 1;
        if (p->status != FIGHT_ST_PASS) {
            r->verdict = FIGHT_ST_FAIL;
            snprintf(r->verdict_why, sizeof(r->verdict_why), "%s: %.200s", p->name,
                     p->status != FIGHT_ST_FAIL ? (p->reason[0] ? p->reason : "did not run")
                     : r->opt.memory ? "the sla tenant saw a failed allocation or was killed"
                                     : "the sla p99 moved beyond the tolerance");
        }
    }
}

static const char *const phase_names[FIGHT_NPHASE] = {
    "baseline", "noisy-solo", "mig-baseline", "timeslice", "shim", "mps", "mig"};

ts_status fight_run(const struct fight_opts *o, struct fight_result *r, struct ts_error *err)
{
    memset(r, 0, sizeof(*r));
    r->opt = *o;
    for (int i = 0; i < FIGHT_NPHASE; i++)
        r->ph[i].name = phase_names[i];
    struct fight_ctx c;
    ts_status st = fight__mech_probe(&c, o, r, err);
    if (st != TS_OK) {
        fight__ctx_release(&c);
        return st;
    }
    int list[FIGHT_NPHASE * FIGHT_REPEAT_MAX];
    size_t n;
    plan_order(&c, list, &n);
    for (size_t i = 0; i < n && st == TS_OK; i++) {
        struct fight_phase_result *p = &r->ph[list[i]];
        snprintf(r->order[r->norder++], sizeof(r->order[0]), "%s", p->name);
        struct ts_error e;
        if (p->status == FIGHT_ST_MEASURED && run_once(&c, list[i], &e) != TS_OK) {
            char where[TS_MSG_MAX + TS_PATH_MAX + 64];
            ts_error_format(&e, where, sizeof(where));
            p->status = FIGHT_ST_ERROR;
            fight__set_reason(p, where);
            if (list[i] < FIGHT_PH_MECH0) /* a baseline failing ends the fight */
                st = ts_err(err, TS_IO, "%s: %.400s", p->name, where);
        }
    }
    fight__ctx_release(&c);
    if (st != TS_OK)
        return st;
    for (int ph = 0; ph < FIGHT_NPHASE; ph++)
        summarise(r, ph);
    if (r->ph[FIGHT_PH_BASE].status != FIGHT_ST_MEASURED)
        return ts_err(err, TS_IO, "baseline: %s", r->ph[FIGHT_PH_BASE].reason);
    judge(r);
    verdict(r);
    return TS_OK;
}

void fight_result_release(struct fight_result *r)
{
    for (int i = 0; i < FIGHT_NPHASE; i++) {
        fight_series_release(&r->ph[i].sla);
        fight_series_release(&r->ph[i].noisy);
    }
}
