/*
 * server.c - the HTTPS side of `tessera serve` and `tessera console` (see
 * serve.h): the libmicrohttpd daemons and their limits (TLS 1.2+ with ECDHE
 * and AEAD only, connections in all and per client address, idle time; the
 * whole-request deadline and minimum body rate are deadline.c's), routing
 * by role, refusing ambiguous framing
 * (framing.c), body collection with a cap and a fair share of the bodies'
 * budget (capacity.c), bounded decoding (jalloc.c), the headers every
 * answer carries, per-request logging and metrics, and the main loop that
 * cuts late requests and slow bodies and watches files and signals.
 */
#include "serve/internal.h"
#include "util/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal, reload_signal;

static void on_signal(int sig)
{
    if (sig == SIGHUP)
        reload_signal = 1;
    else
        stop_signal = 1;
}

/* A POST body is received into a ts_sbuf capped at ADMIT_BODY_MAX: past
 * the cap it fails with TS_TOO_LARGE and drops the rest, so the client
 * still gets its 413. */

static const char *const SECURITY_HEADERS[][2] = {
    {"Content-Security-Policy",
     "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"},
    {"X-Frame-Options", "DENY"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"Cache-Control", "no-store"},
};

static void secure(struct MHD_Response *r)
{
    for (size_t i = 0; i < sizeof(SECURITY_HEADERS) / sizeof(SECURITY_HEADERS[0]); i++)
        MHD_add_response_header(r, SECURITY_HEADERS[i][0], SECURITY_HEADERS[i][1]);
}

/* HTTPS only, for a year: a browser that met the console once never
 * tries plain HTTP to it (the port has none) for that name. No
 * includeSubDomains: the name may be a cluster's service or a proxy's. */
#define HSTS "max-age=31536000"

enum MHD_Result serve_queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r)
{
    if (MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION))
        MHD_add_response_header(r, "Strict-Transport-Security", HSTS);
    if (serve_conn_stale(conn) && !MHD_get_response_header(r, "Connection"))
        MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result serve_reply(struct MHD_Connection *conn, unsigned status, const char *type,
                            const char *body, size_t len, const char *const *headers)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    secure(r);
    for (size_t i = 0; headers && headers[i]; i += 2)
        if (headers[i + 1])
            MHD_add_response_header(r, headers[i], headers[i + 1]);
    return serve_queue(conn, status, r);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             const char *body, size_t len)
{
    return serve_reply(conn, status, type, body, len, NULL);
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    return reply(conn, status, "text/plain; charset=utf-8", text, strlen(text));
}

static void log_review(struct serve_state *s, const struct admit_verdict *v, double seconds,
                       int apiserver)
{
    char ms[32], code[8];
    snprintf(ms, sizeof(ms), "%.3f", seconds * 1000.0);
    snprintf(code, sizeof(code), "%d", v->http_status);
    struct ts_log_kv kv[] = {{"uid", v->uid},
                             {"kind", v->kind},
                             {"namespace", v->ns},
                             {"tenant", v->tenant},
                             {"rule", v->rule},
                             {"status", code},
                             {"message", v->message},
                             {"duration_ms", ms},
                             {"client", apiserver ? "apiserver" : "unauthenticated"}};
    ts_log(s->opt->log_json, "info", v->http_status == 200 ? "denied" : "bad request", kv,
           sizeof(kv) / sizeof(kv[0]));
}

/* A review's body being received, and the bytes of SERVE_BODIES_MEM it
 * holds, charged to its client. */
struct body {
    struct ts_sbuf buf;
    size_t held;
    struct serve_client client;
    int busy; /* the budget ran out while it grew (a chunked body) */
};

static enum MHD_Result too_large(struct serve_state *s, struct MHD_Connection *conn)
{
    char text[64];
    snprintf(text, sizeof(text), "request body over %u MiB\n", ADMIT_BODY_MAX >> 20);
    atomic_fetch_add(&s->metrics.requests_bad, 1);
    return reply_text(conn, MHD_HTTP_CONTENT_TOO_LARGE, text);
}

/* 429: the bodies being received hold the whole budget, or this client
 * address its share; the review was not read. */
static enum MHD_Result busy(struct MHD_Connection *conn)
{
    char text[128];
    snprintf(text, sizeof(text),
             "busy: request bodies in memory at their budget (%zu MiB, %zu MiB a client)\n",
             SERVE_BODIES_MEM >> 20, SERVE_BODIES_PER_CLIENT >> 20);
    const char *h[] = {"Retry-After", "1", NULL};
    return serve_reply(conn, MHD_HTTP_TOO_MANY_REQUESTS, "text/plain; charset=utf-8", text,
                       strlen(text), h);
}

