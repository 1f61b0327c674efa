/*
 * cmd_check.c - `tessera check`: load, decide and plan a spec; print one
 * summary line on success and every located error otherwise.
 */
#include <getopt.h>
#include <stdio.h>
#include "cli/cli.h"

static const struct cli_opt OPTS[] = {
    CLI_SHORT('f', "filename", "FILE", CLI_ALL, "tenancy spec (YAML; repeat for several files)"),
    CLI_LONG('c', "catalog", "FILE", CLI_ALL, "extra GpuModel documents"), CLI_END};

const struct cli_verb cli_verb_check = {
    "check",
    "usage: tessera check -f SPEC [-f SPEC...] [--catalog FILE]\n\n"
    "Validate a tenancy spec: syntax, fields, references, contradictions, and that\n"
    "the fleet can hold it. Exit 0 when it can, 1 when it cannot be placed, 2 on\n"
    "bad input (every error printed as file:line:column: path: message).\n",
    OPTS,
    NULL,
    NULL,
    CLI_ALL};

struct check_args {
    struct cli_files spec, catalog;
};

static int set(void *ctx, int key, const char *arg)
{
    struct check_args *a = ctx;
    return cli_files_add(key == 'f' ? &a->spec : &a->catalog, arg) ? CLI_OK : CLI_BAD_INPUT;
}

int cmd_check(int argc, char **argv)
{
    struct check_args a = {0};
    int rc = cli_parse(&cli_verb_check, CLI_ALL, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_check, CLI_ALL) : rc;
    if (optind < argc) {
        cli_usage(&cli_verb_check, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    struct cli_job job;
    struct plan_options popt = PLAN_OPTIONS_DEFAULT;
    popt.solver = PLAN_SOLVER_HEURISTIC; /* whether it fits, not the fewest cards */
    rc = cli_job_plan(&job, &a.spec, &a.catalog, &popt);
    if (rc == CLI_OK) {
        size_t workloads = job.decisions->nrows;
        printf("ok: %zu tenants, %zu workloads, %d of %d GPUs used\n", job.model->ntenants,
               workloads, job.plan->summary.gpus_used, job.plan->summary.gpus_total);
    }
    cli_job_free(&job);
    return rc;
}
