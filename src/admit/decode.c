/*
 * decode.c - the request context: where in the JSON a check is (paths like
 * request.object.spec.containers[2].env[0].value), the first malformed-input
 * error (400), the denials (joined, each kept once), typed getters that turn
 * a wrong type into a located 400, user text clipped for messages, and the
 * loader: size cap, a depth scanner that runs before jansson sees the bytes
 * (it respects strings and escapes), then jansson (which rejects invalid
 * UTF-8, trailing garbage and, here, duplicate keys).
 * Everything lives in the caller's ad_ctx: no state is shared between calls.
 */
#include "admit/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ad_ctx_init(struct ad_ctx *c, const struct admit_policy *pol)
{
    memset(c, 0, sizeof(*c));
    c->pol = pol;
    c->nsname = "";
}

/* The longest prefix of s[0..n) that ends on a whole UTF-8 character
 * (s is valid UTF-8 up to where it was cut). */
static size_t utf8_whole(const char *s, size_t n)
{
    size_t m = n;
    while (m > 0 && ((unsigned char)s[m - 1] & 0xC0) == 0x80)
        m--;
    if (m == 0)
        return 0;
    unsigned char lead = (unsigned char)s[m - 1];
    size_t need = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    return n - (m - 1) >= need ? n : m - 1;
}

/* Format into buf; when it does not fit, cut on a character boundary. */
static void vformat(char *buf, size_t size, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, size, fmt, ap);
    if (n < 0)
        buf[0] = '\0';
    else if ((size_t)n >= size)
        buf[utf8_whole(buf, size - 1)] = '\0';
}

static void format(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void format(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vformat(buf, size, fmt, ap);
    va_end(ap);
}

/* ---- paths ---- */

static int plain_key(const char *k)
{
    if (!*k)
        return 0;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
              *k == '_'))
            return 0;
    return 1;
}

static size_t path_add(struct ad_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static size_t path_add(struct ad_ctx *c, const char *fmt, ...)
{
    size_t mark = c->plen;
    va_list ap;
    va_start(ap, fmt);
    vformat(c->path + c->plen, sizeof(c->path) - c->plen, fmt, ap);
    va_end(ap);
    c->plen += strlen(c->path + c->plen);
    return mark;
}

size_t ad_push(struct ad_ctx *c, const char *key)
{
    if (plain_key(key))
        return path_add(c, "%s%.64s", c->plen ? "." : "", key);
    char clipped[80];
    size_t n = strlen(key) > 64 ? utf8_whole(key, 64) : strlen(key);
    memcpy(clipped, key, n);
    clipped[n] = '\0';
    return path_add(c, "[\"%s%s\"]", clipped, key[n] ? "..." : "");
}

size_t ad_push_index(struct ad_ctx *c, size_t i) { return path_add(c, "[%zu]", i); }

void ad_pop(struct ad_ctx *c, size_t mark)
{
    c->plen = mark;
    c->path[mark] = '\0';
}

/* ---- errors and denials ---- */

/* The first 400 wins: "<where>: <what>". */
__attribute__((format(printf, 3, 0))) static void vbad(struct ad_ctx *c, const char *where,
                                                       const char *fmt, va_list ap)
{
    if (c->bad)
        return;
    char what[AD_MSG_MAX];
    vformat(what, sizeof(what), fmt, ap);
    format(c->err, sizeof(c->err), "%s: %s", where, what);
    c->bad = 1;
}

void ad_bad_at(struct ad_ctx *c, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vbad(c, where, fmt, ap);
    va_end(ap);
}

void ad_bad(struct ad_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vbad(c, c->plen ? c->path : "body", fmt, ap);
    va_end(ap);
}

#define AD_MORE_ROOM 24 /* "; and 1234 more" */

void ad_deny(struct ad_ctx *c, const char *rule, const char *fmt, ...)
{
    char m[AD_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vformat(m, sizeof(m), fmt, ap);
    va_end(ap);
    size_t have = strlen(c->msg), n = strlen(m);
    /* kept once: compare with each "; "-separated denial */
    for (const char *p = c->msg; *p;) {
        const char *end = strstr(p, "; ");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, m, n) == 0)
            return;
        p += len + (end ? 2 : 0);
    }
    if (c->ndeny == 0)
        snprintf(c->rule, sizeof(c->rule), "%s", rule);
    if (have + 2 + n + AD_MORE_ROOM >= sizeof(c->msg)) {
        c->dropped++;
        c->ndeny++;
        return;
    }
    snprintf(c->msg + have, sizeof(c->msg) - have, "%s%s", have ? "; " : "", m);
    c->ndeny++;
}

const char *ad_q(struct ad_ctx *c, const char *s)
{
    char *buf = c->clip[c->clipi++ % 4];
    size_t max = sizeof(c->clip[0]) - 6, n = strlen(s ? s : "");
    size_t keep = n > max ? utf8_whole(s, max) : n;
    snprintf(buf, sizeof(c->clip[0]), "\"%.*s%s\"", (int)keep, s ? s : "", keep < n ? "..." : "");
    return buf;
}

