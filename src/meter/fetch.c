/*
 * fetch.c - HTTP(S) GET through libcurl with timeouts, retries, a body cap
 * and the body streamed to a receiver (see fetch.h). One easy handle per
 * struct meter_fetch, so connections to a target are reused between rounds.
 */
#include "meter/fetch.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "util/time.h"

#define BACKOFF_MAX_MS 30000 /* the longest wait between retries: two 15 s rounds */
#define SNIPPET_MAX 100      /* bytes of a non-2xx body quoted in the message */

struct meter_fetch {
    CURL *h;
    char errbuf[CURL_ERROR_SIZE];
};

/* One attempt: what came back and what the receiver said. */
struct xfer {
    struct meter_fetch *f;
    const struct meter_fetch_opts *o;
    const struct meter_fetch_sink *sink;
    long status;
    size_t bytes;
    int64_t sent_ms;
    int begun, too_large, aborted;
    char snippet[SNIPPET_MAX + 1];
    size_t snippet_len;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

int meter_fetch_sleep(int64_t ms, const volatile sig_atomic_t *stop)
{
    while (ms > 0 && !(stop && *stop)) {
        int64_t step = ms > 100 ? 100 : ms;
        struct timespec ts = {(time_t)(step / 1000), (long)(step % 1000) * 1000000};
        nanosleep(&ts, NULL); /* a signal cuts it short: stop is checked next */
        ms -= step;
    }
    return stop && *stop;
}

void meter_fetch_redact(const char *url, char *buf, size_t size)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    const char *end = host + strcspn(host, "/?#");
    const char *at = memchr(host, '@', (size_t)(end - host));
    if (!at)
        snprintf(buf, size, "%s", url);
    else
        snprintf(buf, size, "%.*s***%s", (int)(host - url), url, at);
}

ts_status meter_fetch_new(struct meter_fetch **out, struct ts_error *err)
{
    *out = NULL;
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK)
        return ts_err(err, TS_INTERNAL, "libcurl: %s", curl_easy_strerror(global_rc));
    struct meter_fetch *f = calloc(1, sizeof(*f));
    if (!f || !(f->h = curl_easy_init())) {
        free(f);
        return ts_err(err, TS_NOMEM, "libcurl: out of memory");
    }
    *out = f;
    return TS_OK;
}

void meter_fetch_free(struct meter_fetch *f)
{
    if (!f)
        return;
    curl_easy_cleanup(f->h);
    free(f);
}

/* Keep the start of an error page for the message, printable bytes only. */
static void keep_snippet(struct xfer *x, const char *p, size_t n)
{
    if (x->snippet_len && x->snippet_len < SNIPPET_MAX)
        x->snippet[x->snippet_len++] = ' '; /* the blank trimmed after the last chunk */
    for (size_t i = 0; i < n && x->snippet_len < SNIPPET_MAX; i++) {
        unsigned char c = (unsigned char)p[i];
        char out = c > 0x20 && c < 0x7f ? (char)c : ' ';
        if (out != ' ' || (x->snippet_len && x->snippet[x->snippet_len - 1] != ' '))
            x->snippet[x->snippet_len++] = out; /* runs of blanks become one */
    }
    while (x->snippet_len && x->snippet[x->snippet_len - 1] == ' ')
        x->snippet_len--;
    x->snippet[x->snippet_len] = '\0';
}

static int begin_body(struct xfer *x)
{
    x->begun = 1;
    if (x->sink->begin && x->sink->begin(x->sink->ctx, x->status, x->sent_ms)) {
        x->aborted = 1;
        return -1;
    }
    return 0;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    if (!x->status)
        curl_easy_getinfo(x->f->h, CURLINFO_RESPONSE_CODE, &x->status);
    if (n > x->o->max_body - x->bytes || x->bytes > x->o->max_body) {
        x->too_large = 1;
        return 0; /* anything but n aborts the transfer */
    }
    x->bytes += n;
    if (x->status / 100 != 2 && !x->o->any_status) {
        keep_snippet(x, p, n);
        return n;
    }
    if (!x->begun && begin_body(x) != 0)
        return 0;
    if (x->sink->data && x->sink->data(x->sink->ctx, p, n)) {
        x->aborted = 1;
        return 0;
    }
    return n;
}

