/*
 * summary.c - what a render wrote, in a few numbers (render.h): objects by
 * kind, files per top-level folder, and what changed against the tree that
 * is in the output folder now (read before render_write replaces it).
 */
#include "render/render.h"

#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "util/file.h"
#include "util/limits.h"

/* Count one object of kind (a line "kind: X" at the start of a document). */
static void count_kind(struct render_summary *s, const char *kind, size_t len)
{
    if (len >= sizeof(s->kinds[0].kind))
        len = sizeof(s->kinds[0].kind) - 1;
    for (size_t i = 0; i < s->nkinds; i++)
        if (strlen(s->kinds[i].kind) == len && !strncmp(s->kinds[i].kind, kind, len)) {
            s->kinds[i].n++;
            return;
        }
    if (s->nkinds == RENDER_SUMMARY_KINDS) {
        s->other++;
        return;
    }
    memcpy(s->kinds[s->nkinds].kind, kind, len);
    s->kinds[s->nkinds].kind[len] = '\0';
    s->kinds[s->nkinds++].n = 1;
}

static void count_kinds(struct render_summary *s, const char *text, size_t len)
{
    for (const char *p = text, *end = text + len; p && p < end;) {
        if (!strncmp(p, "kind: ", 6))
            count_kind(s, p + 6, strcspn(p + 6, "\n"));
        p = memchr(p, '\n', (size_t)(end - p));
        p = p ? p + 1 : NULL;
    }
}

/* The top-level folder of path (its first component) into s->folders. */
static void count_folder(struct render_summary *s, const char *path)
{
    size_t len = strcspn(path, "/");
    if (!path[len])
        return; /* a file at the top */
    const char *rest = path + len + 1;
    int sub = strchr(rest, '/') != NULL;
    for (size_t i = 0; i < s->nfolders; i++)
        if (strlen(s->folders[i].name) == len && !strncmp(s->folders[i].name, path, len)) {
            s->folders[i].files++;
            return;
        }
    if (s->nfolders == RENDER_SUMMARY_FOLDERS || len >= sizeof(s->folders[0].name))
        return;
    memcpy(s->folders[s->nfolders].name, path, len);
    s->folders[s->nfolders].name[len] = '\0';
    s->folders[s->nfolders].sub = sub;
    s->folders[s->nfolders++].files = 1;
}

/* The subfolders of each top-level folder (tenants/a, tenants/b: 2). */
static void count_subfolders(struct render_summary *s, const struct render_tree *t)
{
    for (size_t f = 0; f < s->nfolders; f++) {
        size_t len = strlen(s->folders[f].name);
        for (size_t i = 0; i < t->nfiles; i++) {
            const char *p = t->files[i].path;
            if (strncmp(p, s->folders[f].name, len) || p[len] != '/' || !strchr(p + len + 1, '/'))
                continue;
            size_t sl = strcspn(p + len + 1, "/");
            int seen = 0;
            for (size_t j = 0; j < i && !seen; j++)
                seen = !strncmp(t->files[j].path, p, len + 1 + sl) &&
                       t->files[j].path[len + 1 + sl] == '/';
            s->folders[f].subfolders += !seen;
        }
    }
}

/* ---- against the tree on disk ---- */

static const struct render_tree *walk_tree;
static const char *walk_root;
static int walk_removed;

static int in_tree(const char *rel)
{
    for (size_t i = 0; i < walk_tree->nfiles; i++)
        if (!strcmp(walk_tree->files[i].path, rel))
            return 1;
    return 0;
}

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    const char *rel = path + strlen(walk_root);
    rel += *rel == '/';
    if (type == FTW_F && strcmp(rel, ".tessera-render") && !in_tree(rel))
        walk_removed++;
    return 0;
}

static void compare(struct render_summary *s, const struct render_tree *t, const char *dir)
{
    for (size_t i = 0; i < t->nfiles; i++) {
        char path[4096];
        char *old = NULL;
        size_t len = 0;
        struct ts_error e;
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, t->files[i].path);
        if (stat(path, &st) != 0)
            s->added++;
        else if (ts_file_read(path, RENDER_FILE_MAX, &old, &len, &e) != TS_OK)
            s->changed++; /* larger than render writes, or unreadable */
        else if (len != t->files[i].body.len || memcmp(old, t->files[i].body.data, len))
            s->changed++;
        else
            s->unchanged++;
        free(old);
    }
    walk_tree = t, walk_root = dir, walk_removed = 0;
    nftw(dir, walk_one, 16, FTW_PHYS);
    s->removed = walk_removed;
}

static int by_kind(const void *a, const void *b)
{
    return strcmp(a, b); /* kind[] is the first member */
}

void render_summarize(const struct render_tree *t, const char *dir, struct render_summary *s)
{
    memset(s, 0, sizeof(*s));
    s->files = t->nfiles;
    for (size_t i = 0; i < t->nfiles; i++) {
        count_kinds(s, t->files[i].body.data ? t->files[i].body.data : "", t->files[i].body.len);
        count_folder(s, t->files[i].path);
    }
    count_subfolders(s, t);
    qsort(s->kinds, s->nkinds, sizeof(s->kinds[0]), by_kind);
    struct stat st;
    s->first = stat(dir, &st) != 0;
    if (!s->first)
        compare(s, t, dir);
}
