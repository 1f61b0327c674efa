/*
 * error.c - status strings, located errors and the bounded diagnostic list
 * of errors and warnings.
 * See error.h for the conventions every module follows.
 */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TS__STR(name, msg) msg,
static const char *const status_strings[] = {TS_STATUS_MAP(TS__STR)};
#undef TS__STR

const char *ts_status_str(ts_status s)
{
    if ((unsigned)s >= TS_STATUS_LAST)
        return "unknown status";
    return status_strings[s];
}

static void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

ts_status ts_err(struct ts_error *err, ts_status code, const char *fmt, ...)
{
    if (!err)
        return code;
    memset(err, 0, sizeof(*err));
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

static void vfill(struct ts_error *err, ts_status code, const char *file, int line, int column,
                  const char *path, const char *fmt, va_list ap)
    __attribute__((format(printf, 7, 0)));
static void vfill(struct ts_error *err, ts_status code, const char *file, int line, int column,
                  const char *path, const char *fmt, va_list ap)
{
    memset(err, 0, sizeof(*err));
    err->code = code;
    copy_str(err->file, sizeof(err->file), file);
    copy_str(err->path, sizeof(err->path), path);
    err->line = line;
    err->column = column;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

ts_status ts_verr_at(struct ts_error *err, ts_status code, const char *file, int line, int column,
                     const char *path, const char *fmt, va_list ap)
{
    if (err)
        vfill(err, code, file, line, column, path, fmt, ap);
    return code;
}

ts_status ts_err_at(struct ts_error *err, ts_status code, const char *file, int line, int column,
                    const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_verr_at(err, code, file, line, column, path, fmt, ap);
    va_end(ap);
    return code;
}

void ts_diag_add(struct ts_diag *d, const struct ts_error *e)
{
    if (d->count < TS_DIAG_MAX)
        d->items[d->count++] = *e;
    else
        d->dropped++;
    d->warnings += e->severity == TS_SEV_WARNING;
}

void ts_diag_vaddf(struct ts_diag *d, ts_severity sev, ts_status code, const char *file, int line,
                   int column, const char *path, const char *fmt, va_list ap)
{
    struct ts_error e;
    vfill(&e, code, file, line, column, path, fmt, ap);
    e.severity = sev;
    ts_diag_add(d, &e);
}

void ts_diag_addf(struct ts_diag *d, ts_severity sev, ts_status code, const char *file, int line,
                  int column, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_diag_vaddf(d, sev, code, file, line, column, path, fmt, ap);
    va_end(ap);
}

int ts_diag_errors(const struct ts_diag *d) { return d->count + d->dropped - d->warnings; }

/* Copy in to out (size bytes, cut, NUL-terminated) with every control byte
 * written as \xNN: file names, paths and messages quote untrusted input,
 * and a terminal or a log must not take it for escape sequences or lines. */
static void copy_escaped(const char *in, char *out, size_t size)
{
    size_t n = 0;
    for (; *in && n + 1 < size; in++) {
        unsigned char ch = (unsigned char)*in;
        if (ch >= 0x20 && ch != 0x7f) {
            out[n++] = (char)ch;
        } else if (n + 5 < size) {
            snprintf(out + n, size - n, "\\x%02x", ch);
            n += 4;
        } else {
            break;
        }
    }
    out[n] = '\0';
}

static void format_raw(const struct ts_error *e, char *buf, size_t size)
{
    char where[TS_PATH_MAX + 32] = "";
    if (e->file[0] && e->line > 0)
        snprintf(where, sizeof(where), "%s:%d:%d: ", e->file, e->line, e->column);
    else if (e->file[0])
        snprintf(where, sizeof(where), "%s: ", e->file);
    const char *sev = e->severity == TS_SEV_WARNING ? "warning: " : "";
    if (e->path[0])
        snprintf(buf, size, "%s%s%s: %s", where, sev, e->path, e->msg);
    else
        snprintf(buf, size, "%s%s%s", where, sev, e->msg);
}

void ts_error_format(const struct ts_error *e, char *buf, size_t size)
{
    char raw[TS_MSG_MAX + 2 * TS_PATH_MAX + 64];
    format_raw(e, raw, sizeof raw);
    copy_escaped(raw, buf, size);
}
