/*
 * cmd_render.c - `tessera render`: plan, build the Kubernetes objects and
 * node configs, write them as a kustomize tree, sum up what was written
 * (-v: list it).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "render/render.h"

static const struct cli_opt OPTS[] = {
    CLI_SHORT('f', "filename", "FILE", CLI_ALL, "tenancy spec (YAML; repeat for several files)"),
    CLI_LONG('d', "out-dir", "DIR", CLI_ALL, "where to write (created; replaced atomically)"),
    CLI_SHORT('o', "output", "DIR", CLI_ALL,
              "deprecated alias of --out-dir, kept for this release\n"
              "(-o names an output format in every other verb)"),
    CLI_LONG_C('a', "device-api", "API", CLI_ALL, CLI_WORDS(render_api_names),
               "dra (default), device-plugin, or both"),
    CLI_LONG('c', "catalog", "FILE", CLI_ALL, "extra GpuModel documents"),
    CLI_SHORT('v', "verbose", NULL, CLI_ALL, "list every file written, after the summary"),
    CLI_LONG('F', "force", NULL, CLI_ALL,
             "replace DIR even when it holds files tessera did not write"),
    CLI_END};

const struct cli_verb cli_verb_render = {
    "render",
    "usage: tessera render -f SPEC [-f SPEC...] --out-dir DIR [--catalog FILE] [--force]\n"
    "                      [--device-api dra|device-plugin|both]\n\n"
    "Write the Kubernetes objects and node configs that enforce the plan as a kustomize\n"
    "tree in DIR: cluster/ (DeviceClasses, Kueue flavors and cohorts, device-plugin and\n"
    "mig-parted ConfigMaps), tenants/<tenant>/ (namespaces, quotas, limits, RBAC,\n"
    "network policies, claim templates, queues, VMs), nodes/<node>/ (MIG placement\n"
    "script, MPS prep, labels). Apply with 'kubectl apply -k DIR'; DIR/README.md says\n"
    "what to install first and in which order to apply. Prints a summary: objects by\n"
    "kind, folders, and what changed against the tree DIR held before.\n",
    OPTS,
    NULL,
    NULL,
    CLI_ALL};

struct render_args {
    struct cli_files spec, catalog;
    struct render_options ropt;
    const char *dir;
    int force, verbose;
};

static int parse_api(const char *s, int *api)
{
    for (int i = 0; render_api_names[i]; i++)
        if (strcmp(s, render_api_names[i]) == 0) {
            *api = i;
            return 1;
        }
    return 0;
}

static int set(void *ctx, int key, const char *arg)
{
    struct render_args *a = ctx;
    switch (key) {
    case 'f': return cli_files_add(&a->spec, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'c': return cli_files_add(&a->catalog, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'd': a->dir = arg; return CLI_OK;
    case 'o':
        fprintf(stderr, "tessera: render: -o/--output DIR is deprecated and goes in the next "
                        "release: use --out-dir DIR\n");
        a->dir = arg;
        return CLI_OK;
    case 'F': a->force = 1; return CLI_OK;
    case 'v': a->verbose = 1; return CLI_OK;
    case 'a':
        if (parse_api(arg, &a->ropt.api))
            return CLI_OK;
        fprintf(stderr, "tessera: --device-api must be dra, device-plugin or both\n");
        return CLI_BAD_INPUT;
    default: return CLI_BAD_INPUT;
    }
}

static void print_summary(const struct render_summary *s, const char *dir)
{
    int objects = s->other;
    for (size_t i = 0; i < s->nkinds; i++)
        objects += s->kinds[i].n;
    printf("rendered %zu files into %s: apply with 'kubectl apply -k %s' after reading "
           "%s/README.md\n  objects  %d:",
           s->files, dir, dir, dir, objects);
    for (size_t i = 0; i < s->nkinds; i++)
        printf("%s %s %d", i ? "," : "", s->kinds[i].kind, s->kinds[i].n);
    if (s->other)
        printf(", other %d", s->other);
    printf("\n  folders ");
    for (size_t i = 0; i < s->nfolders; i++) {
        printf("%s %s/ %d files", i ? "," : "", s->folders[i].name, s->folders[i].files);
        if (s->folders[i].subfolders)
            printf(" in %d folder%s", s->folders[i].subfolders,
                   s->folders[i].subfolders == 1 ? "" : "s");
    }
    if (s->first)
        printf("\n  changes  none before: %s did not exist\n", dir);
    else
        printf("\n  changes  since the last render: %d changed, %d added, %d removed, %d "
               "unchanged\n",
               s->changed, s->added, s->removed, s->unchanged);
}

static int write_tree(const struct plan *p, const struct render_args *a)
{
    struct render_tree tree;
    struct render_summary sum;
    struct ts_error e = {0};
    if (render_build(p, &a->ropt, &tree, &e) != TS_OK)
        return cli_fail(&e, CLI_DOING);
    render_summarize(&tree, a->dir, &sum);
    int rc = CLI_OK;
    if (render_write(&tree, a->dir, a->force, &e) != TS_OK) {
        rc = cli_fail(&e, CLI_DOING);
    } else {
        print_summary(&sum, a->dir);
        for (size_t i = 0; a->verbose && i < tree.nfiles; i++)
            printf("%s/%s\n", a->dir, tree.files[i].path);
    }
    render_tree_free(&tree);
    return rc;
}

int cmd_render(int argc, char **argv)
{
    struct render_args a = {.ropt = {RENDER_DRA}};
    int rc = cli_parse(&cli_verb_render, CLI_ALL, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_render, CLI_ALL) : rc;
    if (optind < argc || !a.dir || !*a.dir) {
        fprintf(stderr, "tessera: %s\n",
                a.dir ? "unexpected argument" : "no output folder: use --out-dir DIR");
        cli_usage(&cli_verb_render, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    struct cli_job job;
    struct plan_options popt = PLAN_OPTIONS_DEFAULT;
    rc = cli_job_plan(&job, &a.spec, &a.catalog, &popt);
    if (rc == CLI_OK)
        rc = write_tree(job.plan, &a);
    cli_job_free(&job);
    return rc;
}
