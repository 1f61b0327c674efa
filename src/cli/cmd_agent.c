/*
 * cmd_agent.c - `tessera agent inventory|apply`: the node agent (src/agent/)
 * from the command line. inventory prints what the node's GPUs hold (text
 * or the NodeInventory JSON of docs/agent.md); apply brings the node's
 * cards to a plan's MIG geometry. Exit codes: 0 ok, 1 the job failed
 * (NVML missing or failing, a card refused or rolled back), 2 bad usage or
 * bad input (malformed plan, unknown node, a plan for another model).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/agent.h"
#include "cli/cli.h"
#include "util/file.h"

static void agent_usage(FILE *f)
{
    fprintf(f,
            "usage: tessera agent inventory [-o text|json] [--node NAME]\n"
            "       tessera agent apply --plan PLAN.json --node NAME [--dry-run]\n"
            "                           [--catalog FILE]\n\n"
            "inventory  every GPU of this node through NVML: identity, memory, MIG mode,\n"
            "           GPU and compute instances with placements and MIG device UUIDs,\n"
            "           each MIG profile's possible placements (JSON: docs/agent.md)\n"
            "apply      make each card of NODE hold the MIG geometry of PLAN.json (the\n"
            "           output of 'tessera plan -o json'): cards that match are never\n"
            "           touched; a card with running processes is refused; a failure is\n"
            "           rolled back. --dry-run prints the steps and changes nothing.\n\n"
            "NVML is libnvidia-ml.so.1 from the NVIDIA driver; TESSERA_NVML_LIBRARY names\n"
            "another file. The node name defaults to $NODE_NAME, else the host name.\n");
}

static int exit_for(const struct ts_error *e)
{
    cli_print_error(e);
    return e->code == TS_INVALID || e->code == TS_SYNTAX || e->code == TS_USAGE ||
                   e->code == TS_TOO_LARGE
               ? CLI_BAD_INPUT
               : CLI_FAIL;
}

static const char *default_node(char *buf, size_t n)
{
    const char *env = getenv("NODE_NAME");
    if (env && *env)
        return env;
    if (gethostname(buf, n) != 0)
        return "localhost";
    buf[n - 1] = '\0';
    return buf;
}

static int print_buf(struct ts_sbuf *b)
{
    int rc = ts_sbuf_status(b) == TS_OK ? cli_write("-", ts_sbuf_str(b), b->len) : CLI_FAIL;
    ts_sbuf_release(b);
    return rc;
}

static int inventory(const char *node, const char *format)
{
    struct ts_error e = {0};
    struct agent_nvml *n = NULL;
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct ts_sbuf out;
    ts_sbuf_init(&out, 16u << 20);
    int rc = CLI_OK;
    if (!inv || agent_nvml_open(&n, &e) != TS_OK || agent_inventory_read(n, node, inv, &e) != TS_OK)
        rc = inv ? exit_for(&e) : CLI_FAIL;
    else if (strcmp(format, "json") == 0)
        inv_json(inv, &out);
    else
        inv_text(inv, &out);
    agent_nvml_close(n);
    free(inv);
    if (rc != CLI_OK) {
        ts_sbuf_release(&out);
        return rc;
    }
    return print_buf(&out);
}

static int apply(const char *plan_path, const char *node, int dry, const struct cli_files *catf)
{
    struct ts_error e = {0};
    struct ts_diag diag = {0};
    char *text = NULL;
    size_t len = 0;
    struct reconf_plan plan = {0};
    struct cat_catalog *cat = NULL;
    if (ts_file_read(plan_path, TS_INPUT_MAX * 4, &text, &len, &e) != TS_OK)
        return exit_for(&e);
    ts_status st = reconf_plan_parse(text, len, plan_path, &plan, &e);
    free(text);
    if (st != TS_OK)
        return exit_for(&e);
    if (cat_load(catf->paths, catf->n, &cat, &diag) != TS_OK) {
        cli_print_diag(&diag);
        reconf_plan_release(&plan);
        return CLI_BAD_INPUT;
    }
    struct agent_nvml *n = NULL;
    struct ts_sbuf log;
    ts_sbuf_init(&log, 16u << 20);
    struct agent_apply_opts o = {node, dry};
    int rc = CLI_OK;
    if (agent_nvml_open(&n, &e) != TS_OK || agent_apply(n, &plan, cat, &o, &log, &e) != TS_OK)
        rc = exit_for(&e);
    fputs(ts_sbuf_str(&log), stdout);
    ts_sbuf_release(&log);
    agent_nvml_close(n);
    cat_free(cat);
    reconf_plan_release(&plan);
    return rc;
}

int cmd_agent(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"node", required_argument, NULL, 'n'},
        {"plan", required_argument, NULL, 'p'},   {"dry-run", no_argument, NULL, 'd'},
        {"catalog", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *verb = argc > 1 ? argv[1] : "";
    const char *format = "text", *node = NULL, *plan = NULL;
    struct cli_files catf = {0};
    int dry = 0, c;
    char host[256];
    if (!strcmp(verb, "--help") || !strcmp(verb, "-h")) {
        agent_usage(stdout);
        return CLI_OK;
    }
    optind = 1;
    while ((c = getopt_long(argc - 1, argv + 1, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': format = optarg; break;
        case 'n': node = optarg; break;
        case 'p': plan = optarg; break;
        case 'd': dry = 1; break;
        case 'c': if (!cli_files_add(&catf, optarg)) return CLI_BAD_INPUT; break;
        case 'h': agent_usage(stdout); return CLI_OK;
        default: agent_usage(stderr); return CLI_BAD_INPUT;
        }
    }
    int inv = !strcmp(verb, "inventory"), app = !strcmp(verb, "apply");
    const char *problem = optind < argc - 1 ? "unexpected argument"
                          : !inv && !app ? "expected inventory or apply"
                          : inv && strcmp(format, "text") && strcmp(format, "json")
                              ? "-o must be text or json"
                          : app && (!plan || !node) ? "apply needs --plan and --node"
                          : inv && (plan || dry || catf.n) ? "inventory takes -o and --node only"
                                                            : NULL;
    if (problem) {
        fprintf(stderr, "tessera: agent: %s\n", problem);
        agent_usage(stderr);
        return CLI_BAD_INPUT;
    }
    if (inv)
        return inventory(node ? node : default_node(host, sizeof host), format);
    return apply(plan, node, dry, &catf);
}
