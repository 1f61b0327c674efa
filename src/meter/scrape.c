/*
 * scrape.c - the scrape loop (see scrape.h): aligned rounds, one streamed
 * GET per target into a fresh ingest, the queue of scrapes waiting for the
 * store, and the drain at the end.
 */
#include "meter/scrape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/sbuf.h"
#include "util/time.h"

#define FLUSH_TRIES 3 /* in-round tries before a scrape waits in the queue */
#define FLUSH_BACKOFF_MS 200
#define DRAIN_BACKOFF_MAX_MS 4000 /* the longest wait between tries at the end */

/* One target's scrape: its ingest, and its body kept for /metrics. */
struct job {
    char source[512];    /* the URL, user:password hidden */
    struct ts_diag diag; /* malformed lines of the body */
    struct meter_ingest *in;
    struct ts_sbuf body;
    int body_over; /* the body passed expo_max: not kept */
    int64_t sent_ms, started_ms;
    struct ts_error err; /* why the receiver stopped the transfer */
    long round;
};

struct run {
    const struct meter_ctx *ctx;
    struct store *st;
    const struct meter_scrape_opts *o;
    meter_scrape_log_fn log;
    void *log_ctx;
    struct meter_scrape_totals *t;
    struct meter_fetch *fetch;
    struct job *pending[METER_SCRAPE_PENDING_MAX]; /* oldest first */
    size_t npending;
};

static void emit(struct run *r, const struct meter_scrape_event *e)
{
    if (r->log)
        r->log(r->log_ctx, e);
}

/* ---- jobs ------------------------------------------------------------- */

static struct job *job_new(const struct run *r, const char *url, long round)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    meter_fetch_redact(url, j->source, sizeof(j->source));
    ts_sbuf_init(&j->body, r->o->expo_max);
    j->round = round;
    j->started_ms = ts_clock_ms(CLOCK_REALTIME);
    return j;
}

static void job_free(struct job *j)
{
    if (!j)
        return;
    meter_ingest_free(j->in);
    ts_sbuf_release(&j->body);
    free(j);
}

struct receiver {
    struct run *r;
    struct job *j;
};

/* A 2xx answer begins (again, on a retry): start from a fresh ingest. */
static int on_begin(void *arg, long status, int64_t sent_ms)
{
    struct receiver *rc = arg;
    struct job *j = rc->j;
    (void)status;
    meter_ingest_free(j->in);
    j->in = NULL;
    memset(&j->diag, 0, sizeof(j->diag));
    ts_sbuf_release(&j->body);
    ts_sbuf_init(&j->body, rc->r->o->expo_max);
    j->body_over = 0;
    j->sent_ms = sent_ms;
    if (meter_ingest_new(rc->r->ctx, rc->r->st, sent_ms, j->source, &j->diag, &j->in) != TS_OK) {
        ts_err(&j->err, TS_NOMEM, "%s: cannot start the ingest: out of memory", j->source);
        return -1;
    }
    return 0;
}

static void keep_body(struct job *j, const char *p, size_t n, size_t max)
{
    if (j->body_over)
        return;
    if (n > max - j->body.len) {
        j->body_over = 1;
        ts_sbuf_release(&j->body);
        ts_sbuf_init(&j->body, max);
        return;
    }
    ts_sbuf_add(&j->body, p, n);
}

static int on_data(void *arg, const char *p, size_t n)
{
    struct receiver *rc = arg;
    struct job *j = rc->j;
    keep_body(j, p, n, rc->r->o->expo_max);
    return meter_ingest_feed(j->in, p, n, &j->err) == TS_OK ? 0 : -1;
}

/* ---- the queue of scrapes waiting for the store ------------------------ */

static void count_stored(struct run *r, const struct job *j, struct meter_scrape_event *e)
{
    struct meter_ingest_counts c;
    meter_ingest_counts(j->in, &c);
    r->t->inserted += c.inserted;
    r->t->rejected += c.rejected_lines > 0;
    e->devices = c.devices;
    e->inserted = c.inserted;
    e->rejected_lines = c.rejected_lines;
    e->ingest = j->in;
}

static void lose(struct run *r, struct job *j, const struct ts_error *why)
{
    struct meter_scrape_event e = {.kind = METER_EV_LOST,
                                   .target = j->source,
                                   .round = j->round,
                                   .at_ms = j->sent_ms,
                                   .error = why};
    r->t->lost++;
    emit(r, &e);
    job_free(j);
}

