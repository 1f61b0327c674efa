/*
 * sm.c - the SM share side of the enforcement (enforce.c): each
 * container's share of a card's time over a sliding window
 * (--sm-window-ms), from the samples NVML keeps, judged against the
 * smPercent of its limit file (docs/agent.md, "Enforcement").
 *
 * What NVML gives (nvml.h): the driver samples each card on a fixed period
 * (1/6 s to 1 s) and keeps the samples. nvmlDeviceGetSamples(GPU
 * utilisation) has one card sample a period, idle or not: the percent of
 * the period any kernel ran. nvmlDeviceGetProcessUtilization has, for each
 * process that ran, smUtil: the percent of the period its kernels ran,
 * stamped with the CPU time in microseconds; only samples newer than
 * lastSeenTimeStamp. Drivers differ on whether a query reaching back
 * several periods returns each sample or one per process (their mean), so
 * the agent asks every AGENT_SM_POLL_MS, faster than any period: a query
 * then holds at most one new sample per process, and each sample counts
 * smUtil x min(its time - the previous query's newest, one period). The
 * period is the shortest gap between the card's samples. A poll delayed
 * (a reconcile in progress) counts one period for what may be several:
 * in the tenant's favour, never against it.
 *
 * The window: one slice per enforcement round, each with the time the card
 * samples covered (span), the card's busy time, every process's busy time
 * (total) and each container's (its processes as the round attributes
 * them: the same cgroup mapping as memory). The window is the newest
 * slices that cover --sm-window-ms; it is judged once they cover 90% of it.
 * The shim is work-conserving (a tenant alone may use an idle card), so a
 * container is judged over only when the card was contended: at least
 * AGENT_SM_BUSY_PCT busy over the window with the other processes running
 * at least AGENT_SM_NEIGHBOUR_PCT of it; it is over when its share
 * exceeds smPercent + AGENT_SM_MARGIN_PCT. act.c then acts by the file's
 * onSmViolation (default report) as for memory, on that card's processes.
 * A sample time more than a minute ahead of the clock (a clock stepped
 * back) starts the card's counting again.
 * The catch bound: a container over from the start of a contended window
 * is judged within one window, one sample period, one poll and one round.
 */
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"
#include "util/time.h"

#define PERIOD_MAX_US 1000000ull /* the longest sample period NVML documents */
#define PERIOD_MIN_US 1000ull    /* gaps shorter than this are not a period */
/* A sample counted this far past the clock means the clock was stepped back
 * (or the driver wrote garbage): the card's counting starts again, else no
 * newer sample would count until the clock caught up. */
#define CLOCK_AHEAD_US 60000000ull

struct sm_ctr {
    struct agent__ctr_id id;
    int used;
    uint64_t busy_us[AGENT_SM_SLICES];
};

struct sm_card {
    int started;                          /* the first poll set the baselines */
    uint64_t card_seen, proc_seen;        /* newest sample counted, us */
    uint64_t period_us;                   /* 0: not known yet */
    uint64_t acc_span, acc_card, acc_all; /* since the last round, us */
    struct {
        unsigned int pid;
        uint64_t busy_us;
    } pid[AGENT_SM_PIDS];
    int npid;
    uint64_t span[AGENT_SM_SLICES], card[AGENT_SM_SLICES], all[AGENT_SM_SLICES];
    unsigned long slices; /* written, ever */
    struct sm_ctr c[AGENT_SM_CTRS];
};

struct agent__sm {
    struct sm_card *card[INV_GPUS_MAX];
    agent_nvml_proc_sample_t ps[AGENT_SM_SAMPLES];
    agent_nvml_sample_t cs[AGENT_SM_SAMPLES];
};

ts_status agent__sm_new(struct agent__sm **out, struct ts_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? TS_OK : ts_err(err, TS_NOMEM, "out of memory");
}

void agent__sm_free(struct agent__sm *s)
{
    for (int i = 0; s && i < INV_GPUS_MAX; i++)
        free(s->card[i]);
    free(s);
}

/* A card sample's value as a percent (0..100), whatever its type. */
static uint64_t pct_of(int type, const agent_nvml_sample_t *s)
{
    double d = 0;
    switch (type) {
    case NVML_VALUE_TYPE_DOUBLE: d = s->sampleValue.dVal; break;
    case NVML_VALUE_TYPE_UNSIGNED_INT: d = s->sampleValue.uiVal; break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: d = (double)s->sampleValue.ulVal; break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: d = (double)s->sampleValue.ullVal; break;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: d = (double)s->sampleValue.sllVal; break;
    case NVML_VALUE_TYPE_SIGNED_INT: d = s->sampleValue.siVal; break;
    default: return 0;
    }
    return d > 100 ? 100 : d > 0 ? (uint64_t)d : 0; /* NaN fails both: 0 */
}

static int by_time(const void *a, const void *b)
{
    unsigned long long x = ((const agent_nvml_sample_t *)a)->timeStamp,
                       y = ((const agent_nvml_sample_t *)b)->timeStamp;
    return x < y ? -1 : x > y;
}

