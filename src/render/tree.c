/*
 * tree.c - the rendered tree: files in memory, objects to YAML documents,
 * the kustomization files, and writing it all to disk safely.
 *
 * Writing: the new tree goes to DIR.tmp-<random> (made exclusively, so a
 * link planted beside DIR is never followed) first; a file whose bytes
 * equal the old tree's is hard-linked from the old tree (same inode and
 * mtime, so `make`, rsync and git see nothing new); then DIR is swapped
 * with two renames. A crash before the swap leaves DIR as it was. DIR
 * holds a manifest (.tessera-render) of the files tessera wrote; any other
 * file in DIR makes render_write refuse unless forced.
 */
#include "render/render.h"
#include "util/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "entitle/entitle.h"
#include "render/yaml.h"
#include "util/file.h"
#include "util/limits.h"

#define MANIFEST ".tessera-render"

const char *const render_api_names[] = {"dra", "device-plugin", "both", NULL};

struct render_file *render__file(struct render_tree *t, const char *fmt, ...)
{
    if (!ts_grow((void **)&t->files, &t->cap, t->nfiles, sizeof(*t->files)))
        return NULL;
    struct render_file *f = &t->files[t->nfiles];
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&f->path, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    ts_sbuf_init(&f->body, RENDER_FILE_MAX);
    f->executable = 0;
    t->nfiles++;
    return f;
}

void render_tree_free(struct render_tree *t)
{
    for (size_t i = 0; i < t->nfiles; i++) {
        free(t->files[i].path);
        ts_sbuf_release(&t->files[i].body);
    }
    free(t->files);
    memset(t, 0, sizeof(*t));
}

json_t *render__object(const char *api_version, const char *kind, const char *name, const char *ns)
{
    json_t *meta = json_pack("{s:s, s:{s:s}}", "name", name, "labels",
                             "app.kubernetes.io/managed-by", "tessera");
    if (ns)
        json_object_set_new(meta, "namespace", json_string(ns));
    return json_pack("{s:s, s:s, s:o}", "apiVersion", api_version, "kind", kind, "metadata", meta);
}

static const char *obj_str(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    v = b ? json_object_get(v, b) : v;
    return json_is_string(v) ? json_string_value(v) : "";
}

static int cmp_objects(const void *x, const void *y)
{
    const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
    int c = strcmp(obj_str(a, "kind", NULL), obj_str(b, "kind", NULL));
    if (!c)
        c = strcmp(obj_str(a, "metadata", "namespace"), obj_str(b, "metadata", "namespace"));
    return c ? c : strcmp(obj_str(a, "metadata", "name"), obj_str(b, "metadata", "name"));
}

ts_status render__docs(struct render_file *f, json_t *objects)
{
    size_t n = json_array_size(objects);
    json_t **sorted = malloc((n + 1) * sizeof(*sorted));
    ts_status st = sorted ? TS_OK : TS_NOMEM;
    for (size_t i = 0; st == TS_OK && i < n; i++)
        sorted[i] = json_array_get(objects, i);
    if (st == TS_OK)
        qsort(sorted, n, sizeof(*sorted), cmp_objects);
    for (size_t i = 0; st == TS_OK && i < n; i++)
        st = render_yaml_doc(sorted[i], f->body.len == 0, &f->body);
    free(sorted);
    json_decref(objects);
    return st;
}

/* ---- writing ---- */

static int mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

static int same_bytes(const char *path, const struct ts_sbuf *body)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int same = 1;
    size_t off = 0;
    char buf[8192];
    for (size_t n; same && (n = fread(buf, 1, sizeof(buf), f)) > 0; off += n)
        same = off + n <= body->len && memcmp(buf, ts_sbuf_str(body) + off, n) == 0;
    fclose(f);
    return same && off == body->len;
}

/* write() until done: a short write (file size limit, full disk) is retried
 * so that the failing call sets errno. */
static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static ts_status write_one(const char *root, const char *old, const struct render_file *f,
                           struct ts_error *err)
{
    char path[4096], dir[4096], prev[4096];
    snprintf(path, sizeof(path), "%s/%s", root, f->path);
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    if (mkdirs(dir))
        return ts_err(err, TS_IO, "%s: cannot create: %s", dir, strerror(errno));
    snprintf(prev, sizeof(prev), "%s/%s", old, f->path);
    if (old[0] && same_bytes(prev, &f->body) && link(prev, path) == 0)
        return TS_OK;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, f->executable ? 0755 : 0644);
    if (fd < 0)
        return ts_err(err, TS_IO, "%s: cannot create: %s", path, strerror(errno));
    int ok = write_all(fd, ts_sbuf_str(&f->body), f->body.len) == 0 && fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    return ok ? TS_OK : ts_err(err, TS_IO, "%s: cannot write: %s", path, strerror(e));
}

