/*
 * expo.c - Prometheus text exposition, one line at a time (see expo.h).
 *
 * Each complete line is copied into the parser's line buffer and parsed in
 * place: label values are unescaped into the same buffer, so a sample costs
 * no allocation. A line longer than METER_LINE_MAX is skipped to its end
 * and reported once.
 */
#include "meter/expo.h"

#include <ctype.h>
#include <stdint.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct meter_expo {
    meter_sample_fn on_sample;
    meter_error_fn on_error;
    void *ctx;
    char *buf;
    size_t len;
    int overlong; /* dropping the rest of a too long line */
    long line, samples, errors;
    int stopped;
};

struct meter_expo *meter_expo_new(meter_sample_fn on_sample, meter_error_fn on_error, void *ctx)
{
    struct meter_expo *p = calloc(1, sizeof(*p));
    if (p && !(p->buf = malloc(METER_LINE_MAX + 1))) {
        free(p);
        return NULL;
    }
    if (p) {
        p->on_sample = on_sample;
        p->on_error = on_error;
        p->ctx = ctx;
    }
    return p;
}

void meter_expo_free(struct meter_expo *p)
{
    if (p)
        free(p->buf);
    free(p);
}

static int fail(struct meter_expo *p, const char *start, const char *at, const char *msg)
{
    p->errors++;
    if (p->on_error)
        p->on_error(p->ctx, p->line, (int)(at - start) + 1, msg);
    return 0;
}

/* Character classes of names, by byte: FIRST may start a label name, NEXT
 * continue one, COLON is allowed in metric names only (table, not ctype:
 * the same in every locale, and the hot loop of the parser). */
enum { FIRST = 1, NEXT = 2, COLON = 4 };
static const unsigned char name_class[256] = {
    [':'] = COLON, ['0'] = NEXT, ['1'] = NEXT, ['2'] = NEXT, ['3'] = NEXT, ['4'] = NEXT,
    ['5'] = NEXT,  ['6'] = NEXT, ['7'] = NEXT, ['8'] = NEXT, ['9'] = NEXT, ['_'] = FIRST | NEXT,
#define L(c) [c] = FIRST | NEXT, [c - 'a' + 'A'] = FIRST | NEXT
    L('a'),        L('b'),       L('c'),       L('d'),       L('e'),       L('f'),
    L('g'),        L('h'),       L('i'),       L('j'),       L('k'),       L('l'),
    L('m'),        L('n'),       L('o'),       L('p'),       L('q'),       L('r'),
    L('s'),        L('t'),       L('u'),       L('v'),       L('w'),       L('x'),
    L('y'),        L('z'),
#undef L
};

/* An identifier at *s (metric names may hold ':'); *s moves past it. */
static char *ident(char **s, int colon)
{
    char *start = *s;
    unsigned extra = colon ? COLON : 0;
    if (!(name_class[(unsigned char)**s] & (FIRST | extra)))
        return NULL;
    while (name_class[(unsigned char)**s] & (NEXT | extra))
        (*s)++;
    return start;
}

static void skip_spaces(char **s)
{
    while (**s == ' ' || **s == '\t')
        (*s)++;
}

/* "value" with \\ \" \n escapes, unescaped in place; NULL on error. */
static char *quoted(char **s)
{
    if (**s != '"')
        return NULL;
    char *start = ++*s, *quote = strchr(start, '"');
    char *escape = quote ? memchr(start, '\\', (size_t)(quote - start)) : NULL;
    if (quote && !escape) { /* most values: no escape, nothing to move */
        *s = quote + 1;
        *quote = '\0';
        return start;
    }
    char *in = escape ? escape : start + strlen(start);
    char *out = in;
    for (; *in && *in != '"'; in++) {
        if (*in == '\\') {
            in++;
            if (*in == 'n')
                *out++ = '\n';
            else if (*in == '\\' || *in == '"')
                *out++ = *in;
            else
                return NULL;
        } else {
            *out++ = *in;
        }
    }
    if (*in != '"')
        return NULL;
    *s = in + 1;
    *out = '\0';
    return start;
}

