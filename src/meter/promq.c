/*
 * promq.c - a Prometheus answer of raw samples (an instant query of a range
 * vector, `SELECTOR[Wms]`; a query_range answer has the same shape) turned
 * into the exposition lines dcgm-exporter wrote (see promq.h): checked field
 * by field, each series' samples in time order and inside the window asked
 * for, no series twice, points sorted by time. The fetch loop over the range
 * is in promq_fetch.c.
 */
#include "meter/promq.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMIT_CHUNK (256 * 1024) /* lines handed to the sink at a time */

/* One series point: where it is in the answer, and its time. */
struct point {
    int64_t ts_ms;
    size_t series, index;
};

struct answer {
    const char *source;
    const struct meter_promq_window *w; /* NULL: any time */
    json_t *result;                     /* data.result */
    struct ts_error *err;
};

static ts_status bad(const struct answer *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ts_status bad(const struct answer *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[TS_MSG_MAX];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ts_err(a->err, TS_INVALID, "%s: %s", a->source, msg);
}

/* A Prometheus metric or label name: [a-zA-Z_:][a-zA-Z0-9_:]* (':' only in
 * metric names). */
static int name_ok(const char *s, int metric)
{
    if (!*s)
        return 0;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(metric && c == ':') && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

/* The status: "success", or the error Prometheus gave (escaped on output). */
static ts_status check_status(const struct answer *a, json_t *root)
{
    if (!json_is_object(root))
        return bad(a, "the answer is not a JSON object");
    const char *status = json_string_value(json_object_get(root, "status"));
    if (!status)
        return bad(a, "status: missing or not a string");
    if (strcmp(status, "success") == 0)
        return TS_OK;
    const char *type = json_string_value(json_object_get(root, "errorType"));
    const char *msg = json_string_value(json_object_get(root, "error"));
    int user = type && strcmp(type, "bad_data") == 0;
    return ts_err(a->err, user ? TS_INVALID : TS_IO,
                  "%s: Prometheus answered status \"%.40s\": %.40s: %.300s", a->source, status,
                  type ? type : "(no errorType)", msg ? msg : "(no error)");
}

static ts_status find_result(struct answer *a, json_t *root)
{
    json_t *data = json_object_get(root, "data");
    if (!json_is_object(data))
        return bad(a, "data: missing or not an object");
    const char *type = json_string_value(json_object_get(data, "resultType"));
    if (!type || strcmp(type, "matrix") != 0)
        return bad(a, "data.resultType: expected \"matrix\" (raw samples of a range vector)");
    a->result = json_object_get(data, "result");
    if (!json_is_array(a->result))
        return bad(a, "data.result: missing or not an array");
    return TS_OK;
}

/* data.result[i].metric: __name__ and string labels, within the caps. */
static ts_status check_metric(const struct answer *a, size_t i, json_t *m)
{
    if (!json_is_object(m))
        return bad(a, "data.result[%zu].metric: missing or not an object", i);
    if (!json_is_string(json_object_get(m, "__name__")))
        return bad(a,
                   "data.result[%zu].metric.__name__: missing or not a string (select raw "
                   "series, not an expression)",
                   i);
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach (m, k, v) {
        if (!json_is_string(v))
            return bad(a, "data.result[%zu].metric.%.100s: not a string", i, k);
        if (!name_ok(strcmp(k, "__name__") ? k : json_string_value(v), !strcmp(k, "__name__")))
            return bad(a, "data.result[%zu].metric.%.100s: not a valid Prometheus name", i, k);
        n += strcmp(k, "__name__") && strcmp(k, "instance") && strcmp(k, "job");
    }
    if (n > METER_LABELS_MAX)
        return bad(a, "data.result[%zu].metric: %zu labels, at most %d", i, n, METER_LABELS_MAX);
    return TS_OK;
}

/* values[j][0]: seconds with at most ms digits, after the series' previous
 * sample (*prev, -1 at the first) and inside the window (its first ms less
 * one: Prometheus 2's range includes its start, which the previous window
 * read; *skip set for it). */
static ts_status check_time(const struct answer *a, size_t i, size_t j, json_t *t, int64_t *prev,
                            int64_t *ts, int *skip)
{
    double sec = json_number_value(t);
    if (!json_is_number(t) || !isfinite(sec) || sec < 0 || sec > 1e11)
        return bad(a, "data.result[%zu].values[%zu][0]: not a time in seconds", i, j);
    *ts = llround(sec * 1000.0);
    if (*ts <= *prev)
        return bad(a,
                   "data.result[%zu].values[%zu][0]: %lld ms is not after the series' "
                   "previous sample (%lld ms): out of order or a duplicate",
                   i, j, (long long)*ts, (long long)*prev);
    *prev = *ts;
    const struct meter_promq_window *w = a->w;
    if (w && (*ts < w->from_ms - 1 || *ts > w->to_ms))
        return bad(a,
                   "data.result[%zu].values[%zu][0]: %lld ms is outside the window asked for "
                   "(%lld to %lld ms)",
                   i, j, (long long)*ts, (long long)w->from_ms, (long long)w->to_ms);
    *skip = w && *ts < w->from_ms;
    return TS_OK;
}

/* values[j]: [seconds (number), "value" (a float as text)]. */
static ts_status check_point(const struct answer *a, size_t i, size_t j, json_t *p, int64_t *prev,
                             int64_t *ts, int *skip)
{
    if (!json_is_array(p) || json_array_size(p) != 2)
        return bad(a, "data.result[%zu].values[%zu]: expected [time, \"value\"]", i, j);
    ts_status st = check_time(a, i, j, json_array_get(p, 0), prev, ts, skip);
    if (st != TS_OK)
        return st;
    const char *s = json_string_value(json_array_get(p, 1));
    if (!s)
        return bad(a, "data.result[%zu].values[%zu][1]: not a string", i, j);
    char *end;
    strtod(s, &end);
    int special = !strcmp(s, "NaN") || !strcmp(s, "+Inf") || !strcmp(s, "-Inf");
    if (!special && (!*s || *end || strpbrk(s, "xXnNiI \t\n\r\f\v")))
        return bad(a, "data.result[%zu].values[%zu][1]: \"%.40s\" is not a number", i, j, s);
    return TS_OK;
}

static ts_status add_point(const struct answer *a, struct point **pts, size_t *n, size_t *cap,
                           struct point p)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        struct point *q = realloc(*pts, c * sizeof(*q));
        if (!q)
            return ts_err(a->err, TS_NOMEM, "%s: out of memory", a->source);
        *pts = q;
        *cap = c;
    }
    (*pts)[(*n)++] = p;
    return TS_OK;
}

