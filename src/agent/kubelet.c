/*
 * kubelet.c - a pod's limit file as the kubelet holds it on the host, for
 * the enforcement (enforce.c). The kubelet writes each configMap volume of
 * a pod under
 *
 *   ROOT/pods/<POD-UID>/volumes/kubernetes.io~configmap/<VOLUME>/
 *       ..2024_05_01_10_00_00.123456789/cuda-limits   the data
 *       ..data -> ..2024_05_01_10_00_00.123456789     swapped atomically
 *       cuda-limits -> ..data/cuda-limits
 *
 * (its atomic writer). The limit file is the key cuda-limits
 * (ENTITLE_SHIM_LIMITS_KEY) of the workload's ConfigMap, which the webhook
 * holds to what the plan renders (rule shim/limits) and requires in every
 * pod of a shimmed workload (rule shim/missing): the plan's limit, out of
 * the tenant's reach. The volume's name is the pod's choice, so every
 * configMap volume is looked at (at most AGENT_POD_VOLUMES_MAX) and the
 * strictest limit wins: a tenant can add a file, never loosen the one the
 * webhook put there.
 *
 * Hostile-input safe: the pod UID is a UUID (cgroup.c) before it names a
 * folder; every element below ROOT is opened with O_NOFOLLOW, and the two
 * links of the atomic writer are read with readlinkat and must have its
 * shape ("..data/cuda-limits", "..<one element>"), so nothing is read
 * outside the volume; the file must be a regular file of at most
 * SHIM_LIMITS_FILE_MAX bytes and is parsed by the shim's own parser
 * (limitfile.c). ROOT itself is the operator's (--kubelet-root) and may be
 * a link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent/internal.h"

#define LIMITS_KEY "cuda-limits" /* ENTITLE_SHIM_LIMITS_KEY */
#define LINK_TARGET "..data/" LIMITS_KEY

