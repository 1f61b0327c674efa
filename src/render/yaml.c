/*
 * yaml.c - jansson values to YAML through libyaml's emitter (see yaml.h).
 * libyaml picks a safe style for special characters; we force double
 * quotes on strings that a resolver would turn into booleans, numbers or
 * null, because libyaml's emitter does not resolve plain scalars itself.
 */
#include "render/yaml.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static int all_of(const char *p, const char *set) { return *p && strspn(p, set) == strlen(p); }

/* Ints and floats as YAML 1.1 or 1.2 resolvers read them: 10, -3, 1_000,
 * 0x1F, 0b101, 0o17, 1:30, 1.5, .5, 1e3, 1.5E-3, .inf, .nan. */
static int looks_numeric(const char *s)
{
    const char *p = s + (*s == '+' || *s == '-');
    if (strcasecmp(p, ".inf") == 0 || strcasecmp(p, ".nan") == 0)
        return 1;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        return all_of(p + 2, "0123456789abcdefABCDEF_");
    if (p[0] == '0' && (p[1] == 'b' || p[1] == 'o'))
        return all_of(p + 2, "01234567_");
    size_t mant = strspn(p, "0123456789._:");
    if (mant == 0 || strspn(p, ".") == mant)
        return 0;
    const char *e = p + mant;
    if (*e == '\0')
        return 1;
    if (*e != 'e' && *e != 'E')
        return 0;
    e += 1 + (e[1] == '+' || e[1] == '-');
    return all_of(e, "0123456789");
}

/* YAML 1.1 timestamps (2026-11-30, 2026-11-30T10:00:00Z): a reader turns
 * them into dates. Any string that starts like one is quoted. */
static int looks_timestamp(const char *s)
{
    return strspn(s, "0123456789") == 4 && s[4] == '-' && isdigit((unsigned char)s[5]);
}

int render_yaml_needs_quotes(const char *s)
{
    static const char *const words[] = {"y",  "n",   "yes",  "no", "true", "false",
                                        "on", "off", "null", "~",  NULL};
    if (!*s)
        return 1;
    for (int i = 0; words[i]; i++)
        if (strcasecmp(s, words[i]) == 0)
            return 1;
    return looks_numeric(s) || looks_timestamp(s);
}

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
    ts_sbuf_add(data, (const char *)buffer, size);
    return ts_sbuf_status(data) == TS_OK;
}

static int emit_scalar(yaml_emitter_t *e, const char *text, int quoted)
{
    yaml_event_t ev;
    yaml_scalar_style_t style = quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE;
    /* quoted_implicit is always 1: when libyaml must quote a plain string
     * itself (line breaks), it would otherwise tag it with a bare `!` */
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text),
                                      !quoted, 1, style))
        return 0;
    return yaml_emitter_emit(e, &ev);
}

static int emit_value(yaml_emitter_t *e, const json_t *v);

/* x in the fewest digits that read back as x; an exponent gets a '.' in
 * its mantissa, as YAML 1.1 resolvers want of a float ("1.0e+20"). */
static void format_real(double x, char *buf, size_t size)
{
    for (int digits = 10; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    char *exp = strchr(buf, 'e');
    if (exp && !memchr(buf, '.', (size_t)(exp - buf)) && strlen(buf) + 3 < size) {
        memmove(exp + 2, exp, strlen(exp) + 1);
        memcpy(exp, ".0", 2);
    }
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int emit_object(yaml_emitter_t *e, const json_t *v)
{
    yaml_event_t ev;
    size_t n = json_object_size(v), i = 0;
    const char **keys = malloc((n + 1) * sizeof(*keys));
    if (!keys)
        return 0;
    const char *key;
    json_t *child;
    json_object_foreach ((json_t *)v, key, child)
        keys[i++] = key;
    qsort(keys, n, sizeof(*keys), cmp_keys);
    int ok = yaml_mapping_start_event_initialize(
                 &ev, NULL, NULL, 1, n ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE) &&
             yaml_emitter_emit(e, &ev);
    for (i = 0; ok && i < n; i++)
        ok = emit_scalar(e, keys[i], render_yaml_needs_quotes(keys[i])) &&
             emit_value(e, json_object_get(v, keys[i]));
    free(keys);
    return ok && yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
}

static int emit_array(yaml_emitter_t *e, const json_t *v)
{
    yaml_event_t ev;
    size_t n = json_array_size(v);
    yaml_sequence_style_t style = n ? YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE;
    int ok = yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, style) &&
             yaml_emitter_emit(e, &ev);
    for (size_t i = 0; ok && i < n; i++)
        ok = emit_value(e, json_array_get(v, i));
    return ok && yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
}

static int emit_value(yaml_emitter_t *e, const json_t *v)
{
    char num[64];
    switch (json_typeof(v)) {
    case JSON_OBJECT: return emit_object(e, v);
    case JSON_ARRAY: return emit_array(e, v);
    case JSON_STRING: {
        const char *s = json_string_value(v);
        return emit_scalar(e, s, render_yaml_needs_quotes(s));
    }
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return emit_scalar(e, num, 0);
    case JSON_REAL:
        format_real(json_real_value(v), num, sizeof(num));
        return emit_scalar(e, num, 0);
    case JSON_TRUE: return emit_scalar(e, "true", 0);
    case JSON_FALSE: return emit_scalar(e, "false", 0);
    case JSON_NULL: return emit_scalar(e, "null", 0);
    }
    return 0;
}

ts_status render_yaml_doc(const json_t *v, int first, struct ts_sbuf *out)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    if (!first)
        ts_sbuf_puts(out, "---\n");
    if (!yaml_emitter_initialize(&e))
        return TS_NOMEM;
    yaml_emitter_set_output(&e, write_handler, out);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, 100);
    yaml_emitter_set_indent(&e, 2);
    int ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
             yaml_emitter_emit(&e, &ev) &&
             yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
             yaml_emitter_emit(&e, &ev) && emit_value(&e, v) &&
             yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev) &&
             yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev) &&
             yaml_emitter_flush(&e);
    yaml_emitter_delete(&e);
    if (!ok)
        return ts_sbuf_status(out) ? ts_sbuf_status(out) : TS_INTERNAL;
    return TS_OK;
}
