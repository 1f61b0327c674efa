/*
 * cmd_render.c - `tessera render`: plan, build the Kubernetes objects and
 * node configs, write them as a kustomize tree, list what was written.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "render/render.h"

static void render_usage(FILE *out)
{
    fprintf(out,
            "usage: tessera render -f SPEC [-f SPEC...] -o DIR [--device-api dra|device-plugin|both]\n"
            "                      [--catalog FILE] [--force]\n\n"
            "Write the Kubernetes objects and node configs that enforce the plan as a kustomize\n"
            "tree in DIR: cluster/ (DeviceClasses, Kueue flavors and cohorts, device-plugin and\n"
            "mig-parted ConfigMaps), tenants/<tenant>/ (namespaces, quotas, limits, RBAC,\n"
            "network policies, claim templates, queues, VMs), nodes/<node>/ (MIG placement\n"
            "script, MPS prep, labels). Apply with 'kubectl apply -k DIR'; DIR/README.md says\n"
            "what to install first and in which order to apply.\n\n"
            "  -f, --filename FILE   tenancy spec (YAML; repeat for several files)\n"
            "  -o, --output DIR      where to write (created; replaced atomically)\n"
            "      --device-api API  dra (default), device-plugin, or both\n"
            "      --catalog FILE    extra GpuModel documents\n"
            "      --force           replace DIR even when it holds files tessera did not write\n");
}

static int parse_api(const char *s, int *api)
{
    for (int i = 0; render_api_names[i]; i++)
        if (strcmp(s, render_api_names[i]) == 0) {
            *api = i;
            return 1;
        }
    return 0;
}

static int write_tree(const struct plan *p, const struct render_options *ropt, const char *dir,
                      int force)
{
    struct render_tree tree;
    struct ts_error e = {0};
    if (render_build(p, ropt, &tree, &e) != TS_OK) {
        cli_print_error(&e);
        return CLI_FAIL;
    }
    int rc = CLI_OK;
    if (render_write(&tree, dir, force, &e) != TS_OK) {
        cli_print_error(&e);
        rc = e.code == TS_USAGE ? CLI_BAD_INPUT : CLI_FAIL;
    } else {
        for (size_t i = 0; i < tree.nfiles; i++)
            printf("%s/%s\n", dir, tree.files[i].path);
    }
    render_tree_free(&tree);
    return rc;
}

int cmd_render(int argc, char **argv)
{
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"device-api", required_argument, NULL, 'a'}, {"catalog", required_argument, NULL, 'c'},
        {"force", no_argument, NULL, 'F'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct cli_files spec = {0}, catalog = {0};
    struct render_options ropt = {RENDER_DRA};
    const char *dir = NULL;
    int force = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f': if (!cli_files_add(&spec, optarg)) return CLI_BAD_INPUT; break;
        case 'c': if (!cli_files_add(&catalog, optarg)) return CLI_BAD_INPUT; break;
        case 'o': dir = optarg; break;
        case 'F': force = 1; break;
        case 'a':
            if (!parse_api(optarg, &ropt.api)) {
                fprintf(stderr, "tessera: --device-api must be dra, device-plugin or both\n");
                return CLI_BAD_INPUT;
            }
            break;
        case 'h': render_usage(stdout); return CLI_OK;
        default: render_usage(stderr); return CLI_BAD_INPUT;
        }
    }
    if (optind < argc || !dir || !*dir) {
        fprintf(stderr, "tessera: %s\n", dir ? "unexpected argument" : "no output folder: use -o DIR");
        render_usage(stderr);
        return CLI_BAD_INPUT;
    }
    struct cli_job job;
    struct plan_options popt = {PLAN_SOLVER_AUTO, 10.0};
    int rc = cli_job_plan(&job, &spec, &catalog, &popt);
    if (rc == CLI_OK)
        rc = write_tree(job.plan, &ropt, dir, force);
    cli_job_free(&job);
    return rc;
}