int agent__read_at(int dirfd, const char *name, int flags, size_t max, char **out, size_t *len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
    struct stat sb;
    *out = NULL;
    if (fd < 0)
        return errno;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return EINVAL;
    }
    char *buf = malloc(max + 2);
    size_t n = 0;
    ssize_t r = 1;
    while (buf && n <= max && (r = read(fd, buf + n, max + 1 - n)) > 0)
        n += (size_t)r;
    int e = !buf ? ENOMEM : r < 0 ? errno : n > max ? EFBIG : 0;
    close(fd);
    if (e) {
        free(buf);
        return e;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* openat(dir, name) as a folder, not following a link. */
static int sub_dir(int dir, const char *name)
{
    return openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The link name in vol read into buf: 0, or -1 (why set). */
static int link_of(int vol, const char *name, char *buf, size_t cap, char *why, size_t wcap)
{
    ssize_t n = readlinkat(vol, name, buf, cap - 1);
    if (n < 0)
        return snprintf(why, wcap, "%s: %s", name, strerror(errno)), -1;
    buf[n] = '\0';
    return 0;
}

/* The file cuda-limits of volume folder vol: 0 none, 1 read into *text,
 * -1 something the kubelet never makes or that cannot be read (why). */
static int read_volume(int vol, char **text, size_t *len, char *why, size_t cap)
{
    struct stat sb;
    if (fstatat(vol, LIMITS_KEY, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : (snprintf(why, cap, "%s", strerror(errno)), -1);
    int r = EINVAL, data = -1;
    char target[256];
    if (S_ISREG(sb.st_mode))
        r = agent__read_at(vol, LIMITS_KEY, O_NOFOLLOW, SHIM_LIMITS_FILE_MAX, text, len);
    else if (!S_ISLNK(sb.st_mode))
        return snprintf(why, cap, "not a file"), -1;
    else if (link_of(vol, LIMITS_KEY, target, sizeof target, why, cap) != 0)
        return -1;
    else if (strcmp(target, LINK_TARGET) != 0)
        return snprintf(why, cap, "a link to '%.200s', not to " LINK_TARGET, target), -1;
    else if (link_of(vol, "..data", target, sizeof target, why, cap) != 0)
        return -1;
    else if (strncmp(target, "..", 2) != 0 || strchr(target, '/') || !target[2])
        return snprintf(why, cap, "..data links to '%.200s', not to a folder beside it", target),
               -1;
    else if ((data = sub_dir(vol, target)) < 0)
        return snprintf(why, cap, "%.200s: %s", target, strerror(errno)), -1;
    else
        r = agent__read_at(data, LIMITS_KEY, O_NOFOLLOW, SHIM_LIMITS_FILE_MAX, text, len);
    if (data >= 0)
        close(data);
    if (r == EFBIG)
        return snprintf(why, cap, "larger than %d bytes", SHIM_LIMITS_FILE_MAX), -1;
    if (r != 0)
        return snprintf(why, cap, "%s", r == EINVAL ? "not a regular file" : strerror(r)), -1;
    return 1;
}

/* Parse one volume's file into out, keeping the strictest. */
static void take(struct agent__pod_limits *out, const char *vol, const char *text, size_t len)
{
    struct shim_limits l;
    struct shim_limits_error e = {0};
    if (shim_limits_parse(text, len, &l, &e) != 0) {
        out->state = AGENT__LIM_BAD;
        snprintf(out->why, sizeof out->why, "%.200s/%s:%d:%d: %.250s", vol, LIMITS_KEY, e.line,
                 e.column, e.msg);
        return;
    }
    int stricter = out->state != AGENT__LIM_OK ||
                   (l.has_memory &&
                    (!out->lim.has_memory || l.memory_bytes < out->lim.memory_bytes));
    if (out->state != AGENT__LIM_BAD && stricter) {
        out->lim = l;
        out->state = AGENT__LIM_OK;
        snprintf(out->volume, sizeof out->volume, "%s", vol);
    }
}

/* Every configMap volume of the pod whose folder is vols. */
static void scan_volumes(int vols, struct agent__pod_limits *out)
{
    DIR *d = fdopendir(vols);
    struct dirent *de;
    int seen = 0;
    if (!d) {
        close(vols);
        return;
    }
    while ((de = readdir(d)) != NULL && out->state != AGENT__LIM_BAD) {
        if (de->d_name[0] == '.')
            continue;
        if (++seen > AGENT_POD_VOLUMES_MAX) {
            out->truncated = 1;
            break;
        }
        int vol = sub_dir(dirfd(d), de->d_name);
        char *text = NULL, why[TS_MSG_MAX] = "";
        size_t len = 0;
        int r = vol < 0 ? 0 : read_volume(vol, &text, &len, why, sizeof why);
        if (r > 0)
            take(out, de->d_name, text, len);
        if (r < 0) {
            out->state = AGENT__LIM_BAD;
            snprintf(out->why, sizeof out->why, "%.200s/%s: %.250s", de->d_name, LIMITS_KEY, why);
        }
        free(text);
        if (vol >= 0)
            close(vol);
    }
    closedir(d);
}

void agent__pod_limits_read(const char *root, const char *pod_uid, struct agent__pod_limits *out)
{
    static const char *const path[] = {"pods", NULL, "volumes", "kubernetes.io~configmap"};
    memset(out, 0, sizeof *out);
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        out->state = AGENT__LIM_UNREADABLE;
        snprintf(out->why, sizeof out->why, "%.400s: %s", root, strerror(errno));
        return;
    }
    for (size_t i = 0; i < sizeof path / sizeof path[0]; i++) {
        int next = sub_dir(fd, path[i] ? path[i] : pod_uid);
        int e = errno;
        close(fd);
        fd = next;
        if (fd >= 0)
            continue;
        /* no configMap volumes: no limit file; anything else: unknown */
        out->state = e == ENOENT && i >= 2 ? AGENT__LIM_NONE : AGENT__LIM_UNREADABLE;
        snprintf(out->why, sizeof out->why, "%.300s/pods/%s%s: %s", root, pod_uid,
                 i > 1 ? "/volumes/kubernetes.io~configmap" : "", strerror(e));
        return;
    }
    scan_volumes(fd, out);
}
