/*
 * query.c - reading a request's query parameters for the routes of api/:
 * each reader answers 400 naming the parameter it could not take, a
 * parameter no route read is 400 too, and the answers themselves: errors,
 * JSON bodies within API_ANSWER_MAX, pages with their next link.
 */
#include "api/internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/store.h"
#include "util/jsonwrite.h"
#include "util/text.h"
#include "util/time.h"

static const char *const CODES[][2] = {
    {"400", "bad_parameter"}, {"401", "unauthenticated"},    {"403", "forbidden"},
    {"404", "not_found"},     {"405", "method_not_allowed"}, {"413", "too_large"},
    {"429", "busy"},          {"503", "unavailable"},
};

static const char *code_of(unsigned status)
{
    char key[8];
    snprintf(key, sizeof(key), "%u", status);
    for (size_t i = 0; i < sizeof(CODES) / sizeof(CODES[0]); i++)
        if (strcmp(CODES[i][0], key) == 0)
            return CODES[i][1];
    return "internal";
}

static void error_body(struct api_answer *out, unsigned status, const char *param, const char *msg)
{
    json_t *e = json_pack("{s:i, s:s, s:o}", "status", (int)status, "code", code_of(status),
                          "message", ts_text_json(msg));
    if (e && param)
        json_object_set_new(e, "parameter", ts_text_json(param));
    json_t *doc = e ? json_pack("{s:o}", "error", e) : NULL;
    out->body.len = 0;
    out->body.failed = TS_OK;
    out->status = status;
    out->type = "application/json; charset=utf-8";
    out->www_authenticate = status == 401 ? "Bearer realm=\"tessera\"" : NULL;
    out->allow = status == 405 ? "GET" : NULL;
    if (ts_json_write(doc, JSON_SORT_KEYS, &out->body) != TS_OK)
        out->status = 500;
    json_decref(doc);
}

__attribute__((format(printf, 4, 0))) static void verror(struct api_answer *out, unsigned status,
                                                         const char *param, const char *fmt,
                                                         va_list ap)
{
    char msg[TS_MSG_MAX];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    error_body(out, status, param, msg);
}

void api_error(struct api_answer *out, unsigned status, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(out, status, param, fmt, ap);
    va_end(ap);
}

