/*
 * watch.c - `tessera agent watch`: the node agent's long-running mode (the
 * DaemonSet's). Each round (every --interval-ms):
 *   1. read the node config (a NodeConfig, render's nodes/NODE/agent.json,
 *      or a whole plan, `tessera plan -o json`); a file that
 *      does not parse, or has no card of this node, is logged and counted
 *      and the last good plan stays; this node's part of the plan is
 *      hashed (FNV-1a over each card's index, model, mode and wanted
 *      instances), so a change to other nodes' cards changes nothing here;
 *   2. when that hash changed since the last reconcile (or none ran yet),
 *      or the last one failed and its backoff has passed: agent_apply with
 *      the journal (every check of `agent apply`: whole target first, a
 *      pending MIG mode refused, a card with processes left alone and
 *      reported: busy.c); failures wait the interval, then twice that, ... up to
 *      --backoff-max-ms; created and destroyed instances go to the ledger;
 *   3. read the cards: the NodeInventory and pid map files, the drift
 *      (planned cards whose geometry differs from the plan) for /metrics.
 * On its own cadence (--enforce-interval-ms), between those rounds, the
 * enforcement (enforce.c) judges every GPU process's container against
 * its limit file. Without --node the NodeConfig's `node` names the node.
 * A stop (SIGTERM) is seen between rounds, so a change in progress is
 * finished (or rolled back by apply) before the loop ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "agent/internal.h"
#include "util/file.h"
#include "util/log.h"
#include "util/time.h"

#define FNV_BASIS 1469598103934665603ULL

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
    return h;
}

/* The hash of node's cards in p; *cards gets how many. */
static uint64_t node_hash(const struct reconf_plan *p, const char *node, int *cards)
{
    uint64_t h = FNV_BASIS;
    char line[512];
    *cards = 0;
    for (int i = 0; i < p->n; i++) {
        const struct reconf_card *t = &p->t[i];
        if (strcmp(t->node, node) != 0)
            continue;
        ++*cards;
        int k = snprintf(line, sizeof line, "gpu %d %s %s %d|", t->index, t->model, t->mode,
                         t->nwant);
        h = fnv(line, (size_t)k, h);
        for (int j = 0; j < t->nwant; j++) {
            k = snprintf(line, sizeof line, "%s %d %d;", t->want[j].profile, t->want[j].start,
                         t->want[j].size);
            h = fnv(line, (size_t)k, h);
        }
    }
    return h;
}

static void say(const struct agent_watch *w, const char *level, const char *msg,
                const struct ts_log_kv *kv, size_t n)
{
    ts_log(w->o->log_json, level, msg, kv, n);
}

static void say_error(struct agent_watch *w, const char *msg, const struct ts_error *e)
{
    char where[2 * TS_PATH_MAX + 32] = "";
    if (e->file[0])
        snprintf(where, sizeof where, "%s%s%s", e->file, e->path[0] ? ": " : "", e->path);
    struct ts_log_kv kv[] = {{"error", e->msg}, {"where", where}};
    say(w, "error", msg, kv, where[0] ? 2 : 1);
}

/* Each line of an apply's report as its own log line. */
static void say_lines(struct agent_watch *w, const char *level, const char *text)
{
    char line[TS_MSG_MAX * 2];
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        struct ts_log_kv kv[] = {{"node", w->node}};
        say(w, level, line, kv, 1);
        p += n + (p[n] == '\n');
    }
}

/* 1 when e differs from the last error of its kind (then remembered). */
static int news(char *last, const struct ts_error *e)
{
    char now[TS_MSG_MAX];
    snprintf(now, sizeof now, "%s", e ? e->msg : "");
    if (strcmp(now, last) == 0)
        return 0;
    memcpy(last, now, sizeof now);
    return 1;
}

/* Logged and counted once until the error changes. */
static void config_error(struct agent_watch *w, const struct ts_error *e, uint64_t fh)
{
    w->bad_hash = fh;
    if (!news(w->cfg_err, e))
        return;
    say_error(w, "node config not loaded; keeping the last good plan", e);
    pthread_mutex_lock(&w->lock);
    w->stats.config_errors++;
    pthread_mutex_unlock(&w->lock);
}

