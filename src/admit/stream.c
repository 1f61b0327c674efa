/*
 * stream.c - the fast decoder: one pass over the AdmissionReview that
 * checks it as jansson would but builds jansson values only for what the
 * verdict reads (the envelope's apiVersion and kind; request.uid, kind,
 * operation, subResource, namespace and object), leaving out the rest
 * (userInfo, oldObject, options, the object's status, managedFields and
 * ownerReferences). A member left out stays in its object as null, so
 * duplicate keys are still found and no check can tell it was there.
 *
 * It takes only the plain road: a body it cannot decode exactly as jansson
 * would (any malformed JSON, \u0000, a number near the limits, a key
 * escaped where JSON does not need it (\u0061 for a) or more than
 * STREAM_KEYS_MAX keys in an object left out, a body past
 * ADMIT_BODY_MAX, AD_ENTRIES_MAX or ADMIT_DEPTH_MAX) makes it give up, and
 * the caller decodes with ad_load, whose 400 names the place. So both roads
 * give one verdict (tests/admit/test_stream.c holds it to that on the
 * admission table and the fuzz corpus). Bounded: one pass, recursion at
 * most ADMIT_DEPTH_MAX deep, each left-out object's duplicate check at most
 * STREAM_KEYS_MAX squared comparisons, nothing allocated for what is left
 * out.
 *
 * Why it stays beside the full decoder: measured (bench/RESULTS.md, issue
 * 13; admit_bench, best of 5 x 5,000 reviews of a GPU pod) 26.9 us a review
 * against 85.5 us with jansson's whole tree; behind the server, 47-51 us of
 * CPU a request against 113-124 us, and p99 4.5 ms against 13.2 ms at
 * about 1,000 reviews/s. The review path is where the API server waits.
 */
#include "admit/internal.h"

#include <stdlib.h>
#include <string.h>

/* Keys of one left-out object compared for duplicates (no tree to ask):
 * more makes the fast decoder give up. Real objects have a few dozen. */
#define STREAM_KEYS_MAX 64
/* Characters of a number the fast decoder reads: longer ones (and exponents
 * of three digits) go to jansson, which knows where they overflow. */
#define STREAM_NUM_MAX 40

enum scope { SC_SKIP, SC_ROOT, SC_REQ, SC_OBJ, SC_META, SC_ALL };

struct st {
    const char *p, *end;
    size_t entries;
    int depth, fail;
    char *buf; /* unescaped strings */
    size_t cap;
};

struct rule {
    enum scope in;
    const char *key;
    enum scope to; /* SC_SKIP: left out */
};

/* Under the root and request only what is listed is kept; under the object
 * and its metadata all but what is listed. */
static const struct rule rules[] = {
    {SC_ROOT, "apiVersion", SC_ALL},
    {SC_ROOT, "kind", SC_ALL},
    {SC_ROOT, "request", SC_REQ},
    {SC_REQ, "uid", SC_ALL},
    {SC_REQ, "kind", SC_ALL},
    {SC_REQ, "operation", SC_ALL},
    {SC_REQ, "subResource", SC_ALL},
    {SC_REQ, "namespace", SC_ALL},
    {SC_REQ, "object", SC_OBJ},
    {SC_OBJ, "metadata", SC_META},
    {SC_OBJ, "status", SC_SKIP},
    {SC_META, "managedFields", SC_SKIP},
    {SC_META, "ownerReferences", SC_SKIP},
};

static enum scope child(enum scope in, const char *key, size_t n)
{
    if (in == SC_SKIP || in == SC_ALL)
        return in;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if (rules[i].in == in && strlen(rules[i].key) == n && memcmp(rules[i].key, key, n) == 0)
            return rules[i].to;
    return in == SC_ROOT || in == SC_REQ ? SC_SKIP : SC_ALL;
}

static int give_up(struct st *s)
{
    s->fail = 1;
    return -1;
}

