/*
 * server.c - the HTTPS side of `tessera serve` (see serve.h): the
 * libmicrohttpd daemon and its limits (TLS 1.2+ with ECDHE and AEAD only,
 * connections in all and per client address, idle time, a whole-request
 * deadline, a minimum body rate), routing, refusing ambiguous framing
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

static double now_s(void)
{
    /* monotonic seconds */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the request deadline ----
 * libmicrohttpd's timeout counts idle time only: a client that sends a byte
 * every few seconds keeps its connection for ever. Every connection is
 * tracked from its start: its TLS handshake has handshake_limit() (a
 * multiple of request_s), its first request request_s from the handshake's
 * end, each next one on a kept-alive connection request_s from the end of
 * the one before; the main loop shuts down the socket of one past its
 * deadline, and libmicrohttpd then closes it as it would a
 * dropped one. Entries leave the table (under its lock) when
 * libmicrohttpd reports the connection closed, before it closes the socket,
 * so a shut-down descriptor is always still that connection's.
 * A review's body from outside --reserve-for is cut the same way when it
 * arrives slower than SERVE_BODY_RATE_MIN (serve_body_too_slow): a
 * trickling client holds its share of the bodies' budget for a second or
 * two, not for the whole deadline. */

struct tracked {
    int fd, reserved; /* reserved: its address may use the reserved slots */
    int tls_done;     /* its TLS handshake has finished */
    double start;     /* of the handshake, then of the current request */
    size_t slot;
    int body_on;                  /* a review's body is arriving */
    double body_start;            /* when its headers were in */
    size_t body_got;              /* its bytes so far */
    const void *conn;             /* the MHD_Connection, to find it from its TLS session */
    unsigned long tls_generation; /* serve_tls_generation when it opened */
};

static struct {
    pthread_mutex_t lock;
    struct tracked **conns;
    size_t n, cap;
} track = {.lock = PTHREAD_MUTEX_INITIALIZER};

static double now_s(void);

static void track_start(struct tracked *t)
{
    pthread_mutex_lock(&track.lock);
    if (track.n == track.cap) {
        size_t cap = track.cap ? track.cap * 2 : 256;
        struct tracked **c = realloc(track.conns, cap * sizeof(*c));
        if (c) {
            track.conns = c;
            track.cap = cap;
        }
    }
    if (track.n < track.cap) {
        t->slot = track.n;
        track.conns[track.n++] = t;
    } else {
        t->slot = (size_t)-1; /* out of memory: untracked */
    }
    pthread_mutex_unlock(&track.lock);
}

static void track_end(struct tracked *t)
{
    pthread_mutex_lock(&track.lock);
    if (t->slot != (size_t)-1) {
        struct tracked *last = track.conns[--track.n];
        track.conns[t->slot] = last;
        last->slot = t->slot;
    }
    pthread_mutex_unlock(&track.lock);
}

static void notify_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                              enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
            conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ca = MHD_get_connection_info(
            conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        int reserved = ca && ca->client_addr && serve_slot_reserved(ca->client_addr);
        struct tracked *t = ci ? malloc(sizeof(*t)) : NULL;
        *socket_ctx = t;
        serve_slot_open(t ? reserved : 0); /* untracked ones count as general */
        if (!t)
            return;
        t->fd = ci->connect_fd;
        t->reserved = reserved;
        t->tls_done = 0;
        t->body_on = 0;
        t->conn = conn;
        t->tls_generation = atomic_load(&serve_tls_generation);
        t->start = now_s();
        track_start(t);
    } else {
        struct tracked *t = *socket_ctx;
        serve_slot_close(t ? t->reserved : 0);
        if (t) {
            track_end(t);
            free(t);
        }
        *socket_ctx = NULL;
    }
}

/* conn's entry in the table, NULL when untracked (or not the TLS port's). */
static struct tracked *tracked_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* A request on conn is done: the next one's deadline starts now. */
static void track_restart(struct MHD_Connection *conn)
{
    struct tracked *t = tracked_of(conn);
    if (!t)
        return;
    pthread_mutex_lock(&track.lock);
    t->start = now_s();
    t->body_on = 0;
    pthread_mutex_unlock(&track.lock);
}