static void enqueue(struct run *r, struct job *j, const struct ts_error *why)
{
    struct meter_scrape_event e = {.kind = METER_EV_STORE_WAIT,
                                   .target = j->source,
                                   .round = j->round,
                                   .at_ms = j->sent_ms,
                                   .error = why};
    ts_sbuf_release(&j->body); /* only the samples wait; a later body replaces this one */
    if (r->npending == METER_SCRAPE_PENDING_MAX) {
        struct ts_error full;
        ts_err(&full, TS_TOO_LARGE, "%d scrapes already wait for the store",
               METER_SCRAPE_PENDING_MAX);
        lose(r, r->pending[0], &full);
        memmove(r->pending, r->pending + 1, --r->npending * sizeof(r->pending[0]));
    }
    r->pending[r->npending++] = j;
    emit(r, &e);
}

/* Flush the waiting scrapes in order; stops at the first failure (*why). */
static ts_status retry_pending(struct run *r, struct ts_error *why)
{
    while (r->npending) {
        struct job *j = r->pending[0];
        ts_status rc = meter_ingest_finish(j->in, why);
        if (rc != TS_OK)
            return rc;
        struct meter_scrape_event e = {.kind = METER_EV_STORED_LATE,
                                       .target = j->source,
                                       .round = j->round,
                                       .at_ms = j->sent_ms,
                                       .ms = ts_clock_ms(CLOCK_REALTIME) - j->started_ms};
        count_stored(r, j, &e);
        emit(r, &e);
        job_free(j);
        memmove(r->pending, r->pending + 1, --r->npending * sizeof(r->pending[0]));
    }
    return TS_OK;
}

/* At the end: keep trying with backoff for o->drain_ms, then give up. */
static void drain(struct run *r)
{
    struct ts_error why = {0};
    int64_t deadline = ts_clock_ms(CLOCK_REALTIME) + r->o->drain_ms, wait = FLUSH_BACKOFF_MS;
    while (retry_pending(r, &why) != TS_OK && ts_clock_ms(CLOCK_REALTIME) + wait <= deadline) {
        meter_fetch_sleep(wait, NULL);
        wait = wait * 2 > DRAIN_BACKOFF_MAX_MS ? DRAIN_BACKOFF_MAX_MS : wait * 2;
    }
    for (size_t i = 0; i < r->npending; i++)
        lose(r, r->pending[i], &why);
    r->npending = 0;
}

/* ---- one scrape ------------------------------------------------------- */

static void keep_exposition(struct run *r, struct job *j)
{
    struct ts_error e = {0};
    if (j->body_over)
        ts_err(&e, TS_TOO_LARGE, "body over %zu bytes: not kept for /metrics (still metered)",
               r->o->expo_max);
    else if (ts_sbuf_status(&j->body) != TS_OK)
        ts_err(&e, TS_NOMEM, "out of memory: body not kept for /metrics");
    else
        store_put_exposition(r->st, j->source, j->sent_ms, ts_sbuf_str(&j->body), j->body.len, &e);
    if (e.code == TS_OK)
        return;
    struct meter_scrape_event ev = {.kind = METER_EV_EXPO_SKIP,
                                    .target = j->source,
                                    .round = j->round,
                                    .at_ms = j->sent_ms,
                                    .error = &e};
    emit(r, &ev);
}

/* Flush a fetched scrape: a few quick tries (one while others already
 * wait: the store is known to be down), then the queue. 1 if stored. */
static int store_job(const struct run *r, struct job *j, struct ts_error *why)
{
    int64_t wait = FLUSH_BACKOFF_MS;
    int tries = r->npending ? 1 : FLUSH_TRIES;
    for (int i = 0; i < tries; i++) {
        if (meter_ingest_finish(j->in, why) == TS_OK)
            return 1;
        if (i + 1 < tries)
            meter_fetch_sleep(wait, NULL);
        wait *= 2;
    }
    return 0;
}

