/*
 * internal.h - the parts of `tessera serve`: logging (util/log.h), metrics
 * (metrics.c), metering on /metrics (metering.c), the reloadable policy and
 * certificate (state.c), and the HTTP handler (server.c). Not part of
 * serve's interface.
 */
#ifndef SERVE_INTERNAL_H
#define SERVE_INTERNAL_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include "api/api.h"
#include "catalog/catalog.h"
#include "decide/decide.h"
#include "inventory/inventory.h"
#include "meter/usage.h"
#include "spec/spec.h"
#include "serve/serve.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/sbuf.h"

/* Logging: util/log.h (ts_log), shared with meter scrape and agent watch. */

/* ---- jalloc.c: jansson allocates from a bounded region during a review ---- */
/* Install the allocator with min(threads, SERVE_DECODES_MAX) regions. */
void serve_jalloc_install(unsigned threads);
unsigned serve_jalloc_slots(void);
/* Wait for a region and allocate from it; end returns 1 when the review
 * needed more than SERVE_DECODE_MEM (its decode failed). */
void serve_jalloc_begin(void);
int serve_jalloc_end(void);

/* ---- capacity.c: connection slots (some reserved) and the body budget ---- */
struct serve_metrics;
/* Read --max-connections, --reserve-for and --reserved (TS_USAGE when bad). */
ts_status serve_capacity_init(const struct serve_options *o, struct serve_metrics *m,
                              struct ts_error *err);
/* 1 when the address is in a --reserve-for network. */
int serve_slot_reserved(const struct sockaddr *sa);
/* libmicrohttpd's accept policy: MHD_NO when no slot is left for addr. */
enum MHD_Result serve_accept(void *cls, const struct sockaddr *addr, socklen_t len);
void serve_slot_open(int reserved);
void serve_slot_close(int reserved);
unsigned serve_slots_max(void);
/* Whom a body's bytes are charged to: the client address (IPv4 as
 * ::ffff:a.b.c.d) and whether it is in --reserve-for. */
struct serve_client {
    unsigned char addr[16];
    int reserved;
};
void serve_client_of(const struct sockaddr *sa, struct serve_client *c);
/* Take n bytes of SERVE_BODIES_MEM for a body being received (0: not
 * there, counted): outside --reserve-for, only what SERVE_BODIES_RESERVED
 * leaves and at most SERVE_BODIES_PER_CLIENT an address. Give them back,
 * charged to the same client, when the review is answered. */
int serve_body_take(const struct serve_client *c, size_t n);
void serve_body_give(const struct serve_client *c, size_t n);
/* 1 when got bytes in seconds since a body's headers is below
 * SERVE_BODY_RATE_MIN (judged after SERVE_BODY_RATE_AFTER_S). */
int serve_body_too_slow(double seconds, size_t got);
/* The connection and body gauges, for /metrics. */
void serve_capacity_text(struct ts_sbuf *out);

/* ---- deadline.c: connections tracked against their deadlines ---- */
struct serve_state;
/* Monotonic seconds. */
double serve_now_s(void);
/* libmicrohttpd's connection notice: track it from its start (and count its
 * slot), or stop tracking it. */
void serve_conn_notify(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                       enum MHD_ConnectionNotificationCode code);
/* A request answered: the next one's deadline starts now. */
void serve_conn_restart(struct MHD_Connection *conn);
enum serve_body_event { SERVE_BODY_STARTS, SERVE_BODY_GREW, SERVE_BODY_ENDS };
/* A review's body starts, grows by n bytes, or ends (for its minimum rate). */
void serve_conn_body(struct MHD_Connection *conn, enum serve_body_event e, size_t n);
/* Shut down every connection past its deadline or with a body too slow. */
void serve_conn_reap(struct serve_state *s);
/* Whether conn opened under a certificate since replaced. */
int serve_conn_stale(struct MHD_Connection *conn);

/* ---- framing.c: a request whose body's end is ambiguous (RFC 9112 6.3) ---- */
/* What is wrong with the framing of conn's request (version: its HTTP
 * version), NULL when nothing is. */
const char *serve_framing_fault(struct MHD_Connection *conn, const char *version);

/* ---- metrics.c (SERVE_RULES_MAX, SERVE_TENANT_RULES_MAX: util/limits.h) ---- */
/* Latency histogram buckets: the bounds table of metrics.c, plus +Inf. */
#define SERVE_BUCKETS 13

