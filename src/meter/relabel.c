/*
 * relabel.c - stored expositions re-served with a tenant label (see
 * relabel.h).
 *
 * A body is read twice: once for its HELP and TYPE lines (the parser skips
 * comments), then through the parser for its samples. Families live in a
 * hash table keyed by name and in a list in the order first seen; each holds
 * its HELP, TYPE and the text of its relabelled samples, written out family
 * by family at the end.
 */
#include "meter/relabel.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/arena.h"

#define RESERVED_PREFIX "tessera_"

struct family {
    const char *name, *help, *type; /* help, type: NULL when absent */
    struct ts_sbuf lines;
    struct family *next; /* in the order first seen */
};

struct meter_relabel {
    const struct meter_ctx *ctx;
    size_t max, used;      /* bytes of text held, its cap */
    struct ts_arena arena; /* families and their names */
    struct family **table; /* open addressing, cap a power of two */
    size_t cap, n;
    struct family *first, *last;
    struct meter_relabel_counts counts;
    ts_status status; /* sticky failure of the body being added */
};

struct meter_relabel *meter_relabel_new(const struct meter_ctx *ctx, size_t max_bytes)
{
    struct meter_relabel *r = calloc(1, sizeof(*r));
    if (r && !(r->table = calloc(64, sizeof(*r->table)))) {
        free(r);
        return NULL;
    }
    if (r) {
        r->ctx = ctx;
        r->max = max_bytes;
        r->cap = 64;
        ts_arena_init(&r->arena);
    }
    return r;
}

void meter_relabel_free(struct meter_relabel *r)
{
    if (!r)
        return;
    for (struct family *f = r->first; f; f = f->next)
        ts_sbuf_release(&f->lines);
    free(r->table);
    ts_arena_free(&r->arena);
    free(r);
}

/* ---- the family table ---- */

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static struct family **slot(struct family **table, size_t cap, const char *name, size_t n)
{
    size_t i = (size_t)hash(name, n) & (cap - 1);
    while (table[i] && (strncmp(table[i]->name, name, n) != 0 || table[i]->name[n] != '\0'))
        i = (i + 1) & (cap - 1);
    return &table[i];
}

static int grow(struct meter_relabel *r)
{
    size_t cap = r->cap * 2;
    struct family **t = calloc(cap, sizeof(*t));
    if (!t)
        return 0;
    for (struct family *f = r->first; f; f = f->next)
        *slot(t, cap, f->name, strlen(f->name)) = f;
    free(r->table);
    r->table = t;
    r->cap = cap;
    return 1;
}

static struct family *family_find(const struct meter_relabel *r, const char *name, size_t n)
{
    return *slot(r->table, r->cap, name, n);
}

/* The family of that name, made when new; NULL when out of memory. */
static struct family *family_get(struct meter_relabel *r, const char *name, size_t n)
{
    struct family *f = family_find(r, name, n);
    if (f)
        return f;
    if (2 * (r->n + 1) > r->cap && !grow(r))
        return NULL;
    f = ts_arena_alloc(&r->arena, sizeof(*f));
    if (!f || !(f->name = ts_arena_strndup(&r->arena, name, n)))
        return NULL;
    ts_sbuf_init(&f->lines, r->max);
    *slot(r->table, r->cap, name, n) = f;
    r->n++;
    if (r->last)
        r->last->next = f;
    else
        r->first = f;
    r->last = f;
    return f;
}

static int has_type(const struct family *f, const char *a, const char *b)
{
    return f && f->type && (strcmp(f->type, a) == 0 || strcmp(f->type, b) == 0);
}

/* x_bucket, x_sum and x_count belong to x when x is a histogram or summary. */
static struct family *family_of(struct meter_relabel *r, const char *metric)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    size_t n = strlen(metric);
    struct family *f = family_find(r, metric, n);
    if (f && f->type)
        return f;
    for (size_t i = 0; i < 3; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && strcmp(metric + n - k, suffixes[i]) == 0) {
            struct family *base = family_find(r, metric, n - k);
            if (has_type(base, "histogram", "summary"))
                return base;
        }
    }
    return f ? f : family_get(r, metric, n);
}