/* A review's body on conn: starts arriving (its headers are in), grew by
 * n bytes, or is all in; for the minimum rate (reap). */
enum body_event { BODY_STARTS, BODY_GREW, BODY_ENDS };
static void track_body(struct MHD_Connection *conn, enum body_event e, size_t n)
{
    struct tracked *t = tracked_of(conn);
    if (!t)
        return;
    pthread_mutex_lock(&track.lock);
    if (e == BODY_STARTS) {
        t->body_on = 1;
        t->body_start = now_s();
        t->body_got = 0;
    } else if (e == BODY_ENDS) {
        t->body_on = 0;
    }
    t->body_got += n;
    pthread_mutex_unlock(&track.lock);
}

/* GnuTLS calls this after each Finished message of a handshake (the hook
 * is set by serve_tls_retrieve): the connection's first request starts now.
 * Its TLS session's pointer is libmicrohttpd's connection; one not in the
 * table (another libmicrohttpd) is left alone. */
int serve_tls_finished(gnutls_session_t session, unsigned htype, unsigned when, unsigned incoming,
                       const gnutls_datum_t *msg)
{
    (void)htype;
    (void)when;
    (void)incoming;
    (void)msg;
    const void *conn = gnutls_session_get_ptr(session);
    pthread_mutex_lock(&track.lock);
    for (size_t i = 0; i < track.n; i++)
        if (track.conns[i]->conn == conn) {
            track.conns[i]->tls_done = 1;
            track.conns[i]->start = now_s();
            break;
        }
    pthread_mutex_unlock(&track.lock);
    return 0;
}

/* The handshake's own deadline: SERVE_HANDSHAKE_FACTOR times the request's,
 * at least SERVE_HANDSHAKE_MIN_S (a loaded server does handshakes slowly). */
static double handshake_limit(double request)
{
    double h = request * SERVE_HANDSHAKE_FACTOR;
    return h > SERVE_HANDSHAKE_MIN_S ? h : SERVE_HANDSHAKE_MIN_S;
}

/* Shut down the sockets of handshakes and requests past their deadline,
 * and of bodies from outside --reserve-for that arrive too slowly. */
static void reap(struct serve_state *s)
{
    double limit = s->opt->request_s ? s->opt->request_s : 10, now = now_s();
    double hlimit = handshake_limit(limit);
    pthread_mutex_lock(&track.lock);
    for (size_t i = 0; i < track.n; i++) {
        struct tracked *t = track.conns[i];
        int late = now - t->start > (t->tls_done ? limit : hlimit);
        int slow = t->body_on && !t->reserved &&
                   serve_body_too_slow(now - t->body_start, t->body_got);
        if (!late && !slow)
            continue;
        shutdown(t->fd, SHUT_RDWR);
        t->start = now + 3600.0; /* once: libmicrohttpd closes it now */
        t->body_on = 0;
        atomic_fetch_add(late ? &s->metrics.deadline_cut : &s->metrics.slow_cut, 1);
    }
    pthread_mutex_unlock(&track.lock);
}

/* What every answer of the TLS port carries (docs/api.md, Answers). */
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

/* Whether conn opened under a certificate since replaced. */
static int stale_certificate(struct MHD_Connection *conn)
{
    const struct tracked *t = tracked_of(conn);
    return t && t->tls_generation != atomic_load(&serve_tls_generation);
}

enum MHD_Result serve_queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r)
{
    if (MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION))
        MHD_add_response_header(r, "Strict-Transport-Security", HSTS);
    if (stale_certificate(conn) && !MHD_get_response_header(r, "Connection"))
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
    track_body(conn, BODY_STARTS, 0);
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
    double t0 = now_s();
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
    double dt = now_s() - t0;
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
        track_body(conn, BODY_GREW, n);
        return body_add(b, data, n);
    }
    track_body(conn, BODY_ENDS, 0);
    return validate(s, conn, b);
}

static void completed(void *cls, struct MHD_Connection *conn, void **ctx,
                      enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)code;
    track_restart(conn);
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
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TLS |
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
        notify_connection, s, MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s ? o->timeout_s : 10u,
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
        reap(s);
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
