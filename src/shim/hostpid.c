/*
 * hostpid.c - the host pids of the container's processes. NVML and the
 * driver name a process by its pid in the host's pid namespace; a region
 * slot holds its owner's pid in the owner's own namespace and that
 * namespace's inode. A slot of the initial pid namespace is its own host
 * pid; any other is looked up in the pid map the node agent writes (config
 * pidMap, else $TESSERA_CUDA_PID_MAP, else /run/tessera/pid-map), in the
 * format of `tessera agent watch --pid-map-out` (src/agent/pidmap.c), whose
 * last two fields (GPU index, GPU instance id or '-') are optional here:
 *
 *     # pid-namespace-inode  pid-in-that-namespace  host-pid  [gpu  gi|-]
 *     4026532178 1 21484 0 -
 *
 * Read with read(2) through a buffer on the caller's stack (no malloc, no
 * stdio): the SM limiter's tick and the memory backstop call it.
 */
#include "shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define INIT_PID_NS 0xEFFFFFFCull /* PROC_PID_INIT_INO (linux/proc_ns.h) */
#define CHUNK 4096

/* The region's live slots: pid, namespace, host pid (0 while unknown). */
struct want {
    pid_t pid[SHIM_HOSTPID_MAX], host[SHIM_HOSTPID_MAX];
    uint64_t ns[SHIM_HOSTPID_MAX];
    int n, missing;
};

static int digits(const char *s, size_t len, size_t *i, uint64_t max, uint64_t *out)
{
    size_t a = *i;
    uint64_t v = 0;
    for (; *i < len && s[*i] >= '0' && s[*i] <= '9'; (*i)++) {
        uint64_t d = (uint64_t)(s[*i] - '0');
        if (v > (max - d) / 10) /* v * 10 + d > max, checked before it can wrap */
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return *i > a && v > 0 ? 0 : -1;
}

static size_t skip_blanks(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    return i;
}

/* The agent's trailing fields: GPU index, then GPU instance id or '-'. */
static int trailer(const char *s, size_t len, size_t *i, size_t *col, const char **why)
{
    uint64_t v;
    for (int f = 0; f < 2 && (*i = skip_blanks(s, len, *i)) < len; f++) {
        *col = *i;
        *why = f == 0 ? "expected a GPU index" : "expected a GPU instance id or -";
        size_t a = *i;
        if (f == 1 && s[a] == '-')
            (*i)++;
        else if (digits(s, len, i, 0x7fffffff, &v) != 0 && !(*i == a + 1 && s[a] == '0'))
            return -1;
        if (*i < len && s[*i] != ' ' && s[*i] != '\t' && s[*i] != '\r')
            return -1;
    }
    *i = skip_blanks(s, len, *i);
    *col = *i;
    *why = "unexpected text after the GPU instance id";
    return *i < len ? -1 : 0;
}

int shim__pidmap_line(const char *s, size_t len, struct shim_pidmap_entry *e, size_t *col,
                      const char **why)
{
    static const char *what[3] = {"expected a pid namespace inode", "expected a pid",
                                  "expected a host pid"};
    static const uint64_t max[3] = {UINT64_MAX / 10, 0x7fffffff, 0x7fffffff};
    uint64_t v[3];
    size_t i = 0;
    for (int f = 0; f < 3; f++) {
        i = skip_blanks(s, len, i);
        if (f == 0 && (i == len || s[i] == '#'))
            return 0;
        *col = i;
        *why = what[f];
        if (digits(s, len, &i, max[f], &v[f]) != 0 ||
            (i < len && s[i] != ' ' && s[i] != '\t' && s[i] != '\r'))
            return -1;
    }
    if (trailer(s, len, &i, col, why) != 0)
        return -1;
    *e = (struct shim_pidmap_entry){v[0], (pid_t)v[1], (pid_t)v[2]};
    return 1;
}

/* 1 when the reason code (0: host pids known) differs from the last one:
 * each reason is said once until another comes. */
static int first_time(int code)
{
    static _Atomic int last;
    return atomic_exchange(&last, code) != code && code != 0;
}

static void collect(struct want *w)
{
    struct shim_region *r = shim__region();
    uint32_t hw = r ? atomic_load(&r->hiwater) : 0;
    w->n = w->missing = 0;
    for (uint32_t i = 0; i < hw && i < SHIM_SLOTS && w->n < SHIM_HOSTPID_MAX; i++) {
        int32_t pid = atomic_load(&r->slots[i].pid);
        if (pid <= 0)
            continue;
        uint64_t ns = atomic_load(&r->slots[i].ns);
        if (ns == 0) /* being claimed: the pid is published before its namespace */
            continue;
        w->pid[w->n] = pid;
        w->ns[w->n] = ns;
        w->host[w->n] = ns == INIT_PID_NS ? pid : 0;
        w->missing += ns != INIT_PID_NS;
        w->n++;
    }
}

static void match(struct want *w, const struct shim_pidmap_entry *e)
{
    for (int i = 0; i < w->n; i++)
        if (!w->host[i] && w->pid[i] == e->pid && w->ns[i] == e->ns) {
            w->host[i] = e->host;
            w->missing--;
        }
}

/* Feed the map at fd to w line by line: 0, or -1 (logged) when malformed. */
static int scan(struct want *w, int fd, const char *path)
{
    char buf[CHUNK];
    size_t have = 0;
    long line = 0;
    for (int eof = 0; !eof;) {
        ssize_t got = read(fd, buf + have, sizeof(buf) - have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            if (first_time(2))
                shim__log("%s: cannot read (%s): host pids unknown", path, strerror(errno));
            return -1;
        }
        eof = got == 0;
        have += (size_t)got;
        char *start = buf, *nl;
        while ((nl = memchr(start, '\n', have - (size_t)(start - buf))) ||
               (eof && start < buf + have)) {
            size_t len = nl ? (size_t)(nl - start) : have - (size_t)(start - buf);
            struct shim_pidmap_entry e;
            size_t col = 0;
            const char *why = "";
            line++;
            int rc = shim__pidmap_line(start, len, &e, &col, &why);
            if (rc < 0) {
                if (first_time(3))
                    shim__log("%s:%ld:%zu: %s: host pids unknown", path, line, col + 1, why);
                return -1;
            }
            if (rc > 0)
                match(w, &e);
            start += len + (nl != NULL);
        }
        have -= (size_t)(start - buf);
        memmove(buf, start, have);
        if (have == sizeof(buf)) {
            if (first_time(4))
                shim__log("%s:%ld:1: line too long: host pids unknown", path, line + 1);
            return -1;
        }
    }
    return 0;
}

int shim__host_pids(pid_t *host, int max)
{
    struct want w;
    collect(&w);
    const char *path = shim__config()->pid_map;
    if (w.missing) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (first_time(1))
                shim__log("%s: cannot open the pid map (%s): host pids unknown", path,
                          strerror(errno));
            return -1;
        }
        int rc = scan(&w, fd, path);
        close(fd);
        if (rc != 0)
            return -1;
    }
    for (int i = 0; i < w.n; i++)
        if (!w.host[i]) {
            if (first_time(5))
                shim__log("%s: pid %d of pid namespace %llu is not in the pid map: host pids "
                          "unknown",
                          path, (int)w.pid[i], (unsigned long long)w.ns[i]);
            return -1;
        }
    int n = w.n < max ? w.n : max;
    memcpy(host, w.host, (size_t)n * sizeof(*host));
    first_time(0); /* known again: the next failure is said */
    return n;
}
