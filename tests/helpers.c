/*
 * helpers.c - see helpers.h.
 */
#include "helpers.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *th_src_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("TESSERA_SRC");
    snprintf(buf, sizeof(buf), "%s/%s", root ? root : ".", rel);
    return buf;
}

static void run_rest(struct th_job *j, int solver)
{
    if (j->st == TS_OK)
        j->st = decide_run(j->model, j->cat, &j->d, &j->diag);
    struct plan_options opt = {solver, 20.0};
    if (j->st == TS_OK)
        j->st = plan_build(j->model, j->cat, j->d, &opt, &j->plan, &j->diag);
}

void th_run_text(struct th_job *j, const char *yaml, int solver)
{
    memset(j, 0, sizeof(*j));
    j->st = cat_load(NULL, 0, &j->cat, &j->diag);
    if (j->st == TS_OK)
        j->st = spec_load_text(yaml, strlen(yaml), "test.yaml", &j->model, &j->diag);
    run_rest(j, solver);
}

void th_run_file(struct th_job *j, const char *path, int solver)
{
    memset(j, 0, sizeof(*j));
    j->st = cat_load(NULL, 0, &j->cat, &j->diag);
    if (j->st == TS_OK)
        j->st = spec_load(&path, 1, &j->model, &j->diag);
    run_rest(j, solver);
}

void th_free(struct th_job *j)
{
    plan_free(j->plan);
    decide_free(j->d);
    spec_model_free(j->model);
    cat_free(j->cat);
    memset(j, 0, sizeof(*j));
}

const char *th_first_error(const struct th_job *j)
{
    static char buf[2048];
    if (j->diag.count == 0)
        return "";
    ts_error_format(&j->diag.items[0], buf, sizeof(buf));
    return buf;
}

const struct decide_row *th_row(const struct th_job *j, const char *tenant, const char *workload)
{
    for (size_t i = 0; j->d && i < j->d->nrows; i++)
        if (strcmp(j->d->rows[i].tenant->name, tenant) == 0 &&
            strcmp(j->d->rows[i].workload->name, workload) == 0)
            return &j->d->rows[i];
    return NULL;
}

int th_tmpdir_make(char *dir, size_t size, const char *name)
{
    snprintf(dir, size, "/tmp/tessera-%s-XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

int th_tmpdir_remove(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}
