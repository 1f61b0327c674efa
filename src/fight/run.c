/*
 * run.c - the fight's plan and its execution (see fight.h, docs/fight.md).
 *
 * Two blocks of runs. The control first: --repeat rounds of the SLA
 * tenant alone ("aa-alone") and beside an idle neighbour ("aa-idle"),
 * each round in an order shuffled by the seed; unless aa-idle PASSes
 * against aa-alone, the card is too noisy and nothing else runs. Then the
 * main block, --repeat rounds of every phase that can run here: the SLA
 * tenant alone on the whole card ("baseline"), the neighbour alone
 * ("noisy-solo", for its slowdown), the SLA tenant alone on what each
 * mechanism gives it ("shim-alone", "mps-alone", "mig-alone") and each
 * mechanism with both tenants. Repeat i of a phase is paired with repeat
 * i of its baseline (fight__baseline_of) and the verdict is the three-way
 * one of fight_verdict3 on the interval of the median p99 ratio.
 *
 * A run starts the neighbour, waits for its first line (at most 10 s),
 * then the SLA tenant; its warm-up ends when two windows of
 * FIGHT_WARM_WINDOW requests have medians within FIGHT_WARM_STEADY of each
 * other and, where NVML reads it, the SM clock has settled (or at --warmup
 * requests), then --requests are measured and the
 * SLA tenant is stopped. The neighbour's throughput counts its lines while
 * the SLA tenant was measured. Mechanisms are set up in mech.c.
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
#include "util/time.h"

static const char *const noisy_names[] = {"matmul", "stream", "burst", "memory", "idle"};
static const char *const arrival_names[] = {"poisson", "fixed", "closed"};
static const char *const mech_names[] = {"timeslice", "shim", "mps", "mig"};

int fight_noisy_parse(const char *s)
{
    for (int i = 0; i < FIGHT_NNOISY; i++)
        if (strcmp(s, noisy_names[i]) == 0)
            return i;
    return -1;
}

const char *fight_noisy_name(int kind)
{
    return kind >= 0 && kind < FIGHT_NNOISY ? noisy_names[kind] : "?";
}

int fight_arrival_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, arrival_names[i]) == 0)
            return i;
    return -1;
}

const char *fight_arrival_name(int a) { return a >= 0 && a < 3 ? arrival_names[a] : "?"; }

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
    o->control_tol = -1;
    o->seed = 1;
    o->repeat = 9;
    o->requests = 2000;
    o->warmup = 1000;
    o->arrival = FIGHT_ARRIVE_POISSON;
    o->rate = 1000;
    o->noisy_depth = 4;
    o->phase_ms = 60000;
    o->solo_ms = 2000;
    o->sla_share = 70;
    o->noisy_share = 30;
    o->noisy_mem_frac = 0.30;
}

static ts_status series_append(struct fight_series *dst, const struct fight_series *src,
                               size_t from, struct ts_error *err)
{
    for (size_t i = from; i < src->n; i++) {
        struct fight_sample v = {src->lat_us[i], src->gpu_us[i], src->host_us[i]};
        ts_status st = fight_series_push(dst, &v, err);
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

/* The worker's argv for role (in c->argv; numbers in c->numbuf). */
static char **worker_argv(struct fight_ctx *c, const char *role, int ph)
{
    const struct fight_opts *o = c->o;
    size_t n = 0;
    char **a = c->argv;
    snprintf(c->numbuf[0], sizeof(c->numbuf[0]), "%zu", o->requests + o->warmup);
    snprintf(c->numbuf[1], sizeof(c->numbuf[0]), "%g", o->rate);
    snprintf(c->numbuf[2], sizeof(c->numbuf[0]), "%d", o->noisy_depth);
    snprintf(c->numbuf[3], sizeof(c->numbuf[0]), "%llu", (unsigned long long)c->run_seed);
    int kind = ph == FIGHT_PH_AA ? FIGHT_NOISY_IDLE : o->noisy_kind;
    const char *fixed[] = {o->self,         "fight",
                           "--worker",      role,
                           "--driver",      o->driver,
                           "--requests",    c->numbuf[0],
                           "--rate",        c->numbuf[1],
                           "--arrival",     fight_arrival_name(o->arrival),
                           "--noisy-depth", c->numbuf[2],
                           "--seed",        c->numbuf[3],
                           "--noisy-kind",  fight_noisy_name(kind)};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        a[n++] = (char *)fixed[i];
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
    /* the A/A control's neighbour is always the built-in idle one */
    const char *cmd = sla ? c->o->sla_cmd : ph == FIGHT_PH_AA ? NULL : c->o->noisy_cmd;
    char **argv = cmd ? NULL : worker_argv(c, sla ? "sla" : "noisy", ph);
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
    size_t warm;   /* SLA samples of the warm-up */
    size_t next;   /* the next sample count to test for steady state */
    int warmed;    /* the warm-up is over */
    int steady;    /* ... because two windows agreed */
    int stopped;   /* the harness stopped the SLA tenant (done or capped) */
    int capped;    /* the phase hit --phase-time */
    double sm_mhz, temp_c, power_w;
    double warm_mhz; /* the SM clock at the last warm-up check, 0: none yet */
};

