/*
 * config.c - where the container's limits come from, once per process:
 *   1. the limit file the node side writes and mounts read-only, at
 *      $TESSERA_CUDA_LIMITS_FILE or /etc/tessera/cuda-limits; when it exists
 *      it is the whole truth (the environment is ignored, so a shell opened
 *      later in the pod with another environment is limited the same);
 *   2. only when there is no such file: TESSERA_CUDA_MEMORY_LIMIT,
 *      TESSERA_CUDA_SM_PERCENT, TESSERA_CUDA_REGION.
 * A file that cannot be read or parsed, or a malformed variable, makes the
 * shim fail closed: every allocation returns CUDA_ERROR_OUT_OF_MEMORY. The
 * reason goes to stderr once, with the file's line:column.
 */
#include "shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_LIMITS_FILE "/etc/tessera/cuda-limits"
#define DEFAULT_REGION "/tmp/tessera-cuda.region"

static void take(struct shim_config *c, const struct shim_limits *l)
{
    c->limited = l->has_memory;
    c->memory_bytes = l->memory_bytes;
    c->sm_percent = l->sm_percent;
    if (l->region[0])
        memcpy(c->region, l->region, sizeof(c->region));
}

/* Read all of fd into buf (at most max bytes); the length, or -1. */
static ssize_t read_all(int fd, char *buf, size_t max)
{
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fd, buf + got, max - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0 || (got += (size_t)n) == max)
            return (ssize_t)got;
    }
}

/* 1 when the file exists and was used (c filled or failed closed), 0 when
 * there is no file. */
static int from_file(struct shim_config *c, const char *path)
{
    static char text[SHIM_LIMITS_FILE_MAX + 1];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0) {
        shim__log("%s: cannot open (%s): failing closed, every allocation will fail", path,
                  strerror(errno));
        c->fail_closed = 1;
        return 1;
    }
    ssize_t len = read_all(fd, text, sizeof(text));
    close(fd);
    struct shim_limits l;
    struct shim_limits_error e = {0, 0, "cannot read"};
    if (len < 0 || shim_limits_parse(text, (size_t)len, &l, &e) != 0) {
        shim__log("%s:%d:%d: %s: failing closed, every allocation will fail", path, e.line,
                  e.column, e.msg);
        c->fail_closed = 1;
        return 1;
    }
    take(c, &l);
    return 1;
}

/* One environment variable through the file's value parsers. */
static int env_value(const char *var, int percent, uint64_t *bytes, unsigned *pct)
{
    const char *v = getenv(var);
    if (!v)
        return 0;
    size_t bad = 0;
    const char *why = "";
    int rc = percent ? shim_limits_percent(v, strlen(v), pct, &bad, &why)
                     : shim_limits_bytes(v, strlen(v), bytes, &bad, &why);
    if (rc != 0) {
        shim__log("%s='%s': column %zu: %s: failing closed, every allocation will fail", var,
                  v, bad + 1, why);
        return -1;
    }
    return 1;
}

static void from_env(struct shim_config *c)
{
    int m = env_value("TESSERA_CUDA_MEMORY_LIMIT", 0, &c->memory_bytes, NULL);
    int s = env_value("TESSERA_CUDA_SM_PERCENT", 1, NULL, &c->sm_percent);
    const char *r = getenv("TESSERA_CUDA_REGION");
    if (r && (r[0] != '/' || strlen(r) >= sizeof(c->region))) {
        shim__log("TESSERA_CUDA_REGION: must be an absolute path shorter than %zu bytes: "
                  "failing closed, every allocation will fail", sizeof(c->region));
        c->fail_closed = 1;
    } else if (r) {
        memcpy(c->region, r, strlen(r) + 1);
    }
    if (m < 0 || s < 0)
        c->fail_closed = 1;
    c->limited = m > 0;
}

void shim__config_load(struct shim_config *c)
{
    memset(c, 0, sizeof(*c));
    c->sm_percent = 100;
    memcpy(c->region, DEFAULT_REGION, sizeof(DEFAULT_REGION));
    const char *path = getenv("TESSERA_CUDA_LIMITS_FILE");
    if (!path || !path[0])
        path = DEFAULT_LIMITS_FILE;
    if (!from_file(c, path))
        from_env(c);
}