struct serve_metrics {
    atomic_ulong requests_allowed, requests_denied, requests_bad, requests_other;
    atomic_ulong in_flight, reloads_ok, reloads_failed, tls_reloads;
    atomic_llong tls_not_after;            /* the serving certificate's end, Unix seconds */
    atomic_ulong tls_failed;               /* handshakes that failed: plain HTTP, old TLS */
    atomic_ulong deadline_cut;             /* connections cut for a request over its deadline */
    atomic_ulong decode_refused;           /* reviews over the decode memory */
    atomic_ulong slots_refused;            /* connections refused: no slot for their address */
    atomic_ulong bodies_refused;           /* reviews refused (429): the body budget was spent */
    atomic_ulong slow_cut;                 /* connections cut: a body under SERVE_BODY_RATE_MIN */
    atomic_ulong framing_refused;          /* requests refused (400): ambiguous body framing */
    atomic_ulong requests_unauthenticated; /* reviews not from the API server's certificate */
    atomic_ulong buckets[SERVE_BUCKETS];   /* cumulative counts are made at output */
    atomic_ulong latency_count, latency_sum_ns;
    pthread_mutex_t lock; /* guards the rule table and the tenants' */
    char rules[SERVE_RULES_MAX][48];
    unsigned long rule_counts[SERVE_RULES_MAX];
    int nrules;
    struct serve_tenant_count *tenants; /* sorted by tenant, then rule ("": allowed) */
    size_t ntenants, tenants_cap;
};
void serve_metrics_init(struct serve_metrics *m);
void serve_metrics_release(struct serve_metrics *m);
/* A review answered in a tenant's namespace, allowed or denied by rule;
 * nothing for a review of no tenant (tenant ""). */
void serve_metrics_tenant(struct serve_metrics *m, const char *tenant, int allowed,
                          const char *rule);
void serve_metrics_observe(struct serve_metrics *m, double seconds);
void serve_metrics_denied(struct serve_metrics *m, const char *rule);
/* The process's families: the server's (TLS, connections, reloads) and,
 * with admission (the webhook), the reviews'. */
void serve_metrics_text(struct serve_metrics *m, unsigned long generation, int admission,
                        struct ts_sbuf *out);

/* ---- metering.c: the metering part of /metrics (--db) ---- */
struct serve_meter_fam;
struct serve_meter_pt;

struct serve_meter {
    const char *url; /* NULL: no --db, only the plan's allocation */
    int log_json;
    int64_t interval_ms, refresh_ms; /* scrape interval (gap cap), cache lifetime */
    pthread_mutex_t lock;            /* guards everything below */
    struct meter_usage usage;        /* running GPU-hour totals */
    struct serve_meter_fam *fams;    /* each device's points not yet billed, sorted */
    size_t nfams, famcap;
    char cur[METER_KEY_MAX];       /* the device (key up to '#') being read; "" none */
    struct serve_meter_pt *newest; /* its newest points read so far */
    size_t nnewest, newcap;
    int64_t watermark_ms;             /* newest sample integrated */
    int64_t rebuilt_at, refreshed_at; /* monotonic ms; 0 never */
    ts_status scan_status;
    int up;
    unsigned long refreshes_ok, refreshes_failed;
    long rejected_lines;
    struct ts_sbuf text, dcgm; /* cached: GPU-hours; relabelled expositions */
};

/* Checks the URL (TS_USAGE when bad); a database down is only logged. */
ts_status serve_meter_init(struct serve_meter *m, const struct serve_options *o,
                           struct ts_error *err);
void serve_meter_release(struct serve_meter *m);
struct serve_state;
/* Append the plan's allocation and, with --db, the metering families,
 * refreshing them first when the cache is older than refresh_ms. Only for
 * GET /metrics: it may read the database on the caller's thread. */
void serve_meter_text(struct serve_meter *m, struct serve_state *s, struct ts_sbuf *out);

/* ---- ui.c: the console's files under /ui/ (ui_assets.c: cmake/embed-ui.cmake) ---- */
struct serve_asset {
    const char *name; /* "index.html": the path under /ui/ */
    const unsigned char *data;
    size_t len;
};
extern const struct serve_asset serve_ui_assets[];
extern const size_t serve_ui_nassets;
/* 1 for /ui and what is under /ui/. */
int serve_ui_path(const char *url);
/* Answer a GET under /ui/: the file, /ui/ for /ui, or 404, each with the
 * console's security headers. */
enum MHD_Result serve_ui_get(struct MHD_Connection *conn, const char *url);
/* Add the console's security headers (CSP, nosniff, no framing) to r. */
void serve_ui_secure(struct MHD_Response *r);

/* ---- state.c: what a request reads, swapped whole on reload ---- */
/* --inventory: the NodeInventory documents of the nodes (inventory.c). */
struct serve_inventory {
    struct inv_node *node;
    size_t n;
};
ts_status serve__inventory_load(const char *path, struct serve_inventory *inv, struct ts_error *e);
void serve__inventory_free(struct serve_inventory *inv);

struct serve_policy {        /* one loaded spec, reference counted */
    struct cat_catalog *cat; /* the admit policy may point into these */
    struct spec_model *model;
    struct decide_result *decisions;
    struct plan *plan;
    struct admit_policy *admit;
    struct api_idents *idents;   /* --tokens, NULL: no API */
    struct reconf_plan *current; /* --current, NULL: none */
    struct serve_inventory inv;  /* --inventory, n 0: none */
    unsigned long generation;
    atomic_int refs;
};

