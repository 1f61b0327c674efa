/*
 * import_tok.c - the importer's lexer (see import_int.h): a line split
 * into tokens on blanks and '|', so the narrow and the wider -lgip layouts
 * read the same, and the strict number readers (no sign, no spaces, no
 * overflow) its parsers share.
 */
#include <stdio.h>
#include <string.h>
#include "catalog/import_int.h"

static int is_blank(char c) { return c == ' ' || c == '\t'; }

void cat__tokenize(struct line *l)
{
    char *out = l->store;
    l->n = 0;
    l->overflow = 0;
    for (int i = 0; i < l->len;) {
        if (is_blank(l->raw[i])) {
            i++;
            continue;
        }
        if (l->n == IMP_TOKENS_MAX) {
            l->overflow = 1;
            return;
        }
        l->t[l->n++] = (struct tok){out, i + 1};
        if (l->raw[i] == '|')
            *out++ = l->raw[i++];
        else
            while (i < l->len && !is_blank(l->raw[i]) && l->raw[i] != '|')
                *out++ = l->raw[i++];
        *out++ = '\0';
    }
}

const char *cat__tok_s(const struct line *l, int i) { return i < l->n ? l->t[i].s : ""; }

int cat__tok_col(const struct line *l, int i) { return i < l->n ? l->t[i].col : l->len + 1; }

int cat__tok_is(const struct line *l, int i, const char *s)
{
    return i < l->n && strcmp(l->t[i].s, s) == 0;
}

int cat__tok_words(const struct line *l, int i, const char *phrase)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", phrase);
    for (char *w = buf, *end; *w; w = end) {
        end = strchr(w, ' ');
        if (end)
            *end++ = '\0';
        else
            end = w + strlen(w);
        if (!cat__tok_is(l, i++, w))
            return 0;
    }
    return 1;
}

int cat__parse_uint(const char *s, long max, long *out, const char **end)
{
    long v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p++ - '0');
        if (v > max)
            return 0;
    }
    if (p == s || (!end && *p))
        return 0;
    if (end)
        *end = p;
    *out = v;
    return 1;
}

int cat__tok_int(const struct line *l, int i, long max, int *out)
{
    long v;
    if (i >= l->n || !cat__parse_uint(l->t[i].s, max, &v, NULL))
        return 0;
    *out = (int)v;
    return 1;
}

int cat__parse_centi(const char *s, long *out)
{
    long whole, frac = 0;
    const char *p;
    if (!cat__parse_uint(s, CAT_MEMORY_GIB_MAX, &whole, &p))
        return 0;
    if (*p == '.') {
        const char *q = p + 1;
        if (!cat__parse_uint(q, 99, &frac, &p) || p - q > 2)
            return 0;
        if (p - q == 1)
            frac *= 10;
    }
    if (*p || whole * 100 + frac > (CAT_MEMORY_GIB_MAX * 100))
        return 0;
    *out = whole * 100 + frac;
    return 1;
}

/* "MIG 3g.40gb+me" name part: "<g>g." then [a-z0-9.+-]; compute = g. */
int cat__parse_profile_name(const char *s, char *name, int *compute)
{
    long g;
    const char *p;
    if (strlen(s) >= IMP_NAME_MAX || !cat__parse_uint(s, 32, &g, &p) || g < 1 || p[0] != 'g' ||
        p[1] != '.')
        return 0;
    for (p += 2; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr(".+-", *p)))
            return 0;
    memcpy(name, s, strlen(s) + 1);
    *compute = (int)g;
    return 1;
}
