/*
 * status.c - what `agent watch --listen` answers (the CLI serves it over
 * plain HTTP with serve's status listener) for the kubelet's probes and
 * Prometheus:
 *   /healthz  200 while the watch loop turns (its last round within ten
 *             intervals, or two seconds, whichever is longer), else 503;
 *   /readyz   200 once a plan for this node is loaded and the last round
 *             read the cards, else 503;
 *   /metrics  the counters of struct agent__stats, Prometheus text format.
 * The loop writes the stats under the lock; a request copies them.
 */
#include <stdio.h>
#include <string.h>
#include "agent/internal.h"
#include "util/time.h"

#define METRIC(b, name, help, type, fmt, ...)                                               \
    ts_sbuf_printf(b, "# HELP " name " " help "\n# TYPE " name " " type "\n" name fmt "\n", \
                   __VA_ARGS__)

static void metrics_text(const struct agent__stats *s, struct ts_sbuf *b)
{
    METRIC(b, "tessera_agent_reconciles_total", "Reconciles run, by result.", "counter",
           "{result=\"ok\"} %ld\ntessera_agent_reconciles_total{result=\"failed\"} %ld", s->ok,
           s->failed);
    METRIC(b, "tessera_agent_last_reconcile_timestamp_seconds",
           "When the last reconcile ended (0: none yet).", "gauge", " %.3f",
           (double)s->last_ms / 1000.0);
    METRIC(b, "tessera_agent_last_reconcile_success", "1 when the last reconcile succeeded.",
           "gauge", " %d", s->last_ok);
    METRIC(b, "tessera_agent_busy_refusals_total",
           "Cards left alone because processes ran on them.", "counter", " %ld", s->busy);
    METRIC(b, "tessera_agent_busy_instances",
           "GPU instances the last reconcile left alone because processes ran on them.", "gauge",
           " %d", s->busy_instances);
    METRIC(b, "tessera_agent_drift_cards",
           "Planned cards of this node whose geometry differs from the plan.", "gauge", " %d",
           s->drift);
    METRIC(b, "tessera_agent_planned_cards", "Cards of this node in the plan.", "gauge", " %d",
           s->planned);
    METRIC(b, "tessera_agent_plan_changes_total", "Changes of this node's plan seen.", "counter",
           " %ld", s->plan_changes);
    METRIC(b, "tessera_agent_config_errors_total", "Node config reads that failed.", "counter",
           " %ld", s->config_errors);
    METRIC(b, "tessera_agent_recoveries_total", "Interrupted changes found at start.", "counter",
           " %ld", s->recoveries);
}

unsigned agent_watch_status(struct agent_watch *w, const char *path, struct ts_sbuf *b)
{
    struct agent__stats s;
    pthread_mutex_lock(&w->lock);
    s = w->stats;
    pthread_mutex_unlock(&w->lock);
    int64_t quiet = ts_clock_ms(CLOCK_MONOTONIC) - s.round_ms, alive = 10LL * w->o->interval_ms;
    if (strcmp(path, "/metrics") == 0) {
        metrics_text(&s, b);
        agent__enforce_metrics(w, b);
        return 200;
    }
    if (strcmp(path, "/healthz") == 0) {
        int up = quiet <= (alive > 2000 ? alive : 2000);
        ts_sbuf_puts(b, up ? "ok\n" : "watch loop stalled\n");
        return up ? 200 : 503;
    }
    if (strcmp(path, "/readyz") == 0) {
        ts_sbuf_puts(b, s.ready ? "ready\n" : "no plan for this node loaded yet\n");
        return s.ready ? 200 : 503;
    }
    ts_sbuf_puts(b, "not found\n");
    return 404;
}
