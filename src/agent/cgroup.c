/*
 * cgroup.c - which Kubernetes container a host process belongs to, from
 * /proc/PID/cgroup: the kernel writes it (a process cannot change what it
 * says, only move itself to a cgroup it can write, and a container's
 * cgroup directories belong to root). One line per hierarchy,
 * "ID:CONTROLLERS:PATH" (cgroup v1: one per controller; v2: "0::PATH").
 * The kubelet's layouts, cgroup v1 and v2 alike:
 *
 *   cgroupfs  /kubepods/burstable/pod<UID>/<CONTAINER-ID>
 *             /kubepods/pod<UID>/<CONTAINER-ID>              (Guaranteed)
 *   systemd   /kubepods.slice/kubepods-burstable.slice/
 *             kubepods-burstable-pod<UID_WITH_UNDERSCORES>.slice/
 *             cri-containerd-<CONTAINER-ID>.scope
 *
 * The pod is the path element naming the pod; the container the element
 * after it, without the runtime's prefix (cri-containerd-, crio-,
 * docker-, containerd-) and ".scope". The UID must be a UUID (lowercase
 * hex, 8-4-4-4-12) and the container ID 1..64 hex digits: the UID names a
 * folder under the kubelet's root, so nothing else may pass. Lines of
 * hierarchies outside any pod (v1 controllers the kubelet does not set per
 * pod) are skipped; two lines naming different containers are malformed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"

static int is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* s[0..n) with sep for '-' is a UUID: copied to out with '-' separators. */
static int take_uid(const char *s, size_t n, char sep, char out[AGENT_POD_UID_MAX])
{
    if (n != 36)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != sep : !is_hex(s[i]))
            return 0;
        out[i] = dash ? '-' : s[i];
    }
    out[n] = '\0';
    return 1;
}

/* The pod UID a path element names ("pod<UID>" or a systemd
 * "kubepods-...-pod<UID_>.slice"), or 0. */
static int pod_element(const char *s, size_t n, char out[AGENT_POD_UID_MAX])
{
    static const char slice[] = ".slice";
    size_t sl = sizeof slice - 1;
    if (n > 3 && memcmp(s, "pod", 3) == 0)
        return take_uid(s + 3, n - 3, '-', out);
    if (n < 9 + sl || memcmp(s, "kubepods-", 9) != 0 || memcmp(s + n - sl, slice, sl) != 0)
        return 0;
    n -= sl;
    size_t dash = n;
    while (dash > 0 && s[dash - 1] != '-')
        dash--;
    if (n - dash < 4 || memcmp(s + dash, "pod", 3) != 0)
        return 0;
    return take_uid(s + dash + 3, n - dash - 3, '_', out);
}

/* The container ID in element s[0..n): runtime prefix and ".scope" off. */
static int ctr_element(const char *s, size_t n, char out[AGENT_CTR_ID_MAX])
{
    static const char *const prefixes[] = {"cri-containerd-", "crio-", "docker-", "containerd-"};
    if (n > 6 && memcmp(s + n - 6, ".scope", 6) == 0)
        n -= 6;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t pl = strlen(prefixes[i]);
        if (n > pl && memcmp(s, prefixes[i], pl) == 0) {
            s += pl;
            n -= pl;
            break;
        }
    }
    if (n == 0 || n >= AGENT_CTR_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_hex(s[i]))
            return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    return 1;
}

/* One line's path: 1 and *id when it names a container of a pod, 0 when
 * it names none, -1 when it names a pod but no valid container. */
static int parse_path(const char *p, size_t n, struct agent__ctr_id *id)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == '/')
            i++;
        size_t e = i;
        while (e < n && p[e] != '/')
            e++;
        if (e > i && pod_element(p + i, e - i, id->pod)) {
            size_t c = e + (e < n);
            size_t ce = c;
            while (ce < n && p[ce] != '/')
                ce++;
            return ce > c && ctr_element(p + c, ce - c, id->ctr) ? 1 : -1;
        }
        i = e;
    }
    return 0;
}

int agent__cgroup_parse(const char *text, size_t len, struct agent__ctr_id *out, char *why,
                        size_t cap)
{
    int found = 0;
    memset(out, 0, sizeof *out);
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        const char *c1 = memchr(text + pos, ':', end - pos);
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(text + end - c1 - 1)) : NULL;
        struct agent__ctr_id id;
        memset(&id, 0, sizeof id); /* compared whole: no stray bytes after the NULs */
        int r = c2 ? parse_path(c2 + 1, (size_t)(text + end - c2 - 1), &id) : 0;
        if (!c2 && end > pos)
            return snprintf(why, cap, "a line without ID:CONTROLLERS:PATH"), -1;
        if (r < 0)
            return snprintf(why, cap, "a pod's cgroup without a container ID"), -1;
        if (r > 0 && found && memcmp(&id, out, sizeof id) != 0)
            return snprintf(why, cap, "hierarchies name different containers"), -1;
        if (r > 0 && !found)
            *out = id;
        found |= r > 0;
        pos = end + 1;
    }
    return found;
}

int agent__cgroup_of(unsigned int pid, struct agent__ctr_id *out, char *why, size_t cap)
{
    char path[64], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "/proc/%u/cgroup", pid);
    int r = agent__read_at(AT_FDCWD, path, 0, AGENT_CGROUP_MAX, &text, &len);
    if (r == ENOENT || r == ESRCH)
        return -2; /* gone between NVML's answer and now */
    if (r != 0)
        return snprintf(why, cap, "%s: %s", path, strerror(r)), -1;
    r = agent__cgroup_parse(text, len, out, why, cap);
    free(text);
    return r;
}
