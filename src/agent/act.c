/*
 * act.c - what the enforcement does about a container over its limit
 * (enforce.c, sm.c judge): by the limit file's policy,
 *   report  the log line and the metric only;
 *   kill    SIGKILL to each of the container's processes on the cards,
 *           through a pidfd opened before its cgroup is read again, so a
 *           pid reused meanwhile is never hit;
 *   evict   the Eviction API for the pod (kube.c); when that is refused (429:
 *           a disruption budget) or fails (no API access, an error) the
 *           processes are killed, since a neighbour's memory cannot wait;
 * and each is a log event (`limit exceeded`), a count in
 * tessera_agent_violations_total{tenant,workload,kind,action} and, with
 * --db, a ledger entry: source "observed" (seen on the device, not
 * custody, so `ledger who` still names the holder), the tenant and
 * workload of the limit file, the card's UUID, profile "enforce:KIND:ACTION".
 * An episode (a container over, round after round) is acted on, logged,
 * counted and recorded once; a kill is repeated each round while NVML
 * still lists the processes; the episode ends when a round finds the
 * container within its limit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "agent/internal.h"
#include "ledger/ledger.h"
#include "util/log.h"
#include "util/time.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same on every architecture */
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static const char *const kind_names[] = {"memory", "sm", "unjudged"};

struct episode {
    struct agent__ctr_id id; /* unjudged processes: pod "", ctr the pid */
    int kind, seen;
    int64_t since_ms;
};

struct series {
    char tenant[SHIM_NAME_MAX], workload[SHIM_NAME_MAX];
    int kind, action;
    long n;
};

/* Why a process or container was not judged (tessera_agent_unjudged_processes). */
static const char *const unjudged_names[] = {"no-pod", "no-limits", "unreadable-cgroup",
                                             "unreadable-limits", "memory-unknown"};
#define UNJUDGED_REASONS (int)(sizeof unjudged_names / sizeof unjudged_names[0])

struct agent__enforce {
    struct episode ep[AGENT_ENFORCE_PROCS_MAX];
    int nep;
    /* under the watch's lock: */
    struct series s[AGENT_VIOLATION_SERIES_MAX];
    int ns;
    long rounds, killed, evictions, evict_failures, evict_refused, errors;
    int unjudged[UNJUDGED_REASONS], containers, processes, overflow;
    double last_round_s;
    int cur_unjudged[UNJUDGED_REASONS]; /* this round's, published at its end */
};

/* *field += n under the lock (the metrics read them from another thread). */
static void bump(struct agent_watch *w, long *field, long n)
{
    pthread_mutex_lock(&w->lock);
    *field += n;
    pthread_mutex_unlock(&w->lock);
}

ts_status agent__enforce_new(struct agent__enforce **out, struct ts_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? TS_OK : ts_err(err, TS_NOMEM, "out of memory");
}

void agent__enforce_free(struct agent__enforce *e) { free(e); }

static struct episode *episode(struct agent__enforce *e, const struct agent__ctr_id *id, int kind,
                               int *fresh)
{
    *fresh = 0;
    for (int i = 0; i < e->nep; i++)
        if (e->ep[i].kind == kind && !memcmp(&e->ep[i].id, id, sizeof *id))
            return &e->ep[i];
    if (e->nep == AGENT_ENFORCE_PROCS_MAX)
        return NULL;
    struct episode *p = &e->ep[e->nep++];
    *p = (struct episode){.id = *id, .kind = kind, .since_ms = ts_clock_ms(CLOCK_MONOTONIC)};
    *fresh = 1;
    return p;
}

void agent__episodes_begin(struct agent_watch *w)
{
    for (int i = 0; i < w->enf->nep; i++)
        w->enf->ep[i].seen = 0;
    memset(w->enf->cur_unjudged, 0, sizeof w->enf->cur_unjudged);
}

/* SIGKILL pid when it is still in container id: 1 sent, 0 not. */
static int kill_verified(unsigned int pid, const struct agent__ctr_id *id)
{
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0 && errno != ENOSYS)
        return 0; /* gone */
    struct agent__ctr_id now;
    char why[TS_MSG_MAX];
    int same = agent__cgroup_of(pid, &now, why, sizeof why) == 1 && !memcmp(&now, id, sizeof now);
    int sent = same && (fd >= 0 ? syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) == 0
                                : kill((pid_t)pid, SIGKILL) == 0);
    if (fd >= 0)
        close(fd);
    return sent;
}