static void scrape_one(struct run *r, const char *url, long round)
{
    struct job *j = job_new(r, url, round);
    struct ts_error e = {0};
    struct meter_scrape_event ev = {.kind = METER_EV_SCRAPE, .round = round, .error = &e};
    if (!j) {
        ts_err(&e, TS_NOMEM, "out of memory");
        ev.target = url; /* never reached with a password: job_new failed before */
        r->t->scrapes++, r->t->failed++;
        emit(r, &ev);
        return;
    }
    struct receiver rc = {r, j};
    struct meter_fetch_sink sink = {on_begin, on_data, &rc};
    struct meter_fetch_result res;
    ts_status st = meter_fetch_get(r->fetch, url, &r->o->fetch, &sink, &res, &e);
    if (st == TS_INTERNAL && j->err.code)
        e = j->err; /* the receiver said why it stopped */
    ev = (struct meter_scrape_event){.kind = METER_EV_SCRAPE,
                                     .target = j->source,
                                     .round = round,
                                     .status = res.status,
                                     .bytes = res.bytes,
                                     .attempts = res.attempts,
                                     .at_ms = res.sent_ms,
                                     .error = st == TS_OK ? NULL : &e,
                                     .diag = &j->diag};
    r->t->scrapes++;
    r->t->failed += st != TS_OK;
    /* a whole body, or the part parsed before a store failure stopped it;
     * never a body cut by the network or the cap (its last line may be cut) */
    int keep = j->in && (st == TS_OK || (st == TS_INTERNAL && j->err.code == TS_IO));
    struct ts_error why = {0};
    int stored = keep && store_job(r, j, &why);
    if (stored)
        count_stored(r, j, &ev);
    ev.ms = ts_clock_ms(CLOCK_REALTIME) - j->started_ms;
    emit(r, &ev);
    if (stored && st == TS_OK)
        keep_exposition(r, j);
    if (keep && !stored) {
        enqueue(r, j, &why);
        return;
    }
    job_free(j);
}

/* ---- rounds ----------------------------------------------------------- */

static int stopping(const struct meter_scrape_opts *o) { return o->stop && *o->stop; }

/* The next round time after a round that should have started at next. */
static int64_t after_round(struct run *r, int64_t next, long round)
{
    int64_t iv = r->o->interval_ms, now = ts_clock_ms(CLOCK_REALTIME);
    next += iv;
    if (now < next)
        return next;
    long skipped = (long)((now - next) / iv + 1);
    struct meter_scrape_event e = {
        .kind = METER_EV_OVERRUN, .round = round, .skipped = skipped, .ms = now - (next - iv)};
    emit(r, &e);
    return next + skipped * iv;
}

static ts_status check_opts(const struct meter_scrape_opts *o, struct ts_error *err)
{
    if (!o->ntargets && !o->retarget)
        return ts_err(err, TS_USAGE, "no target to scrape");
    if (o->interval_ms <= 0)
        return ts_err(err, TS_USAGE, "scrape options: interval_ms must be positive");
    if (o->fetch.timeout_ms <= 0 || o->fetch.connect_timeout_ms <= 0)
        return ts_err(err, TS_USAGE, "scrape options: fetch.%s must be positive",
                      o->fetch.timeout_ms <= 0 ? "timeout_ms" : "connect_timeout_ms");
    if (o->fetch.retries < 0 || o->count < 0)
        return ts_err(err, TS_USAGE, "scrape options: %s must not be negative",
                      o->count < 0 ? "count" : "fetch.retries");
    if (!o->fetch.max_body)
        return ts_err(err, TS_USAGE, "scrape options: fetch.max_body must not be 0");
    return TS_OK;
}

ts_status meter_scrape_run(const struct meter_ctx *ctx, struct store *st,
                           const struct meter_scrape_opts *o, meter_scrape_log_fn log,
                           void *log_ctx, struct meter_scrape_totals *t, struct ts_error *err)
{
    memset(t, 0, sizeof(*t));
    ts_status rc = check_opts(o, err);
    struct run *r = rc == TS_OK ? calloc(1, sizeof(*r)) : NULL;
    if (rc == TS_OK && !r)
        rc = ts_err(err, TS_NOMEM, "out of memory");
    if (rc == TS_OK)
        rc = meter_fetch_new(&r->fetch, err);
    if (rc != TS_OK) {
        free(r);
        return rc;
    }
    r->ctx = ctx;
    r->st = st;
    r->o = o;
    r->log = log;
    r->log_ctx = log_ctx;
    r->t = t;
    int64_t iv = o->interval_ms, next = (ts_clock_ms(CLOCK_REALTIME) / iv + 1) * iv;
    const char *const *targets = o->targets;
    size_t ntargets = o->ntargets;
    for (long round = 1; !meter_fetch_sleep(next - ts_clock_ms(CLOCK_REALTIME), o->stop); round++) {
        struct ts_error why;
        retry_pending(r, &why);
        const struct meter_ctx *fresh = o->refresh ? o->refresh(o->refresh_arg) : NULL;
        r->ctx = fresh ? fresh : r->ctx;
        size_t n;
        const char *const *now = o->retarget ? o->retarget(o->retarget_arg, &n) : NULL;
        if (now) {
            targets = now;
            ntargets = n;
        }
        for (size_t i = 0; i < ntargets; i++)
            scrape_one(r, targets[i], round);
        t->rounds++;
        if ((o->count && round >= o->count) || stopping(o))
            break;
        next = after_round(r, next, round);
    }
    drain(r);
    meter_fetch_free(r->fetch);
    free(r);
    return TS_OK;
}
