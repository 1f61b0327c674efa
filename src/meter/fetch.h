/*
 * fetch.h - one HTTP(S) GET of a dcgm-exporter /metrics page through
 * libcurl, its body streamed to a receiver in chunks (never held whole).
 *
 * Used by the scraper (meter/scrape.h). A GET has a connect timeout and a
 * total timeout, and is tried again, after a wait that doubles each time,
 * on a connection error (refused, reset, no answer in time) and on a 5xx
 * answer; a 4xx, a TLS failure or a body over the cap are final. A body is
 * handed over only for a 2xx answer (any answer with any_status, which
 * then returns TS_OK and the status in the result, for an API whose error
 * bodies say why); a retry starts the body over (the
 * receiver's begin callback is called again). Only http:// and https://
 * URLs are fetched; redirects are not followed. Messages name the URL with
 * any user:password@ part hidden.
 */
#ifndef METER_FETCH_H
#define METER_FETCH_H

#include "util/sbuf.h"
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "util/error.h"

struct meter_fetch_opts {
    int64_t connect_timeout_ms;        /* TCP + TLS handshake */
    int64_t timeout_ms;                /* the whole transfer of one attempt */
    int retries;                       /* extra attempts after a retryable failure */
    int64_t backoff_ms;                /* first wait; doubled before each next try */
    size_t max_body;                   /* a longer body is refused: TS_TOO_LARGE */
    const char *cacert;                /* CA bundle (PEM) for https; NULL: the system's */
    int insecure;                      /* do not verify the server's certificate */
    const volatile sig_atomic_t *stop; /* when set, no further retry (may be NULL) */
    int any_status;                    /* hand over the body of any HTTP status */
    const char *bearer;                /* Authorization: Bearer this (NULL: none) */
};

/* The receiver of a body. begin: a 2xx answer starts (status, the wall-clock
 * time its request was sent); data: the next chunk. Either returns non-zero
 * to abort the transfer (meter_fetch_get then returns TS_INTERNAL, and the
 * receiver keeps its own account of why). begin is called once per 2xx
 * attempt, before its first chunk, even for an empty body. */
struct meter_fetch_sink {
    int (*begin)(void *ctx, long status, int64_t sent_ms);
    int (*data)(void *ctx, const char *p, size_t n);
    void *ctx;
};

/* A sink that keeps the body in buf (initialised by the caller with its cap,
 * released by the caller): each attempt starts it over, and a body beyond the
 * cap ends the transfer. */
void meter_fetch_buffer_sink(struct ts_sbuf *buf, struct meter_fetch_sink *sink);

struct meter_fetch_result {
    long status;  /* HTTP status of the last attempt; 0 when none came */
    size_t bytes; /* body bytes of the last attempt */
    int attempts;
    int64_t sent_ms; /* when the last attempt's request was sent (Unix ms) */
};

struct meter_fetch; /* a handle: keeps connections open between calls */

ts_status meter_fetch_new(struct meter_fetch **out, struct ts_error *err);
void meter_fetch_free(struct meter_fetch *f);

/* GET url into sink. TS_OK: a 2xx body was delivered whole. TS_IO: the
 * server could not be reached, timed out, failed TLS, or answered non-2xx
 * (the message has the URL and the status). TS_TOO_LARGE: the body passed
 * o->max_body. TS_USAGE: not an http(s) URL. *res is filled in every case. */
ts_status meter_fetch_get(struct meter_fetch *f, const char *url, const struct meter_fetch_opts *o,
                          const struct meter_fetch_sink *sink, struct meter_fetch_result *res,
                          struct ts_error *err);

/* 1 when url starts with http:// or https:// (any case). */
int meter_fetch_url_ok(const char *url);

/* url with any "user:password@" replaced by "***@", into buf. */
void meter_fetch_redact(const char *url, char *buf, size_t size);

/* Sleep ms, returning early (1) when *stop becomes set (stop may be NULL). */
int meter_fetch_sleep(int64_t ms, const volatile sig_atomic_t *stop);

#endif
