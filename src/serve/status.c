/*
 * status.c - a plain-HTTP status listener for a long-running command that
 * has no server of its own (`meter scrape --listen`): GET on any path asks
 * the caller's function for the code and body (text/plain), so /healthz,
 * /readyz and /metrics are the caller's to answer. One libmicrohttpd thread;
 * the function runs on it, so what it reads must be guarded by the caller.
 */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include "serve/serve.h"
#include "util/addr.h"

struct serve_status {
    struct MHD_Daemon *d;
    serve_status_fn fn;
    void *ctx;
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **ctx)
{
    (void)version, (void)data, (void)size, (void)ctx;
    struct serve_status *s = cls;
    struct ts_sbuf b;
    ts_sbuf_init(&b, 1024 * 1024);
    unsigned code = 405;
    if (strcmp(method, MHD_HTTP_METHOD_GET) == 0)
        code = s->fn(s->ctx, url, &b);
    else
        ts_sbuf_puts(&b, "method not allowed\n");
    struct MHD_Response *r = MHD_create_response_from_buffer(b.len, (void *)ts_sbuf_str(&b),
                                                             MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ok = MHD_NO;
    if (r) {
        MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        ok = MHD_queue_response(c, code, r);
        MHD_destroy_response(r);
    }
    ts_sbuf_release(&b);
    return ok;
}

static void quiet(void *cls, const char *fmt, va_list ap) { (void)cls, (void)fmt, (void)ap; }

ts_status serve_status_start(const char *listen, serve_status_fn fn, void *ctx,
                             struct serve_status **out, struct ts_error *err)
{
    struct sockaddr_storage sa;
    int v6 = 0;
    *out = NULL;
    if (!ts_listen_parse(listen, &sa, &v6))
        return ts_err_at(err, TS_USAGE, NULL, 0, 0, "--listen",
                         "'%s' is not ADDR:PORT, [ADDR6]:PORT or :PORT", listen);
    struct serve_status *s = calloc(1, sizeof *s);
    if (!s)
        return ts_err(err, TS_NOMEM, "out of memory");
    s->fn = fn;
    s->ctx = ctx;
    s->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, handle, s,
        MHD_OPTION_EXTERNAL_LOGGER, quiet, NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&sa,
        MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 5u, MHD_OPTION_END);
    if (!s->d) {
        free(s);
        return ts_err(err, TS_IO, "cannot listen on %s (in use, or not this host's address)",
                      listen);
    }
    *out = s;
    return TS_OK;
}

void serve_status_stop(struct serve_status *s)
{
    if (s)
        MHD_stop_daemon(s->d);
    free(s);
}