static int labels(struct meter_expo *p, char *line, char **s, struct meter_sample *out)
{
    (*s)++; /* '{' */
    for (;;) {
        skip_spaces(s);
        if (**s == '}') {
            (*s)++;
            return 1;
        }
        if (out->nlabels == METER_LABELS_MAX)
            return fail(p, line, *s, "more than 32 labels");
        char *name = ident(s, 0), *end = *s;
        if (!name)
            return fail(p, line, *s, "expected a label name");
        skip_spaces(s);
        if (**s != '=')
            return fail(p, line, *s, "expected '=' after the label name");
        (*s)++;
        skip_spaces(s);
        char *at = *s, *value = quoted(s);
        if (!value)
            return fail(p, line, at, "expected a quoted label value (escapes: \\\\ \\\" \\n)");
        *end = '\0';
        out->labels[out->nlabels++] = (struct meter_label){name, value};
        skip_spaces(s);
        if (**s == ',')
            (*s)++;
        else if (**s != '}')
            return fail(p, line, *s, "expected ',' or '}' after a label");
    }
}

/* Plain decimals ("0.250000", "1024", "-3.5"), the exporter's usual
 * values, without strtod: at most 15 significant digits make an exact
 * integer, and one division by an exact power of ten rounds correctly, as
 * strtod would. Anything else (exponents, long mantissas) returns 0. */
static int plain_decimal(char **s, double *v)
{
    static const double pow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    char *c = *s;
    int neg = *c == '-', digits = 0, frac = -1;
    c += neg || *c == '+';
    uint64_t m = 0;
    for (;; c++) {
        if (*c >= '0' && *c <= '9') {
            m = m * 10 + (uint64_t)(*c - '0');
            digits++;
            frac += frac >= 0;
        } else if (*c == '.' && frac < 0) {
            frac = 0;
        } else {
            break;
        }
    }
    if (digits == 0 || digits > 15 || (*c && *c != ' ' && *c != '\t'))
        return 0;
    double x = (double)m / pow10[frac > 0 ? frac : 0];
    *v = neg ? -x : x;
    *s = c;
    return 1;
}

static int number(char **s, double *v)
{
    char *start = *s, *end;
    if (plain_decimal(s, v))
        return 1;
    if (strncasecmp(start, "nan", 3) == 0 && !isalnum((unsigned char)start[3])) {
        *v = NAN;
        *s += 3;
        return 1;
    }
    errno = 0;
    *v = strtod(start, &end);
    if (end == start || (*end && *end != ' ' && *end != '\t'))
        return 0;
    *s = end;
    return 1;
}

/* A decimal integer of at most 18 digits (milliseconds until year 33658),
 * optionally signed. */
static int timestamp(char **s, long long *ts)
{
    char *c = *s;
    int neg = *c == '-';
    c += neg || *c == '+';
    long long v = 0;
    char *digits = c;
    while (*c >= '0' && *c <= '9' && c - digits < 18)
        v = v * 10 + (*c++ - '0');
    if (c == digits || (*c >= '0' && *c <= '9'))
        return 0;
    *ts = neg ? -v : v;
    *s = c;
    return 1;
}

static int sample_value(struct meter_expo *p, char *line, char **s, struct meter_sample *out)
{
    if (**s != ' ' && **s != '\t')
        return fail(p, line, *s, **s ? "expected a space before the value" : "no value");
    skip_spaces(s);
    char *at = *s;
    if (!**s)
        return fail(p, line, at, "no value");
    if (!number(s, &out->value))
        return fail(p, line, at, "the value is not a number");
    skip_spaces(s);
    if (!**s)
        return 1;
    at = *s;
    long long ts;
    if (!timestamp(s, &ts))
        return fail(p, line, at, "the timestamp is not an integer");
    skip_spaces(s);
    if (**s)
        return fail(p, line, *s, "unexpected text after the timestamp");
    out->has_timestamp = 1;
    out->timestamp_ms = ts;
    return 1;
}

