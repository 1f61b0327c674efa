/*
 * latpipe.c - the reader of the latency pipe (see fight.h; the format is
 * in docs/fight.md). A tenant writes one line per event:
 *
 *   latency_us <number> [gpu_us <number>] [host_us <number>]
 *                                           one request served
 *   error [text]                            one request failed
 *   mem_mib <number>                        device memory held now
 *   # comment, or an empty line             ignored
 *
 * Tokens are separated by spaces or tabs; numbers are plain decimals
 * (digits, '.', exponent), finite and >= 0; one '\r' before '\n' is
 * tolerated. Lines are at most FIGHT_LINE_MAX bytes. The first bad line
 * stops the reader with "name:line:column: what".
 */
#include "fight/fight.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"

void fight_series_release(struct fight_series *s)
{
    free(s->lat_us);
    free(s->gpu_us);
    free(s->host_us);
    memset(s, 0, sizeof(*s));
}

void fight_reader_init(struct fight_reader *r, const char *name, struct fight_series *out)
{
    memset(r, 0, sizeof(*r));
    r->name = name;
    r->out = out;
}

/* The cursor over one line, for tokens and their columns. */
struct cur {
    const char *s;
    size_t len, pos;
};

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Next token: *tok, *tlen, and its 1-based column; 0 at end of line. */
static int next_token(struct cur *c, const char **tok, size_t *tlen, int *col)
{
    while (c->pos < c->len && is_blank(c->s[c->pos]))
        c->pos++;
    if (c->pos == c->len)
        return 0;
    size_t start = c->pos;
    while (c->pos < c->len && !is_blank(c->s[c->pos]))
        c->pos++;
    *tok = c->s + start;
    *tlen = c->pos - start;
    *col = (int)start + 1;
    return 1;
}

static int tok_is(const char *tok, size_t len, const char *word)
{
    return len == strlen(word) && memcmp(tok, word, len) == 0;
}

/* A plain decimal number, finite and >= 0; NULL or the complaint. */
static const char *parse_number(const char *tok, size_t len, double *out)
{
    char tmp[64];
    if (len >= sizeof(tmp))
        return "number too long";
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789.eE+-", tok[i]))
            return "not a decimal number";
    memcpy(tmp, tok, len);
    tmp[len] = '\0';
    char *end;
    double v = strtod(tmp, &end);
    if (end != tmp + len)
        return "not a decimal number";
    if (!isfinite(v) || v < 0)
        return "must be a finite number >= 0";
    *out = v;
    return NULL;
}

static ts_status bad(struct fight_reader *r, int col, struct ts_error *err, const char *what,
                     const char *tok, size_t tlen)
{
    r->failed = 1;
    if (tok)
        return ts_err_at(err, TS_SYNTAX, r->name, (int)r->line, col, NULL, "%s: '%.*s'", what,
                         (int)(tlen > 40 ? 40 : tlen), tok);
    return ts_err_at(err, TS_SYNTAX, r->name, (int)r->line, col, NULL, "%s", what);
}

ts_status fight_series_push(struct fight_series *s, const struct fight_sample *v,
                            struct ts_error *err)
{
    if (s->n == FIGHT_SAMPLES_MAX)
        return ts_err(err, TS_TOO_LARGE, "more than %u samples", FIGHT_SAMPLES_MAX);
    /* the three arrays grow together */
    size_t lat_cap = s->cap, gpu_cap = s->cap, host_cap = s->cap;
    if (!ts_grow((void **)&s->lat_us, &lat_cap, s->n, sizeof(*s->lat_us)) ||
        !ts_grow((void **)&s->gpu_us, &gpu_cap, s->n, sizeof(*s->gpu_us)) ||
        !ts_grow((void **)&s->host_us, &host_cap, s->n, sizeof(*s->host_us)))
        return ts_err(err, TS_NOMEM, "out of memory for %zu samples", s->n + 1);
    s->cap = lat_cap;
    s->lat_us[s->n] = v->lat_us;
    s->gpu_us[s->n] = v->gpu_us;
    s->host_us[s->n] = v->host_us;
    s->n++;
    return TS_OK;
}

/* fight_series_push, its cap refused at this line like any other bad line. */
static ts_status push(struct fight_reader *r, const struct fight_sample *v, struct ts_error *err)
{
    if (r->out->n == FIGHT_SAMPLES_MAX) {
        char what[48];
        snprintf(what, sizeof(what), "more than %u samples", FIGHT_SAMPLES_MAX);
        return bad(r, 1, err, what, NULL, 0);
    }
    return fight_series_push(r->out, v, err);
}

/* "<key> <number>" at the cursor, the key already read. */
static ts_status keyed_number(struct fight_reader *r, struct cur *c, const char *key, double *v,
                              struct ts_error *err)
{
    const char *tok;
    size_t tlen;
    int col;
    if (!next_token(c, &tok, &tlen, &col))
        return bad(r, (int)c->pos + 1, err, key, NULL, 0);
    const char *why = parse_number(tok, tlen, v);
    return why ? bad(r, col, err, why, tok, tlen) : TS_OK;
}