static ts_status wait_lead(struct fight_tenant *noisy, struct ts_error *err)
{
    double until = ts_clock_msf(CLOCK_MONOTONIC) + 10000;
    ts_status st = TS_OK;
    while (st == TS_OK && noisy->fd >= 0 && noisy->rd.line == 0 &&
           ts_clock_msf(CLOCK_MONOTONIC) < until)
        st = pump(noisy, NULL, 50, err);
    return st;
}

static double window_median(const double *x)
{
    double v[FIGHT_WARM_WINDOW];
    memcpy(v, x, sizeof(v));
    double *s = fight__sorted_copy(v, FIGHT_WARM_WINDOW);
    double m = s ? fight_percentile(s, FIGHT_WARM_WINDOW, 0.5) : 0;
    free(s);
    return m;
}

/* Is the warm-up over at k samples? Steady when the medians of the last
 * two windows differ by at most FIGHT_WARM_STEADY; over at --warmup anyway. */
static int warm_at(const struct fight_series *s, size_t k, size_t cap, int *steady)
{
    *steady = 0;
    if (k >= 2 * FIGHT_WARM_WINDOW) {
        double a = window_median(s->lat_us + k - 2 * FIGHT_WARM_WINDOW);
        double b = window_median(s->lat_us + k - FIGHT_WARM_WINDOW);
        *steady = a > 0 && fabs(b / a - 1) <= FIGHT_WARM_STEADY;
    }
    return *steady || k >= cap;
}

/* With NVML, the SM clock must also have settled: within FIGHT_WARM_CLOCK
 * of its reading at the previous check. 1 where there is no clock to read. */
static int clock_settled(struct fight_ctx *c, struct window *w)
{
    double mhz, temp, power;
    if (!fight__nvml_read(&c->nvml, &mhz, &temp, &power) || mhz <= 0)
        return 1;
    int settled = w->warm_mhz > 0 && fabs(mhz / w->warm_mhz - 1) <= FIGHT_WARM_CLOCK;
    w->warm_mhz = mhz;
    return settled;
}

static void check_warm(struct fight_ctx *c, const struct fight_tenant *sla,
                       const struct fight_tenant *noisy, struct window *w)
{
    size_t cap = c->o->warmup;
    while (!w->warmed && (cap == 0 || w->next <= sla->s.n)) {
        size_t k = cap == 0 ? 0 : w->next;
        int settled = cap == 0 || clock_settled(c, w);
        if (cap == 0 || (warm_at(&sla->s, k, cap, &w->steady) && (settled || k >= cap))) {
            w->steady = w->steady && settled;
            w->warmed = 1;
            w->warm = k < cap ? k : cap;
            w->t0 = ts_clock_msf(CLOCK_MONOTONIC);
            w->n0 = noisy ? noisy->s.n : 0;
        }
        w->next += FIGHT_WARM_WINDOW;
    }
}