/* Check series i and add its points to pts (grown as needed). */
static ts_status collect(const struct answer *a, size_t i, struct point **pts, size_t *n,
                         size_t *cap)
{
    json_t *series = json_array_get(a->result, i);
    if (!json_is_object(series))
        return bad(a, "data.result[%zu]: not an object", i);
    ts_status st = check_metric(a, i, json_object_get(series, "metric"));
    json_t *values = json_object_get(series, "values");
    if (st == TS_OK && json_object_get(series, "histograms"))
        st = bad(a,
                 "data.result[%zu].histograms: native histogram samples, not a DCGM or "
                 "Istio counter or gauge: select float series",
                 i);
    if (st == TS_OK && !json_is_array(values))
        st = bad(a, "data.result[%zu].values: missing or not an array", i);
    int64_t prev = -1;
    for (size_t j = 0; st == TS_OK && j < json_array_size(values); j++) {
        int64_t ts = 0;
        int skip = 0;
        st = check_point(a, i, j, json_array_get(values, j), &prev, &ts, &skip);
        if (st == TS_OK && !skip)
            st = add_point(a, pts, n, cap, (struct point){ts, i, j});
    }
    return st;
}

/* One series' labels as a key: its label names sorted, each name=value and
 * a 0xff byte (never in UTF-8) between. */
struct key {
    char *text;
    size_t series;
};

