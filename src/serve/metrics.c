/*
 * metrics.c - the webhook's Prometheus metrics: requests by result, denials
 * by rule, a latency histogram, in-flight requests, reloads. Counters are
 * atomics (no lock on the request path); the rule table takes a mutex.
 */
#include "serve/internal.h"

#include <stdio.h>
#include <string.h>

static const double bounds[SERVE_BUCKETS - 1] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                 0.01,   0.025,   0.05,   0.1,   0.25,   1.0};

void serve_metrics_init(struct serve_metrics *m)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
}

void serve_metrics_observe(struct serve_metrics *m, double seconds)
{
    int b = 0;
    while (b < SERVE_BUCKETS - 1 && seconds > bounds[b])
        b++;
    atomic_fetch_add(&m->buckets[b], 1);
    atomic_fetch_add(&m->latency_count, 1);
    atomic_fetch_add(&m->latency_sum_ns, (unsigned long)(seconds * 1e9));
}

void serve_metrics_denied(struct serve_metrics *m, const char *rule)
{
    pthread_mutex_lock(&m->lock);
    int i = 0;
    while (i < m->nrules && strcmp(m->rules[i], rule) != 0)
        i++;
    if (i == m->nrules && m->nrules < SERVE_RULES_MAX) {
        snprintf(m->rules[i], sizeof(m->rules[i]), "%s", rule);
        m->nrules++;
    }
    if (i < m->nrules)
        m->rule_counts[i]++;
    pthread_mutex_unlock(&m->lock);
}

static void counter(struct ts_sbuf *o, const char *name, const char *help, const char *labels,
                    unsigned long v)
{
    ts_sbuf_printf(o, "# HELP %s %s\n# TYPE %s counter\n%s%s %lu\n", name, help, name, name, labels,
                   v);
}

void serve_metrics_text(struct serve_metrics *m, unsigned long generation, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "# HELP tessera_admission_requests_total Admission reviews by result.\n"
                    "# TYPE tessera_admission_requests_total counter\n");
    ts_sbuf_printf(o,
                   "tessera_admission_requests_total{result=\"allowed\"} %lu\n"
                   "tessera_admission_requests_total{result=\"denied\"} %lu\n"
                   "tessera_admission_requests_total{result=\"bad_request\"} %lu\n",
                   atomic_load(&m->requests_allowed), atomic_load(&m->requests_denied),
                   atomic_load(&m->requests_bad));
    counter(o, "tessera_http_other_requests_total", "Requests to other paths or methods.", "",
            atomic_load(&m->requests_other));
    ts_sbuf_puts(o, "# HELP tessera_admission_denials_total Denials by rule.\n"
                    "# TYPE tessera_admission_denials_total counter\n");
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->nrules; i++)
        ts_sbuf_printf(o, "tessera_admission_denials_total{rule=\"%s\"} %lu\n", m->rules[i],
                       m->rule_counts[i]);
    pthread_mutex_unlock(&m->lock);
    ts_sbuf_puts(o, "# HELP tessera_admission_duration_seconds Time to answer a review.\n"
                    "# TYPE tessera_admission_duration_seconds histogram\n");
    unsigned long cum = 0;
    for (int b = 0; b < SERVE_BUCKETS; b++) {
        cum += atomic_load(&m->buckets[b]);
        if (b < SERVE_BUCKETS - 1)
            ts_sbuf_printf(o, "tessera_admission_duration_seconds_bucket{le=\"%g\"} %lu\n",
                           bounds[b], cum);
        else
            ts_sbuf_printf(o, "tessera_admission_duration_seconds_bucket{le=\"+Inf\"} %lu\n", cum);
    }
    ts_sbuf_printf(o,
                   "tessera_admission_duration_seconds_sum %.9f\n"
                   "tessera_admission_duration_seconds_count %lu\n",
                   (double)atomic_load(&m->latency_sum_ns) / 1e9, atomic_load(&m->latency_count));
    ts_sbuf_printf(o,
                   "# HELP tessera_admission_in_flight Reviews being answered now.\n"
                   "# TYPE tessera_admission_in_flight gauge\ntessera_admission_in_flight %lu\n",
                   atomic_load(&m->in_flight));
    ts_sbuf_puts(o, "# HELP tessera_reloads_total Policy reloads by result.\n"
                    "# TYPE tessera_reloads_total counter\n");
    ts_sbuf_printf(o,
                   "tessera_reloads_total{result=\"ok\"} %lu\n"
                   "tessera_reloads_total{result=\"failed\"} %lu\n",
                   atomic_load(&m->reloads_ok), atomic_load(&m->reloads_failed));
    counter(o, "tessera_tls_reloads_total", "Certificate reloads.", "",
            atomic_load(&m->tls_reloads));
    counter(o, "tessera_tls_handshake_failures_total",
            "TLS handshakes that failed: plain HTTP to the TLS port, TLS below 1.2, a "
            "connection closed before its handshake finished.",
            "", atomic_load(&m->tls_failed));
    counter(o, "tessera_connections_deadline_total",
            "Connections cut because a request (headers and body) ran past its deadline.", "",
            atomic_load(&m->deadline_cut));
    counter(o, "tessera_admission_decode_refused_total",
            "Reviews refused (400) because decoding them needed more than the decode memory.", "",
            atomic_load(&m->decode_refused));
    counter(o, "tessera_connections_refused_total",
            "Connections refused: every slot their address may use was taken.", "",
            atomic_load(&m->slots_refused));
    counter(o, "tessera_admission_busy_total",
            "Reviews answered 429 unread: the request bodies in memory were at their budget.", "",
            atomic_load(&m->bodies_refused));
    ts_sbuf_printf(o,
                   "# HELP tessera_policy_generation The loaded policy's number.\n"
                   "# TYPE tessera_policy_generation gauge\ntessera_policy_generation %lu\n",
                   generation);
}