static int run_done(const struct fight_ctx *c, const struct fight_tenant *sla,
                    const struct fight_tenant *noisy, const struct window *w)
{
    if (!sla)
        return noisy->fd < 0;
    return sla->fd < 0 || (w->warmed && sla->s.n >= w->warm + c->o->requests);
}

static ts_status measure(struct fight_ctx *c, struct fight_tenant *sla, struct fight_tenant *noisy,
                         struct window *w, struct ts_error *err)
{
    double start = ts_clock_msf(CLOCK_MONOTONIC), limit = start + (double)c->o->phase_ms;
    w->t0 = -1;
    w->next = FIGHT_WARM_WINDOW;
    if (!sla) {
        w->t0 = start;
        w->n0 = noisy->s.n;
        limit = start + (double)c->o->solo_ms;
    }
    while (ts_clock_msf(CLOCK_MONOTONIC) < limit && !run_done(c, sla, noisy, w)) {
        ts_status st = pump(sla, noisy, 20, err);
        if (st != TS_OK)
            return st;
        if (sla)
            check_warm(c, sla, noisy, w);
    }
    w->stopped = sla && sla->fd >= 0;
    w->capped = w->stopped && !run_done(c, sla, noisy, w);
    w->t1 = ts_clock_msf(CLOCK_MONOTONIC);
    w->n1 = noisy ? noisy->s.n : 0;
    if (w->t0 < 0) { /* never warm: all of it was warm-up */
        w->t0 = w->t1;
        w->warm = sla ? sla->s.n : 0;
    }
    if (!fight__nvml_read(&c->nvml, &w->sm_mhz, &w->temp_c, &w->power_w))
        w->sm_mhz = -1;
    return TS_OK;
}

static void describe_exit(const struct fight_tenant *t, char *buf, size_t size)
{
    if (WIFSIGNALED(t->status))
        snprintf(buf, size, "killed by signal %d", WTERMSIG(t->status));
    else
        snprintf(buf, size, "exit status %d", WEXITSTATUS(t->status));
}

static void pool_card(struct fight_phase_result *p, const struct window *w)
{
    if (w->sm_mhz < 0 && w->temp_c < 0 && w->power_w < 0)
        return;
    if (p->nvml_n == 0 || w->sm_mhz < p->sm_mhz_min)
        p->sm_mhz_min = w->sm_mhz;
    if (p->nvml_n == 0 || w->sm_mhz > p->sm_mhz_max)
        p->sm_mhz_max = w->sm_mhz;
    if (w->temp_c > p->temp_c_max)
        p->temp_c_max = w->temp_c;
    p->power_w_sum += w->power_w > 0 ? w->power_w : 0;
    p->nvml_n++;
}

/* The SLA tenant's measured samples of one run into its phase's pool. */
static ts_status pool_sla(struct fight_ctx *c, struct fight_phase_result *p,
                          struct fight_tenant *sla, const struct window *w, struct ts_error *err)
{
    p->sla_exit = WIFEXITED(sla->status) ? WEXITSTATUS(sla->status) : -1;
    if (WIFSIGNALED(sla->status) && !w->stopped)
        p->sla_killed = 1;
    size_t from = w->warm < sla->s.n ? w->warm : sla->s.n;
    if (sla->s.n > from + c->o->requests) /* answers that came in before the stop */
        sla->s.n = from + c->o->requests;
    size_t before = p->sla.n;
    if (series_append(&p->sla, &sla->s, from, err) != TS_OK)
        return TS_INTERNAL;
    p->sla_secs += (w->t1 - w->t0) / 1000;
    for (size_t i = before; i < p->sla.n; i++) {
        double h = p->sla.host_us[i];
        if (isnan(h))
            continue;
        p->host_n++;
        p->host_stalls += h > 0;
        p->host_stall_us += h;
    }
    struct fight_summary s;
    if (p->ran < FIGHT_REPEAT_MAX) {
        p->p99_runs[p->ran] = fight_summarise(p->sla.lat_us + before, p->sla.n - before, "run", &s,
                                              NULL) == TS_OK
                                  ? s.p99
                                  : NAN;
        p->warm_runs[p->ran] = w->warm;
    }
    p->unsteady += !w->steady;
    if (!c->o->memory && !p->sla_killed && !w->stopped && p->sla_exit != 0) {
        char how[64];
        describe_exit(sla, how, sizeof(how));
        return ts_err(err, TS_IO, "the sla tenant failed (%s)", how);
    }
    return TS_OK;
}

