/*
 * test_fetch.c - meter_fetch_get against a scripted HTTP server in a thread
 * on loopback: each connection gets the next canned answer. Checks retries
 * (5xx and a dropped connection retried, 4xx not), the receiver's begin
 * called once per 2xx attempt (a retry starts over), the body cap with and
 * without Content-Length, a receiver that stops the transfer, and the URL
 * helpers (http(s) only, passwords hidden).
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "meter/fetch.h"

#define ANSWERS_MAX 4

struct server {
    int fd, port;
    const char *answers[ANSWERS_MAX]; /* raw bytes sent per connection; NULL: close */
    int n, served;
    pthread_t thread;
};

static void *serve(void *arg)
{
    struct server *s = arg;
    for (int i = 0; i < s->n; i++) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            break;
        char req[4096];
        ssize_t got = recv(c, req, sizeof(req), 0); /* one small GET */
        (void)got;
        if (s->answers[i])
            (void)!write(c, s->answers[i], strlen(s->answers[i]));
        s->served++;
        close(c);
    }
    return NULL;
}

static void start(struct server *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s->fd, 8), 0);
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void stop(struct server *s)
{
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->fd);
}

/* The receiver: what it was given. */
struct got {
    int begins;
    long status;
    char body[256];
    size_t len;
    int stop_at_begin;
};

static int on_begin(void *ctx, long status, int64_t sent_ms)
{
    struct got *g = ctx;
    g->begins++;
    g->status = status;
    g->len = 0; /* a retry starts over */
    assert_true(sent_ms > 1700000000000);
    return g->stop_at_begin;
}

static int on_data(void *ctx, const char *p, size_t n)
{
    struct got *g = ctx;
    if (g->len + n < sizeof(g->body)) {
        memcpy(g->body + g->len, p, n);
        g->len += n;
        g->body[g->len] = '\0';
    }
    return 0;
}

static const struct meter_fetch_opts opts = {2000, 2000, 2, 10, 64, NULL, 0, NULL, 0, NULL};

static ts_status get(struct server *s, const struct meter_fetch_opts *o, struct got *g,
                     struct meter_fetch_result *res, struct ts_error *err)
{
    struct meter_fetch *f = NULL;
    assert_int_equal(meter_fetch_new(&f, err), TS_OK);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", s->port);
    struct meter_fetch_sink sink = {on_begin, on_data, g};
    ts_status rc = meter_fetch_get(f, url, o, &sink, res, err);
    meter_fetch_free(f);
    return rc;
}