/* Kill the container's processes (on card gpu, or all when -1). */
static int kill_all(const struct agent__verdict *v)
{
    const struct agent__round *r = v->r;
    int n = 0;
    for (int i = 0; i < r->np; i++)
        if (r->p[i].c == v->ci && (v->gpu < 0 || r->p[i].gpu == v->gpu))
            n += kill_verified(r->p[i].pid, &r->c[v->ci].id);
    return n;
}

static const char *name_or(const char *s) { return s && *s ? s : "unknown"; }

static void count(struct agent_watch *w, const struct agent__verdict *v, int action)
{
    struct agent__enforce *e = w->enf;
    const char *t = name_or(v->lim->tenant), *wl = name_or(v->lim->workload);
    pthread_mutex_lock(&w->lock);
    int i = 0;
    while (i < e->ns && (strcmp(e->s[i].tenant, t) || strcmp(e->s[i].workload, wl) ||
                         e->s[i].kind != v->kind || e->s[i].action != action))
        i++;
    if (i == e->ns && e->ns == AGENT_VIOLATION_SERIES_MAX) {
        t = wl = "other"; /* bounded cardinality: the last series takes the rest */
        i = e->ns - 1;
    } else if (i == e->ns) {
        struct series *s = &e->s[e->ns++];
        snprintf(s->tenant, sizeof s->tenant, "%s", t);
        snprintf(s->workload, sizeof s->workload, "%s", wl);
        s->kind = v->kind;
        s->action = action;
    }
    e->s[i].n++;
    pthread_mutex_unlock(&w->lock);
}

/* One ledger entry per card the container was seen on. */
static void record(struct agent_watch *w, const struct agent__verdict *v, int action)
{
    const struct agent__round *r = v->r;
    char profile[64];
    int done[INV_GPUS_MAX] = {0};
    snprintf(profile, sizeof profile, "enforce:%s:%s", kind_names[v->kind],
             shim_action_name((enum shim_action)action));
    for (int i = 0; w->o->store && i < r->np; i++) {
        int g = r->p[i].gpu;
        if (r->p[i].c != v->ci || (v->gpu >= 0 && g != v->gpu) || done[g]++ || !r->uuid[g][0])
            continue;
        struct ledger_event ev = {.ts_ms = ts_clock_ms(CLOCK_REALTIME),
                                  .node = w->node,
                                  .gpu_uuid = r->uuid[g],
                                  .profile = profile,
                                  .tenant = name_or(v->lim->tenant),
                                  .workload = name_or(v->lim->workload),
                                  .source = "observed"};
        struct ts_error err = {0};
        int64_t seq = 0;
        if (ledger_record(w->o->store, w->o->key, w->o->key_len, &ev, &seq, &err) != TS_OK) {
            struct ts_log_kv kv[] = {{"node", w->node}, {"error", err.msg}};
            ts_log(w->o->log_json, "error", "enforcement not recorded in the ledger", kv, 2);
            bump(w, &w->enf->errors, 1);
        }
    }
}

/* The container's pids on the card(s), "1 2 3". */
static void pids_of(const struct agent__verdict *v, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < v->r->np && used < cap; i++)
        if (v->r->p[i].c == v->ci && (v->gpu < 0 || v->r->p[i].gpu == v->gpu))
            used += (size_t)snprintf(buf + used, cap - used, "%s%u", used ? " " : "",
                                     v->r->p[i].pid);
}

static void say(struct agent_watch *w, const struct agent__verdict *v, int action,
                const char *result)
{
    const struct agent__ctr *c = &v->r->c[v->ci];
    char used[24], limit[24], allowed[24], procs[12], gpu[12], pids[256];
    snprintf(used, sizeof used, "%llu", (unsigned long long)v->used);
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)v->limit);
    snprintf(allowed, sizeof allowed, "%llu", (unsigned long long)v->allowed);
    snprintf(procs, sizeof procs, "%d", c->nproc);
    snprintf(gpu, sizeof gpu, "%d", v->gpu);
    pids_of(v, pids, sizeof pids);
    int mem = v->kind == AGENT__KIND_MEMORY;
    struct ts_log_kv kv[] = {
        {"node", w->node},
        {"tenant", name_or(v->lim->tenant)},
        {"workload", name_or(v->lim->workload)},
        {"kind", kind_names[v->kind]},
        {"action", shim_action_name((enum shim_action)action)},
        {"result", result},
        {"pod_uid", c->id.pod},
        {"container", c->id.ctr},
        {mem ? "used_bytes" : "used_percent", used},
        {mem ? "limit_bytes" : "sm_percent", limit},
        {mem ? "allowed_bytes" : "allowed_percent", allowed},
        {"processes", procs},
        {"pids", pids},
        {"gpu", mem ? "all" : gpu},
        {"limit_file", v->deny ? v->deny : ""},
    };
    ts_log(w->o->log_json, "warn", "limit exceeded", kv, v->deny ? 15 : 14);
}