static void set_options(struct meter_fetch *f, const char *url, const struct meter_fetch_opts *o,
                        struct xfer *x)
{
    CURL *h = f->h;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, f->errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)o->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_body);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* gzip when the exporter offers it */
    curl_easy_setopt(h, CURLOPT_USERAGENT, "tessera-meter");
    if (o->cacert)
        curl_easy_setopt(h, CURLOPT_CAINFO, o->cacert);
    if (o->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (o->bearer) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
        curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, o->bearer);
    }
}

static CURLcode attempt(struct meter_fetch *f, struct xfer *x)
{
    f->errbuf[0] = '\0';
    x->sent_ms = ts_clock_ms(CLOCK_REALTIME);
    CURLcode c = curl_easy_perform(f->h);
    curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &x->status);
    int deliver = x->status / 100 == 2 || x->o->any_status;
    if (c == CURLE_OK && deliver && !x->begun && begin_body(x) != 0)
        return CURLE_WRITE_ERROR; /* an empty 2xx body still begins */
    return c;
}

/* Worth another try: the network, the server's load, a restart. */
static int retryable(CURLcode c, long status)
{
    switch (c) {
    case CURLE_OK: return status >= 500;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return 1;
    default: return 0;
    }
}

static ts_status outcome(struct meter_fetch *f, CURLcode c, const struct xfer *x, const char *shown,
                         int attempts, struct ts_error *err)
{
    if (x->too_large || c == CURLE_FILESIZE_EXCEEDED)
        return ts_err(err, TS_TOO_LARGE, "GET %s: body larger than %zu bytes: refused", shown,
                      x->o->max_body);
    if (x->aborted)
        return ts_err(err, TS_INTERNAL, "GET %s: stopped by the receiver", shown);
    if (c != CURLE_OK)
        return ts_err(err, TS_IO, "GET %s: %s (%d attempt%s)", shown,
                      f->errbuf[0] ? f->errbuf : curl_easy_strerror(c), attempts,
                      attempts == 1 ? "" : "s");
    if (x->status / 100 != 2 && !x->o->any_status)
        return ts_err(err, TS_IO, "GET %s: HTTP status %ld%s%s (%d attempt%s)", shown, x->status,
                      x->snippet_len ? ": " : "", x->snippet, attempts, attempts == 1 ? "" : "s");
    return TS_OK;
}

int meter_fetch_url_ok(const char *url)
{
    return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

ts_status meter_fetch_get(struct meter_fetch *f, const char *url, const struct meter_fetch_opts *o,
                          const struct meter_fetch_sink *sink, struct meter_fetch_result *res,
                          struct ts_error *err)
{
    char shown[512];
    meter_fetch_redact(url, shown, sizeof(shown));
    memset(res, 0, sizeof(*res));
    if (!meter_fetch_url_ok(url))
        return ts_err(err, TS_USAGE, "'%s': not an http:// or https:// URL", shown);
    struct xfer x;
    CURLcode c;
    int64_t wait = o->backoff_ms;
    for (;;) {
        x = (struct xfer){.f = f, .o = o, .sink = sink};
        set_options(f, url, o, &x);
        c = attempt(f, &x);
        res->attempts++;
        if (x.too_large || x.aborted || !retryable(c, x.status) || res->attempts > o->retries)
            break;
        if (meter_fetch_sleep(wait, o->stop))
            break;
        wait = wait * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : wait * 2;
    }
    res->status = x.status;
    res->bytes = x.bytes;
    res->sent_ms = x.sent_ms;
    return outcome(f, c, &x, shown, res->attempts, err);
}

/* ---- the buffer sink ---- */

static int buffer_begin(void *ctx, long status, int64_t sent_ms)
{
    (void)status;
    (void)sent_ms;
    struct ts_sbuf *b = ctx;
    b->len = 0; /* a retry starts over */
    if (b->data)
        b->data[0] = '\0';
    return 0;
}

static int buffer_data(void *ctx, const char *p, size_t n)
{
    struct ts_sbuf *b = ctx;
    ts_sbuf_add(b, p, n);
    return b->failed;
}

void meter_fetch_buffer_sink(struct ts_sbuf *buf, struct meter_fetch_sink *sink)
{
    sink->begin = buffer_begin;
    sink->data = buffer_data;
    sink->ctx = buf;
}
