/*
 * capacity.c - what all connections together may hold: connection slots,
 * some reserved for the API server's addresses (--reserve-for), and the
 * memory of the request bodies being received (SERVE_BODIES_MEM).
 *
 * Slots: libmicrohttpd asks serve_accept before it takes a connection; a
 * connection from a reserved address may take any of the max_connections
 * slots, any other only max_connections - reserved of them, so slow or
 * hostile clients from other addresses can never take the API server's
 * last slots. The counts move when libmicrohttpd reports a connection
 * started or closed (serve_slot_open/close, from server.c); accepts on
 * different threads may overshoot by at most one per thread.
 *
 * Bodies: a review takes its Content-Length from the budget before its
 * body is read (chunked ones take as they grow) and gives it back when it
 * is answered; one that cannot have it is answered 429 at once, so the
 * bodies held in memory never exceed the budget whatever arrives. The
 * budget is shared fairly: with --reserve-for, SERVE_BODIES_RESERVED of it
 * only reserved addresses may take, and every other address holds at most
 * SERVE_BODIES_PER_CLIENT at once (a table of the addresses holding some).
 */
#include "serve/internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"

struct cidr {
    int family;
    unsigned char addr[16];
    unsigned bits;
};

static struct {
    struct cidr nets[SERVE_RESERVE_NETS_MAX];
    size_t nnets;
    unsigned max, reserved;
    atomic_uint all, general;
    struct serve_metrics *metrics;
} cap;

/* Bytes of bodies held: in all, by addresses outside --reserve-for, and by
 * each of those that holds some. */
struct holder {
    unsigned char addr[16];
    size_t bytes;
};
static struct {
    pthread_mutex_t lock;
    size_t all, general;
    size_t reserved; /* kept for --reserve-for: SERVE_BODIES_RESERVED, 0 without it */
    struct holder *h;
    size_t n, cap;
} bodies = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* "ADDR/BITS" or "ADDR" (all its bits), IPv4 or IPv6. */
static int parse_cidr(const char *text, struct cidr *c)
{
    char host[64];
    const char *slash = strchr(text, '/');
    size_t n = slash ? (size_t)(slash - text) : strlen(text);
    if (n == 0 || n >= sizeof(host))
        return 0;
    memcpy(host, text, n);
    host[n] = '\0';
    c->family = strchr(host, ':') ? AF_INET6 : AF_INET;
    unsigned width = c->family == AF_INET6 ? 128 : 32;
    if (inet_pton(c->family, host, c->addr) != 1)
        return 0;
    c->bits = width;
    if (slash) {
        char *end;
        long bits = strtol(slash + 1, &end, 10);
        if (!slash[1] || *end || bits < 0 || bits > (long)width)
            return 0;
        c->bits = (unsigned)bits;
    }
    return 1;
}

ts_status serve_capacity_init(const struct serve_options *o, struct serve_metrics *m,
                              struct ts_error *err)
{
    cap.max = o->max_connections ? o->max_connections : 1024u;
    cap.nnets = 0;
    cap.metrics = m;
    atomic_store(&cap.all, 0);
    atomic_store(&cap.general, 0);
    if (o->nreserve_for > SERVE_RESERVE_NETS_MAX)
        return ts_err(err, TS_USAGE, "--reserve-for: at most %d networks", SERVE_RESERVE_NETS_MAX);
    for (size_t i = 0; i < o->nreserve_for; i++) {
        if (!parse_cidr(o->reserve_for[i], &cap.nets[cap.nnets++]))
            return ts_err(err, TS_USAGE, "--reserve-for: '%s' is not ADDR or ADDR/BITS",
                          o->reserve_for[i]);
    }
    pthread_mutex_lock(&bodies.lock);
    bodies.all = bodies.general = bodies.n = 0;
    bodies.reserved = cap.nnets ? SERVE_BODIES_RESERVED : 0;
    pthread_mutex_unlock(&bodies.lock);
    cap.reserved = o->reserved ? o->reserved : (cap.nnets ? cap.max / 8 : 0);
    if (cap.reserved && !cap.nnets)
        return ts_err(err, TS_USAGE, "--reserved needs --reserve-for (whom the slots are for)");
    if (cap.reserved >= cap.max)
        return ts_err(err, TS_USAGE, "--reserved %u: must be under --max-connections %u",
                      cap.reserved, cap.max);
    return TS_OK;
}

static int in_net(const struct cidr *c, const unsigned char *a)
{
    unsigned full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(c->addr, a, full) != 0)
        return 0;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return rest == 0 || ((c->addr[full] ^ a[full]) & mask) == 0;
}

int serve_slot_reserved(const struct sockaddr *sa)
{
    const unsigned char *a4 = NULL, *a6 = NULL;
    if (sa->sa_family == AF_INET)
        a4 = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
    else if (sa->sa_family == AF_INET6) {
        a6 = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a6, mapped, 12) == 0)
            a4 = a6 + 12; /* ::ffff:a.b.c.d matches a.b.c.d/n */
    }
    for (size_t i = 0; i < cap.nnets; i++) {
        const struct cidr *c = &cap.nets[i];
        if ((c->family == AF_INET && a4 && in_net(c, a4)) ||
            (c->family == AF_INET6 && a6 && in_net(c, a6)))
            return 1;
    }
    return 0;
}