/* 400 and the connection closed: the request's body could end in two
 * places (framing.c), so nothing after it on the connection is read. */
static enum MHD_Result bad_framing(struct serve_state *s, struct MHD_Connection *conn,
                                   const char *fault)
{
    char text[128];
    snprintf(text, sizeof(text), "bad request: %s\n", fault);
    atomic_fetch_add(&s->metrics.framing_refused, 1);
    const char *h[] = {"Connection", "close", NULL};
    return serve_reply(conn, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8", text, strlen(text),
                       h);
}

/* Whom conn's bodies are charged to. */
static void client_of(struct MHD_Connection *conn, struct serve_client *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    struct sockaddr none = {.sa_family = AF_UNSPEC};
    serve_client_of(ci && ci->client_addr ? ci->client_addr : &none, c);
}

/* Headers of a POST /validate are in: take the body's Content-Length from
 * the budget before reading it (413 past ADMIT_BODY_MAX, 429 when it is
 * not there); a chunked body takes as it grows (body_add). */
static enum MHD_Result body_begin(struct serve_state *s, struct MHD_Connection *conn, void **ctx)
{
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long want = cl ? strtoull(cl, NULL, 10) : 0;
    struct serve_client c;
    *ctx = (void *)1; /* unless a body is wanted: drop what comes */
    if (want > ADMIT_BODY_MAX)
        return too_large(s, conn);
    client_of(conn, &c);
    if (!serve_body_take(&c, (size_t)want))
        return busy(conn);
    struct body *b = calloc(1, sizeof(*b));
    if (!b) {
        serve_body_give(&c, (size_t)want);
        return MHD_NO;
    }
    ts_sbuf_init(&b->buf, ADMIT_BODY_MAX);
    b->held = (size_t)want;
    b->client = c;
    *ctx = b;
    serve_conn_body(conn, SERVE_BODY_STARTS, 0);
    return MHD_YES;
}

static enum MHD_Result body_add(struct body *b, const char *data, size_t n)
{
    if (b->busy || b->buf.failed)
        return MHD_YES; /* answered at the end */
    size_t need = b->buf.len + n;
    if (need > b->held && need <= ADMIT_BODY_MAX) {
        if (!serve_body_take(&b->client, need - b->held)) {
            b->busy = 1;
            return MHD_YES;
        }
        b->held = need;
    }
    ts_sbuf_add(&b->buf, data, n);
    return b->buf.failed == TS_NOMEM ? MHD_NO : MHD_YES;
}

static enum MHD_Result validate(struct serve_state *s, struct MHD_Connection *conn, struct body *b)
{
    struct ts_sbuf *u = &b->buf;
    if (b->busy)
        return busy(conn);
    if (u->failed == TS_TOO_LARGE)
        return too_large(s, conn);
    double t0 = serve_now_s();
    atomic_fetch_add(&s->metrics.in_flight, 1);
    struct serve_policy *p = serve_policy_get(s);
    struct ts_sbuf out;
    struct admit_verdict v;
    ts_sbuf_init(&out, SERVE_REVIEW_MAX);
    serve_jalloc_begin();
    admit_review(p->admit, ts_sbuf_str(u), u->len, &out, &v);
    if (serve_jalloc_end()) { /* the decode needed more than its region */
        out.len = 0;
        ts_sbuf_printf(&out, "{\"error\":\"body: decoding it needs more than %zu MiB\"}",
                       (size_t)SERVE_DECODE_MEM >> 20);
        v.http_status = 400;
        v.allowed = 0;
        snprintf(v.message, sizeof(v.message), "body: decoding it needs more than %zu MiB",
                 (size_t)SERVE_DECODE_MEM >> 20);
        atomic_fetch_add(&s->metrics.decode_refused, 1);
    }
    serve_policy_put(p);
    enum MHD_Result ret = reply(conn, (unsigned)v.http_status, "application/json",
                                ts_sbuf_str(&out), out.len);
    ts_sbuf_release(&out);
    double dt = serve_now_s() - t0;
    atomic_fetch_sub(&s->metrics.in_flight, 1);
    serve_metrics_observe(&s->metrics, dt);
    if (v.http_status != 200)
        atomic_fetch_add(&s->metrics.requests_bad, 1);
    else if (v.allowed)
        atomic_fetch_add(&s->metrics.requests_allowed, 1);
    else {
        atomic_fetch_add(&s->metrics.requests_denied, 1);
        serve_metrics_denied(&s->metrics, v.rule);
    }
    /* only the API server's reviews are a tenant's: anyone who reaches the
     * port could post one naming another tenant's namespace */
    int apiserver = serve_admission_client(s, conn);
    if (!apiserver)
        atomic_fetch_add(&s->metrics.requests_unauthenticated, 1);
    if (apiserver && v.http_status == 200 && !v.allowed)
        serve_denial_add(&s->denials, &v);
    if (apiserver && v.http_status == 200)
        serve_metrics_tenant(&s->metrics, v.tenant, v.allowed, v.rule);
    if (v.http_status != 200 || !v.allowed)
        log_review(s, &v, dt, apiserver);
    return ret;
}