void api__fail(struct api__req *r, unsigned status, const char *param, const char *fmt, ...)
{
    if (r->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    verror(r->out, status, param, fmt, ap);
    va_end(ap);
    r->failed = 1;
}

/* A value a person typed: UTF-8 without control characters. */
static int clean(const char *v)
{
    if (!ts_utf8_valid(v))
        return 0;
    for (const unsigned char *c = (const unsigned char *)v; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return 0;
    return 1;
}

const char *api__param(struct api__req *r, const char *key)
{
    const char *v = NULL;
    int seen = 0;
    for (size_t i = 0; i < r->np && !r->failed; i++) {
        if (strcmp(r->p[i].key, key) != 0)
            continue;
        r->used |= 1u << i;
        if (seen++)
            api__fail(r, 400, key, "%s: given more than once", key);
        v = r->p[i].value ? r->p[i].value : "";
        if (r->p[i].cut || !clean(v) || strlen(v) >= API_VALUE_MAX)
            api__fail(r, 400, key, "%s: not text of at most %d bytes", key, API_VALUE_MAX - 1);
    }
    return r->failed ? NULL : v;
}

int api__done(struct api__req *r)
{
    for (size_t i = 0; i < r->np && !r->failed; i++) {
        if (r->used & (1u << i))
            continue;
        const char *k = r->p[i].key;
        if (!r->p[i].cut && clean(k) && strlen(k) < API_VALUE_MAX)
            api__fail(r, 400, k, "%s: not a parameter of %s", k, r->path);
        else
            api__fail(r, 400, "?", "a parameter name that is not text");
    }
    return !r->failed;
}

int api__time(struct api__req *r, const char *key, int required, int64_t def, int64_t *ms)
{
    const char *v = api__param(r, key);
    *ms = def;
    if (r->failed)
        return 0;
    if (!v && required)
        api__fail(r, 400, key, "%s: required (RFC 3339 or Unix seconds)", key);
    else if (v && !ts_time_parse(v, ms))
        api__fail(r, 400, key, "%s: '%s' is not RFC 3339 or Unix seconds", key, v);
    return !r->failed;
}

/* A decimal integer from lo to hi. */
static int number(const char *v, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    if (!*v || *v == '-' || *v == '+' || *v == ' ')
        return 0;
    long long n = strtoll(v, &end, 10);
    if (*end || n < lo || n > hi)
        return 0;
    *out = n;
    return 1;
}

int api__page(struct api__req *r, struct api__page *pg)
{
    const char *l = api__param(r, "limit"), *o = api__param(r, "offset");
    long long n = API_LIMIT_DEFAULT, off = 0;
    if (l && !number(l, 1, API_LIMIT_MAX, &n))
        api__fail(r, 400, "limit", "limit: must be an integer from 1 to %d, got '%s'",
                  API_LIMIT_MAX, l);
    if (o && !number(o, 0, 1000000000LL, &off))
        api__fail(r, 400, "offset", "offset: must be an integer from 0, got '%s'", o);
    pg->limit = (size_t)n;
    pg->offset = (size_t)off;
    return !r->failed;
}

int api__may_see(const struct api_identity *who, const char *name)
{
    return who->role == API_ROLE_OPERATOR ||
           (who->role == API_ROLE_TENANT && name && strcmp(who->tenant, name) == 0);
}

int api__tenant(struct api__req *r, const char *key, const char **tenant)
{
    const char *v = api__param(r, key);
    *tenant = NULL;
    if (r->failed)
        return 0;
    if (v && !api__may_see(r->who, v))
        api__fail(r, 403, key, "%s: you may only see tenant '%s'", key, r->who->tenant);
    else if (v && !spec_tenant_find(r->s->model, v))
        api__fail(r, 404, key, "%s: no tenant '%s' in the spec", key, v);
    *tenant = v ? v : (r->who->role == API_ROLE_TENANT ? r->who->tenant : NULL);
    return !r->failed;
}

void api__send(struct api__req *r, json_t *doc, const char *narrow)
{
    if (r->failed) {
        json_decref(doc);
        return;
    }
    struct api_answer *out = r->out;
    out->body.len = 0;
    ts_status st = doc ? ts_json_write(doc, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(10),
                                       &out->body)
                       : TS_NOMEM;
    json_decref(doc);
    if (st == TS_TOO_LARGE)
        api__fail(r, 413, narrow, "the answer is over %zu MiB: narrow it%s%s", API_ANSWER_MAX >> 20,
                  narrow ? " with " : "", narrow ? narrow : "");
    else if (st != TS_OK)
        api__fail(r, 500, NULL, "out of memory");
    else
        out->status = 200;
}

/* Percent-encode v into b (RFC 3986 unreserved characters kept). */
static void encode(struct ts_sbuf *b, const char *v)
{
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            strchr("-._~", *c))
            ts_sbuf_add(b, (const char *)c, 1);
        else
            ts_sbuf_printf(b, "%%%02X", *c);
    }
}

/* The path of the page at offset, with the request's other parameters. */
static json_t *next_link(const struct api__req *r, size_t offset)
{
    struct ts_sbuf b;
    ts_sbuf_init(&b, 16384);
    ts_sbuf_printf(&b, "/api/v1%s?", r->path);
    for (size_t i = 0; i < r->np; i++) {
        if (strcmp(r->p[i].key, "offset") == 0)
            continue;
        encode(&b, r->p[i].key);
        ts_sbuf_add(&b, "=", 1);
        encode(&b, r->p[i].value ? r->p[i].value : "");
        ts_sbuf_add(&b, "&", 1);
    }
    ts_sbuf_printf(&b, "offset=%zu", offset);
    json_t *s = b.failed ? NULL : json_string(ts_sbuf_str(&b));
    ts_sbuf_release(&b);
    return s;
}

json_t *api__paged(struct api__req *r, json_t *items, const struct api__page *pg)
{
    size_t total = items ? json_array_size(items) : 0;
    json_t *page = json_array();
    for (size_t i = pg->offset; page && i < total && i < pg->offset + pg->limit; i++)
        json_array_append(page, json_array_get(items, i));
    json_decref(items);
    size_t end = pg->offset + pg->limit;
    json_t *next = end < total ? next_link(r, end) : json_null();
    return page && items ? json_pack("{s:o, s:I, s:I, s:I, s:o}", "items", page, "total",
                                     (json_int_t)total, "limit", (json_int_t)pg->limit, "offset",
                                     (json_int_t)pg->offset, "next", next)
                         : NULL;
}

struct store *api__store(struct api__req *r)
{
    struct store *st = NULL;
    struct ts_error e = {0};
    if (r->failed)
        return NULL;
    if (!r->s->db_url)
        api__fail(r, 404, NULL, "serve has no metering store (--db)");
    else if (store_open_existing(r->s->db_url, &st, &e) != TS_OK)
        api__fail(r, 503, NULL, "the metering store: %s", e.msg);
    return st;
}
