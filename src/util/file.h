/*
 * file.h - reading whole input files with a size cap, and writing output
 * files atomically (temporary file + rename, so a failure never leaves a
 * half-written file behind).
 */
#ifndef TS_FILE_H
#define TS_FILE_H

#include <stddef.h>
#include "util/error.h"
#include "util/limits.h" /* TS_INPUT_MAX, the largest spec or import */

/* Read path ("-" = stdin) into a malloc'd NUL-terminated buffer. */
ts_status ts_file_read(const char *path, size_t max, char **out, size_t *len, struct ts_error *err);
/* Write data to path atomically. */
ts_status ts_file_write(const char *path, const char *data, size_t len, struct ts_error *err);

#endif