enum MHD_Result serve_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)cls;
    (void)len;
    int reserved = serve_slot_reserved(addr);
    unsigned all = atomic_load(&cap.all), general = atomic_load(&cap.general);
    if (all < cap.max && (reserved || general < cap.max - cap.reserved))
        return MHD_YES;
    atomic_fetch_add(&cap.metrics->slots_refused, 1);
    return MHD_NO;
}

void serve_slot_open(int reserved)
{
    atomic_fetch_add(&cap.all, 1);
    if (!reserved)
        atomic_fetch_add(&cap.general, 1);
}

void serve_slot_close(int reserved)
{
    atomic_fetch_sub(&cap.all, 1);
    if (!reserved)
        atomic_fetch_sub(&cap.general, 1);
}

unsigned serve_slots_max(void) { return cap.max; }

void serve_client_of(const struct sockaddr *sa, struct serve_client *c)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(c, 0, sizeof(*c));
    if (sa->sa_family == AF_INET) {
        memcpy(c->addr, mapped, 12);
        memcpy(c->addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        memcpy(c->addr, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, 16);
    }
    c->reserved = serve_slot_reserved(sa);
}

/* The entry of addr in the holders' table (lock held); a new one of 0
 * bytes when it has none, NULL when out of memory. */
static struct holder *holder_of(const unsigned char *addr)
{
    for (size_t i = 0; i < bodies.n; i++)
        if (memcmp(bodies.h[i].addr, addr, 16) == 0)
            return &bodies.h[i];
    if (!ts_grow((void **)&bodies.h, &bodies.cap, bodies.n, sizeof(*bodies.h)))
        return NULL;
    struct holder *h = &bodies.h[bodies.n++];
    memcpy(h->addr, addr, 16);
    h->bytes = 0;
    return h;
}

/* Whether n more bytes fit (lock held): a reserved address may fill the
 * whole budget; the others together only what --reserve-for's part leaves,
 * each at most its share (as with the connection slots). */
static int body_fits(const struct serve_client *c, const struct holder *h, size_t n)
{
    if (n > SERVE_BODIES_MEM - bodies.all)
        return 0;
    return c->reserved || (n <= SERVE_BODIES_MEM - bodies.reserved - bodies.general &&
                           n <= SERVE_BODIES_PER_CLIENT - h->bytes);
}

int serve_body_take(const struct serve_client *c, size_t n)
{
    pthread_mutex_lock(&bodies.lock);
    struct holder *h = c->reserved ? NULL : holder_of(c->addr);
    int ok = (c->reserved || h) && body_fits(c, h, n);
    if (ok) {
        bodies.all += n;
        if (h) {
            bodies.general += n;
            h->bytes += n;
        }
    }
    if (h && !h->bytes) /* a new entry that took nothing */
        *h = bodies.h[--bodies.n];
    pthread_mutex_unlock(&bodies.lock);
    if (!ok)
        atomic_fetch_add(&cap.metrics->bodies_refused, 1);
    return ok;
}

void serve_body_give(const struct serve_client *c, size_t n)
{
    pthread_mutex_lock(&bodies.lock);
    bodies.all -= n;
    struct holder *h = c->reserved || !n ? NULL : holder_of(c->addr);
    if (h) {
        bodies.general -= n;
        h->bytes -= n;
        if (!h->bytes)
            *h = bodies.h[--bodies.n];
    }
    pthread_mutex_unlock(&bodies.lock);
}

int serve_body_too_slow(double seconds, size_t got)
{
    return seconds >= SERVE_BODY_RATE_AFTER_S && (double)got < SERVE_BODY_RATE_MIN * seconds;
}

static size_t bodies_held(void)
{
    pthread_mutex_lock(&bodies.lock);
    size_t n = bodies.all;
    pthread_mutex_unlock(&bodies.lock);
    return n;
}

void serve_capacity_text(struct ts_sbuf *o)
{
    ts_sbuf_printf(o,
                   "# HELP tessera_connections Connections open on the TLS port, by the slots "
                   "they use (reserved: from --reserve-for).\n"
                   "# TYPE tessera_connections gauge\n"
                   "tessera_connections{slots=\"general\"} %u\n"
                   "tessera_connections{slots=\"reserved\"} %u\n"
                   "# HELP tessera_request_bodies_bytes Bytes of request bodies held for "
                   "reviews being received.\n"
                   "# TYPE tessera_request_bodies_bytes gauge\n"
                   "tessera_request_bodies_bytes %zu\n",
                   atomic_load(&cap.general), atomic_load(&cap.all) - atomic_load(&cap.general),
                   bodies_held());
}
