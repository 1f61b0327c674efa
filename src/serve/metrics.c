/*
 * metrics.c - the webhook's Prometheus metrics: requests by result, denials
 * by rule, per tenant the reviews allowed and the denials by rule, a latency
 * histogram, in-flight requests, reloads. Counters are atomics (no lock on
 * the request path); the rule and tenant tables take a mutex.
 */
#include "serve/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/relabel.h"
#include "util/grow.h"

/* One (tenant, rule) pair's reviews; rule "" counts those allowed. */
struct serve_tenant_count {
    char tenant[64], rule[48];
    unsigned long n;
};

static const double bounds[SERVE_BUCKETS - 1] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                 0.01,   0.025,   0.05,   0.1,   0.25,   1.0};

void serve_metrics_init(struct serve_metrics *m)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
}

void serve_metrics_release(struct serve_metrics *m)
{
    free(m->tenants);
    m->tenants = NULL;
    m->ntenants = m->tenants_cap = 0;
    pthread_mutex_destroy(&m->lock);
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

static int tenant_cmp(const struct serve_tenant_count *c, const char *tenant, const char *rule)
{
    int d = strcmp(c->tenant, tenant);
    return d ? d : strcmp(c->rule, rule);
}

/* Where (tenant, rule) is or goes in the sorted table. */
static size_t tenant_find(const struct serve_metrics *m, const char *tenant, const char *rule)
{
    size_t lo = 0, hi = m->ntenants;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tenant_cmp(&m->tenants[mid], tenant, rule) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void tenant_add(struct serve_metrics *m, const char *tenant, const char *rule)
{
    size_t i = tenant_find(m, tenant, rule);
    if (i < m->ntenants && tenant_cmp(&m->tenants[i], tenant, rule) == 0) {
        m->tenants[i].n++;
        return;
    }
    if (m->ntenants >= SERVE_TENANT_RULES_MAX ||
        !ts_grow((void **)&m->tenants, &m->tenants_cap, m->ntenants, sizeof(*m->tenants)))
        return;
    memmove(&m->tenants[i + 1], &m->tenants[i], (m->ntenants - i) * sizeof(*m->tenants));
    m->ntenants++;
    struct serve_tenant_count *c = &m->tenants[i];
    snprintf(c->tenant, sizeof(c->tenant), "%s", tenant);
    snprintf(c->rule, sizeof(c->rule), "%s", rule);
    c->n = 1;
}

void serve_metrics_tenant(struct serve_metrics *m, const char *tenant, int allowed,
                          const char *rule)
{
    if (!tenant[0])
        return;
    pthread_mutex_lock(&m->lock);
    tenant_add(m, tenant, allowed ? "" : rule[0] ? rule : "unknown");
    pthread_mutex_unlock(&m->lock);
}

/* The tenant table as two families: reviews allowed, denials by rule. */
static void tenant_text(struct serve_metrics *m, struct ts_sbuf *o)
{
    static const char *const family[2][2] = {
        {"tessera_admission_tenant_allowed_total",
         "Reviews allowed in a tenant's namespaces, per tenant."},
        {"tessera_admission_tenant_denials_total",
         "Reviews denied in a tenant's namespaces, per tenant and rule."}};
    pthread_mutex_lock(&m->lock);
    for (int denied = 0; denied < 2; denied++) {
        ts_sbuf_printf(o, "# HELP %s %s\n# TYPE %s counter\n", family[denied][0], family[denied][1],
                       family[denied][0]);
        for (size_t i = 0; i < m->ntenants; i++) {
            const struct serve_tenant_count *c = &m->tenants[i];
            if ((c->rule[0] != '\0') != denied)
                continue;
            ts_sbuf_printf(o, "%s{tenant=", family[denied][0]);
            meter_relabel_put_label(o, c->tenant);
            if (denied) {
                ts_sbuf_puts(o, ",rule=");
                meter_relabel_put_label(o, c->rule);
            }
            ts_sbuf_printf(o, "} %lu\n", c->n);
        }
    }
    pthread_mutex_unlock(&m->lock);
}

static void counter(struct ts_sbuf *o, const char *name, const char *help, const char *labels,
                    unsigned long v)
{
    ts_sbuf_printf(o, "# HELP %s %s\n# TYPE %s counter\n%s%s %lu\n", name, help, name, name, labels,
                   v);
}

/* The admission families: reviews by result and rule, per tenant, latency,
 * in flight. */
static void admission_text(struct serve_metrics *m, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "# HELP tessera_admission_requests_total Admission reviews by result.\n"
                    "# TYPE tessera_admission_requests_total counter\n");
    ts_sbuf_printf(o,
                   "tessera_admission_requests_total{result=\"allowed\"} %lu\n"
                   "tessera_admission_requests_total{result=\"denied\"} %lu\n"
                   "tessera_admission_requests_total{result=\"bad_request\"} %lu\n",
                   atomic_load(&m->requests_allowed), atomic_load(&m->requests_denied),
                   atomic_load(&m->requests_bad));
    ts_sbuf_puts(o, "# HELP tessera_admission_denials_total Denials by rule.\n"
                    "# TYPE tessera_admission_denials_total counter\n");
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->nrules; i++)
        ts_sbuf_printf(o, "tessera_admission_denials_total{rule=\"%s\"} %lu\n", m->rules[i],
                       m->rule_counts[i]);
    pthread_mutex_unlock(&m->lock);
    tenant_text(m, o);
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
    counter(o, "tessera_admission_decode_refused_total",
            "Reviews refused (400) because decoding them needed more than the decode memory.", "",
            atomic_load(&m->decode_refused));
    counter(o, "tessera_admission_busy_total",
            "Reviews answered 429 unread: the request bodies in memory were at their budget, or "
            "the client address at its share of it.",
            "", atomic_load(&m->bodies_refused));
    counter(o, "tessera_connections_slow_body_total",
            "Connections cut because a review's body arrived slower than the minimum rate.", "",
            atomic_load(&m->slow_cut));
    counter(o, "tessera_admission_unauthenticated_total",
            "Reviews answered without the API server's client certificate "
            "(--admission-client-ca): never recorded as a tenant's.",
            "", atomic_load(&m->requests_unauthenticated));
}

