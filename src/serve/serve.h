/*
 * serve.h - the two HTTPS servers of tessera, one engine: libmicrohttpd
 * with GnuTLS (TLS 1.2 and 1.3 only), a thread pool sized to the cores,
 * hard limits on body size, header size, entries and decode memory, the
 * bodies held by all connections together, connections (in all, per client
 * address, and slots reserved for the API server's addresses), idle time
 * and whole request time (docs/webhook.md, Limits). Each runs alone in its
 * process, so nothing a tenant can call shares the admission path's
 * threads:
 *   `tessera serve` (SERVE_ROLE_WEBHOOK), the admission webhook:
 *     POST /validate  AdmissionReview v1 in, AdmissionReview out (admit/)
 *     GET  /healthz, /readyz
 *   `tessera console` (SERVE_ROLE_CONSOLE), what tenants and operators call:
 *     GET  /api/v1/...  the JSON API (api/, docs/api.md): bearer tokens or
 *                     client certificates (--client-ca); the webhook's
 *                     recent denials fetched from --denials-from
 *     GET  /ui/...    the console (ui.c, docs/console.md)
 *     GET  /metrics   as on the probes' port, for an operator identity only
 *     GET  /healthz, /readyz
 * The probes' port (--health-listen, plain HTTP, a thread per connection,
 * for the cluster's own network: tenant pods may not reach it):
 *     GET  /healthz, /readyz
 *     GET  /metrics   Prometheus text: the webhook's requests, denials by
 *                     rule, latency histogram, in-flight, reloads; the
 *                     console's: each tenant's allocation in the plan and,
 *                     with a metering store (--db), GPU-hours per tenant
 *                     and the stored dcgm-exporter series (metering.c)
 *     GET  /denials   the webhook's recent denials, as JSON (the console's
 *                     --denials-from)
 * The policy (spec + catalog -> decide -> plan -> admit policy) and the TLS
 * certificate reload on SIGHUP and when their files change, without
 * dropping a request; a spec or certificate that fails to load keeps the
 * old one serving, and the failure is logged and counted.
 */
#ifndef SERVE_SERVE_H
#define SERVE_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include "admit/admit.h"
#include "util/sbuf.h"

enum serve_role { SERVE_ROLE_WEBHOOK, SERVE_ROLE_CONSOLE };

struct serve_options {
    int role;                         /* enum serve_role */
    const char *listen;               /* "ADDR:PORT", default "0.0.0.0:8443" */
    const char *health_listen;        /* plain-HTTP /healthz and /readyz, NULL = none */
    const char *cert_file, *key_file; /* PEM */
    const char *const *spec_files;
    size_t nspec;
    const char *const *catalog_files;
    size_t ncatalog;
    int log_json;                   /* one JSON object per line instead of key=value */
    unsigned threads;               /* 0 = one per core */
    unsigned max_connections;       /* 0 = 1024 */
    unsigned timeout_s;             /* idle per connection, 0 = 10 */
    unsigned request_s;             /* a whole request, headers and body, 0 = 10 */
    unsigned per_client;            /* connections per client address, 0 = max_connections / 8 */
    const char *const *reserve_for; /* CIDRs whose connections may use the reserved slots */
    size_t nreserve_for;
    unsigned reserved;            /* slots only they may use, 0 = max_connections / 8 with them */
    unsigned watch_ms;            /* file check interval, 0 = 1000 */
    const char *db_url;           /* metering store, NULL = none */
    int64_t meter_interval_ms;    /* scrape interval of the samples, 0 = 15 s */
    int64_t meter_refresh_ms;     /* metering cache lifetime, 0 = 10 s */
    const char *tokens_file;      /* identities for /api/v1/ (docs/api.md), NULL: no API */
    const char *client_ca_file;   /* PEM CAs of client certificates: the API's (console),
                                   the API server's (webhook); NULL: none */
    const char *admission_client; /* webhook: the name (CN or DNS) the API server's
                                     certificate must carry, NULL: any of the CA's */
    const char *denials_from;     /* console: the webhook's /denials URL, NULL: none */
    const char *current_file;     /* the running layout for /api/v1/replan, NULL: none */
    const char *inventory_path;   /* NodeInventory file or folder for /api/v1/plan, NULL: none */
    struct admit_options admit;
};

struct serve_state;

/* Read what serving needs: --listen, the first spec (planned into a policy),
 * the catalog, the TLS certificate and key. An error here is the inputs'. */
ts_status serve_open(const struct serve_options *opt, struct serve_state **out,
                     struct ts_error *err);
/* Listen and serve s until SIGINT or SIGTERM, then free it. TS_OK after a
 * clean stop, or an error when the socket cannot be had. */
ts_status serve_run(struct serve_state *s, struct ts_error *err);

/* A plain-HTTP status listener for commands without a server of their own
 * (status.c): each GET calls fn, which fills body and returns the HTTP
 * code. fn runs on the listener's thread. TS_USAGE for a bad address,
 * TS_IO when it cannot listen. */
typedef unsigned (*serve_status_fn)(void *ctx, const char *path, struct ts_sbuf *body);
struct serve_status;
ts_status serve_status_start(const char *listen, serve_status_fn fn, void *ctx,
                             struct serve_status **out, struct ts_error *err);
void serve_status_stop(struct serve_status *s); /* NULL is fine */

#endif
