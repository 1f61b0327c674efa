/*
 * text.c - escaping untrusted text for each kind of output (see text.h).
 */
#include "util/text.h"

#include <stdio.h>
#include <string.h>

size_t ts_utf8_seq(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned lo = 0x80, hi = 0xbf;
    size_t n;
    if (s[0] < 0x80)
        return s[0] ? 1 : 0;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4;
    else
        return 0; /* a continuation byte, an overlong lead (c0, c1), or f5..ff */
    if (s[0] == 0xe0)
        lo = 0xa0; /* overlong */
    else if (s[0] == 0xed)
        hi = 0x9f; /* surrogates */
    else if (s[0] == 0xf0)
        lo = 0x90; /* overlong */
    else if (s[0] == 0xf4)
        hi = 0x8f; /* beyond U+10FFFF */
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

int ts_utf8_valid(const char *s)
{
    size_t n;
    while (*s && (n = ts_utf8_seq(s)) > 0)
        s += n;
    return *s == '\0';
}

static void put_hex(struct ts_sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char t[8];
        snprintf(t, sizeof t, "\\x%02x", (unsigned char)s[i]);
        ts_sbuf_add(b, t, 4);
    }
}

/* Append the character at s (escaped when it must be) and return its
 * length; controls says whether control characters are escaped. */
static size_t step(struct ts_sbuf *b, const char *s, int controls)
{
    unsigned char c = (unsigned char)s[0];
    size_t n = ts_utf8_seq(s);
    int ctl = c < 0x20 || c == 0x7f || (c == 0xc2 && (unsigned char)s[1] < 0xa0);
    if (n == 0)
        put_hex(b, s, 1);
    else if (controls && ctl)
        put_hex(b, s, n);
    else
        ts_sbuf_add(b, s, n);
    return n ? n : 1;
}

void ts_text_plain(struct ts_sbuf *b, const char *s)
{
    while (*s)
        s += step(b, s, 1);
}

void ts_text_pad(struct ts_sbuf *b, const char *s, size_t width)
{
    size_t start = b->len;
    ts_text_plain(b, s);
    while (!b->failed && b->len - start < width)
        ts_sbuf_add(b, " ", 1);
}

void ts_text_html(struct ts_sbuf *b, const char *s)
{
    static const char *const ref[] = {
        ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;"};
    while (*s) {
        unsigned char c = (unsigned char)*s;
        if (c < sizeof ref / sizeof ref[0] && ref[c]) {
            ts_sbuf_puts(b, ref[c]);
            s++;
        } else {
            s += step(b, s, 1);
        }
    }
}

void ts_text_csv(struct ts_sbuf *b, const char *s)
{
    int formula = *s && strchr("=+-@\t\r", *s);
    if (!formula && !s[strcspn(s, ",\"\r\n")]) {
        while (*s)
            s += step(b, s, 1);
        return;
    }
    ts_sbuf_puts(b, formula ? "\"'" : "\"");
    while (*s) {
        if (*s == '"')
            ts_sbuf_add(b, "\"", 1);
        s += step(b, s, 1);
    }
    ts_sbuf_add(b, "\"", 1);
}

json_t *ts_text_json(const char *s)
{
    if (ts_utf8_valid(s))
        return json_string(s);
    struct ts_sbuf b;
    ts_sbuf_init(&b, strlen(s) * 4 + 1);
    while (*s)
        s += step(&b, s, 0);
    json_t *j = ts_sbuf_status(&b) == TS_OK ? json_string(ts_sbuf_str(&b)) : NULL;
    ts_sbuf_release(&b);
    return j;
}