/* The Prometheus page of this process: the server's figures (TLS,
 * connections, reloads) and the webhook's admission figures, or the
 * console's plan and metering (its store read here, on the caller's
 * thread). */
static enum MHD_Result metrics_page(struct serve_state *s, struct MHD_Connection *conn)
{
    struct ts_sbuf out;
    ts_sbuf_init(&out, SERVE_METRICS_MAX);
    serve_metrics_text(&s->metrics, s->generation, s->opt->role == SERVE_ROLE_WEBHOOK, &out);
    serve_capacity_text(&out);
    if (s->opt->role == SERVE_ROLE_CONSOLE)
        serve_meter_text(&s->meter, s, &out);
    enum MHD_Result r = reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", ts_sbuf_str(&out),
                              out.len);
    ts_sbuf_release(&out);
    return r;
}

static enum MHD_Result probe(struct serve_state *s, struct MHD_Connection *conn, const char *url)
{
    if (strcmp(url, "/healthz") == 0)
        return reply_text(conn, MHD_HTTP_OK, "ok\n");
    return s->policy ? reply_text(conn, MHD_HTTP_OK, "ready\n")
                     : reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "no policy\n");
}

static int probe_path(const char *url)
{
    return strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0;
}

/* GET on the TLS port: the probes; the console's API, pages and, for an
 * operator, /metrics. The webhook's port serves nothing else. */
static enum MHD_Result route_get(struct serve_state *s, struct MHD_Connection *conn,
                                 const char *url)
{
    if (probe_path(url))
        return probe(s, conn, url);
    if (s->opt->role == SERVE_ROLE_CONSOLE) {
        if (strncmp(url, "/api/v1/", 8) == 0)
            return serve_api_get(s, conn, url);
        if (strcmp(url, "/metrics") == 0)
            return serve_api_operator(s, conn) ? metrics_page(s, conn) : serve_api_refuse(s, conn);
        if (serve_ui_path(url))
            return serve_ui_get(conn, url);
    }
    atomic_fetch_add(&s->metrics.requests_other, 1);
    return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* 405 for anything but GET under /api/v1/, as the API's error shape. */
static enum MHD_Result api_not_get(struct MHD_Connection *conn)
{
    struct api_answer a;
    ts_sbuf_init(&a.body, 4096);
    api_error(&a, 405, NULL, "only GET is served under /api/v1/");
    const char *h[] = {"Allow", "GET", NULL};
    enum MHD_Result r = serve_reply(conn, a.status, a.type, ts_sbuf_str(&a.body), a.body.len, h);
    ts_sbuf_release(&a.body);
    return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **ctx)
{
    struct serve_state *s = cls;
    int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    if (!*ctx) { /* first call: headers only */
        const char *fault = serve_framing_fault(conn, version);
        if (fault) {
            *ctx = (void *)1;
            return bad_framing(s, conn, fault);
        }
        if (post && strcmp(url, "/validate") == 0 && s->opt->role == SERVE_ROLE_WEBHOOK)
            return body_begin(s, conn, ctx);
        *ctx = (void *)1; /* mark: no body wanted */
        if (strcmp(method, MHD_HTTP_METHOD_GET) == 0)
            return route_get(s, conn, url);
        atomic_fetch_add(&s->metrics.requests_other, 1);
        if (strncmp(url, "/api/v1/", 8) == 0 && s->opt->role == SERVE_ROLE_CONSOLE)
            return api_not_get(conn);
        return reply_text(conn, post ? MHD_HTTP_NOT_FOUND : MHD_HTTP_METHOD_NOT_ALLOWED,
                          post ? "not found\n" : "method not allowed\n");
    }
    if (*ctx == (void *)1) {
        *size = 0; /* a body we did not ask for: drop it */
        return MHD_YES;
    }
    struct body *b = *ctx;
    if (*size) {
        size_t n = *size;
        *size = 0;
        serve_conn_body(conn, SERVE_BODY_GREW, n);
        return body_add(b, data, n);
    }
    serve_conn_body(conn, SERVE_BODY_ENDS, 0);
    return validate(s, conn, b);
}

static void completed(void *cls, struct MHD_Connection *conn, void **ctx,
                      enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)code;
    serve_conn_restart(conn);
    if (*ctx && *ctx != (void *)1) {
        struct body *b = *ctx;
        ts_sbuf_release(&b->buf);
        serve_body_give(&b->client, b->held);
        free(b);
    }
    *ctx = NULL;
}

