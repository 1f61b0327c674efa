/*
 * cmd_catalog.c - `tessera catalog list|show|import`.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/import.h"
#include "cli/cli.h"
#include "util/file.h"

enum { LIST = 1, SHOW = 2, IMPORT = 4 };

static const struct cli_opt OPTS[] = {
    CLI_LONG('c', "catalog", "FILE", LIST | SHOW, "extra GpuModel documents to list or show"),
    CLI_LONG('n', "name", "NAME", IMPORT,
             "the model's catalog key (default: from the product name)"),
    CLI_LONG('g', "gpu", "INDEX", IMPORT,
             "the GPU whose tables to use when the output covers\n"
             "several (default: the first seen)"),
    CLI_END};

const struct cli_verb cli_verb_catalog = {
    "catalog",
    "usage: tessera catalog list [--catalog FILE]\n"
    "       tessera catalog show MODEL [--catalog FILE]\n"
    "       tessera catalog import FILE... [--name NAME] [--gpu INDEX]\n\n"
    "list    every GPU model tessera knows (built in, plus --catalog files)\n"
    "show    one model's MIG profiles: ID, slices, memory, max count, placements\n"
    "import  read real nvidia-smi output (-L, mig -lgip, mig -lgipp) and print a\n"
    "        GpuModel document for 'tessera plan --catalog FILE'\n",
    OPTS,
    NULL,
    "list show import",
    CLI_ALL};

struct catalog_args {
    struct cli_files catalog;
    const char *name;
    int gpu;
};

static int set(void *ctx, int key, const char *arg)
{
    struct catalog_args *a = ctx;
    char *end;
    switch (key) {
    case 'c': return cli_files_add(&a->catalog, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'n': a->name = arg; return CLI_OK;
    case 'g':
        a->gpu = (int)strtol(arg, &end, 10);
        if (!*end && a->gpu >= 0 && a->gpu <= 1024)
            return CLI_OK;
        fprintf(stderr, "tessera: --gpu must be a GPU index\n");
        return CLI_BAD_INPUT;
    default: return CLI_BAD_INPUT;
    }
}

static int load(const struct cli_files *catalog, struct cat_catalog **cat)
{
    struct ts_diag diag = {0};
    ts_status st = cat_load(catalog->paths, catalog->n, cat, &diag);
    cli_print_diag(&diag);
    return cli_exit(st, CLI_READING);
}

static int list(const struct cat_catalog *cat)
{
    printf("%-18s %-34s %9s %-4s %4s %8s\n", "NAME", "DISPLAY NAME", "MEMORY", "MIG", "GRID",
           "PROFILES");
    for (size_t i = 0; i < cat->nmodels; i++) {
        const struct cat_model *m = &cat->models[i];
        printf("%-18s %-34s %5.1f GiB %-4s %4d %8zu\n", m->name, m->display, m->memory_gib,
               m->mig ? "yes" : "no", m->grid, m->nprofiles);
    }
    return CLI_OK;
}

static int show(const struct cat_catalog *cat, const char *name)
{
    const struct cat_model *m = cat_model_find(cat, name);
    if (!m) {
        fprintf(stderr, "tessera: no GPU model '%s' (see tessera catalog list)\n", name);
        return CLI_BAD_INPUT;
    }
    printf("%s (%s): %.1f GiB, %d SMs, %s, %s\n", m->name, m->display, m->memory_gib, m->sms,
           m->arch, m->mig ? "MIG" : "no MIG");
    if (!m->mig)
        return CLI_OK;
    printf("grid %d units, %d compute slices\n%-16s %3s %7s %5s %9s %4s %4s  %s\n", m->grid,
           m->compute_slices, "PROFILE", "ID", "COMPUTE", "UNITS", "MEMORY", "SMS", "MAX",
           "PLACEMENTS");
    for (size_t i = 0; i < m->nprofiles; i++) {
        const struct cat_profile *p = &m->profiles[i];
        printf("%-16s %3d %7d %5d %5.2f GiB %4d %4d  {", p->name, p->id, p->compute, p->mem_units,
               p->memory_gib, p->sms, p->max_count);
        for (size_t s = 0; s < p->nstarts; s++)
            printf("%s%d", s ? "," : "", p->starts[s]);
        printf("}:%d\n", p->mem_units);
    }
    return CLI_OK;
}

static int import(int argc, char **argv, const char *name, int gpu)
{
    struct cat_import *im = cat_import_new();
    if (!im)
        return CLI_FAIL;
    int rc = CLI_OK;
    for (int i = 0; i < argc && rc == CLI_OK; i++) {
        char *text = NULL;
        size_t len = 0;
        struct ts_error e;
        if (ts_file_read(argv[i], TS_INPUT_MAX, &text, &len, &e) != TS_OK ||
            cat_import_add(im, text, len, argv[i], &e) != TS_OK)
            rc = cli_fail(&e, CLI_READING);
        free(text);
    }
    struct ts_sbuf out;
    ts_sbuf_init(&out, CLI_ENTRY_MAX);
    struct ts_error e;
    if (rc == CLI_OK && cat_import_finish(im, name, gpu, &out, &e) != TS_OK)
        rc = cli_fail(&e, CLI_READING);
    if (rc == CLI_OK)
        rc = cli_write("-", out.data, out.len);
    ts_sbuf_release(&out);
    cat_import_free(im);
    return rc;
}

/* The subcommand of word, 0 when none. */
static unsigned sub_of(const char *word)
{
    static const char *const names[] = {"list", "show", "import"};
    for (unsigned i = 0; i < 3; i++)
        if (strcmp(word, names[i]) == 0)
            return 1u << i;
    return 0;
}

static int run(unsigned sub, int argc, char **argv, const struct catalog_args *a)
{
    if (sub == IMPORT && argc > 0)
        return import(argc, argv, a->name, a->gpu);
    if ((sub == LIST && argc != 0) || (sub == SHOW && argc != 1) || sub == IMPORT) {
        fprintf(stderr, "tessera: catalog: %s\n",
                sub == LIST   ? "list takes no arguments"
                : sub == SHOW ? "show takes one MODEL (see tessera catalog list)"
                              : "import needs at least one FILE");
        cli_usage(&cli_verb_catalog, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    struct cat_catalog *cat = NULL;
    int rc = load(&a->catalog, &cat);
    if (rc == CLI_OK)
        rc = sub == LIST ? list(cat) : show(cat, argv[0]);
    cat_free(cat);
    return rc;
}

int cmd_catalog(int argc, char **argv)
{
    const char *word = argc > 1 ? argv[1] : "";
    unsigned sub = sub_of(word);
    if (!strcmp(word, "--help") || !strcmp(word, "-h"))
        return cli_help(&cli_verb_catalog, CLI_ALL);
    if (!sub) {
        if (*word)
            fprintf(stderr, "tessera: catalog: unknown subcommand '%s'\n", word);
        else
            fprintf(stderr, "tessera: catalog: missing subcommand (list, show or import)\n");
        cli_usage(&cli_verb_catalog, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    struct catalog_args a = {.gpu = -1};
    int rc = cli_parse(&cli_verb_catalog, sub, argc - 1, argv + 1, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_catalog, sub) : rc;
    return run(sub, argc - 1 - optind, argv + 1 + optind, &a);
}