/* ---- writing the text format ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp, min;
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        len = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    return cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : len;
}

/* s (n bytes) with invalid UTF-8 replaced; quoted: label-value escapes. */
static void put_text(struct ts_sbuf *o, const char *s, size_t n, int quoted)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        if (k == 0) {
            ts_sbuf_add(o, "\xEF\xBF\xBD", 3);
            i++;
            continue;
        }
        if (quoted && (u[i] == '\\' || u[i] == '"'))
            ts_sbuf_add(o, "\\", 1);
        if (quoted && u[i] == '\n')
            ts_sbuf_add(o, "\\n", 2);
        else
            ts_sbuf_add(o, s + i, k);
        i += k;
    }
}

void meter_relabel_put_label(struct ts_sbuf *out, const char *value)
{
    ts_sbuf_add(out, "\"", 1);
    put_text(out, value, strlen(value), 1);
    ts_sbuf_add(out, "\"", 1);
}

void meter_relabel_put_value(struct ts_sbuf *out, double v)
{
    char buf[40];
    if (isnan(v)) {
        ts_sbuf_puts(out, "NaN");
        return;
    }
    if (isinf(v)) {
        ts_sbuf_puts(out, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    snprintf(buf, sizeof(buf), "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof(buf), "%.17g", v);
    ts_sbuf_puts(out, buf);
}

/* The name a sample's own `tenant` label is renamed to. */
static void exported_name(const struct meter_sample *x, char *buf, size_t size)
{
    char tmp[512];
    snprintf(buf, size, "exported_tenant");
    while (meter_label(x, buf) && strlen(buf) + 10 < size) {
        snprintf(tmp, sizeof(tmp), "exported_%s", buf);
        snprintf(buf, size, "%s", tmp);
    }
}

static int repeated(const struct meter_sample *x, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcmp(x->labels[j].name, x->labels[i].name) == 0)
            return 1;
    return 0;
}

static void put_sample(struct ts_sbuf *o, const struct meter_sample *x, const char *tenant)
{
    char exported[512];
    exported_name(x, exported, sizeof(exported));
    ts_sbuf_puts(o, x->metric);
    ts_sbuf_add(o, "{", 1);
    for (size_t i = 0; i < x->nlabels; i++) {
        if (repeated(x, i))
            continue;
        const char *name = x->labels[i].name;
        ts_sbuf_puts(o, strcmp(name, "tenant") == 0 ? exported : name);
        ts_sbuf_add(o, "=", 1);
        meter_relabel_put_label(o, x->labels[i].value);
        ts_sbuf_add(o, ",", 1);
    }
    ts_sbuf_puts(o, "tenant=");
    meter_relabel_put_label(o, tenant);
    ts_sbuf_add(o, "} ", 2);
    meter_relabel_put_value(o, x->value);
    if (x->has_timestamp)
        ts_sbuf_printf(o, " %lld", (long long)x->timestamp_ms);
    ts_sbuf_add(o, "\n", 1);
}

/* ---- reading a body ---- */

static int reserved(const char *name, size_t n)
{
    size_t k = sizeof(RESERVED_PREFIX) - 1;
    return n >= k && strncmp(name, RESERVED_PREFIX, k) == 0;
}

static int on_sample(void *arg, const struct meter_sample *x)
{
    struct meter_relabel *r = arg;
    if (reserved(x->metric, strlen(x->metric))) {
        r->counts.skipped++;
        return 0;
    }
    struct family *f = family_of(r, x->metric);
    if (!f) {
        r->status = TS_NOMEM;
        return 1;
    }
    const char *tenant = meter_tenant_of_sample(r->ctx, x);
    size_t before = f->lines.len;
    put_sample(&f->lines, x, tenant ? tenant : "unattributed");
    r->used += f->lines.len - before;
    r->status = ts_sbuf_status(&f->lines);
    if (r->status == TS_OK && r->used > r->max)
        r->status = TS_TOO_LARGE;
    r->counts.samples += r->status == TS_OK;
    return r->status != TS_OK;
}

static int blank(char c) { return c == ' ' || c == '\t'; }

static int name_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

static int known_type(const char *t, size_t n)
{
    static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
    for (size_t i = 0; i < 5; i++)
        if (strlen(types[i]) == n && memcmp(types[i], t, n) == 0)
            return 1;
    return 0;
}

/* Keep what "# HELP name text" or "# TYPE name type" says, first one wins. */
static void meta_line(struct meter_relabel *r, const char *s, size_t n)
{
    size_t i = 1, start;
    if (n < 7 || s[0] != '#')
        return;
    while (i < n && blank(s[i]))
        i++;
    int help = n - i > 4 && memcmp(s + i, "HELP", 4) == 0;
    if ((!help && (n - i <= 4 || memcmp(s + i, "TYPE", 4) != 0)) || !blank(s[i + 4]))
        return;
    for (i += 4; i < n && blank(s[i]);)
        i++;
    for (start = i; i < n && name_char(s[i], i == start);)
        i++;
    const char *name = s + start, *text;
    size_t len = i - start;
    if (!len || (i < n && !blank(s[i])) || reserved(name, len))
        return;
    while (i < n && blank(s[i]))
        i++;
    for (text = s + i; n > i && blank(s[n - 1]);)
        n--;
    if (n == i || (!help && !known_type(text, n - i)))
        return;
    struct family *f = family_get(r, name, len);
    const char **field = f ? (help ? &f->help : &f->type) : NULL;
    if (!f)
        r->status = TS_NOMEM;
    else if (!*field && !(*field = ts_arena_strndup(&r->arena, text, n - i)))
        r->status = TS_NOMEM;
}

static void scan_meta(struct meter_relabel *r, const char *text, size_t len)
{
    for (size_t i = 0; i < len && r->status == TS_OK;) {
        const char *line = text + i, *nl = memchr(line, '\n', len - i);
        size_t n = nl ? (size_t)(nl - line) : len - i;
        i += n + (nl != NULL);
        if (n && line[n - 1] == '\r')
            n--;
        if (n <= METER_LINE_MAX && !memchr(line, '\0', n))
            meta_line(r, line, n);
    }
}

ts_status meter_relabel_add(struct meter_relabel *r, const char *text, size_t len)
{
    r->status = TS_OK;
    scan_meta(r, text, len);
    if (r->status != TS_OK)
        return r->status;
    struct meter_expo *p = meter_expo_new(on_sample, NULL, r);
    if (!p)
        return TS_NOMEM;
    meter_expo_feed(p, text, len);
    meter_expo_finish(p);
    long lines, samples, errors;
    meter_expo_counts(p, &lines, &samples, &errors);
    meter_expo_free(p);
    r->counts.rejected += errors;
    return r->status;
}

ts_status meter_relabel_write(const struct meter_relabel *r, struct ts_sbuf *out)
{
    for (const struct family *f = r->first; f; f = f->next) {
        if (f->help) {
            ts_sbuf_printf(out, "# HELP %s ", f->name);
            put_text(out, f->help, strlen(f->help), 0);
            ts_sbuf_add(out, "\n", 1);
        }
        if (f->type)
            ts_sbuf_printf(out, "# TYPE %s %s\n", f->name, f->type);
        ts_sbuf_add(out, ts_sbuf_str(&f->lines), f->lines.len);
    }
    return ts_sbuf_status(out);
}

void meter_relabel_counts(const struct meter_relabel *r, struct meter_relabel_counts *c)
{
    *c = r->counts;
}