static int by_name(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static char *series_key(json_t *m)
{
    size_t n = json_object_size(m), len = 1;
    const char **names = calloc(n ? n : 1, sizeof(*names));
    const char *k;
    json_t *v;
    size_t i = 0;
    json_object_foreach (m, k, v) {
        names[i++] = k;
        len += strlen(k) + strlen(json_string_value(v)) + 2;
    }
    char *text = names ? malloc(len) : NULL;
    if (text) {
        qsort(names, n, sizeof(*names), by_name);
        char *p = text;
        for (i = 0; i < n; i++)
            p += sprintf(p, "%s=%s\xff", names[i], json_string_value(json_object_get(m, names[i])));
        *p = '\0';
    }
    free(names);
    return text;
}

static int by_key(const void *x, const void *y)
{
    const struct key *p = x, *q = y;
    int c = strcmp(p->text, q->text);
    return c ? c : (p->series > q->series) - (p->series < q->series);
}

/* No series twice (every label, instance and job included: two targets
 * exporting one device are two series, left to the ingest's duplicate
 * rule). Run after every series was checked. */
static ts_status unique(const struct answer *a)
{
    size_t n = json_array_size(a->result);
    struct key *keys = calloc(n ? n : 1, sizeof(*keys));
    ts_status st = keys ? TS_OK : ts_err(a->err, TS_NOMEM, "%s: out of memory", a->source);
    for (size_t i = 0; st == TS_OK && i < n; i++) {
        keys[i] = (struct key){series_key(json_object_get(json_array_get(a->result, i), "metric")),
                               i};
        if (!keys[i].text)
            st = ts_err(a->err, TS_NOMEM, "%s: out of memory", a->source);
    }
    if (st == TS_OK && n)
        qsort(keys, n, sizeof(*keys), by_key);
    for (size_t i = 1; st == TS_OK && i < n; i++)
        if (!strcmp(keys[i - 1].text, keys[i].text))
            st = bad(a, "data.result[%zu].metric: the same series as data.result[%zu]",
                     keys[i].series, keys[i - 1].series);
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i].text);
    free(keys);
    return st;
}

static int by_time(const void *x, const void *y)
{
    const struct point *p = x, *q = y;
    if (p->ts_ms != q->ts_ms)
        return p->ts_ms < q->ts_ms ? -1 : 1;
    if (p->series != q->series)
        return p->series < q->series ? -1 : 1;
    return p->index < q->index ? -1 : p->index > q->index;
}

/* A label value with \, " and newline escaped as the exposition format has. */
static void put_escaped(struct ts_sbuf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            ts_sbuf_printf(out, "\\%c", *s);
        else if (*s == '\n')
            ts_sbuf_puts(out, "\\n");
        else
            ts_sbuf_add(out, s, 1);
    }
}

/* The value exactly as a double: 17 significant digits read back the same. */
static void put_value(struct ts_sbuf *out, const char *s)
{
    double v = strtod(s, NULL);
    if (isnan(v))
        ts_sbuf_puts(out, "NaN");
    else if (isinf(v))
        ts_sbuf_puts(out, v > 0 ? "+Inf" : "-Inf");
    else
        ts_sbuf_printf(out, "%.17g", v);
}

static void put_line(json_t *result, const struct point *p, struct ts_sbuf *out)
{
    json_t *series = json_array_get(result, p->series);
    json_t *m = json_object_get(series, "metric");
    ts_sbuf_puts(out, json_string_value(json_object_get(m, "__name__")));
    ts_sbuf_puts(out, "{");
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach (m, k, v) {
        if (!strcmp(k, "__name__") || !strcmp(k, "instance") || !strcmp(k, "job"))
            continue;
        ts_sbuf_printf(out, "%s%s=\"", first ? "" : ",", k);
        put_escaped(out, json_string_value(v));
        ts_sbuf_puts(out, "\"");
        first = 0;
    }
    ts_sbuf_puts(out, "} ");
    json_t *pt = json_array_get(json_object_get(series, "values"), p->index);
    put_value(out, json_string_value(json_array_get(pt, 1)));
    ts_sbuf_printf(out, " %lld\n", (long long)p->ts_ms);
}

struct meter_promq_answer {
    json_t *root, *result;
    struct point *pts; /* sorted by time */
    size_t n;
};