/* Fold one run into its phase's pool. */
static ts_status pool(struct fight_ctx *c, struct fight_phase_result *p, struct fight_tenant *sla,
                      struct fight_tenant *noisy, const struct window *w, struct ts_error *err)
{
    pool_card(p, w);
    if (noisy) {
        p->noisy_ops += (double)(w->n1 - w->n0);
        p->noisy_secs += (w->t1 - w->t0) / 1000;
        /* Only its errors and memory are reported: its samples are not copied. */
        if (series_append(&p->noisy, &noisy->s, noisy->s.n, err) != TS_OK)
            return TS_INTERNAL;
    }
    return sla ? pool_sla(c, p, sla, w, err) : TS_OK;
}

/* The SLA tenant's arrival seed for round `round`: the same for every phase
 * of a round (common random numbers), so a paired ratio compares two runs
 * that met the same arrival schedule and the schedule's own luck cancels.
 * At 1,000 requests/s of 100 us, 2,000 requests a run, that luck alone
 * moves a run's p99 by -4%..+13% (M/D/1, simulated over 60 seeds). */
static uint64_t round_seed(uint64_t seed, int round)
{
    uint64_t s = seed ^ ((uint64_t)round + 1) * 0x9e3779b97f4a7c15ull;
    return fight__rand(&s);
}

static ts_status run_once(struct fight_ctx *c, int ph, struct ts_error *err)
{
    struct fight_phase_result *p = &c->r->ph[ph];
    int has_sla = ph != FIGHT_PH_SOLO;
    int has_noisy = ph == FIGHT_PH_SOLO || ph == FIGHT_PH_AA || ph >= FIGHT_PH_MECH0;
    struct fight_tenant sla, noisy;
    memset(&sla, 0, sizeof(sla));
    memset(&noisy, 0, sizeof(noisy));
    sla.fd = noisy.fd = -1;
    struct window w = {0};
    c->run_seed = round_seed(c->o->seed, p->ran);
    ts_status st = fight__mech_begin(c, ph, err);
    if (st == TS_OK && has_noisy && (st = start(c, &noisy, 0, ph, err)) == TS_OK)
        st = wait_lead(&noisy, err);
    if (st == TS_OK && has_sla)
        st = start(c, &sla, 1, ph, err);
    if (st == TS_OK)
        st = measure(c, has_sla ? &sla : NULL, has_noisy ? &noisy : NULL, &w, err);
    fight__tenant_stop(&sla, w.stopped ? SIGTERM : 0);
    fight__tenant_stop(&noisy, SIGTERM);
    fight__mech_end(c, ph);
    if (st == TS_OK)
        st = pool(c, p, has_sla ? &sla : NULL, has_noisy ? &noisy : NULL, &w, err);
    p->ran++;
    fight__tenant_release(&sla);
    fight__tenant_release(&noisy);
    return st;
}

/* rounds x the measurable phases of from[0..n), each round shuffled. */
static size_t plan_block(struct fight_ctx *c, const int *from, int n, int *list)
{
    size_t len = 0;
    for (int rep = 0; rep < c->o->repeat; rep++) {
        size_t first = len;
        for (int i = 0; i < n; i++)
            if (c->r->ph[from[i]].status == FIGHT_ST_MEASURED)
                list[len++] = from[i];
        for (size_t i = len - first; i > 1; i--) {
            size_t j = (size_t)(fight__rand(&c->rng) % i);
            int t = list[first + i - 1];
            list[first + i - 1] = list[first + j];
            list[first + j] = t;
        }
    }
    return len;
}