/* latency_us's value, then gpu_us and host_us, each optional, in that order. */
static ts_status latency_line(struct fight_reader *r, struct cur *c, struct ts_error *err)
{
    struct fight_sample v = {NAN, NAN, NAN};
    if (keyed_number(r, c, "latency_us needs a number", &v.lat_us, err) != TS_OK)
        return TS_SYNTAX;
    const char *tok;
    size_t tlen;
    int col, got = next_token(c, &tok, &tlen, &col);
    if (got && tok_is(tok, tlen, "gpu_us")) {
        if (keyed_number(r, c, "gpu_us needs a number", &v.gpu_us, err) != TS_OK)
            return TS_SYNTAX;
        got = next_token(c, &tok, &tlen, &col);
    }
    if (got && tok_is(tok, tlen, "host_us")) {
        if (keyed_number(r, c, "host_us needs a number", &v.host_us, err) != TS_OK)
            return TS_SYNTAX;
        got = next_token(c, &tok, &tlen, &col);
    }
    if (got)
        return bad(r, col, err,
                   isnan(v.gpu_us) && isnan(v.host_us)
                       ? "expected 'gpu_us', 'host_us' or the end of the line"
                   : isnan(v.host_us) ? "expected 'host_us' or the end of the line"
                                      : "unexpected text after the host_us value",
                   tok, tlen);
    return push(r, &v, err);
}

static ts_status error_line(struct fight_reader *r, struct cur *c)
{
    struct fight_series *s = r->out;
    if (s->errors++ == 0) {
        while (c->pos < c->len && is_blank(c->s[c->pos]))
            c->pos++;
        size_t n = c->len - c->pos;
        if (n >= sizeof(s->first_error))
            n = sizeof(s->first_error) - 1;
        memcpy(s->first_error, c->s + c->pos, n);
        s->first_error[n] = '\0';
    }
    return TS_OK;
}

static ts_status mem_line(struct fight_reader *r, struct cur *c, struct ts_error *err)
{
    double v;
    if (keyed_number(r, c, "mem_mib needs a number", &v, err) != TS_OK)
        return TS_SYNTAX;
    const char *tok;
    size_t tlen;
    int col;
    if (next_token(c, &tok, &tlen, &col))
        return bad(r, col, err, "unexpected text after the mem_mib value", tok, tlen);
    if (v > r->out->mem_mib_max)
        r->out->mem_mib_max = v;
    return TS_OK;
}

static ts_status one_line(struct fight_reader *r, const char *s, size_t len, struct ts_error *err)
{
    if (len > 0 && s[len - 1] == '\r')
        len--;
    const char *nul = memchr(s, '\0', len);
    if (nul)
        return bad(r, (int)(nul - s) + 1, err, "NUL byte in line", NULL, 0);
    struct cur c = {s, len, 0};
    const char *tok;
    size_t tlen;
    int col;
    if (!next_token(&c, &tok, &tlen, &col) || tok[0] == '#')
        return TS_OK;
    if (tok_is(tok, tlen, "latency_us"))
        return latency_line(r, &c, err);
    if (tok_is(tok, tlen, "error"))
        return error_line(r, &c);
    if (tok_is(tok, tlen, "mem_mib"))
        return mem_line(r, &c, err);
    return bad(r, col, err, "unknown keyword (latency_us, error, mem_mib)", tok, tlen);
}

ts_status fight_reader_feed(struct fight_reader *r, const char *data, size_t n,
                            struct ts_error *err)
{
    if (r->failed)
        return ts_err(err, TS_SYNTAX, "%s: reader stopped at an earlier error", r->name);
    for (size_t i = 0; i < n; i++) {
        if (data[i] != '\n') {
            if (r->len < FIGHT_LINE_MAX)
                r->buf[r->len++] = data[i];
            else
                r->too_long = 1;
            continue;
        }
        r->line++;
        if (r->too_long) {
            char what[48];
            snprintf(what, sizeof(what), "line longer than %d bytes", FIGHT_LINE_MAX);
            return bad(r, FIGHT_LINE_MAX + 1, err, what, NULL, 0);
        }
        ts_status st = one_line(r, r->buf, r->len, err);
        r->len = 0;
        if (st != TS_OK) {
            r->failed = 1;
            return st;
        }
    }
    return TS_OK;
}

ts_status fight_reader_finish(struct fight_reader *r, struct ts_error *err)
{
    if (r->failed)
        return ts_err(err, TS_SYNTAX, "%s: reader stopped at an earlier error", r->name);
    if (r->len == 0 && !r->too_long)
        return TS_OK;
    return fight_reader_feed(r, "\n", 1, err);
}