/* Act by v->action; returns the action taken (evict falls back to kill). */
static int act(struct agent_watch *w, const struct agent__verdict *v, char *result, size_t cap)
{
    int action = v->action;
    char why[TS_MSG_MAX] = "";
    int ev = action == SHIM_ACTION_EVICT ? agent__evict(w, v->r->c[v->ci].id.pod, why, sizeof why)
                                         : -1;
    if (action == SHIM_ACTION_EVICT && ev == 0) {
        bump(w, &w->enf->evictions, 1);
        return snprintf(result, cap, "evicted the pod"), action;
    }
    if (action == SHIM_ACTION_EVICT) { /* refused (429) or failed: the neighbours cannot wait */
        bump(w, ev == -2 ? &w->enf->evict_refused : &w->enf->evict_failures, 1);
        action = SHIM_ACTION_KILL;
    }
    if (action == SHIM_ACTION_REPORT)
        return snprintf(result, cap, "reported"), action;
    int n = kill_all(v);
    bump(w, &w->enf->killed, n);
    snprintf(result, cap, "%s%s%skilled %d process%s", why[0] ? "eviction failed (" : "", why,
             why[0] ? "), " : "", n, n == 1 ? "" : "es");
    return action;
}

void agent__violation(struct agent_watch *w, const struct agent__verdict *v)
{
    int fresh = 0;
    struct episode *ep = episode(w->enf, &v->r->c[v->ci].id, v->kind, &fresh);
    if (ep)
        ep->seen = 1;
    if (!fresh) { /* acted on already: a kill is repeated until the driver lets go */
        if (ep && v->action == SHIM_ACTION_KILL)
            bump(w, &w->enf->killed, kill_all(v));
        return;
    }
    char result[2 * TS_MSG_MAX];
    int action = act(w, v, result, sizeof result);
    say(w, v, action, result);
    count(w, v, action);
    record(w, v, action);
}

static void unjudged_once(struct agent_watch *w, const struct agent__ctr_id *id, int reason,
                          const char *pid, const char *why)
{
    int fresh = 0;
    struct episode *ep = episode(w->enf, id, AGENT__KIND_UNJUDGED, &fresh);
    if (ep)
        ep->seen = 1;
    w->enf->cur_unjudged[reason]++;
    if (!fresh)
        return;
    struct ts_log_kv kv[] = {{"node", w->node},    {"reason", unjudged_names[reason]},
                             {"pod_uid", id->pod}, {"container", id->ctr},
                             {"pid", pid},         {"why", why}};
    ts_log(w->o->log_json, "warn", "GPU process not judged", kv, 6);
}

static int reason_of(const char *reason)
{
    for (int i = 0; i < UNJUDGED_REASONS; i++)
        if (!strcmp(unjudged_names[i], reason))
            return i;
    return 0;
}

void agent__unjudged(struct agent_watch *w, const struct agent__proc *q, const char *reason,
                     const char *why)
{
    int k = reason_of(reason);
    if (k == 0 && !q->shared)
        return; /* a process outside Kubernetes on a card nobody shares */
    struct agent__ctr_id id = {.pod = ""};
    char pid[16];
    snprintf(pid, sizeof pid, "%u", q->pid);
    snprintf(id.ctr, sizeof id.ctr, "pid-%u", q->pid);
    unjudged_once(w, &id, k, pid, why);
}

void agent__unjudged_ctr(struct agent_watch *w, const struct agent__round *r, int ci,
                         const char *reason, const char *why)
{
    unjudged_once(w, &r->c[ci].id, reason_of(reason), "", why);
}