void meter_promq_answer_free(struct meter_promq_answer *ans)
{
    if (!ans)
        return;
    json_decref(ans->root);
    free(ans->pts);
    free(ans);
}

static ts_status check(struct answer *a, struct meter_promq_answer *ans)
{
    ts_status st = check_status(a, ans->root);
    if (st == TS_OK)
        st = find_result(a, ans->root);
    size_t cap = 0;
    for (size_t i = 0; st == TS_OK && i < json_array_size(a->result); i++)
        st = collect(a, i, &ans->pts, &ans->n, &cap);
    if (st == TS_OK)
        st = unique(a);
    if (st == TS_OK && ans->n)
        qsort(ans->pts, ans->n, sizeof(*ans->pts), by_time);
    ans->result = a->result;
    return st;
}

ts_status meter_promq_parse(const char *body, size_t len, const char *source,
                            const struct meter_promq_window *w, struct meter_promq_answer **out,
                            struct ts_error *err)
{
    *out = NULL;
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return ts_err_at(err, TS_SYNTAX, source, je.line, je.column, NULL, "%s", je.text);
    struct meter_promq_answer *ans = calloc(1, sizeof(*ans));
    if (!ans) {
        json_decref(root);
        return ts_err(err, TS_NOMEM, "%s: out of memory", source);
    }
    ans->root = root;
    struct answer a = {source, w, NULL, err};
    ts_status st = check(&a, ans);
    if (st == TS_OK)
        *out = ans;
    else
        meter_promq_answer_free(ans);
    return st;
}

/* The answer whose next point is the earliest (the first listed on a tie),
 * n when all are done. */
static size_t earliest(struct meter_promq_answer *const *ans, size_t n, const size_t *next)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (next[i] < ans[i]->n &&
            (best == n || ans[i]->pts[next[i]].ts_ms < ans[best]->pts[next[best]].ts_ms))
            best = i;
    return best;
}

ts_status meter_promq_emit(struct meter_promq_answer *const *ans, size_t n, meter_promq_sink fn,
                           void *ctx, struct ts_error *err)
{
    size_t next[METER_PROM_QUERIES_MAX] = {0};
    if (n > METER_PROM_QUERIES_MAX)
        return ts_err(err, TS_USAGE, "at most %d answers a window", METER_PROM_QUERIES_MAX);
    struct ts_sbuf chunk;
    ts_sbuf_init(&chunk, 2 * METER_PROM_BODY_MAX + 64); /* a line is at most its answer, escaped */
    ts_status st = TS_OK;
    for (size_t i = 0; st == TS_OK && i < n;) {
        if ((i = earliest(ans, n, next)) < n)
            put_line(ans[i]->result, &ans[i]->pts[next[i]++], &chunk);
        if ((st = ts_sbuf_status(&chunk)) != TS_OK)
            ts_err(err, st, "a line of the answer passes %zu bytes", chunk.max);
        else if (chunk.len && (chunk.len >= EMIT_CHUNK || i == n)) {
            st = fn(ctx, chunk.data, chunk.len, err);
            chunk.len = 0; /* the next line overwrites the text handed over */
        }
    }
    ts_sbuf_release(&chunk);
    return st;
}

/* meter_promq_text's sink: the lines appended to an sbuf. */
static ts_status to_sbuf(void *ctx, const char *data, size_t len, struct ts_error *err)
{
    struct ts_sbuf *out = ctx;
    ts_sbuf_add(out, data, len);
    if (ts_sbuf_status(out) != TS_OK)
        return ts_err(err, ts_sbuf_status(out), "the answer's lines exceed %zu bytes", out->max);
    return TS_OK;
}

ts_status meter_promq_text(const char *body, size_t len, const char *source,
                           const struct meter_promq_window *w, struct ts_sbuf *out,
                           struct ts_error *err)
{
    struct meter_promq_answer *ans;
    ts_status st = meter_promq_parse(body, len, source, w, &ans, err);
    if (st == TS_OK)
        st = meter_promq_emit(&ans, 1, to_sbuf, out, err);
    meter_promq_answer_free(ans);
    return st;
}
