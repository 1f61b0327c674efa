/*
 * error.h - status codes and located errors, shared by every module.
 *
 * Every fallible function returns a ts_status and, on failure, fills a
 * struct ts_error (may be NULL) with a message and, where the error comes
 * from user input, the place in that input: file, line, column and the
 * field path (e.g. "tenants[2].workloads[0].memoryHighWaterGiB").
 * A ts_diag collects several errors so a loader can report all the problems
 * of one file in one run; it keeps at most TS_DIAG_MAX of them. An item may
 * be a warning (TS_SEV_WARNING): reported like an error, failing nothing.
 * The library never prints and never exits: the CLI decides what to do.
 */
#ifndef TS_ERROR_H
#define TS_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include "util/limits.h"

/* X(name, message). Numbers are stable: never reorder, only append. */
#define TS_STATUS_MAP(X)                \
    X(OK, "success")                    \
    X(NOMEM, "out of memory")           \
    X(IO, "input/output error")         \
    X(SYNTAX, "syntax error")           \
    X(INVALID, "invalid input")         \
    X(TOO_LARGE, "input too large")     \
    X(NOT_FOUND, "not found")           \
    X(INFEASIBLE, "no feasible layout") \
    X(USAGE, "bad usage")               \
    X(INTERNAL, "internal error")

#define TS__ENUM(name, msg) TS_##name,
typedef enum { TS_STATUS_MAP(TS__ENUM) TS_STATUS_LAST } ts_status;
#undef TS__ENUM

/* How bad a reported problem is: an error fails the job, a warning does not. */
typedef enum { TS_SEV_ERROR, TS_SEV_WARNING } ts_severity;

struct ts_error {
    ts_status code;
    ts_severity severity;   /* TS_SEV_ERROR unless ts_diag_addf said otherwise */
    char msg[TS_MSG_MAX];   /* lowercase, no trailing period */
    char file[TS_PATH_MAX]; /* input file, "" when not from a file */
    int line, column;       /* 1-based; 0 when unknown */
    char path[TS_PATH_MAX]; /* field path inside the input, "" if none */
};

/* A bounded list of errors (for loaders that report everything at once). */
struct ts_diag {
    struct ts_error items[TS_DIAG_MAX];
    int count;    /* kept items */
    int dropped;  /* errors past TS_DIAG_MAX, counted but not kept */
    int warnings; /* how many of count + dropped are warnings */
};

const char *ts_status_str(ts_status s);

/* Fill err (if not NULL) and return code. */
ts_status ts_err(struct ts_error *err, ts_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fill err with an input location too. file/path may be NULL. */
ts_status ts_err_at(struct ts_error *err, ts_status code, const char *file, int line, int column,
                    const char *path, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* ts_err_at with a va_list, for a module's own located reporter. */
ts_status ts_verr_at(struct ts_error *err, ts_status code, const char *file, int line, int column,
                     const char *path, const char *fmt, va_list ap)
    __attribute__((format(printf, 7, 0)));

/* Append a copy of e to d (counted in d->dropped when full). */
void ts_diag_add(struct ts_diag *d, const struct ts_error *e);

/* Append a problem of severity sev located at file:line:column, path (as
 * ts_err_at; file/path may be NULL). ts_diag_vaddf takes a va_list, for
 * a module's own located reporter. */
void ts_diag_addf(struct ts_diag *d, ts_severity sev, ts_status code, const char *file, int line,
                  int column, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
void ts_diag_vaddf(struct ts_diag *d, ts_severity sev, ts_status code, const char *file, int line,
                   int column, const char *path, const char *fmt, va_list ap)
    __attribute__((format(printf, 8, 0)));

/* Errors in d, kept or dropped, warnings not counted. */
int ts_diag_errors(const struct ts_diag *d);

/* Format "file:line:col: path: message" into buf (always NUL-terminated);
 * a warning reads "file:line:col: warning: path: message". */
void ts_error_format(const struct ts_error *e, char *buf, size_t size);

#endif