void serve_metrics_text(struct serve_metrics *m, unsigned long generation, int admission,
                        struct ts_sbuf *o)
{
    if (admission)
        admission_text(m, o);
    counter(o, "tessera_http_other_requests_total", "Requests to other paths or methods.", "",
            atomic_load(&m->requests_other));
    ts_sbuf_puts(o, "# HELP tessera_reloads_total Policy reloads by result.\n"
                    "# TYPE tessera_reloads_total counter\n");
    ts_sbuf_printf(o,
                   "tessera_reloads_total{result=\"ok\"} %lu\n"
                   "tessera_reloads_total{result=\"failed\"} %lu\n",
                   atomic_load(&m->reloads_ok), atomic_load(&m->reloads_failed));
    counter(o, "tessera_tls_reloads_total", "Certificate reloads.", "",
            atomic_load(&m->tls_reloads));
    ts_sbuf_printf(o,
                   "# HELP tessera_tls_certificate_expiry_timestamp_seconds When the serving "
                   "certificate in use expires (Unix time).\n"
                   "# TYPE tessera_tls_certificate_expiry_timestamp_seconds gauge\n"
                   "tessera_tls_certificate_expiry_timestamp_seconds %lld\n",
                   (long long)atomic_load(&m->tls_not_after));
    counter(o, "tessera_tls_handshake_failures_total",
            "TLS handshakes that failed: plain HTTP to the TLS port, TLS below 1.2, a "
            "connection closed before its handshake finished.",
            "", atomic_load(&m->tls_failed));
    counter(o, "tessera_connections_deadline_total",
            "Connections cut because a TLS handshake or a request (headers and body) ran past "
            "its deadline.",
            "", atomic_load(&m->deadline_cut));
    counter(o, "tessera_connections_refused_total",
            "Connections refused: every slot their address may use was taken.", "",
            atomic_load(&m->slots_refused));
    counter(o, "tessera_http_framing_refused_total",
            "Requests answered 400 and closed because where their body ends was ambiguous "
            "(Content-Length with Transfer-Encoding, differing Content-Lengths).",
            "", atomic_load(&m->framing_refused));
    ts_sbuf_printf(o,
                   "# HELP tessera_policy_generation The loaded policy's number.\n"
                   "# TYPE tessera_policy_generation gauge\ntessera_policy_generation %lu\n",
                   generation);
}