/* Is every file under dir one that tessera wrote (listed in its manifest)? */
static int foreign_file(const char *dir, const char *rel, const char *manifest, char *found,
                        size_t size)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s%s%s", dir, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int bad = 0;
    for (struct dirent *e; !bad && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[4096], line[4200];
        snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        if (e->d_type == DT_DIR) {
            bad = foreign_file(dir, sub, manifest, found, size);
            continue;
        }
        snprintf(line, sizeof(line), "\n%s\n", sub);
        if (strcmp(sub, MANIFEST) != 0 && !strstr(manifest, line)) {
            snprintf(found, size, "%s", sub);
            bad = 1;
        }
    }
    closedir(d);
    return bad;
}

static char *read_manifest(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, MANIFEST);
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, RENDER_MANIFEST_MAX);
    if (buf)
        buf[0] = '\n';
    if (f && buf)
        buf[1 + fread(buf + 1, 1, RENDER_MANIFEST_MAX - 2, f)] = '\0';
    if (f)
        fclose(f);
    return buf;
}

static ts_status check_target(const char *dir, int force, struct ts_error *err)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? TS_OK : ts_err(err, TS_IO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return ts_err(err, TS_USAGE, "%s exists and is not a folder", dir);
    char *manifest = read_manifest(dir), found[4096] = "";
    if (!manifest)
        return ts_err(err, TS_NOMEM, "out of memory");
    int bad = foreign_file(dir, "", manifest, found, sizeof(found));
    free(manifest);
    if (bad && !force)
        return ts_err(err, TS_USAGE,
                      "%s holds files tessera did not write (%s); use --force to "
                      "replace the folder, or pick another",
                      dir, found);
    return TS_OK;
}

static void remove_tree(const char *path)
{
    struct stat st;
    DIR *d = lstat(path, &st) == 0 && S_ISDIR(st.st_mode) ? opendir(path) : NULL;
    if (!d) { /* a link is removed, never followed */
        unlink(path);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[4096];
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

static ts_status write_manifest(const struct render_tree *t, const char *root, const char *old,
                                struct ts_error *err)
{
    struct render_file m = {.path = MANIFEST};
    ts_sbuf_init(&m.body, RENDER_FILE_MAX);
    ts_sbuf_puts(&m.body, "# files written by tessera render; others make it refuse\n");
    for (size_t i = 0; i < t->nfiles; i++)
        ts_sbuf_printf(&m.body, "%s\n", t->files[i].path);
    ts_status st = write_one(root, old, &m, err);
    ts_sbuf_release(&m.body);
    return st;
}

/* The folders above dir (as mkdir -p), then tmp and old beside dir at random
 * names made exclusively: a link planted there is never followed. old is an
 * empty placeholder that the rename moving dir aside replaces. */
static ts_status make_staging(const char *dir, char *tmp, char *old, size_t size,
                              struct ts_error *err)
{
    snprintf(tmp, size, "%s", dir);
    char *slash = strrchr(tmp, '/');
    if (slash && slash != tmp && (*slash = '\0', mkdirs(tmp)))
        return ts_err(err, TS_IO, "%s: cannot create: %s", tmp, strerror(errno));
    snprintf(tmp, size, "%s.tmp-XXXXXXXX", dir);
    snprintf(old, size, "%s.old-XXXXXXXX", dir);
    if (ts_file_mkdir_temp(tmp, 0755) != 0)
        return ts_err(err, TS_IO, "%s: cannot create: %s", tmp, strerror(errno));
    if (ts_file_mkdir_temp(old, 0700) == 0)
        return TS_OK;
    ts_status st = ts_err(err, TS_IO, "%s: cannot create: %s", old, strerror(errno));
    rmdir(tmp);
    return st;
}

ts_status render_write(const struct render_tree *t, const char *dir, int force,
                       struct ts_error *err)
{
    ts_status st = check_target(dir, force, err);
    if (st)
        return st;
    char tmp[4096], old[4096];
    if ((st = make_staging(dir, tmp, old, sizeof(tmp), err)) != TS_OK)
        return st;
    struct stat sb;
    const char *prev = stat(dir, &sb) == 0 ? dir : "";
    for (size_t i = 0; st == TS_OK && i < t->nfiles; i++)
        st = write_one(tmp, prev, &t->files[i], err);
    if (st == TS_OK)
        st = write_manifest(t, tmp, prev, err);
    if (st == TS_OK && prev[0] && rename(dir, old) != 0)
        st = ts_err(err, TS_IO, "%s: cannot move aside: %s", dir, strerror(errno));
    if (st == TS_OK && rename(tmp, dir) != 0) {
        st = ts_err(err, TS_IO, "%s: cannot rename into place: %s", dir, strerror(errno));
        if (prev[0])
            rename(old, dir);
    }
    remove_tree(st == TS_OK ? old : tmp);
    rmdir(old); /* still the empty placeholder when nothing was moved aside */
    return st;
}