#define OK200(body) "HTTP/1.1 200 OK\r\nContent-Length: " #body "\r\nConnection: close\r\n\r\n"
static const char ok_body[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\n"
                              "m 1\nx\n";
static const char busy[] = "HTTP/1.1 503 Busy\r\nContent-Length: 9\r\nConnection: close\r\n\r\n"
                           "  busy \n\n";

static void test_retry_5xx_then_ok(void **state)
{
    (void)state;
    struct server s = {.answers = {busy, NULL, ok_body}, .n = 3};
    start(&s);
    struct got g = {0};
    struct meter_fetch_result res;
    struct ts_error err = {0};
    assert_int_equal(get(&s, &opts, &g, &res, &err), TS_OK);
    stop(&s);
    assert_int_equal(res.attempts, 3); /* 503, dropped connection, 200 */
    assert_int_equal(res.status, 200);
    assert_int_equal(g.begins, 1); /* the error page never reached the receiver */
    assert_string_equal(g.body, "m 1\nx\n");
    assert_int_equal(res.bytes, 6);
}

static void test_5xx_gives_up(void **state)
{
    (void)state;
    struct server s = {.answers = {busy, busy, busy}, .n = 3};
    start(&s);
    struct got g = {0};
    struct meter_fetch_result res;
    struct ts_error err = {0};
    assert_int_equal(get(&s, &opts, &g, &res, &err), TS_IO);
    stop(&s);
    assert_int_equal(res.attempts, 3);
    assert_int_equal(g.begins, 0);
    char want[128];
    snprintf(want, sizeof(want),
             "GET http://127.0.0.1:%d/metrics: HTTP status 503: busy "
             "(3 attempts)",
             s.port);
    assert_string_equal(err.msg, want);
}

static void test_4xx_not_retried(void **state)
{
    (void)state;
    struct server s = {.answers = {"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"}, .n = 1};
    start(&s);
    struct got g = {0};
    struct meter_fetch_result res;
    struct ts_error err = {0};
    assert_int_equal(get(&s, &opts, &g, &res, &err), TS_IO);
    stop(&s);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(res.status, 404);
    assert_non_null(strstr(err.msg, "HTTP status 404 (1 attempt)"));
}

static void test_body_cap(void **state)
{
    (void)state;
    static char chunked[512];
    snprintf(chunked, sizeof(chunked),
             "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
             "28\r\n%040d\r\n28\r\n%040d\r\n0\r\n\r\n",
             1, 2); /* 80 bytes, no length */
    const char *big = OK200(
        65) "0123456789012345678901234567890123456789012345678901234567890123\n";
    for (int i = 0; i < 2; i++) {
        struct server s = {.answers = {i ? chunked : big}, .n = 1};
        start(&s);
        struct got g = {0};
        struct meter_fetch_result res;
        struct ts_error err = {0};
        assert_int_equal(get(&s, &opts, &g, &res, &err), TS_TOO_LARGE);
        stop(&s);
        assert_int_equal(res.attempts, 1); /* never retried */
        assert_non_null(strstr(err.msg, "body larger than 64 bytes: refused"));
    }
}

static void test_receiver_stops(void **state)
{
    (void)state;
    struct server s = {.answers = {ok_body}, .n = 1};
    start(&s);
    struct got g = {.stop_at_begin = 1};
    struct meter_fetch_result res;
    struct ts_error err = {0};
    assert_int_equal(get(&s, &opts, &g, &res, &err), TS_INTERNAL);
    stop(&s);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(g.begins, 1);
    assert_int_equal(g.len, 0);
}

static void test_empty_body_begins(void **state)
{
    (void)state;
    struct server s = {.answers = {OK200(0)}, .n = 1};
    start(&s);
    struct got g = {0};
    struct meter_fetch_result res;
    struct ts_error err = {0};
    assert_int_equal(get(&s, &opts, &g, &res, &err), TS_OK);
    stop(&s);
    assert_int_equal(g.begins, 1);
    assert_int_equal(g.status, 200);
    assert_int_equal(res.bytes, 0);
}

static void test_urls(void **state)
{
    (void)state;
    char buf[128];
    meter_fetch_redact("https://u:pw@h:9400/metrics?a=b@c", buf, sizeof(buf));
    assert_string_equal(buf, "https://***@h:9400/metrics?a=b@c");
    meter_fetch_redact("http://h/x@y", buf, sizeof(buf));
    assert_string_equal(buf, "http://h/x@y");
    assert_true(meter_fetch_url_ok("HTTPS://h/"));
    assert_false(meter_fetch_url_ok("file:///etc/passwd"));
    assert_false(meter_fetch_url_ok("httpx://h"));
    struct meter_fetch *f = NULL;
    struct ts_error err = {0};
    struct meter_fetch_result res;
    struct got g = {0};
    struct meter_fetch_sink sink = {on_begin, on_data, &g};
    assert_int_equal(meter_fetch_new(&f, &err), TS_OK);
    assert_int_equal(meter_fetch_get(f, "gopher://u:pw@h/", &opts, &sink, &res, &err), TS_USAGE);
    assert_null(strstr(err.msg, "pw"));
    meter_fetch_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_retry_5xx_then_ok),
                                       cmocka_unit_test(test_5xx_gives_up),
                                       cmocka_unit_test(test_4xx_not_retried),
                                       cmocka_unit_test(test_body_cap),
                                       cmocka_unit_test(test_receiver_stops),
                                       cmocka_unit_test(test_empty_body_begins),
                                       cmocka_unit_test(test_urls)};
    return cmocka_run_group_tests_name("meter_fetch", tests, NULL, NULL);
}
