/*
 * file.h - reading whole input files with a size cap, and writing output
 * files atomically (temporary file + rename, so a failure never leaves a
 * half-written file behind).
 */
#ifndef TS_FILE_H
#define TS_FILE_H

#include <stddef.h>
#include <sys/types.h>
#include "util/error.h"
#include "util/limits.h" /* TS_INPUT_MAX, the largest spec or import */

/* Read path ("-" = stdin) into a malloc'd NUL-terminated buffer. */
ts_status ts_file_read(const char *path, size_t max, char **out, size_t *len, struct ts_error *err);
/* Write data to path atomically. */
ts_status ts_file_write(const char *path, const char *data, size_t len, struct ts_error *err);
/* Write data to path atomically with mode, safe in a folder others can write to:
 * the temporary file has a random name and is created exclusively (a file or
 * symbolic link planted beside path is never followed), and gets its mode before
 * the rename (no moment with a wider one). A link at path itself is replaced. */
ts_status ts_file_write_mode(const char *path, const char *data, size_t len, mode_t mode,
                             struct ts_error *err);

#endif
