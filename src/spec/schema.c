/*
 * schema.c - the table-driven mapping reader (see schema.h).
 */
#include "spec/schema.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/limits.h"
#include "util/units.h"

static const char *node_kind(const struct spec_node *n)
{
    switch (n->type) {
    case SPEC_NODE_MAP: return "a mapping";
    case SPEC_NODE_SEQ: return "a list";
    default: return n->plain ? "a scalar" : "a quoted string";
    }
}

void spec_report(struct spec_ctx *ctx, const struct spec_node *node, const char *path,
                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_diag_vaddf(ctx->diag, TS_SEV_ERROR, TS_INVALID, ctx->file, node ? node->line : 0,
                  node ? node->column : 0, path, fmt, ap);
    va_end(ap);
}

void spec_report_loc(struct ts_diag *diag, const struct spec_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_diag_vaddf(diag, TS_SEV_ERROR, TS_INVALID, loc->file, loc->line, loc->column, loc->path, fmt,
                  ap);
    va_end(ap);
}

static int is_null(const struct spec_node *n)
{
    return n->type == SPEC_NODE_SCALAR && n->plain &&
           (n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0);
}

int spec_is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > TS_K8S_LABEL_MAX || !isalnum((unsigned char)s[0]) ||
        !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return 0;
    return 1;
}

#define LABEL_CHARS "use lowercase letters, digits and '-'"

static int label_char(unsigned char c) { return islower(c) || isdigit(c) || c == '-'; }

/* Why the label s[0..n) is not a DNS-1123 label, into why; 0 when it is one. */
static int label_problem(const char *s, size_t n, char *why, size_t size)
{
    if (n == 0)
        return snprintf(why, size, "it is empty"), 1;
    if (n > TS_K8S_LABEL_MAX)
        return snprintf(why, size, "it has %zu characters; a name has at most %d", n,
                        TS_K8S_LABEL_MAX),
               1;
    for (size_t i = 0; i < n; i++)
        if (isupper((unsigned char)s[i]))
            return snprintf(why, size, "it has uppercase letters (%s)", LABEL_CHARS), 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!label_char(c) && isprint(c))
            return snprintf(why, size, "'%c' is not allowed (%s)", c, LABEL_CHARS), 1;
        if (!label_char(c))
            return snprintf(why, size, "byte 0x%02X is not allowed (%s)", c, LABEL_CHARS), 1;
    }
    if (s[0] == '-' || s[n - 1] == '-')
        return snprintf(why, size, "it must start and end with a letter or digit"), 1;
    return 0;
}

/* Why s is not a name (or, with dots, a DNS subdomain); 0 when it is one. */
static int name_problem(const char *s, int subdomain, char *why, size_t size)
{
    size_t n = strlen(s);
    if (!subdomain)
        return label_problem(s, n, why, size);
    if (n > TS_K8S_NAME_MAX)
        return snprintf(why, size, "it has %zu characters; a DNS name has at most %d", n,
                        TS_K8S_NAME_MAX),
               1;
    for (const char *p = s;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len == 0)
            return snprintf(why, size, "it has an empty part between dots"), 1;
        if (label_problem(p, len, why, size))
            return 1;
        if (!dot)
            return 0;
        p = dot + 1;
    }
}

/* A valid name close to s (lowercase, other characters as '-'), or "". */
static void name_suggestion(const char *s, int subdomain, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = s; *p && n + 1 < size; p++) {
        unsigned char c = (unsigned char)tolower((unsigned char)*p);
        char ch = label_char(c) || (subdomain && c == '.') ? (char)c : '-';
        if (!(ch == '-' && (n == 0 || out[n - 1] == '-')))
            out[n++] = ch;
    }
    while (n > 0 && out[n - 1] == '-')
        n--;
    out[n] = '\0';
    char why[120];
    if (n == 0 || strcmp(out, s) == 0 || name_problem(out, subdomain, why, sizeof(why)))
        out[0] = '\0';
}

