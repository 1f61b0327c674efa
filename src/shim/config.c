/*
 * config.c - where the container's limits come from, once per process:
 *   1. the limit file the node side writes and mounts read-only, at
 *      $TESSERA_CUDA_LIMITS_FILE or /etc/tessera/cuda-limits; when it exists
 *      it is the whole truth (the environment is ignored, so a shell opened
 *      later in the pod with another environment is limited the same);
 *   2. only when there is no such file: TESSERA_CUDA_MEMORY_LIMIT,
 *      TESSERA_CUDA_SM_PERCENT, TESSERA_CUDA_REGION, TESSERA_CUDA_PID_MAP.
 * A file that cannot be read or parsed, or a malformed variable, makes the
 * shim fail closed: every allocation returns CUDA_ERROR_OUT_OF_MEMORY. The
 * reason goes to stderr once, with the file's line:column. The backstop
 * (memoryBackstop, backstopTolerance, backstopIntervalMs) is set only by the file.
 */
#include "shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_LIMITS_FILE "/etc/tessera/cuda-limits"
#define DEFAULT_REGION "/tmp/tessera-cuda.region"
#define DEFAULT_PID_MAP "/run/tessera/pid-map"

static void take(struct shim_config *c, const struct shim_limits *l)
{
    c->limited = l->has_memory;
    c->memory_bytes = l->memory_bytes;
    c->sm_percent = l->sm_percent;
    c->backstop = l->backstop;
    c->backstop_tolerance = l->backstop_tolerance;
    c->backstop_interval_ms = l->backstop_interval_ms;
    if (l->region[0])
        memcpy(c->region, l->region, sizeof(c->region));
    if (l->pid_map[0])
        memcpy(c->pid_map, l->pid_map, sizeof(c->pid_map));
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

enum env_kind { ENV_BYTES, ENV_PERCENT, ENV_REGION };

/* One environment variable through the file's value parsers into out: 1 when
 * set and good, 0 when unset, -1 when malformed (said, with the column). */
static int env_value(const char *var, enum env_kind kind, void *out)
{
    const char *v = getenv(var);
    if (!v)
        return 0;
    size_t len = strlen(v), bad = 0;
    const char *why = "";
    int rc = kind == ENV_BYTES     ? shim_limits_bytes(v, len, out, &bad, &why)
             : kind == ENV_PERCENT ? shim_limits_percent(v, len, out, &bad, &why)
                                   : shim_limits_region(v, len, out, &bad, &why);
    if (rc != 0) {
        shim__log("%s='%s': column %zu: %s: failing closed, every allocation will fail", var, v,
                  bad + 1, why);
        return -1;
    }
    return 1;
}

static void from_env(struct shim_config *c)
{
    int m = env_value("TESSERA_CUDA_MEMORY_LIMIT", ENV_BYTES, &c->memory_bytes);
    int s = env_value("TESSERA_CUDA_SM_PERCENT", ENV_PERCENT, &c->sm_percent);
    int r = env_value("TESSERA_CUDA_REGION", ENV_REGION, c->region);
    int p = env_value("TESSERA_CUDA_PID_MAP", ENV_REGION, c->pid_map);
    c->fail_closed = m < 0 || s < 0 || r < 0 || p < 0;
    c->limited = m > 0;
}

void shim__config_load(struct shim_config *c)
{
    memset(c, 0, sizeof(*c));
    c->sm_percent = 100;
    memcpy(c->region, DEFAULT_REGION, sizeof(DEFAULT_REGION));
    memcpy(c->pid_map, DEFAULT_PID_MAP, sizeof(DEFAULT_PID_MAP));
    const char *path = getenv("TESSERA_CUDA_LIMITS_FILE");
    if (!path || !path[0])
        path = DEFAULT_LIMITS_FILE;
    if (!from_file(c, path))
        from_env(c);
}