/* A new plan p (node hash nh) replaces the old. */
static void take_plan(struct agent_watch *w, struct reconf_plan *p, uint64_t nh, int cards)
{
    int changed = !w->have_plan || nh != w->node_hash;
    if (w->have_plan)
        reconf_plan_release(&w->plan);
    w->plan = *p;
    w->have_plan = 1;
    w->node_hash = nh;
    if (!changed)
        return;
    char hash[24], n[16];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)nh);
    snprintf(n, sizeof n, "%d", cards);
    struct ts_log_kv kv[] = {{"node", w->o->node}, {"hash", hash}, {"cards", n}};
    say(w, "info", "plan for this node changed", kv, 3);
    w->pending = 1;
    w->backoff_ms = 0;
    w->next_try_ms = 0;
    pthread_mutex_lock(&w->lock);
    w->stats.plan_changes++;
    w->stats.planned = cards;
    pthread_mutex_unlock(&w->lock);
}

/* Without --node, the NodeConfig's `node` is this agent's node (as for
 * `agent apply --node-config`); a whole plan names none and keeps the
 * default ($NODE_NAME, else the host name). */
static void adopt_node(struct agent_watch *w, const char *node)
{
    if (!w->o->node_from_config || !node || !*node || !strcmp(node, w->node))
        return;
    struct ts_log_kv kv[] = {{"node", node}, {"was", w->node}, {"node_config", w->o->node_config}};
    say(w, "info", "node name taken from the NodeConfig", kv, 3);
    snprintf(w->node, sizeof w->node, "%s", node);
}

/* At start: the NodeConfig's node, when it can be read already. */
static void peek_node(struct agent_watch *w)
{
    char *text = NULL;
    size_t len = 0;
    struct ts_error e = {0};
    struct reconf_plan p;
    if (!w->o->node_from_config ||
        ts_file_read(w->o->node_config, AGENT_NODE_CONFIG_MAX, &text, &len, &e) != TS_OK)
        return;
    if (reconf_plan_parse(text, len, w->o->node_config, &p, &e) == TS_OK) {
        if (p.node && *p.node)
            snprintf(w->node, sizeof w->node, "%s", p.node);
        reconf_plan_release(&p);
    }
    free(text);
}

static void load_config(struct agent_watch *w)
{
    char *text = NULL;
    size_t len = 0;
    struct ts_error e = {0};
    struct reconf_plan p;
    if (ts_file_read(w->o->node_config, AGENT_NODE_CONFIG_MAX, &text, &len, &e) != TS_OK) {
        config_error(w, &e, 0);
        return;
    }
    uint64_t fh = fnv(text, len, FNV_BASIS);
    if ((w->have_plan && fh == w->file_hash) || (w->bad_hash && fh == w->bad_hash)) {
        free(text);
        return; /* unchanged since last read */
    }
    ts_status st = reconf_plan_parse(text, len, w->o->node_config, &p, &e);
    free(text);
    if (st != TS_OK) {
        config_error(w, &e, fh);
        return;
    }
    adopt_node(w, p.node);
    int cards = 0;
    uint64_t nh = node_hash(&p, w->o->node, &cards);
    if (cards == 0) {
        ts_err_at(&e, TS_INVALID, w->o->node_config, 0, 0, "gpus",
                  "the plan has no GPU on node '%s'", w->o->node);
        reconf_plan_release(&p);
        config_error(w, &e, fh);
        return;
    }
    w->file_hash = fh;
    w->bad_hash = 0;
    news(w->cfg_err, NULL);
    take_plan(w, &p, nh, cards);
}

static const char *result_of(ts_status st, const struct agent_apply_report *r)
{
    if (st == TS_OK)
        return "ok";
    if (st == TS_INVALID)
        return "invalid";
    return r->busy ? "busy" : "failed";
}