/* libmicrohttpd's messages: a failed or cut handshake counts in
 * tessera_tls_handshake_failures_total, a connection it refused at its
 * per-address limit in tessera_connections_refused_total. Those two come
 * once per hostile connection, so only the 1st, 2nd, 4th, 8th... of each
 * is logged (with the count): a flood cannot flood the log. */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct serve_state *s = cls;
    char msg[1024], count[24];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    unsigned long n = 0;
    if (strstr(msg, "handshake") || strstr(msg, "TLS") || strstr(msg, "packet"))
        n = atomic_fetch_add(&s->metrics.tls_failed, 1) + 1;
    else if (strstr(msg, "connection limit"))
        n = atomic_fetch_add(&s->metrics.slots_refused, 1) + 1;
    if (n & (n - 1))
        return; /* not a power of two */
    snprintf(count, sizeof(count), "%lu", n);
    struct ts_log_kv kv[] = {{"count", count}};
    ts_log(s->opt->log_json, "warn", msg, n ? kv : NULL, n ? 1 : 0);
}

static unsigned cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* TLS 1.3 preferred, 1.2 allowed, nothing older (GnuTLS priority string).
 * TLS 1.2 only with ECDHE key exchange (forward secrecy) and AEAD ciphers:
 * no RSA key exchange, no CBC, no SHA-1 MACs. The ciphers are the four of
 * NORMAL's TLS 1.3 suites (AES-256-GCM, ChaCha20-Poly1305, AES-128-GCM,
 * AES-128-CCM), so 1.3 is unchanged; in 1.2 they give ECDHE-RSA and
 * ECDHE-ECDSA with AES-GCM and ChaCha20-Poly1305, and ECDHE-ECDSA with
 * AES-128-CCM. The API server's Go client prefers 1.3 and offers ECDHE
 * with AES-GCM and ChaCha20-Poly1305 in 1.2. */
#define TLS_PRIORITIES                                                                \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"     \
    "-CIPHER-ALL:+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-GCM:+AES-128-CCM:-MAC-ALL:" \
    "+AEAD"

static struct MHD_Daemon *start(struct serve_state *s, const struct sockaddr_storage *sa, int v6)
{
    const struct serve_options *o = s->opt;
    unsigned max = serve_slots_max(), nthreads = o->threads ? o->threads : cores();
    unsigned per_client = o->per_client ? o->per_client : (max / 8 ? max / 8 : 1);
    /* poll, not epoll: libmicrohttpd 0.9.75's epoll mode spins a thread on a
     * connection whose TLS handshake waits for the client (recv EAGAIN at
     * once, 5 CPU s in 10 s per such client, tests/cli/webhook_handshake.sh);
     * poll waits, at the same CPU per request (bench/RESULTS.md) */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_TLS |
                     MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    /* libmicrohttpd splits its connection limit between the pool's threads;
     * serve_accept holds the real one, so any thread may take any slot */
    return MHD_start_daemon(
        flags, 0, serve_accept, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
        s, /* first, so MHD logs nothing by itself */
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)sa, MHD_OPTION_HTTPS_CERT_CALLBACK,
        serve_tls_retrieve, MHD_OPTION_THREAD_POOL_SIZE, nthreads, MHD_OPTION_HTTPS_PRIORITIES,
        TLS_PRIORITIES, MHD_OPTION_CONNECTION_LIMIT, max * nthreads,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_client, MHD_OPTION_NOTIFY_CONNECTION,
        serve_conn_notify, s, MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s ? o->timeout_s : 10u,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_HEADER_MAX,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
        /* --client-ca: GnuTLS asks for (never requires) a client certificate */
        s->client_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, s->client_ca, MHD_OPTION_END);
}

/* The probes' own listener: plain HTTP, a thread per connection and its
 * own 64 connections, so a probe is answered whatever load or attack holds
 * the TLS port, and a slow /metrics (the console's store) holds only its
 * own thread. /healthz, /readyz, /metrics and the webhook's /denials: for
 * the cluster's network (deploy/'s NetworkPolicy keeps tenant pods off). */