struct serve_tls { /* one loaded certificate and key */
    gnutls_pcert_st pcert[8];
    unsigned npcert;
    gnutls_privkey_t key;
};

/* ---- denials.c: the recent denials; api.c: /api/v1/ and identities ---- */
struct serve_denials {
    pthread_mutex_t lock;
    struct api_denial *ring; /* SERVE_DENIALS_MAX, allocated on the first denial */
    size_t next, n;          /* next slot to write, entries held */
    unsigned long dropped;
};
struct admit_verdict;
/* Keep a denial /validate answered. */
void serve_denial_add(struct serve_denials *d, const struct admit_verdict *v);
void serve_denials_release(struct serve_denials *d);
struct serve_state;
/* Answer GET /api/v1/... (url starts with it). */
enum MHD_Result serve_api_get(struct serve_state *s, struct MHD_Connection *conn, const char *url);
/* Queue r (and destroy it) with what every answer of the TLS port carries,
 * whoever made it: Strict-Transport-Security, and Connection: close on a
 * connection opened under a replaced certificate (server.c). */
enum MHD_Result serve_queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r);
/* Queue an answer with the headers every answer carries (server.c). */
enum MHD_Result serve_reply(struct MHD_Connection *conn, unsigned status, const char *type,
                            const char *body, size_t len, const char *const *headers);
/* The client certificate's CAs for libmicrohttpd (--client-ca), "" none. */
char *serve_client_ca(const struct serve_options *o, struct ts_error *err);
/* Whether conn's client certificate is the API server's: verified against
 * the webhook's --admission-client-ca, with clientAuth, and naming
 * --admission-client when it is set. */
int serve_admission_client(struct serve_state *s, struct MHD_Connection *conn);
/* Whether conn is an operator's (bearer token or client certificate). */
int serve_api_operator(struct serve_state *s, struct MHD_Connection *conn);
/* 401 (no identity) or 403 (a tenant's) for a page only operators see. */
enum MHD_Result serve_api_refuse(struct serve_state *s, struct MHD_Connection *conn);
/* Denials read from webhooks' /denials answers. */
struct serve_denial_list {
    struct api_denial *d; /* malloc'd */
    size_t n, cap;
    unsigned long dropped;
};
/* Add the denials of one /denials answer (body, from the network: every
 * field checked, at most SERVE_DENIALS_MAX items) to f; 0 when it is not
 * one (what it added stays). */
int serve_denials_parse(const char *body, size_t len, struct serve_denial_list *f);
/* The console's /api/v1/denials: every webhook replica's ring at url
 * (denials.c), newest first, at most SERVE_DENIALS_MAX; NULL and err when
 * one cannot be read. */
struct api_denial *serve_denials_fetch(const char *url, size_t *n, unsigned long *dropped,
                                       struct ts_error *err);
/* Whether url is http://HOST:PORT/PATH (what serve_denials_fetch reads). */
int serve_denials_url_ok(const char *url);
/* GET /denials on the webhook's probes' port: the ring as JSON. */
enum MHD_Result serve_denials_page(struct serve_state *s, struct MHD_Connection *conn);

struct serve_state {
    const struct serve_options *opt;
    struct serve_denials denials;
    char *client_ca; /* --client-ca PEM, NULL: none */
    struct serve_metrics metrics;
    struct serve_meter meter;
    pthread_mutex_t lock;
    struct serve_policy *policy;     /* current; NULL before the first load */
    struct serve_tls *tls, *tls_old; /* current and previous (freed on the next reload) */
    unsigned long generation;
    long long spec_mtime, cert_mtime; /* newest mtime of each set of files, ns */
};

ts_status serve_state_init(struct serve_state *s, const struct serve_options *opt,
                           struct ts_error *err);
void serve_state_release(struct serve_state *s);
/* Reload what changed (force: everything). Failures keep the old and log. */
void serve_state_reload(struct serve_state *s, int force);
struct serve_policy *serve_policy_get(struct serve_state *s);
void serve_policy_put(struct serve_policy *p);
/* GnuTLS callback: hands each handshake the current certificate. */
/* GnuTLS's hook after a handshake's Finished message (server.c): the
 * connection's request deadline restarts then. */
int serve_tls_finished(gnutls_session_t session, unsigned htype, unsigned when, unsigned incoming,
                       const gnutls_datum_t *msg);
int serve_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                       const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
                       unsigned int *pcert_length, gnutls_privkey_t *key);
/* For the GnuTLS callback, which has no user data. */
extern struct serve_state *serve_current_state;
/* Certificates loaded so far: a connection opened under an older one is
 * closed after its next answer, so that clients meet the new certificate at
 * once rather than when they next reconnect (server.c). */
extern atomic_ulong serve_tls_generation;

#endif