/* After a reconcile: counters, backoff, the result line. */
static void settle(struct agent_watch *w, ts_status st, const struct agent_apply_report *r,
                   const struct ts_error *e, int recorded)
{
    int iv = w->o->interval_ms, max = w->o->backoff_max_ms;
    w->pending = st != TS_OK;
    w->backoff_ms = st == TS_OK ? 0 : w->backoff_ms ? w->backoff_ms * 2 : iv;
    w->backoff_ms = w->backoff_ms > max ? max : w->backoff_ms;
    w->next_try_ms = ts_clock_ms(CLOCK_MONOTONIC) + w->backoff_ms;
    pthread_mutex_lock(&w->lock);
    w->stats.ok += st == TS_OK;
    w->stats.failed += st != TS_OK;
    w->stats.busy += r->busy;
    w->stats.busy_instances = r->busy_instances;
    w->stats.last_ms = ts_clock_ms(CLOCK_REALTIME);
    w->stats.last_ok = st == TS_OK;
    pthread_mutex_unlock(&w->lock);
    char kept[12], changed[12], busy[12], failed[12], retry[24], rec[12];
    snprintf(kept, sizeof kept, "%d", r->kept);
    snprintf(changed, sizeof changed, "%d", r->changed);
    snprintf(busy, sizeof busy, "%d", r->busy);
    snprintf(failed, sizeof failed, "%d", r->failed);
    snprintf(retry, sizeof retry, "%lld", (long long)w->backoff_ms);
    snprintf(rec, sizeof rec, "%d", recorded);
    struct ts_log_kv kv[] = {{"node", w->o->node},    {"result", result_of(st, r)},
                             {"kept", kept},          {"changed", changed},
                             {"busy", busy},          {"failed", failed},
                             {"custody_events", rec}, {"error", st == TS_OK ? "" : e->msg},
                             {"retry_in_ms", retry}};
    say(w, st == TS_OK ? "info" : "warn", "reconcile", kv, st == TS_OK ? 7 : 9);
}

static void reconcile(struct agent_watch *w)
{
    struct inv_node *before = calloc(1, sizeof *before), *after = calloc(1, sizeof *after);
    struct agent_apply_report r = {0};
    struct agent_apply_opts ao = {w->o->node, 0, NULL, w->o->journal, &r};
    struct ts_sbuf log;
    struct ts_error e = {0}, ce = {0};
    int recorded = 0;
    ts_sbuf_init(&log, 1024 * 1024);
    ts_status st = before && after ? agent_inventory_read(w->n, w->o->node, before, &e)
                                   : ts_err(&e, TS_NOMEM, "out of memory");
    if (st == TS_OK)
        st = agent_apply(w->n, &w->plan, w->o->cat, &ao, &log, &e);
    say_lines(w, st == TS_OK ? "info" : "warn", ts_sbuf_str(&log));
    if (r.changed + r.failed > 0 && w->o->store &&
        (agent_inventory_read(w->n, w->o->node, after, &ce) != TS_OK ||
         agent__custody(w->o, before, after, &w->plan, &recorded, &ce) != TS_OK))
        say_error(w, "custody events not recorded", &ce);
    settle(w, st, &r, &e, recorded);
    ts_sbuf_release(&log);
    free(before);
    free(after);
}

static int drift(const struct agent_watch *w, const struct inv_node *inv)
{
    struct reconf_diff d;
    int n = 0;
    for (int i = 0; w->have_plan && i < w->plan.n; i++) {
        const struct reconf_card *t = &w->plan.t[i];
        if (strcmp(t->node, w->o->node) != 0)
            continue;
        reconf_diff_card(inv_gpu_at(inv, t->index), t, w->o->cat, &d);
        n += d.verdict != RECONF_KEEP;
    }
    return n;
}

static ts_status write_inventory(const struct inv_node *inv, const char *path, struct ts_error *e)
{
    struct ts_sbuf b;
    ts_sbuf_init(&b, 4 * 1024 * 1024);
    ts_status st = inv_json(inv, &b);
    if (st == TS_OK)
        st = ts_file_write(path, ts_sbuf_str(&b), b.len, e);
    else
        ts_err(e, st, "inventory: cannot write it as JSON");
    ts_sbuf_release(&b);
    return st;
}

/* Read the cards: inventory and pid map files, drift, readiness. */
static void observe(struct agent_watch *w)
{
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct ts_error e = {0};
    ts_status st = inv ? agent_inventory_read(w->n, w->o->node, inv, &e) : TS_NOMEM;
    if (st == TS_OK && w->o->inventory_out)
        st = write_inventory(inv, w->o->inventory_out, &e);
    if (st == TS_OK && w->o->pidmap_out)
        st = agent_pidmap_write(w->n, inv, w->o->pidmap_out, &e);
    if (st != TS_OK && inv && news(w->obs_err, &e))
        say_error(w, "reading the cards failed", &e);
    else if (st == TS_OK)
        news(w->obs_err, NULL);
    int dr = st == TS_OK ? drift(w, inv) : 0;
    pthread_mutex_lock(&w->lock);
    w->stats.drift = dr;
    w->stats.ready = st == TS_OK && w->have_plan;
    w->stats.round_ms = ts_clock_ms(CLOCK_MONOTONIC);
    pthread_mutex_unlock(&w->lock);
    free(inv);
}

