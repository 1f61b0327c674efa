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

static void catalog_usage(FILE *out)
{
    fprintf(out,
            "usage: tessera catalog list [--catalog FILE]\n"
            "       tessera catalog show MODEL [--catalog FILE]\n"
            "       tessera catalog import FILE... [--name NAME] [--gpu INDEX]\n\n"
            "list    every GPU model tessera knows (built in, plus --catalog files)\n"
            "show    one model's MIG profiles: ID, slices, memory, max count, placements\n"
            "import  read real nvidia-smi output (-L, mig -lgip, mig -lgipp) and print a\n"
            "        GpuModel document for 'tessera plan --catalog FILE'\n");
}

static int load(const struct cli_files *catalog, struct cat_catalog **cat)
{
    struct ts_diag diag = {0};
    if (cat_load(catalog->paths, catalog->n, cat, &diag) != TS_OK) {
        cli_print_diag(&diag);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
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
            cat_import_add(im, text, len, argv[i], &e) != TS_OK) {
            cli_print_error(&e);
            rc = CLI_BAD_INPUT;
        }
        free(text);
    }
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1u << 20);
    struct ts_error e;
    if (rc == CLI_OK && cat_import_finish(im, name, gpu, &out, &e) != TS_OK) {
        cli_print_error(&e);
        rc = CLI_BAD_INPUT;
    }
    if (rc == CLI_OK)
        rc = cli_write("-", out.data, out.len);
    ts_sbuf_release(&out);
    cat_import_free(im);
    return rc;
}

int cmd_catalog(int argc, char **argv)
{
    static const struct option opts[] = {{"catalog", required_argument, NULL, 'c'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"gpu", required_argument, NULL, 'g'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct cli_files catalog = {0};
    const char *name = NULL;
    int gpu = -1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'c': if (!cli_files_add(&catalog, optarg)) return CLI_BAD_INPUT; break;
        case 'n': name = optarg; break;
        case 'g':
            gpu = (int)strtol(optarg, &end, 10);
            if (*end || gpu < 0 || gpu > 1024) {
                fprintf(stderr, "tessera: --gpu must be a GPU index\n");
                return CLI_BAD_INPUT;
            }
            break;
        case 'h': catalog_usage(stdout); return CLI_OK;
        default: catalog_usage(stderr); return CLI_BAD_INPUT;
        }
    }
    const char *verb = optind < argc ? argv[optind] : "";
    int rest = argc - optind - 1;
    char **args = argv + optind + 1;
    if (strcmp(verb, "import") == 0 && rest > 0)
        return import(rest, args, name, gpu);
    int is_list = strcmp(verb, "list") == 0 && rest == 0;
    int is_show = strcmp(verb, "show") == 0 && rest == 1;
    if (!is_list && !is_show) {
        catalog_usage(stderr);
        return CLI_BAD_INPUT;
    }
    struct cat_catalog *cat = NULL;
    int rc = load(&catalog, &cat);
    if (rc == CLI_OK)
        rc = is_list ? list(cat) : show(cat, args[0]);
    cat_free(cat);
    return rc;
}