static void ws(struct st *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static int entry(struct st *s) { return ++s->entries > AD_ENTRIES_MAX ? give_up(s) : 0; }

/* ---- strings ---- */

/* Length of the valid UTF-8 character at p (a byte >= 0x80), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], n = c >= 0xC2 && c <= 0xDF   ? 2
                           : c >= 0xE0 && c <= 0xEF ? 3
                           : c >= 0xF0 && c <= 0xF4 ? 4
                                                    : 0;
    if (!n || (size_t)(end - p) < n)
        return 0;
    for (unsigned i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) || (c == 0xF0 && p[1] < 0x90) ||
        (c == 0xF4 && p[1] > 0x8F))
        return 0; /* overlong, surrogate, past U+10FFFF */
    return n;
}

static long hex4(const char *p, const char *end)
{
    long v = 0;
    if (end - p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        int d = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The code point of the \u escape at s->p (after "\u"), surrogate pairs
 * joined; -1 for \u0000 and lone surrogates (jansson refuses both). */
static long escape_u(struct st *s)
{
    long u = hex4(s->p, s->end);
    s->p += 4;
    if (u <= 0 || (u >= 0xDC00 && u <= 0xDFFF))
        return -1;
    if (u < 0xD800 || u > 0xDBFF)
        return u;
    if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u')
        return -1;
    long lo = hex4(s->p + 2, s->end);
    s->p += 6;
    if (lo < 0xDC00 || lo > 0xDFFF)
        return -1;
    return 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
}

static size_t put_utf8(char *o, long u)
{
    if (u < 0x80) {
        o[0] = (char)u;
        return 1;
    }
    if (u < 0x800) {
        o[0] = (char)(0xC0 | u >> 6);
        o[1] = (char)(0x80 | (u & 0x3F));
        return 2;
    }
    if (u < 0x10000) {
        o[0] = (char)(0xE0 | u >> 12);
        o[1] = (char)(0x80 | ((u >> 6) & 0x3F));
        o[2] = (char)(0x80 | (u & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | u >> 18);
    o[1] = (char)(0x80 | ((u >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((u >> 6) & 0x3F));
    o[3] = (char)(0x80 | (u & 0x3F));
    return 4;
}

static const char *const ESCAPES = "\"\\/bfnrt";
static const char ESCAPED[] = "\"\\/\b\f\n\r\t";

/* Decode the escapes of raw[0..n) (checked by scan_string) into s->buf. */
static int unescape(struct st *s, const char *raw, size_t n, size_t *out)
{
    if (s->cap < n + 1) {
        char *b = realloc(s->buf, n + 1);
        if (!b)
            return give_up(s);
        s->buf = b;
        s->cap = n + 1;
    }
    struct st sub = {.p = raw, .end = raw + n};
    size_t o = 0;
    while (sub.p < sub.end) {
        if (*sub.p != '\\') {
            s->buf[o++] = *sub.p++;
            continue;
        }
        char e = sub.p[1];
        sub.p += 2;
        if (e == 'u')
            o += put_utf8(s->buf + o, escape_u(&sub));
        else
            s->buf[o++] = ESCAPED[strchr(ESCAPES, e) - ESCAPES];
    }
    *out = o;
    return 0;
}

/* Check the string at s->p (at its quote): *raw, *n its bytes between the
 * quotes, *esc whether it holds escapes. */
static int scan_string(struct st *s, const char **raw, size_t *n, int *esc)
{
    const unsigned char *p = (const unsigned char *)s->p + 1, *end = (const unsigned char *)s->end;
    *esc = 0;
    *raw = (const char *)p;
    while (p < end && *p != '"') {
        if (*p >= 0x20 && *p < 0x80 && *p != '\\') {
            p++;
        } else if (*p == '\\') {
            if (end - p < 2 || !strchr("\"\\/bfnrtu", p[1]) || !p[1])
                return give_up(s);
            *esc = 1;
            struct st sub = {.p = (const char *)p + 2, .end = s->end};
            if (p[1] == 'u' && escape_u(&sub) < 0)
                return give_up(s);
            p = p[1] == 'u' ? (const unsigned char *)sub.p : p + 2;
        } else {
            size_t k = *p >= 0x80 ? utf8_len(p, end) : 0;
            if (!k)
                return give_up(s); /* control character or not UTF-8 */
            p += k;
        }
    }
    if (p >= end)
        return give_up(s);
    *n = (size_t)((const char *)p - *raw);
    s->p = (const char *)p + 1;
    return 0;
}

/* The string at s->p as text: *t points into the body or s->buf. */
static int string_text(struct st *s, const char **t, size_t *n, int *esc)
{
    const char *raw;
    if (scan_string(s, &raw, n, esc) < 0)
        return -1;
    *t = raw;
    if (*esc && unescape(s, raw, *n, n) < 0)
        return -1;
    if (*esc)
        *t = s->buf;
    return 0;
}

/* ---- numbers and words ---- */

static size_t digits(const char *p, const char *end)
{
    size_t n = 0;
    while (p + n < end && p[n] >= '0' && p[n] <= '9')
        n++;
    return n;
}

/* Whether the d digits at p (no sign) fit an int64, negative or not:
 * jansson refuses the others. */
static int fits_int64(const char *p, size_t d, int neg)
{
    if (d != 19)
        return d < 19;
    return memcmp(p, neg ? "9223372036854775808" : "9223372036854775807", 19) <= 0;
}

static int number(struct st *s, json_t **out)
{
    const char *start = s->p, *p = s->p;
    int neg = p < s->end && *p == '-';
    p += neg;
    const char *int_part = p;
    size_t d = digits(p, s->end);
    if (d == 0 || (d > 1 && *p == '0'))
        return give_up(s);
    p += d;
    int real = 0;
    if (p < s->end && *p == '.') {
        real = 1;
        size_t f = digits(p + 1, s->end);
        if (f == 0)
            return give_up(s);
        p += 1 + f;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        real = 1;
        p += 1;
        p += p < s->end && (*p == '+' || *p == '-');
        size_t e = digits(p, s->end);
        if (e == 0 || e > 2)
            return give_up(s);
        p += e;
    }
    size_t len = (size_t)(p - start);
    if (len > STREAM_NUM_MAX || (!real && !fits_int64(int_part, d, neg)))
        return give_up(s);
    s->p = p;
    if (!out)
        return 0;
    char text[STREAM_NUM_MAX + 1];
    memcpy(text, start, len);
    text[len] = '\0';
    *out = real ? json_real(strtod(text, NULL)) : json_integer(strtoll(text, NULL, 10));
    return *out ? 0 : give_up(s);
}

static int word(struct st *s, json_t **out)
{
    static const struct {
        const char *w;
        json_type t;
    } words[] = {{"true", JSON_TRUE}, {"false", JSON_FALSE}, {"null", JSON_NULL}};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(words[i].w);
        if ((size_t)(s->end - s->p) >= n && memcmp(s->p, words[i].w, n) == 0) {
            s->p += n;
            if (out)
                *out = words[i].t == JSON_TRUE    ? json_true()
                       : words[i].t == JSON_FALSE ? json_false()
                                                  : json_null();
            return 0;
        }
    }
    return give_up(s);
}

/* ---- containers ---- */

static int value(struct st *s, enum scope sc, json_t **out);

/* Whether raw (checked) has one spelling for its text: escapes only where
 * JSON needs them (\" \\ \b \f \n \r \t), so equal texts are equal bytes.
 * managedFields keys ("k:{\"name\":\"x\"}") are so. */
static int canonical(const char *raw, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (raw[i] == '\\' && !strchr("\"\\bfnrt", raw[++i]))
            return 0;
    return 1;
}

/* A left-out object's key at s->p: canonical, not seen before in it. */
static int skipped_key(struct st *s, const char **keys, size_t *lens, size_t *nkeys)
{
    const char *raw;
    size_t n;
    int esc;
    if (scan_string(s, &raw, &n, &esc) < 0)
        return -1;
    if ((esc && !canonical(raw, n)) || *nkeys == STREAM_KEYS_MAX)
        return give_up(s);
    for (size_t i = 0; i < *nkeys; i++)
        if (lens[i] == n && memcmp(keys[i], raw, n) == 0)
            return give_up(s);
    keys[*nkeys] = raw;
    lens[(*nkeys)++] = n;
    return 0;
}

/* One member of a kept object: its key checked against the tree. */
static int kept_member(struct st *s, enum scope sc, json_t *obj)
{
    const char *t;
    size_t n;
    int esc;
    if (string_text(s, &t, &n, &esc) < 0)
        return -1;
    if (json_object_getn(obj, t, n))
        return give_up(s);
    enum scope to = child(sc, t, n);
    json_t *v = json_null();
    if (json_object_setn_new_nocheck(obj, t, n, v) < 0) /* placeholder: keeps the key */
        return give_up(s);
    ws(s);
    if (s->p >= s->end || *s->p++ != ':')
        return give_up(s);
    if (to == SC_SKIP)
        return value(s, SC_SKIP, NULL);
    const char *key = esc ? NULL : t;
    char *copy = esc ? strndup(t, n) : NULL; /* s->buf is reused by the value */
    if (esc && !copy)
        return give_up(s);
    v = NULL;
    int r = value(s, to, &v);
    if (r < 0)
        json_decref(v);
    else if (json_object_setn_new_nocheck(obj, key ? key : copy, n, v) < 0)
        r = give_up(s);
    free(copy);
    return r;
}

static int object(struct st *s, enum scope sc, json_t **out)
{
    const char *keys[STREAM_KEYS_MAX];
    size_t lens[STREAM_KEYS_MAX], nkeys = 0;
    json_t *obj = out ? json_object() : NULL;
    if (out && !(*out = obj))
        return give_up(s);
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == '}')
        return (void)s->p++, 0;
    for (;;) {
        ws(s);
        if (s->p >= s->end || *s->p != '"')
            return give_up(s);
        if (obj ? kept_member(s, sc, obj) < 0
                : skipped_key(s, keys, lens, &nkeys) < 0 || (ws(s), s->p >= s->end) ||
                      *s->p++ != ':' || value(s, SC_SKIP, NULL) < 0)
            return give_up(s);
        ws(s);
        if (s->p < s->end && *s->p == '}')
            return (void)s->p++, 0;
        if (s->p >= s->end || *s->p++ != ',' || entry(s) < 0)
            return give_up(s);
    }
}

static int array(struct st *s, enum scope sc, json_t **out)
{
    json_t *arr = out ? json_array() : NULL;
    if (out && !(*out = arr))
        return give_up(s);
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == ']')
        return (void)s->p++, 0;
    for (;;) {
        json_t *item = NULL;
        if (value(s, sc == SC_SKIP ? SC_SKIP : SC_ALL, arr ? &item : NULL) < 0) {
            json_decref(item);
            return -1;
        }
        if (arr && json_array_append_new(arr, item) < 0)
            return give_up(s);
        ws(s);
        if (s->p < s->end && *s->p == ']')
            return (void)s->p++, 0;
        if (s->p >= s->end || *s->p++ != ',' || entry(s) < 0)
            return give_up(s);
    }
}

static int container(struct st *s, enum scope sc, json_t **out)
{
    if (++s->depth > ADMIT_DEPTH_MAX || entry(s) < 0)
        return give_up(s);
    int r = *s->p == '{' ? object(s, sc, out) : array(s, sc, out);
    s->depth--;
    return r;
}

/* The value at s->p; out NULL: check it only (left out). */
static int value(struct st *s, enum scope sc, json_t **out)
{
    ws(s);
    if (s->p >= s->end)
        return give_up(s);
    if (*s->p == '{' || *s->p == '[')
        return container(s, sc, sc == SC_SKIP ? NULL : out);
    if (*s->p == '"') {
        const char *t;
        size_t n;
        int esc;
        if (sc == SC_SKIP)
            return scan_string(s, &t, &n, &esc);
        if (string_text(s, &t, &n, &esc) < 0)
            return -1;
        *out = json_stringn_nocheck(t, n);
        return *out ? 0 : give_up(s);
    }
    if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
        return number(s, sc == SC_SKIP ? NULL : out);
    return word(s, sc == SC_SKIP ? NULL : out);
}

int ad_stream_load(const char *body, size_t len, json_t **root)
{
    *root = NULL;
    if (!body || len > ADMIT_BODY_MAX)
        return -1;
    struct st s = {.p = body, .end = body + len};
    ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return -1;
    int r = container(&s, SC_ROOT, root);
    ws(&s);
    free(s.buf);
    if (r == 0 && !s.fail && s.p == s.end)
        return 0;
    json_decref(*root);
    *root = NULL;
    return -1;
}