static void parse_line(struct meter_expo *p, char *line)
{
    char *s = line;
    skip_spaces(&s);
    if (!*s || *s == '#')
        return;
    struct meter_sample sample;
    sample.nlabels = 0;
    sample.has_timestamp = 0;
    sample.line = p->line;
    char *name = ident(&s, 1);
    if (!name) {
        fail(p, line, s, "expected a metric name");
        return;
    }
    char *name_end = s;
    if (*s == '{' && !labels(p, line, &s, &sample))
        return;
    if (!sample_value(p, line, &s, &sample))
        return;
    *name_end = '\0';
    sample.metric = name;
    p->samples++;
    if (p->on_sample && p->on_sample(p->ctx, &sample))
        p->stopped = 1;
}

/* The offset of the first byte of s[0..n) that is not well-formed UTF-8
 * (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF), or n. */
static size_t utf8_bad(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                     : c >= 0xE0 && c <= 0xEF ? 3
                     : c >= 0xF0 && c <= 0xF4 ? 4
                                              : 0;
        if (!len || i + len > n)
            return i;
        unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
        unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += len;
    }
    return n;
}

/* Whether every byte of s[0..n) is 0x01-0x7F (no NUL, plain ASCII: valid
 * UTF-8), eight bytes at a time: most lines, checked before the byte-wise
 * checks that find the place of a fault. */
static int plain_ascii(const char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t any = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        any |= (w | ((w - ones) & ~w)) & highs; /* a high bit, or a zero byte */
    }
    for (; i < n; i++)
        any |= (unsigned char)s[i] - 1u >= 0x7f;
    return !any;
}

static void end_line(struct meter_expo *p)
{
    p->line++;
    size_t bad;
    int plain = !p->overlong && plain_ascii(p->buf, p->len); /* most lines: no check below */
    if (p->overlong) {
        fail(p, p->buf, p->buf, "line longer than 65536 bytes");
    } else if (!plain && memchr(p->buf, '\0', p->len)) {
        p->buf[p->len] = '\0';
        fail(p, p->buf, p->buf + strlen(p->buf), "NUL byte in the line");
    } else if (!plain && (bad = utf8_bad((const unsigned char *)p->buf, p->len)) < p->len) {
        fail(p, p->buf, p->buf + bad, "not UTF-8 (the exposition format is UTF-8)");
    } else {
        if (p->len && p->buf[p->len - 1] == '\r')
            p->len--; /* CRLF line ends */
        p->buf[p->len] = '\0';
        parse_line(p, p->buf);
    }
    p->len = 0;
    p->overlong = 0;
}

ts_status meter_expo_feed(struct meter_expo *p, const char *data, size_t len)
{
    for (size_t i = 0; i < len && !p->stopped;) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (data + i)) : len - i;
        if (!p->overlong && n <= METER_LINE_MAX - p->len) {
            memcpy(p->buf + p->len, data + i, n);
            p->len += n;
        } else {
            p->overlong = 1;
        }
        i += n;
        if (nl) {
            end_line(p);
            i++;
        }
    }
    return p->stopped ? TS_INTERNAL : TS_OK;
}

/* A last line without its newline was cut short (a body ends with one): a
 * sample in it may have lost digits of its value or timestamp. */
static int cut_short(struct meter_expo *p)
{
    size_t i = 0;
    while (i < p->len && (p->buf[i] == ' ' || p->buf[i] == '\t' || p->buf[i] == '\r'))
        i++;
    if (p->overlong || i == p->len || p->buf[i] == '#')
        return 0;
    p->line++;
    p->buf[p->len] = '\0';
    fail(p, p->buf, p->buf + p->len, "the line has no newline: the body was cut short");
    return 1;
}

ts_status meter_expo_finish(struct meter_expo *p)
{
    if ((p->len || p->overlong) && !p->stopped && !cut_short(p))
        end_line(p);
    p->len = 0;
    return p->stopped ? TS_INTERNAL : TS_OK;
}

void meter_expo_counts(const struct meter_expo *p, long *lines, long *samples, long *errors)
{
    *lines = p->line;
    *samples = p->samples;
    *errors = p->errors;
}

/* The first byte first: most labels differ there, and this runs several
 * times for every line. */
const char *meter_label(const struct meter_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (s->labels[i].name[0] == name[0] && strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}
