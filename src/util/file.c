/*
 * file.c - capped whole-file reads and atomic writes (see file.h).
 */
#include "util/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ts_status read_stream(FILE *f, const char *path, size_t max, char **out, size_t *len,
                             struct ts_error *err)
{
    size_t cap = 64 * 1024, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return ts_err_at(err, TS_NOMEM, path, 0, 0, NULL, "out of memory");
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                free(buf);
                return ts_err_at(err, TS_TOO_LARGE, path, 0, 0, NULL,
                                 "file is larger than the limit of %zu bytes", max);
            }
            cap *= 2;
            char *p = realloc(buf, cap + 1);
            if (!p) {
                free(buf);
                return ts_err_at(err, TS_NOMEM, path, 0, 0, NULL, "out of memory");
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f) || n > max) {
        free(buf);
        if (n > max)
            return ts_err_at(err, TS_TOO_LARGE, path, 0, 0, NULL,
                             "file is larger than the limit of %zu bytes", max);
        return ts_err_at(err, TS_IO, path, 0, 0, NULL, "read failed: %s", strerror(errno));
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return TS_OK;
}

ts_status ts_file_read(const char *path, size_t max, char **out, size_t *len, struct ts_error *err)
{
    if (strcmp(path, "-") == 0)
        return read_stream(stdin, "<stdin>", max, out, len, err);
    FILE *f = fopen(path, "rb");
    if (!f)
        return ts_err_at(err, TS_IO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
    ts_status st = read_stream(f, path, max, out, len, err);
    fclose(f);
    return st;
}

ts_status ts_file_write(const char *path, const char *data, size_t len, struct ts_error *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return ts_err_at(err, TS_INVALID, path, 0, 0, NULL, "path too long");
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return ts_err_at(err, TS_IO, path, 0, 0, NULL, "cannot create: %s", strerror(errno));
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fflush(f) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ts_err_at(err, TS_IO, path, 0, 0, NULL, "cannot write: %s", strerror(e));
    }
    return TS_OK;
}

static int write_fd(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        data += n;
        len -= (size_t)n;
    }
    return 1;
}

ts_status ts_file_write_mode(const char *path, const char *data, size_t len, mode_t mode,
                             struct ts_error *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
        return ts_err_at(err, TS_INVALID, path, 0, 0, NULL, "path too long");
    int fd = mkstemp(tmp); /* O_CREAT | O_EXCL, mode 0600 */
    if (fd < 0)
        return ts_err_at(err, TS_IO, path, 0, 0, NULL, "cannot create: %s", strerror(errno));
    int ok = write_fd(fd, data, len) && fchmod(fd, mode) == 0;
    int e = errno;
    ok = (close(fd) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        e = ok ? errno : e;
        unlink(tmp);
        return ts_err_at(err, TS_IO, path, 0, 0, NULL, "cannot write: %s", strerror(e));
    }
    return TS_OK;
}