/* The card's samples newer than the last counted: span and busy time. */
static nvmlReturn_t poll_card(struct agent_watch *w, struct agent__sm *s, struct sm_card *c,
                              nvmlDevice_t d)
{
    unsigned int n = AGENT_SM_SAMPLES;
    int type = -1;
    nvmlReturn_t rc = w->n->nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, c->card_seen,
                                                 &type, &n, s->cs);
    if (rc == NVML_ERROR_NOT_FOUND)
        return NVML_SUCCESS;
    if (rc != NVML_SUCCESS)
        return rc;
    n = n < AGENT_SM_SAMPLES ? n : AGENT_SM_SAMPLES;
    qsort(s->cs, n, sizeof s->cs[0], by_time);
    for (unsigned int i = 0; i < n; i++) {
        uint64_t ts = s->cs[i].timeStamp, gap = ts - c->card_seen;
        if (ts <= c->card_seen)
            continue;
        if (c->started && c->card_seen) {
            if (gap >= PERIOD_MIN_US && (!c->period_us || gap < c->period_us))
                c->period_us = gap;
            gap = gap > PERIOD_MAX_US && c->period_us ? c->period_us : gap; /* not sampled */
            c->acc_span += gap;
            c->acc_card += gap * pct_of(type, &s->cs[i]) / 100;
        }
        c->card_seen = ts;
    }
    return NVML_SUCCESS;
}

static void add_pid(struct sm_card *c, unsigned int pid, uint64_t busy)
{
    int i = 0;
    while (i < c->npid && c->pid[i].pid != pid)
        i++;
    if (i == c->npid && c->npid == AGENT_SM_PIDS)
        return; /* counted in acc_all: the card's, nobody's */
    if (i == c->npid)
        c->pid[c->npid++].pid = pid, c->pid[i].busy_us = 0;
    c->pid[i].busy_us += busy;
}

/* The process samples newer than the last query's newest. */
static nvmlReturn_t poll_procs(struct agent_watch *w, struct agent__sm *s, struct sm_card *c,
                               nvmlDevice_t d)
{
    unsigned int n = AGENT_SM_SAMPLES;
    nvmlReturn_t rc = w->n->nvmlDeviceGetProcessUtilization(d, s->ps, &n, c->proc_seen);
    if (rc == NVML_ERROR_NOT_FOUND)
        return NVML_SUCCESS;
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) { /* more than we read: skip past them */
        c->proc_seen = (uint64_t)ts_clock_ms(CLOCK_REALTIME) * 1000u;
        return NVML_SUCCESS;
    }
    if (rc != NVML_SUCCESS)
        return rc;
    uint64_t newest = c->proc_seen, cap = c->period_us ? c->period_us : PERIOD_MAX_US;
    for (unsigned int i = 0; i < n && i < AGENT_SM_SAMPLES; i++) {
        const agent_nvml_proc_sample_t *p = &s->ps[i];
        if (p->timeStamp <= c->proc_seen)
            continue;
        newest = p->timeStamp > newest ? p->timeStamp : newest;
        uint64_t covered = p->timeStamp - c->proc_seen;
        uint64_t busy = (covered < cap ? covered : cap) * (p->smUtil < 100 ? p->smUtil : 100) / 100;
        if (!c->started || !c->proc_seen)
            continue; /* the first query only sets where counting starts */
        c->acc_all += busy;
        add_pid(c, p->pid, busy);
    }
    c->proc_seen = newest;
    return NVML_SUCCESS;
}

void agent__sm_poll(struct agent_watch *w)
{
    struct agent__sm *s = w->sm;
    unsigned int n = 0;
    if (!s || !w->n->nvmlDeviceGetProcessUtilization || !w->n->nvmlDeviceGetSamples ||
        w->n->nvmlDeviceGetCount_v2(&n) != NVML_SUCCESS)
        return;
    uint64_t ahead = (uint64_t)ts_clock_ms(CLOCK_REALTIME) * 1000u + CLOCK_AHEAD_US;
    for (unsigned int i = 0; i < n && i < INV_GPUS_MAX; i++) {
        nvmlDevice_t d;
        if (w->n->nvmlDeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS)
            continue;
        struct sm_card *c = s->card[i] ? s->card[i] : (s->card[i] = calloc(1, sizeof *c));
        if (!c)
            continue;
        if (c->card_seen > ahead || c->proc_seen > ahead) /* the clock stepped back */
            memset(c, 0, sizeof *c);
        nvmlReturn_t rc = poll_card(w, s, c, d);
        rc = rc == NVML_SUCCESS ? poll_procs(w, s, c, d) : rc;
        /* NOT_SUPPORTED (a card in MIG mode), or an error: start again */
        if (rc != NVML_SUCCESS)
            memset(c, 0, sizeof *c);
        else
            c->started = 1;
    }
}

/* The slot of container id on card c (a slot idle over the whole window
 * is taken for a new one), or NULL when all are busy. */
