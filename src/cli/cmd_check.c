/*
 * cmd_check.c - `tessera check`: load, decide and plan a spec; print one
 * summary line on success and every located error otherwise.
 */
#include <getopt.h>
#include <stdio.h>
#include "cli/cli.h"

static void check_usage(FILE *out)
{
    fprintf(out, "usage: tessera check -f SPEC [-f SPEC...] [--catalog FILE]\n\n"
                 "Validate a tenancy spec: syntax, fields, references, contradictions, and that\n"
                 "the fleet can hold it. Exit 0 when it can, 1 when it cannot be placed, 2 on\n"
                 "bad input (every error printed as file:line:column: path: message).\n");
}

int cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {{"filename", required_argument, NULL, 'f'},
                                         {"catalog", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct cli_files spec = {0}, catalog = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f': if (!cli_files_add(&spec, optarg)) return CLI_BAD_INPUT; break;
        case 'c': if (!cli_files_add(&catalog, optarg)) return CLI_BAD_INPUT; break;
        case 'h': check_usage(stdout); return CLI_OK;
        default: check_usage(stderr); return CLI_BAD_INPUT;
        }
    }
    if (optind < argc) {
        check_usage(stderr);
        return CLI_BAD_INPUT;
    }
    struct cli_job job;
    struct plan_options popt = {PLAN_SOLVER_HEURISTIC, 10.0};
    int rc = cli_job_plan(&job, &spec, &catalog, &popt);
    if (rc == CLI_OK) {
        size_t workloads = job.decisions->nrows;
        printf("ok: %zu tenants, %zu workloads, %d of %d GPUs used\n", job.model->ntenants,
               workloads, job.plan->summary.gpus_used, job.plan->summary.gpus_total);
    }
    cli_job_free(&job);
    return rc;
}
