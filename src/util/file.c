/*
 * file.c - capped whole-file reads and atomic writes (see file.h).
 */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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

/* Random names tried before giving up: each collision needs a file planted at
 * a name drawn from 62^8, so a second try almost never happens. */
#define TEMP_TRIES 16

/* Replace the 8 trailing X's of tmp with random letters. */
static int random_name(char *tmp)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char *x = tmp + strlen(tmp) - 8;
    unsigned char r[8];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        return -1;
    for (size_t k = 0; k < sizeof(r); k++)
        x[k] = abc[r[k] % (sizeof(abc) - 1)];
    return 0;
}

/* Create tmp (a file, or a folder when dir) at a random name, exclusively and
 * never through a link; create_mode is filtered by the umask. */
static int make_temp(char *tmp, mode_t create_mode, int dir)
{
    for (int i = 0; i < TEMP_TRIES; i++) {
        if (random_name(tmp))
            return -1;
        int fd = dir ? mkdir(tmp, create_mode)
                     : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, create_mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

static int open_temp(char *tmp, mode_t create_mode) { return make_temp(tmp, create_mode, 0); }

int ts_file_mkdir_temp(char *tmpl, mode_t mode)
{
    size_t n = strlen(tmpl);
    if (n < 8 || strcmp(tmpl + n - 8, "XXXXXXXX") != 0) {
        errno = EINVAL;
        return -1;
    }
    return make_temp(tmpl, mode, 1);
}

/* The one writer: random exclusive temporary beside path, data, mode (when
 * given; else the create mode less the umask), rename over path. */
static ts_status write_atomic(const char *path, const char *data, size_t len, mode_t create_mode,
                              const mode_t *mode, struct ts_error *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXXXX", path) >= (int)sizeof(tmp))
        return ts_err_at(err, TS_INVALID, path, 0, 0, NULL, "path too long");
    int fd = open_temp(tmp, create_mode);
    if (fd < 0)
        return ts_err_at(err, TS_IO, path, 0, 0, NULL, "cannot create: %s", strerror(errno));
    int ok = write_fd(fd, data, len) && (!mode || fchmod(fd, *mode) == 0);
    int e = errno;
    ok = (close(fd) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        e = ok ? errno : e;
        unlink(tmp);
        return ts_err_at(err, TS_IO, path, 0, 0, NULL, "cannot write: %s", strerror(e));
    }
    return TS_OK;
}

ts_status ts_file_write(const char *path, const char *data, size_t len, struct ts_error *err)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        mode_t keep = st.st_mode & 0777;
        return write_atomic(path, data, len, 0600, &keep, err);
    }
    return write_atomic(path, data, len, TS_FILE_MODE_NEW, NULL, err);
}

ts_status ts_file_write_mode(const char *path, const char *data, size_t len, mode_t mode,
                             struct ts_error *err)
{
    return write_atomic(path, data, len, 0600, &mode, err);
}