/* Strict YAML-ish decimal: [+-]digits[.digits][e[+-]digits]. */
static int parse_decimal(const char *s, double *out)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!isdigit((unsigned char)*p))
        return 0;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p)
        return 0;
    *out = strtod(s, NULL); /* +-HUGE_VAL on overflow: the range check rejects it */
    return 1;
}

int spec_parse_money(const char *s, int64_t *micro)
{
    const char *p = s;
    int64_t whole = 0, frac = 0;
    int digits = 0, places = 0;
    for (; isdigit((unsigned char)*p); p++, digits++) {
        if (whole > (INT64_MAX / 10 - 9) / TS_MICRO)
            return 0;
        whole = whole * 10 + (*p - '0');
    }
    if (digits == 0)
        return 0;
    if (*p == '.') {
        for (p++; isdigit((unsigned char)*p); p++, places++) {
            if (places == 6)
                return 0;
            frac = frac * 10 + (*p - '0');
        }
        if (places == 0)
            return 0;
    }
    if (*p)
        return 0;
    for (int i = places; i < 6; i++)
        frac *= 10;
    *micro = whole * TS_MICRO + frac;
    return 1;
}

static void *at(void *base, size_t off) { return (char *)base + off; }

static int want_scalar(struct spec_ctx *ctx, const struct spec_node *n, const char *path,
                       const char *what)
{
    if (n->type == SPEC_NODE_SCALAR && !is_null(n))
        return 1;
    if (is_null(n))
        spec_report(ctx, n, path, "must be %s, got nothing", what);
    else
        spec_report(ctx, n, path, "must be %s, got %s", what, node_kind(n));
    return 0;
}