void ad_gpu(struct ad_ctx *c, const char *fmt, ...)
{
    if (c->gpu_use[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vformat(c->gpu_use, sizeof(c->gpu_use), fmt, ap);
    va_end(ap);
}

/* Append word to a comma-separated list unless it is there already. */
static void list_add(char *list, size_t size, const char *word)
{
    size_t n = strlen(word), have = strlen(list);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, word, n) == 0)
            return;
        p += len + (end ? 1 : 0);
    }
    if (have + n + 2 <= size)
        snprintf(list + have, size - have, "%s%s", have ? "," : "", word);
}

void ad_audit_words(struct ad_ctx *c, const char *mech, const char *profile)
{
    list_add(c->mech, sizeof(c->mech), mech);
    list_add(c->profile, sizeof(c->profile), profile);
}

void ad_audit(struct ad_ctx *c, const struct ad_ent *e)
{
    if (e->shim && !c->shim_ent)
        c->shim_ent = e;
    ad_audit_words(c, decide_mech_names[e->mech], e->profile);
}

/* ---- typed getters ---- */

static const char *type_name(json_type t)
{
    switch (t) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    default: return "a boolean";
    }
}

static int has_type(const json_t *v, json_type t)
{
    if (t == JSON_TRUE || t == JSON_FALSE)
        return json_is_boolean(v);
    return json_typeof(v) == t;
}

json_t *ad_get(struct ad_ctx *c, json_t *obj, const char *key, json_type type)
{
    json_t *v = c->bad || !json_is_object(obj) ? NULL : json_object_get(obj, key);
    if (!v || json_is_null(v))
        return NULL;
    if (has_type(v, type))
        return v;
    size_t mark = ad_push(c, key);
    ad_bad(c, "must be %s", type_name(type));
    ad_pop(c, mark);
    return NULL;
}

const char *ad_get_str(struct ad_ctx *c, json_t *obj, const char *key)
{
    return json_string_value(ad_get(c, obj, key, JSON_STRING));
}

int ad_get_true(struct ad_ctx *c, json_t *obj, const char *key)
{
    return json_is_true(ad_get(c, obj, key, JSON_TRUE));
}

json_t *ad_item(struct ad_ctx *c, json_t *arr, size_t i, json_type type)
{
    json_t *v = c->bad ? NULL : json_array_get(arr, i);
    if (v && has_type(v, type))
        return v;
    size_t mark = ad_push_index(c, i);
    ad_bad(c, "must be %s", type_name(type));
    ad_pop(c, mark);
    return NULL;
}

void ad_each(struct ad_ctx *c, json_t *obj, const char *key, json_type type, ad_each_fn *fn,
             const void *arg)
{
    json_t *list = ad_get(c, obj, key, JSON_ARRAY);
    size_t mark = ad_push(c, key);
    for (size_t i = 0; i < json_array_size(list) && !c->bad; i++) {
        json_t *item = ad_item(c, list, i, type);
        size_t imark = ad_push_index(c, i);
        if (item)
            fn(c, item, i, arg);
        ad_pop(c, imark);
    }
    ad_pop(c, mark);
}

/* ---- loading ---- */

/* Nesting depth and entries of the body, before any parser recurses on it
 * or allocates for it: objects and arrays, and each member or item after a
 * container's first (a comma), counted outside strings. */
static int depth_ok(struct ad_ctx *c, const char *s, size_t len)
{
    int depth = 0, in_str = 0, esc = 0, line = 1;
    size_t entries = 0;
    size_t line_start = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == '\n') {
            line++;
            line_start = i + 1;
        }
        if (in_str) {
            if (esc)
                esc = 0;
            else if (ch == '\\')
                esc = 1;
            else if (ch == '"')
                in_str = 0;
        } else if (ch == '"') {
            in_str = 1;
        } else if ((ch == '{' || ch == '[') && ++depth > ADMIT_DEPTH_MAX) {
            ad_bad_at(c, "body", "line %d, column %zu: nested deeper than %d levels", line,
                      i - line_start + 1, ADMIT_DEPTH_MAX);
            return 0;
        } else if ((ch == '}' || ch == ']') && depth > 0) {
            depth--;
        }
        if (!in_str && (ch == ',' || ch == '{' || ch == '[') && ++entries > AD_ENTRIES_MAX) {
            ad_bad_at(c, "body",
                      "line %d, column %zu: more than %d entries (objects, arrays and their "
                      "members), more than any real pod or workload has",
                      line, i - line_start + 1, AD_ENTRIES_MAX);
            return 0;
        }
    }
    return 1;
}

/* jansson's message can quote input bytes: keep printable ASCII only. */
static void ascii_only(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            *s = '?';
}

int ad_load(struct ad_ctx *c, const char *body, size_t len, json_t **root)
{
    *root = NULL;
    if (len > ADMIT_BODY_MAX) {
        ad_bad_at(c, "body", "%zu bytes, more than the %u allowed", len, ADMIT_BODY_MAX);
        return -1;
    }
    if (!body)
        len = 0;
    if (!depth_ok(c, body, len))
        return -1;
    json_error_t e;
    *root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &e);
    if (!*root) {
        ascii_only(e.text);
        ad_bad_at(c, "body", "not JSON: line %d, column %d: %s", e.line, e.column, e.text);
        return -1;
    }
    if (!json_is_object(*root)) {
        ad_bad_at(c, "body", "must be a JSON object (an AdmissionReview)");
        return -1;
    }
    return 0;
}
