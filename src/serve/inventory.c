/*
 * inventory.c - serve --inventory PATH: the NodeInventory documents the node
 * agents wrote (one file, or every *.json file of a folder, in name order),
 * so /api/v1/plan can give each card and MIG instance its UUID by node,
 * index and placement (api/custody.c).
 */
#include "serve/internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int json_entry(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* The nfiles files of names (in folder dir, or path itself when dir is
 * NULL) into *inv. */
static ts_status load_files(const char *dir, struct dirent **names, int nfiles, const char *path,
                            struct serve_inventory *inv, struct ts_error *e)
{
    if (nfiles > SERVE_INVENTORY_FILES_MAX)
        return ts_err(e, TS_TOO_LARGE, "%s: more than %d NodeInventory files (%s)", path,
                      SERVE_INVENTORY_FILES_MAX, "SERVE_INVENTORY_FILES_MAX");
    inv->node = calloc(nfiles ? (size_t)nfiles : 1, sizeof(*inv->node));
    if (!inv->node)
        return ts_err(e, TS_NOMEM, "%s: out of memory", path);
    ts_status st = TS_OK;
    for (int i = 0; st == TS_OK && i < nfiles; i++) {
        char file[TS_PATH_MAX];
        if (dir &&
            snprintf(file, sizeof(file), "%s/%s", dir, names[i]->d_name) >= (int)sizeof(file))
            st = ts_err(e, TS_TOO_LARGE, "%s/%s: path too long", dir, names[i]->d_name);
        else
            st = inv_load(dir ? file : path, &inv->node[inv->n++], e);
    }
    return st;
}

ts_status serve__inventory_load(const char *path, struct serve_inventory *inv, struct ts_error *e)
{
    struct stat sb;
    memset(inv, 0, sizeof(*inv));
    if (stat(path, &sb) != 0)
        return ts_err(e, errno == ENOENT ? TS_NOT_FOUND : TS_IO, "%s: %s", path, strerror(errno));
    struct dirent **names = NULL;
    int n = S_ISDIR(sb.st_mode) ? scandir(path, &names, json_entry, alphasort) : 1;
    ts_status st = n < 0 ? ts_err(e, TS_IO, "%s: %s", path, strerror(errno))
                         : load_files(S_ISDIR(sb.st_mode) ? path : NULL, names, n, path, inv, e);
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    if (st != TS_OK)
        serve__inventory_free(inv);
    return st;
}

void serve__inventory_free(struct serve_inventory *inv)
{
    free(inv->node);
    memset(inv, 0, sizeof(*inv));
}
