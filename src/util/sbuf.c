/*
 * sbuf.c - growable capped string builder (see sbuf.h).
 */
#include "util/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ts_sbuf_init(struct ts_sbuf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void ts_sbuf_release(struct ts_sbuf *b)
{
    free(b->data);
    ts_sbuf_init(b, b->max);
}

static int reserve(struct ts_sbuf *b, size_t extra)
{
    if (b->failed)
        return 0;
    if (extra > b->max || b->len > b->max - extra) {
        b->failed = TS_TOO_LARGE;
        return 0;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = TS_NOMEM;
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

void ts_sbuf_add(struct ts_sbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void ts_sbuf_puts(struct ts_sbuf *b, const char *s) { ts_sbuf_add(b, s, strlen(s)); }

void ts_sbuf_printf(struct ts_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ts_sbuf_xml(struct ts_sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': ts_sbuf_puts(b, "&lt;"); break;
        case '>': ts_sbuf_puts(b, "&gt;"); break;
        case '&': ts_sbuf_puts(b, "&amp;"); break;
        case '"': ts_sbuf_puts(b, "&quot;"); break;
        default: ts_sbuf_add(b, s, 1);
        }
    }
}

const char *ts_sbuf_str(const struct ts_sbuf *b) { return b->data ? b->data : ""; }

ts_status ts_sbuf_status(const struct ts_sbuf *b)
{
    return b->failed ? (ts_status)b->failed : TS_OK;
}