/* Sleep until the next round, waking early on a stop. */
static void pause_round(const struct agent_watch *w, int64_t until)
{
    for (int64_t now = ts_clock_ms(CLOCK_MONOTONIC); now < until && !*w->o->stop;
         now = ts_clock_ms(CLOCK_MONOTONIC)) {
        int64_t left = until - now > 20 ? 20 : until - now;
        struct timespec ts = {0, (long)left * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static ts_status recover(struct agent_watch *w, struct ts_error *err)
{
    struct ts_sbuf log;
    int found = 0;
    ts_sbuf_init(&log, 64 * 1024);
    ts_status st = agent_journal_recover(w->n, w->o->journal, &found, &log, err);
    say_lines(w, "warn", ts_sbuf_str(&log));
    ts_sbuf_release(&log);
    if (st == TS_OK && found) {
        struct ts_log_kv kv[] = {{"node", w->o->node}, {"journal", w->o->journal}};
        say(w, "warn", "recovered from a change cut short; the next reconcile completes it", kv, 2);
        w->stats.recoveries++;
    }
    return st;
}

ts_status agent_watch_new(struct agent_nvml *n, const struct agent_watch_opts *o,
                          struct agent_watch **out, struct ts_error *err)
{
    struct agent_watch *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w)
        return ts_err(err, TS_NOMEM, "out of memory");
    w->opts = *o;
    snprintf(w->node, sizeof w->node, "%s", o->node ? o->node : "");
    w->opts.node = w->node;
    w->o = &w->opts;
    w->n = n;
    pthread_mutex_init(&w->lock, NULL);
    peek_node(w);
    ts_status est = o->enforce_interval_ms > 0 ? agent__enforce_new(&w->enf, err) : TS_OK;
    if (est == TS_OK && w->enf && o->sm_window_ms > 0)
        est = agent__sm_new(&w->sm, err);
    if (est != TS_OK) {
        agent_watch_free(w);
        return est;
    }
    w->stats.round_ms = ts_clock_ms(CLOCK_MONOTONIC);
    ts_status st = o->journal ? recover(w, err) : TS_OK;
    if (st != TS_OK) {
        agent_watch_free(w);
        return st;
    }
    *out = w;
    return TS_OK;
}

ts_status agent_watch_run(struct agent_watch *w, struct ts_error *err)
{
    (void)err; /* nothing stops it but the stop flag */
    const struct agent_watch_opts *o = w->o;
    struct ts_log_kv kv[] = {
        {"node", o->node}, {"node_config", o->node_config}, {"listen", o->listen}};
    say(w, "info", "watching", kv, 3);
    const char *unchecked = agent_nvml_unchecked(w->n);
    struct ts_log_kv nk[] = {{"node", o->node}, {"unchecked", unchecked}};
    if (unchecked)
        say(w, "warn", "this driver lacks an optional NVML function", nk, 2);
    int64_t next = ts_clock_ms(CLOCK_MONOTONIC), next_enf = next, next_sm = next;
    while (!*o->stop) {
        if (ts_clock_ms(CLOCK_MONOTONIC) >= next) {
            next = ts_clock_ms(CLOCK_MONOTONIC) + o->interval_ms;
            load_config(w);
            if (w->have_plan && w->pending && ts_clock_ms(CLOCK_MONOTONIC) >= w->next_try_ms)
                reconcile(w);
            observe(w);
        }
        if (w->enf && ts_clock_ms(CLOCK_MONOTONIC) >= next_enf) {
            next_enf = ts_clock_ms(CLOCK_MONOTONIC) + o->enforce_interval_ms;
            agent__enforce_round(w);
        }
        if (w->sm && ts_clock_ms(CLOCK_MONOTONIC) >= next_sm) {
            next_sm = ts_clock_ms(CLOCK_MONOTONIC) + AGENT_SM_POLL_MS;
            agent__sm_poll(w);
        }
        int64_t until = w->enf && next_enf < next ? next_enf : next;
        pause_round(w, w->sm && next_sm < until ? next_sm : until);
    }
    say(w, "info", "stopped", kv, 1);
    return TS_OK;
}

void agent_watch_free(struct agent_watch *w)
{
    if (!w)
        return;
    if (w->have_plan)
        reconf_plan_release(&w->plan);
    agent__enforce_free(w->enf);
    agent__sm_free(w->sm);
    agent__kube_free(w->kube);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
