/*
 * jsonread.c - typed, located reads of JSON fields (see jsonread.h).
 */
#include "util/jsonread.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ts_copy(char *dst, size_t size, const char *src)
{
    size_t n = src ? strnlen(src, size - 1) : 0;
    if (n)
        memmove(dst, src, n);
    dst[n] = '\0';
}

void ts_json_path(char *dst, size_t size, const char *path, const char *key, long idx)
{
    int k = idx >= 0 ? snprintf(dst, size, "%s%s%s[%ld]", path, *path ? "." : "", key, idx)
                     : snprintf(dst, size, "%s%s%s", path, *path ? "." : "", key);
    if (k < 0 || (size_t)k >= size)
        dst[size - 1] = '\0';
}

ts_status ts_jread_bad(const struct ts_jread *r, const char *path, const char *fmt, ...)
{
    char msg[TS_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ts_err_at(r->err, TS_INVALID, r->file, 0, 0, path, "%s", msg);
}

static void sub_path(char *dst, size_t n, const char *path, const char *key)
{
    ts_json_path(dst, n, path, key, -1);
}

ts_status ts_jread_ll(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                      long long lo, long long hi, long long *out)
{
    char p[TS_PATH_MAX], range[80];
    sub_path(p, sizeof p, path, key);
    json_t *v = json_object_get(o, key);
    snprintf(range, sizeof range, "an integer from %lld to %lld", lo, hi);
    if (!v)
        return ts_jread_bad(r, p, "missing: expected %s", range);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return ts_jread_bad(r, p, "expected %s", range);
    *out = json_integer_value(v);
    return TS_OK;
}

ts_status ts_jread_int(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                       int lo, int hi, int *out)
{
    long long v = 0;
    ts_status st = ts_jread_ll(r, o, key, path, lo, hi, &v);
    *out = (int)v;
    return st;
}

ts_status ts_jread_str(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                       char *dst, size_t size)
{
    char p[TS_PATH_MAX];
    sub_path(p, sizeof p, path, key);
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return ts_jread_bad(r, p, "%s", v ? "expected a string" : "missing: expected a string");
    if (json_string_length(v) >= size || strlen(json_string_value(v)) != json_string_length(v))
        return ts_jread_bad(r, p, "%s", "string too long or with a NUL byte");
    ts_copy(dst, size, json_string_value(v));
    return TS_OK;
}

/* The array at key (max items) or an error; *out borrowed. */
ts_status ts_jread_arr(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                       size_t max, json_t **out)
{
    char p[TS_PATH_MAX], msg[64];
    sub_path(p, sizeof p, path, key);
    *out = json_object_get(o, key);
    if (!json_is_array(*out))
        return ts_jread_bad(r, p, "%s", *out ? "expected an array" : "missing: expected an array");
    snprintf(msg, sizeof msg, "more than %zu items", max);
    return json_array_size(*out) > max
               ? ts_err_at(r->err, TS_TOO_LARGE, r->file, 0, 0, p, "%s", msg)
               : TS_OK;
}

ts_status ts_jread_obj(const struct ts_jread *r, json_t *v, const char *path)
{
    return json_is_object(v) ? TS_OK : ts_jread_bad(r, path, "%s", "expected an object");
}

ts_status ts_jread_load(const char *text, size_t len, const char *file, json_t **doc,
                        struct ts_error *err)
{
    json_error_t je;
    *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!*doc)
        return ts_err_at(err, TS_SYNTAX, file, je.line, je.column > 0 ? je.column : 1, NULL,
                         "invalid JSON: %s", je.text); /* columns count from 1 */
    return TS_OK;
}
