/*
 * http.c - `agent watch --listen`: plain HTTP (libmicrohttpd, one internal
 * thread) for the kubelet's probes and Prometheus:
 *   /healthz  200 while the watch loop turns (its last round within ten
 *             intervals, or two seconds, whichever is longer), else 503;
 *   /readyz   200 once a plan for this node is loaded and the last round
 *             read the cards, else 503;
 *   /metrics  the counters of struct agent__stats, Prometheus text format.
 * The loop writes the stats under the lock; a request copies them.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"
#include "util/addr.h"

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type,
                             struct ts_sbuf *b)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(b->len, (void *)ts_sbuf_str(b),
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

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

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **ctx)
{
    (void)version, (void)data, (void)size, (void)ctx;
    struct agent__watch *w = cls;
    struct agent__stats s;
    pthread_mutex_lock(&w->lock);
    s = w->stats;
    pthread_mutex_unlock(&w->lock);
    struct ts_sbuf b;
    ts_sbuf_init(&b, 64 * 1024);
    unsigned code = MHD_HTTP_OK;
    int64_t quiet = agent__mono_ms() - s.round_ms, alive = 10LL * w->o->interval_ms;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0) {
        code = MHD_HTTP_METHOD_NOT_ALLOWED;
        ts_sbuf_puts(&b, "method not allowed\n");
    } else if (strcmp(url, "/metrics") == 0) {
        metrics_text(&s, &b);
    } else if (strcmp(url, "/healthz") == 0) {
        code = quiet <= (alive > 2000 ? alive : 2000) ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        ts_sbuf_puts(&b, code == MHD_HTTP_OK ? "ok\n" : "watch loop stalled\n");
    } else if (strcmp(url, "/readyz") == 0) {
        code = s.ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        ts_sbuf_puts(&b, s.ready ? "ready\n" : "no plan for this node loaded yet\n");
    } else {
        code = MHD_HTTP_NOT_FOUND;
        ts_sbuf_puts(&b, "not found\n");
    }
    enum MHD_Result r = reply(c, code, "text/plain; version=0.0.4; charset=utf-8", &b);
    ts_sbuf_release(&b);
    return r;
}

static void mhd_quiet(void *cls, const char *fmt, va_list ap) { (void)cls, (void)fmt, (void)ap; }

ts_status agent__http_start(struct agent__watch *w, struct ts_error *err)
{
    struct sockaddr_storage sa;
    int v6 = 0;
    if (!ts_listen_parse(w->o->listen, &sa, &v6))
        return ts_err_at(err, TS_USAGE, NULL, 0, 0, "--listen",
                         "'%s' is not ADDR:PORT, [ADDR6]:PORT or :PORT", w->o->listen);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | (v6 ? MHD_USE_IPv6 : 0);
    w->http = MHD_start_daemon(flags, 0, NULL, NULL, handle, w, MHD_OPTION_EXTERNAL_LOGGER,
                               mhd_quiet, NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&sa,
                               MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 5u,
                               MHD_OPTION_END);
    if (!w->http)
        return ts_err(err, TS_IO, "cannot listen on %s (in use, or not this host's address)",
                      w->o->listen);
    return TS_OK;
}

void agent__http_stop(struct agent__watch *w)
{
    if (w->http)
        MHD_stop_daemon(w->http);
    w->http = NULL;
}
