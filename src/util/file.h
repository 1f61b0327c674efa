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
/* Mode of a file ts_file_write creates, less the umask (as open(2) and shells do). */
#define TS_FILE_MODE_NEW 0644
/* Write data to path atomically, as safely as ts_file_write_mode (same code).
 * Mode: a regular file already at path keeps its permission bits (0777 part;
 * set-id and sticky bits are dropped, and the owner becomes the writer); a new
 * file, or a link or other non-regular entry at path, gets TS_FILE_MODE_NEW
 * less the umask. A link at path is replaced, never written through. */
ts_status ts_file_write(const char *path, const char *data, size_t len, struct ts_error *err);
/* Write data to path atomically with mode, safe in a folder others can write to:
 * the temporary file has a random name and is created exclusively (a file or
 * symbolic link planted beside path is never followed), and gets its mode before
 * the rename (no moment with a wider one). A link at path itself is replaced. */
ts_status ts_file_write_mode(const char *path, const char *data, size_t len, mode_t mode,
                             struct ts_error *err);
/* Create a folder at tmpl, whose name ends in 8 X's replaced by random letters
 * (like mkdtemp, but mode less the umask rather than 0700): exclusive, never
 * through a link planted there. 0 or -1 with errno. */
int ts_file_mkdir_temp(char *tmpl, mode_t mode);

#endif