static enum MHD_Result handle_health(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version, const char *data,
                                     size_t *size, void **ctx)
{
    struct serve_state *s = cls;
    (void)version;
    (void)data;
    if (*ctx) {
        *size = 0;
        return MHD_YES;
    }
    *ctx = (void *)1;
    *size = 0;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
        return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    if (probe_path(url))
        return probe(s, conn, url);
    if (strcmp(url, "/metrics") == 0)
        return metrics_page(s, conn);
    if (strcmp(url, "/denials") == 0 && s->opt->role == SERVE_ROLE_WEBHOOK)
        return serve_denials_page(s, conn);
    return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

static struct MHD_Daemon *start_health(struct serve_state *s, const struct sockaddr_storage *sa,
                                       int v6)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    return MHD_start_daemon(flags, 0, NULL, NULL, handle_health, s, MHD_OPTION_EXTERNAL_LOGGER,
                            mhd_log, s, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)sa,
                            MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 5u,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_HEADER_MAX,
                            MHD_OPTION_END);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Every 100 ms: cut requests past their deadline; every watch_ms: reload
 * what changed (or everything on SIGHUP). */
static void main_loop(struct serve_state *s)
{
    unsigned ms = s->opt->watch_ms ? s->opt->watch_ms : 1000, waited = 0;
    while (!stop_signal) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
        if (stop_signal)
            break;
        serve_conn_reap(s);
        waited += 100;
        if (waited < ms && !reload_signal)
            continue;
        waited = 0;
        int force = reload_signal;
        reload_signal = 0;
        serve_state_reload(s, force);
    }
}

/* --listen, or the default: every address, the port of deploy/ (the
 * webhook's 8443, the console's 8444). */
static const char *listen_addr(const struct serve_options *opt)
{
    return opt->listen                       ? opt->listen
           : opt->role == SERVE_ROLE_CONSOLE ? "0.0.0.0:8444"
                                             : "0.0.0.0:8443";
}

ts_status serve_open(const struct serve_options *opt, struct serve_state **out,
                     struct ts_error *err)
{
    struct sockaddr_storage sa;
    int v6 = 0;
    const char *listen = listen_addr(opt);
    *out = NULL;
    if (!ts_listen_parse(listen, &sa, &v6))
        return ts_err(err, TS_USAGE, "--listen: '%s' is not ADDR:PORT", listen);
    if (opt->denials_from && !serve_denials_url_ok(opt->denials_from))
        return ts_err(err, TS_USAGE, "--denials-from: '%s' is not http://HOST:PORT/PATH",
                      opt->denials_from);
    struct serve_state *s = calloc(1, sizeof(*s));
    if (!s)
        return ts_err(err, TS_NOMEM, "out of memory");
    ts_status st = serve_state_init(s, opt, err);
    if (st == TS_OK)
        st = serve_capacity_init(opt, &s->metrics, err);
    if (st != TS_OK) {
        serve_state_release(s);
        free(s);
        return st;
    }
    *out = s;
    return TS_OK;
}

ts_status serve_run(struct serve_state *s, struct ts_error *err)
{
    const struct serve_options *opt = s->opt;
    struct sockaddr_storage sa;
    int v6 = 0;
    const char *listen = listen_addr(opt);
    ts_listen_parse(listen, &sa, &v6); /* checked by serve_open */
    ts_status st = TS_OK;
    struct MHD_Daemon *d = start(s, &sa, v6), *h = NULL;
    if (!d)
        st = ts_err(err, TS_IO, "cannot listen on %s: %s", listen, strerror(errno));
    if (st == TS_OK && opt->health_listen) {
        struct sockaddr_storage hsa;
        int hv6 = 0;
        if (!ts_listen_parse(opt->health_listen, &hsa, &hv6))
            st = ts_err(err, TS_USAGE, "--health-listen: '%s' is not ADDR:PORT",
                        opt->health_listen);
        else if (!(h = start_health(s, &hsa, hv6)))
            st = ts_err(err, TS_IO, "cannot listen on %s: %s", opt->health_listen, strerror(errno));
        if (st != TS_OK)
            MHD_stop_daemon(d);
    }
    if (st == TS_OK) {
        install_signals();
        serve_jalloc_install(opt->threads ? opt->threads : cores());
        struct ts_log_kv kv[] = {{"listen", listen}};
        ts_log(opt->log_json, "info", "serving", kv, 1);
        main_loop(s);
        MHD_stop_daemon(d); /* waits for requests in flight */
        if (h)
            MHD_stop_daemon(h);
        ts_log(opt->log_json, "info", "stopped", NULL, 0);
    }
    serve_state_release(s);
    free(s);
    return st;
}