static struct sm_ctr *ctr_slot(struct sm_card *c, const struct agent__ctr_id *id)
{
    struct sm_ctr *free_slot = NULL;
    for (int i = 0; i < AGENT_SM_CTRS; i++) {
        struct sm_ctr *t = &c->c[i];
        if (t->used && !memcmp(&t->id, id, sizeof *id))
            return t;
        int idle = !t->used;
        for (int k = 0; !idle && k < AGENT_SM_SLICES && t->busy_us[k] == 0; k++)
            idle = k == AGENT_SM_SLICES - 1;
        free_slot = free_slot ? free_slot : idle ? t : NULL;
    }
    if (free_slot)
        *free_slot = (struct sm_ctr){.id = *id, .used = 1};
    return free_slot;
}

/* Close the round's slice of card g: each process's time to its container. */
static void close_slice(struct sm_card *c, const struct agent__round *r, int g)
{
    unsigned long k = c->slices % AGENT_SM_SLICES;
    c->span[k] = c->acc_span;
    c->card[k] = c->acc_card;
    c->all[k] = c->acc_all;
    for (int i = 0; i < AGENT_SM_CTRS; i++)
        c->c[i].busy_us[k] = 0;
    for (int i = 0; i < c->npid; i++) {
        int j = 0;
        while (j < r->np && !(r->p[j].pid == c->pid[i].pid && r->p[j].gpu == g))
            j++;
        struct sm_ctr *t = j < r->np && r->p[j].c >= 0 ? ctr_slot(c, &r->c[r->p[j].c].id) : NULL;
        if (t)
            t->busy_us[k] += c->pid[i].busy_us;
    }
    c->acc_span = c->acc_card = c->acc_all = 0;
    c->npid = 0;
    c->slices++;
}

struct sm_window {
    int n; /* the newest n slices */
    uint64_t span, card, all;
};

static struct sm_window window_of(const struct sm_card *c, uint64_t want_us)
{
    struct sm_window v = {0};
    while (v.n < AGENT_SM_SLICES && (unsigned long)v.n < c->slices && v.span < want_us) {
        unsigned long k = (c->slices - 1 - (unsigned long)v.n) % AGENT_SM_SLICES;
        v.span += c->span[k];
        v.card += c->card[k];
        v.all += c->all[k];
        v.n++;
    }
    return v;
}

static uint64_t busy_in(const struct sm_card *c, const struct sm_ctr *t, int n)
{
    uint64_t b = 0;
    for (int i = 0; i < n; i++)
        b += t->busy_us[(c->slices - 1 - (unsigned long)i) % AGENT_SM_SLICES];
    return b;
}

static int ctr_index(const struct agent__round *r, const struct agent__ctr_id *id)
{
    for (int i = 0; i < r->nc; i++)
        if (!memcmp(&r->c[i].id, id, sizeof *id))
            return i;
    return -1;
}

/* Container slot t of card g over window v: a verdict when over. */
static void judge_ctr(struct agent_watch *w, struct agent__round *r, struct sm_card *c, int g,
                      struct sm_ctr *t, const struct sm_window *v)
{
    int ci = ctr_index(r, &t->id);
    if (ci < 0 || r->c[ci].pod < 0 || r->pods[r->c[ci].pod].lim.state != AGENT__LIM_OK)
        return; /* no process listed now, or no limit file: nothing to judge */
    const struct shim_limits *l = &r->pods[r->c[ci].pod].lim.lim;
    uint64_t busy = busy_in(c, t, v->n), others = v->all > busy ? v->all - busy : 0;
    uint64_t share = busy * 100 / v->span;
    if (l->sm_percent >= 100 || others * 100 < AGENT_SM_NEIGHBOUR_PCT * v->span ||
        share <= l->sm_percent + AGENT_SM_MARGIN_PCT)
        return;
    struct agent__verdict vd = {.r = r,
                                .ci = ci,
                                .kind = AGENT__KIND_SM,
                                .action = (int)l->on_sm,
                                .lim = l,
                                .used = share,
                                .limit = l->sm_percent,
                                .allowed = l->sm_percent + AGENT_SM_MARGIN_PCT,
                                .gpu = g};
    agent__violation(w, &vd);
    if (l->on_sm == SHIM_ACTION_KILL) /* judged afresh: a restarted process starts clean */
        memset(t->busy_us, 0, sizeof t->busy_us);
}

void agent__sm_round(struct agent_watch *w, struct agent__round *r)
{
    r->sm_judged = 0;
    if (!w->sm)
        return;
    agent__sm_poll(w);
    uint64_t want = (uint64_t)w->o->sm_window_ms * 1000u;
    for (int g = 0; g < INV_GPUS_MAX; g++) {
        struct sm_card *c = w->sm->card[g];
        if (!c || !c->started)
            continue;
        close_slice(c, r, g);
        struct sm_window v = window_of(c, want);
        if (v.span == 0 || v.span * 10 < want * 9)
            continue; /* the window is not full yet */
        r->sm_judged = 1;
        if (v.card * 100 < AGENT_SM_BUSY_PCT * v.span)
            continue; /* not contended: the card had idle time to give */
        for (int i = 0; i < AGENT_SM_CTRS; i++)
            if (c->c[i].used)
                judge_ctr(w, r, c, g, &c->c[i], &v);
    }
}