static int read_number(struct spec_ctx *ctx, const struct spec_field *f, const struct spec_node *n,
                       const char *path, double *out)
{
    const char *what = f->type == SPEC_F_INT ? "a whole number" : "a number";
    if (!want_scalar(ctx, n, path, what))
        return 1;
    double d;
    int number = parse_decimal(n->value, &d);
    if (!n->plain && number) {
        spec_report(ctx, n, path, "must be %s, got a quoted string '%.40s'; remove the quotes",
                    what, n->value);
        return 1;
    }
    if (!number) {
        spec_report(ctx, n, path, "must be %s, got %s '%.40s'", what,
                    n->plain ? "text" : "a quoted string", n->value);
        return 1;
    }
    if (f->type == SPEC_F_INT && d != floor(d)) {
        spec_report(ctx, n, path, "must be a whole number, got %s", n->value);
        return 1;
    }
    if (d < f->min || d > f->max) {
        spec_report(ctx, n, path, "must be between %g and %g, got %s", f->min, f->max, n->value);
        return 1;
    }
    *out = d;
    return 0;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    size_t row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = prev + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

/* How close cand is to a mistyped word: an edit distance under 3, 3 when
 * one is a prefix of the other (4+ characters), else 99. */
static size_t closeness(const char *word, const char *cand)
{
    size_t d = edit_distance(word, cand);
    if (d < 3)
        return d;
    size_t lw = strlen(word), lc = strlen(cand), n = lw < lc ? lw : lc;
    return n >= 4 && strncasecmp(word, cand, n) == 0 ? 3 : 99;
}

static int read_enum(struct spec_ctx *ctx, const struct spec_field *f, const struct spec_node *n,
                     const char *path, int *out)
{
    if (!want_scalar(ctx, n, path, "a string"))
        return 1;
    for (int i = 0; f->enums[i]; i++) {
        if (strcmp(n->value, f->enums[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    char list[400] = "";
    for (int i = 0; f->enums[i]; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", f->enums[i]);
    }
    const char *best = NULL;
    size_t best_d = 4;
    for (int i = 0; f->enums[i]; i++) {
        size_t d = closeness(n->value, f->enums[i]);
        if (d < best_d) {
            best_d = d;
            best = f->enums[i];
        }
    }
    if (best)
        spec_report(ctx, n, path, "must be one of %s; got '%.60s' (did you mean '%s'?)", list,
                    n->value, best);
    else
        spec_report(ctx, n, path, "must be one of %s; got '%.60s'", list, n->value);
    return 1;
}

static int read_string(struct spec_ctx *ctx, enum spec_ftype t, const struct spec_node *n,
                       const char *path, const char **out)
{
    if (!want_scalar(ctx, n, path, "a string"))
        return 1;
    if (strlen(n->value) != n->len) {
        spec_report(ctx, n, path, "must not contain NUL characters");
        return 1;
    }
    char why[120], fix[80];
    if ((t == SPEC_F_NAME || t == SPEC_F_DNS) &&
        name_problem(n->value, t == SPEC_F_DNS, why, sizeof(why))) {
        name_suggestion(n->value, t == SPEC_F_DNS, fix, sizeof(fix));
        spec_report(ctx, n, path, "'%.80s' is not a valid %s: %s%s%s%s", n->value,
                    t == SPEC_F_DNS ? "DNS name" : "name", why, *fix ? "; try '" : "", fix,
                    *fix ? "'" : "");
        return 1;
    }
    *out = n->value;
    return 0;
}

static int read_bool(struct spec_ctx *ctx, const struct spec_node *n, const char *path, int *out)
{
    if (!want_scalar(ctx, n, path, "true or false"))
        return 1;
    if (n->plain && strcmp(n->value, "true") == 0)
        *out = 1;
    else if (n->plain && strcmp(n->value, "false") == 0)
        *out = 0;
    else {
        spec_report(ctx, n, path, "must be true or false, got '%.40s'", n->value);
        return 1;
    }
    return 0;
}

static int read_money(struct spec_ctx *ctx, const struct spec_node *n, const char *path,
                      int64_t *out)
{
    if (!want_scalar(ctx, n, path, "an amount"))
        return 1;
    if (!spec_parse_money(n->value, out)) {
        spec_report(ctx, n, path,
                    "must be a non-negative amount with at most 6 decimal "
                    "places, like \"2.50\"; got '%.40s'",
                    n->value);
        return 1;
    }
    return 0;
}

static int check_count(struct spec_ctx *ctx, const struct spec_field *f, const struct spec_node *n,
                       const char *path)
{
    if (n->type != SPEC_NODE_SEQ) {
        spec_report(ctx, n, path, "must be a list, got %s", node_kind(n));
        return 1;
    }
    double max = f->max > 0 ? f->max : SPEC_LIST_MAX;
    if ((double)n->count < f->min || (double)n->count > max) {
        spec_report(ctx, n, path, "must have between %g and %g items, got %zu", f->min, max,
                    n->count);
        return 1;
    }
    return 0;
}

static int read_strings(struct spec_ctx *ctx, const struct spec_field *f, const struct spec_node *n,
                        const char *path, void *out)
{
    if (check_count(ctx, f, n, path))
        return 1;
    const char **arr = ts_arena_array(ctx->arena, n->count + 1, sizeof(*arr));
    if (!arr) {
        spec_report(ctx, n, path, "out of memory");
        return 1;
    }
    int bad = 0;
    enum spec_ftype t = f->type == SPEC_F_NAMES ? SPEC_F_NAME : SPEC_F_STR;
    for (size_t i = 0; i < n->count; i++) {
        char *p = ts_arena_printf(ctx->arena, "%s[%zu]", path, i);
        bad += read_string(ctx, t, n->items[i], p, &arr[i]);
        for (size_t j = 0; j < i && arr[i]; j++)
            if (arr[j] && strcmp(arr[j], arr[i]) == 0) {
                spec_report(ctx, n->items[i], p, "duplicate entry '%.80s' (first at line %d)",
                            arr[i], n->items[j]->line);
                bad++;
                break;
            }
    }
    *(const char ***)at(out, f->offset) = arr;
    *(size_t *)at(out, f->count_offset) = n->count;
    return bad;
}

static int read_list(struct spec_ctx *ctx, const struct spec_field *f, const struct spec_node *n,
                     const char *path, void *out)
{
    if (check_count(ctx, f, n, path))
        return 1;
    char *arr = ts_arena_array(ctx->arena, n->count ? n->count : 1, f->sub->size);
    if (!arr) {
        spec_report(ctx, n, path, "out of memory");
        return 1;
    }
    int bad = 0;
    for (size_t i = 0; i < n->count; i++) {
        char *p = ts_arena_printf(ctx->arena, "%s[%zu]", path, i);
        bad += spec_schema_read(ctx, n->items[i], f->sub, arr + i * f->sub->size, p);
    }
    *(void **)at(out, f->offset) = arr;
    *(size_t *)at(out, f->count_offset) = n->count;
    return bad;
}

static int read_field(struct spec_ctx *ctx, const struct spec_field *f, const struct spec_node *n,
                      const char *path, void *out)
{
    double d = 0;
    int bad;
    switch (f->type) {
    case SPEC_F_STR:
    case SPEC_F_NAME:
    case SPEC_F_DNS: return read_string(ctx, f->type, n, path, (const char **)at(out, f->offset));
    case SPEC_F_NUM:
        bad = read_number(ctx, f, n, path, &d);
        if (!bad)
            *(double *)at(out, f->offset) = d;
        return bad;
    case SPEC_F_INT:
        bad = read_number(ctx, f, n, path, &d);
        if (!bad)
            *(int *)at(out, f->offset) = (int)d;
        return bad;
    case SPEC_F_BOOL: return read_bool(ctx, n, path, (int *)at(out, f->offset));
    case SPEC_F_ENUM: return read_enum(ctx, f, n, path, (int *)at(out, f->offset));
    case SPEC_F_MONEY: return read_money(ctx, n, path, (int64_t *)at(out, f->offset));
    case SPEC_F_NAMES:
    case SPEC_F_STRS: return read_strings(ctx, f, n, path, out);
    case SPEC_F_LIST: return read_list(ctx, f, n, path, out);
    case SPEC_F_OBJ: return spec_schema_read(ctx, n, f->sub, at(out, f->offset), path);
    }
    return 1;
}

static void apply_defaults(const struct spec_schema *s, void *out)
{
    for (size_t i = 0; i < s->nfields; i++) {
        const struct spec_field *f = &s->fields[i];
        if (f->type == SPEC_F_NUM)
            *(double *)at(out, f->offset) = f->default_value;
        else if (f->type == SPEC_F_INT || f->type == SPEC_F_BOOL || f->type == SPEC_F_ENUM)
            *(int *)at(out, f->offset) = (int)f->default_value;
    }
}

static void report_unknown(struct spec_ctx *ctx, const struct spec_schema *s,
                           const struct spec_node *key, const char *path)
{
    const char *best = NULL;
    size_t best_d = 4;
    for (size_t i = 0; i < s->nfields; i++) {
        size_t d = closeness(key->value, s->fields[i].key);
        if (d < best_d) {
            best_d = d;
            best = s->fields[i].key;
        }
    }
    if (strcmp(key->value, "<<") == 0)
        spec_report(ctx, key, path,
                    "YAML merge keys ('<<') are not supported; write the "
                    "fields out, or alias a whole mapping");
    else if (best)
        spec_report(ctx, key, path, "unknown field '%.60s' (did you mean '%s'?)", key->value, best);
    else
        spec_report(ctx, key, path, "unknown field '%.60s'", key->value);
}

static const char *join(struct spec_ctx *ctx, const char *path, const char *key)
{
    if (!path || !*path)
        return key;
    return ts_arena_printf(ctx->arena, "%s.%s", path, key);
}

static int find_field(const struct spec_schema *s, const char *key)
{
    for (size_t i = 0; i < s->nfields; i++)
        if (strcmp(s->fields[i].key, key) == 0)
            return (int)i;
    return -1;
}

int spec_schema_read(struct spec_ctx *ctx, const struct spec_node *map, const struct spec_schema *s,
                     void *out, const char *path)
{
    if (map->type != SPEC_NODE_MAP) {
        spec_report(ctx, map, path, "must be a mapping, got %s", node_kind(map));
        return 1;
    }
    apply_defaults(s, out);
    if (s->loc_offset != SPEC_NO_LOC) {
        struct spec_loc *loc = at(out, s->loc_offset);
        loc->file = ctx->file;
        loc->line = map->line;
        loc->column = map->column;
        loc->path = path;
    }
    const struct spec_node *seen[SPEC_FIELDS_MAX] = {0};
    int bad = 0;
    for (size_t i = 0; i + 1 < map->count; i += 2) {
        const struct spec_node *k = map->items[i], *v = map->items[i + 1];
        if (k->type != SPEC_NODE_SCALAR) {
            spec_report(ctx, k, path, "keys must be plain strings, got %s", node_kind(k));
            bad++;
            continue;
        }
        int fi = find_field(s, k->value);
        if (fi < 0) {
            report_unknown(ctx, s, k, path);
            bad++;
            continue;
        }
        const char *fpath = join(ctx, path, k->value);
        if (seen[fi]) {
            spec_report(ctx, k, fpath, "duplicate field (first set at line %d)", seen[fi]->line);
            bad++;
            continue;
        }
        seen[fi] = k;
        bad += read_field(ctx, &s->fields[fi], v, fpath, out);
    }
    for (size_t i = 0; i < s->nfields; i++) {
        if (s->fields[i].required && !seen[i]) {
            spec_report(ctx, map, path, "missing required field '%s'", s->fields[i].key);
            bad++;
        }
    }
    return bad;
}

static const char *type_doc(const struct spec_field *f)
{
    switch (f->type) {
    case SPEC_F_STR: return "string";
    case SPEC_F_NAME: return "name";
    case SPEC_F_DNS: return "DNS name";
    case SPEC_F_NUM: return "number";
    case SPEC_F_INT: return "integer";
    case SPEC_F_BOOL: return "boolean";
    case SPEC_F_ENUM: return "enum";
    case SPEC_F_MONEY: return "amount";
    case SPEC_F_NAMES: return "list of names";
    case SPEC_F_STRS: return "list of strings";
    case SPEC_F_LIST: return "list of objects";
    case SPEC_F_OBJ: return "object";
    }
    return "?";
}

static void doc_range(struct ts_sbuf *out, const struct spec_field *f)
{
    if (f->type == SPEC_F_ENUM) {
        for (int i = 0; f->enums[i]; i++)
            ts_sbuf_printf(out, "%s`%s`", i ? ", " : "", f->enums[i]);
        if (!f->required)
            ts_sbuf_printf(out, " (default `%s`)", f->enums[(int)f->default_value]);
    } else if (f->type == SPEC_F_NUM || f->type == SPEC_F_INT) {
        ts_sbuf_printf(out, "%g to %g", f->min, f->max);
        if (!f->required)
            ts_sbuf_printf(out, " (default %g)", f->default_value);
    } else if (f->type == SPEC_F_BOOL && !f->required) {
        ts_sbuf_printf(out, "default %s", f->default_value ? "true" : "false");
    } else if ((f->type == SPEC_F_LIST || f->type == SPEC_F_NAMES || f->type == SPEC_F_STRS) &&
               (f->min > 0 || f->max > 0)) {
        ts_sbuf_printf(out, "%g to %g items", f->min, f->max > 0 ? f->max : SPEC_LIST_MAX);
    }
}

void spec_schema_doc(struct ts_sbuf *out, const struct spec_schema *s)
{
    ts_sbuf_printf(out,
                   "\n### %s\n\n| field | type | required | range | meaning |\n"
                   "|---|---|---|---|---|\n",
                   s->name);
    for (size_t i = 0; i < s->nfields; i++) {
        const struct spec_field *f = &s->fields[i];
        ts_sbuf_printf(out, "| `%s` | %s%s%s | %s | ", f->key, type_doc(f), f->sub ? " of " : "",
                       f->sub ? f->sub->name : "", f->required ? "yes" : "no");
        doc_range(out, f);
        ts_sbuf_printf(out, " | %s |\n", f->help ? f->help : "");
    }
    for (size_t i = 0; i < s->nfields; i++)
        if (s->fields[i].sub)
            spec_schema_doc(out, s->fields[i].sub);
}