static void progress(struct fight_ctx *c, size_t done, size_t total, int ph)
{
    const struct fight_phase_result *p = &c->r->ph[ph];
    char line[400];
    if (!c->o->progress)
        return;
    int rep = p->ran > 0 ? p->ran : 1;
    if (p->status == FIGHT_ST_ERROR)
        snprintf(line, sizeof(line), "%s run %zu/%zu: %s (repeat %d): error: %.200s", c->block,
                 done, total, p->name, rep, p->reason);
    else if (ph == FIGHT_PH_SOLO)
        snprintf(line, sizeof(line), "%s run %zu/%zu: %s (repeat %d): %.0f noisy ops so far",
                 c->block, done, total, p->name, rep, p->noisy_ops);
    else
        snprintf(line, sizeof(line),
                 "%s run %zu/%zu: %s (repeat %d): %zu sla samples so far, this run's p99 %.1f us",
                 c->block, done, total, p->name, rep, p->sla.n,
                 p->ran > 0 && p->ran <= FIGHT_REPEAT_MAX ? p->p99_runs[p->ran - 1] : NAN);
    c->o->progress(c->o->progress_ctx, line);
}

/* Run list[0..n) in order; a failing baseline-like phase ends the fight. */
static ts_status run_block(struct fight_ctx *c, const int *list, size_t n, struct ts_error *err)
{
    ts_status st = TS_OK;
    for (size_t i = 0; i < n && st == TS_OK; i++) {
        struct fight_phase_result *p = &c->r->ph[list[i]];
        snprintf(c->r->order[c->r->norder++], sizeof(c->r->order[0]), "%s", p->name);
        struct ts_error e;
        if (p->status == FIGHT_ST_MEASURED && run_once(c, list[i], &e) != TS_OK) {
            char where[TS_MSG_MAX + TS_PATH_MAX + 64];
            ts_error_format(&e, where, sizeof(where));
            p->status = FIGHT_ST_ERROR;
            fight__set_reason(p, where);
            if (list[i] < FIGHT_PH_MECH0 && list[i] != FIGHT_PH_SOLO)
                st = ts_err(err, TS_IO, "%s: %.400s", p->name, where);
        }
        progress(c, i + 1, n, list[i]);
    }
    return st;
}

static const char *const phase_names[FIGHT_NPHASE] = {
    "aa-alone",  "aa-idle",   "baseline", "noisy-solo", "shim-alone", "mps-alone",
    "mig-alone", "timeslice", "shim",     "mps",        "mig"};

static ts_status run_blocks(struct fight_ctx *c, struct ts_error *err)
{
    static const int control[] = {FIGHT_PH_AABASE, FIGHT_PH_AA};
    int main_phases[FIGHT_NPHASE - 2], list[FIGHT_NPHASE * FIGHT_REPEAT_MAX];
    for (int i = 0; i < FIGHT_NPHASE - 2; i++)
        main_phases[i] = FIGHT_PH_BASE + i;
    c->block = "control";
    size_t n = plan_block(c, control, 2, list);
    ts_status st = run_block(c, list, n, err);
    if (st != TS_OK)
        return st;
    if (!fight__judge_control(c->r)) /* too noisy: nothing else runs */
        return TS_OK;
    c->block = "main";
    n = plan_block(c, main_phases, FIGHT_NPHASE - 2, list);
    return run_block(c, list, n, err);
}

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
    c.rng = o->seed;
    fight__nvml_open(&c.nvml, 0);
    st = run_blocks(&c, err);
    fight__nvml_close(&c.nvml);
    fight__ctx_release(&c);
    if (st != TS_OK)
        return st;
    fight__judge(r);
    return TS_OK;
}

void fight_result_release(struct fight_result *r)
{
    for (int i = 0; i < FIGHT_NPHASE; i++) {
        fight_series_release(&r->ph[i].sla);
        fight_series_release(&r->ph[i].noisy);
    }
}
