/*
 * deadline.c - every connection of the TLS port tracked from its start, so
 * the main loop can cut one past its deadline (libmicrohttpd's own timeout
 * counts idle time only) or whose review body trickles in too slowly; which
 * certificate a connection opened under; the monotonic clock the server
 * times with. Split from server.c, which routes and answers.
 */
#include "serve/internal.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include "util/time.h"

double serve_now_s(void) { return ts_clock_msf(CLOCK_MONOTONIC) / 1000.0; }

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

void serve_conn_notify(void *cls, struct MHD_Connection *conn, void **socket_ctx,
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
        t->start = serve_now_s();
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
void serve_conn_restart(struct MHD_Connection *conn)
{
    struct tracked *t = tracked_of(conn);
    if (!t)
        return;
    pthread_mutex_lock(&track.lock);
    t->start = serve_now_s();
    t->body_on = 0;
    pthread_mutex_unlock(&track.lock);
}

/* A review's body on conn: starts arriving (its headers are in), grew by
 * n bytes, or is all in; for the minimum rate (reap). */
void serve_conn_body(struct MHD_Connection *conn, enum serve_body_event e, size_t n)
{
    struct tracked *t = tracked_of(conn);
    if (!t)
        return;
    pthread_mutex_lock(&track.lock);
    if (e == SERVE_BODY_STARTS) {
        t->body_on = 1;
        t->body_start = serve_now_s();
        t->body_got = 0;
    } else if (e == SERVE_BODY_ENDS) {
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
            track.conns[i]->start = serve_now_s();
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
void serve_conn_reap(struct serve_state *s)
{
    double limit = s->opt->request_s ? s->opt->request_s : 10, now = serve_now_s();
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

int serve_conn_stale(struct MHD_Connection *conn)
{
    const struct tracked *t = tracked_of(conn);
    return t && t->tls_generation != atomic_load(&serve_tls_generation);
}
