/*
 * main.c - the `tessera` command: a table of subcommands, each in its own
 * cmd_<verb>.c file, and --version. Exit codes (cli_exit in common.c): 0
 * ok, 1 the job failed, 2 bad usage or bad input; fight adds 3 and 4.
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

/* From project(VERSION) in CMakeLists.txt, the one place it is written. */
#ifndef TESSERA_VERSION
#error "TESSERA_VERSION comes from CMakeLists.txt (target_compile_definitions)"
#endif

const struct cli_command cli_commands[] = {
    {"plan", cmd_plan, "decide each workload's isolation and lay out the fleet", &cli_verb_plan},
    {"render", cmd_render, "write the Kubernetes objects and node configs that enforce the plan",
     &cli_verb_render},
    {"serve", cmd_serve, "serve the admission webhook that keeps tenants inside their plan",
     &cli_verb_serve},
    {"console", cmd_console, "serve the JSON API and web console (tenants and operators)",
     &cli_verb_console},
    {"meter", cmd_meter, "import or scrape dcgm-exporter metrics into the metering store",
     &cli_verb_meter},
    {"usage", cmd_usage, "GPU-hours per tenant, GPU model and profile from the store",
     &cli_verb_usage},
    {"ledger", cmd_ledger, "record and verify which tenant held which GPU or MIG instance, when",
     &cli_verb_ledger},
    {"invoice", cmd_invoice, "price a tenant's GPU-hours for a month with the PriceBook",
     &cli_verb_invoice},
    {"token", cmd_token, "mint a bearer token for the JSON API of tessera console",
     &cli_verb_token},
    {"check", cmd_check, "validate a spec (and that it can be planned); print nothing else",
     &cli_verb_check},
    {"catalog", cmd_catalog, "list GPU models, show one, or import nvidia-smi output",
     &cli_verb_catalog},
    {"docs", cmd_docs, "print the generated field reference of the spec format, or the man page",
     &cli_verb_docs},
    {"agent", cmd_agent, "node agent: GPU inventory through NVML, apply a plan's MIG geometry",
     &cli_verb_agent},
    {"fight", cmd_fight, "the noisy-neighbour test: does an SLA tenant's p99 move?",
     &cli_verb_fight},
    {"cert", cmd_cert, "make or rotate the webhook's serving certificate; print its manifest",
     &cli_verb_cert},
    {"shim", cmd_shim, "install the CUDA shim where the webhook's --shim-path expects it",
     &cli_verb_shim},
    {"completion", cmd_completion, "print the bash or zsh completion script", &cli_verb_completion},
};
const size_t cli_ncommands = sizeof(cli_commands) / sizeof(cli_commands[0]);

void cli_top_usage(FILE *out)
{
    fprintf(out, "usage: tessera <command> [options]\n\n"
                 "tessera turns tenants' contracts and workloads into GPU isolation decisions\n"
                 "and a fleet layout.\n\ncommands:\n");
    for (size_t i = 0; i < cli_ncommands; i++)
        fprintf(out, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fprintf(out, "\nRun 'tessera <command> --help' for a command's options;\n"
                 "'tessera --version' (or 'tessera version') prints the version.\n\n"
                 "Exit codes, the same for every command (fight adds 3 and 4):\n"
                 "  0  ok\n"
                 "  1  the job failed: the fleet cannot hold the spec, a FAIL verdict, a broken\n"
                 "     ledger, rejected lines, a file or store that cannot be written, no driver\n"
                 "  2  bad usage or bad input: unknown options, bad values, a spec, plan or\n"
                 "     file that cannot be read or parsed, or is invalid or too large\n"
                 "  3  fight: INCONCLUSIVE         4  fight: too noisy to judge\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_top_usage(stderr);
        return CLI_BAD_INPUT;
    }
    const char *verb = argv[1];
    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0 || strcmp(verb, "help") == 0) {
        cli_top_usage(stdout);
        return CLI_OK;
    }
    if (strcmp(verb, "--version") == 0 || strcmp(verb, "version") == 0) {
        printf("tessera %s\n", TESSERA_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < cli_ncommands; i++)
        if (strcmp(verb, cli_commands[i].name) == 0)
            return cli_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tessera: unknown command '%s'\n", verb);
    cli_top_usage(stderr);
    return CLI_BAD_INPUT;
}