void agent__episodes_end(struct agent_watch *w, const struct agent__round *r, int64_t took_ms)
{
    struct agent__enforce *e = w->enf;
    int k = 0;
    for (int i = 0; i < e->nep; i++) {
        struct episode *p = &e->ep[i];
        int keep = p->seen || (p->kind == AGENT__KIND_SM && !r->sm_judged) || r->error[0];
        if (keep)
            e->ep[k++] = *p;
    }
    e->nep = k;
    pthread_mutex_lock(&w->lock);
    e->rounds++;
    e->last_round_s = (double)took_ms / 1000.0;
    e->containers = r->nc;
    e->processes = r->np;
    e->overflow = r->overflow;
    e->errors += r->error[0] != 0;
    memcpy(e->unjudged, e->cur_unjudged, sizeof e->unjudged);
    pthread_mutex_unlock(&w->lock);
    if (r->error[0]) {
        struct ts_log_kv kv[] = {{"node", w->node}, {"error", r->error}};
        ts_log(w->o->log_json, "error", "enforcement round failed", kv, 2);
    }
}

/* A Prometheus label value: backslash, quote and newline escaped. */
static void label(struct ts_sbuf *b, const char *s)
{
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        if (esc)
            ts_sbuf_puts(b, esc);
        else
            ts_sbuf_add(b, s, 1);
    }
}

static void head(struct ts_sbuf *b, const char *name, const char *help, const char *type)
{
    ts_sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void agent__enforce_metrics(struct agent_watch *w, struct ts_sbuf *b)
{
    struct agent__enforce *e = w->enf;
    if (!e)
        return;
    pthread_mutex_lock(&w->lock);
    head(b, "tessera_agent_violations_total",
         "Containers found over their limit, by tenant, workload, kind and action taken.",
         "counter");
    for (int i = 0; i < e->ns; i++) {
        ts_sbuf_puts(b, "tessera_agent_violations_total{tenant=\"");
        label(b, e->s[i].tenant);
        ts_sbuf_puts(b, "\",workload=\"");
        label(b, e->s[i].workload);
        ts_sbuf_printf(b, "\",kind=\"%s\",action=\"%s\"} %ld\n", kind_names[e->s[i].kind],
                       shim_action_name((enum shim_action)e->s[i].action), e->s[i].n);
    }
    head(b, "tessera_agent_enforce_kills_total", "Processes killed by the enforcement.", "counter");
    ts_sbuf_printf(b, "tessera_agent_enforce_kills_total %ld\n", e->killed);
    head(b, "tessera_agent_enforce_evictions_total",
         "Pods evicted by the enforcement, by result (refused by a disruption budget, or "
         "failed: killed instead).",
         "counter");
    ts_sbuf_printf(b,
                   "tessera_agent_enforce_evictions_total{result=\"ok\"} %ld\n"
                   "tessera_agent_enforce_evictions_total{result=\"refused\"} %ld\n"
                   "tessera_agent_enforce_evictions_total{result=\"failed\"} %ld\n",
                   e->evictions, e->evict_refused, e->evict_failures);
    head(b, "tessera_agent_enforce_rounds_total", "Enforcement rounds run.", "counter");
    ts_sbuf_printf(b, "tessera_agent_enforce_rounds_total %ld\n", e->rounds);
    head(b, "tessera_agent_enforce_errors_total",
         "Enforcement rounds NVML could not list, and ledger entries not written.", "counter");
    ts_sbuf_printf(b, "tessera_agent_enforce_errors_total %ld\n", e->errors);
    head(b, "tessera_agent_enforce_round_seconds", "How long the last enforcement round took.",
         "gauge");
    ts_sbuf_printf(b, "tessera_agent_enforce_round_seconds %.3f\n", e->last_round_s);
    head(b, "tessera_agent_enforce_processes", "GPU processes the last round listed.", "gauge");
    ts_sbuf_printf(b, "tessera_agent_enforce_processes %d\n", e->processes);
    head(b, "tessera_agent_enforce_containers", "Containers the last round judged.", "gauge");
    ts_sbuf_printf(b, "tessera_agent_enforce_containers %d\n", e->containers);
    head(b, "tessera_agent_enforce_truncated",
         "1 when the last round listed more processes than it judges.", "gauge");
    ts_sbuf_printf(b, "tessera_agent_enforce_truncated %d\n", e->overflow);
    head(b, "tessera_agent_unjudged_processes",
         "GPU processes (or containers) the last round could not judge, by reason.", "gauge");
    for (int i = 0; i < UNJUDGED_REASONS; i++)
        ts_sbuf_printf(b, "tessera_agent_unjudged_processes{reason=\"%s\"} %d\n", unjudged_names[i],
                       e->unjudged[i]);
    pthread_mutex_unlock(&w->lock);
}
