/*
 * cmd_plan.c - `tessera plan`: decide and lay out, print text or JSON,
 * optionally write the SVG picture.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "inventory/inventory.h"
#include "reconf/reconf.h"
#include "cli/cli.h"
#include "render/svg.h"
#include "util/jsonfree.h"
#include "report/report.h"

static void plan_usage(FILE *out)
{
    fprintf(out,
            "usage: tessera plan -f SPEC [-f SPEC...] [--catalog FILE] [-o text|json]\n"
            "                    [--svg FILE] [--solver auto|exact|heuristic] [--time-limit SEC]\n"
            "                    [--current INVENTORY.json...]\n\n"
            "Decide each workload's isolation mechanism (with the rule and the reason) and\n"
            "lay out every GPU of the fleet: MIG geometries with placements, sharing pools,\n"
            "whole GPUs; totals against the lower bound and the naive layout.\n\n"
            "  -f, --filename FILE   tenancy spec (YAML; repeat for several files)\n"
            "      --catalog FILE    extra GpuModel documents (e.g. from 'tessera catalog import')\n"
            "  -o, --output FORMAT   text (default) or json (see docs/plan-json.md)\n"
            "      --svg FILE        also write the fleet picture as SVG\n"
            "      --solver NAME     auto (default): heuristic, GLPK when it may save a card;\n"
            "                        exact: always GLPK; heuristic: never GLPK\n"
            "      --time-limit SEC  GLPK time limit per GPU model (default 10)\n"
            "      --current FILE    a node's 'tessera agent inventory -o json' (repeat for\n"
            "                        several nodes): per planned card, keep or the steps\n"
            "                        that reconfigure it (JSON: the reconfiguration key)\n");
}

static int parse_solver(const char *s, int *out)
{
    static const char *const names[] = {"auto", "exact", "heuristic"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 1;
        }
    return 0;
}

/* The inventories of --current (NULL, 0 when none); exit code. */
struct current {
    struct inv_node *inv;
    int n;
    const struct cat_catalog *cat;
};

static int load_current(const struct cli_files *files, struct current *cur)
{
    cur->inv = calloc(files->n + 1, sizeof(*cur->inv));
    if (!cur->inv)
        return CLI_FAIL;
    for (size_t i = 0; i < files->n; i++) {
        struct ts_error e = {0};
        if (inv_load(files->paths[i], &cur->inv[cur->n], &e) != TS_OK) {
            cli_print_error(&e);
            return CLI_BAD_INPUT;
        }
        cur->n++;
    }
    return CLI_OK;
}

/* The plan JSON with a "reconfiguration" key added (same key order and indent). */
static void json_with_current(const struct plan *p, const struct reconf_plan *ap,
                              const struct current *cur, struct ts_sbuf *out)
{
    struct ts_sbuf plain;
    ts_sbuf_init(&plain, 64u << 20);
    report_json(p, &plain);
    json_t *root = json_loads(ts_sbuf_str(&plain), 0, NULL);
    ts_sbuf_release(&plain);
    if (root)
        json_object_set_new(root, "reconfiguration", reconf_json(ap, cur->inv, cur->n,
                                                                       cur->cat));
    char *text = root ? json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2) |
                                             JSON_REAL_PRECISION(10)) : NULL;
    json_decref(root);
    ts_sbuf_puts(out, text ? text : "");
    ts_sbuf_puts(out, "\n");
    if (!text)
        out->failed = 1;
    json_free_text(text);
}

static void report_current(const struct plan *p, const char *format, const struct current *cur,
                           struct ts_sbuf *out)
{
    struct reconf_plan ap;
    struct ts_error e = {0};
    if (reconf_plan_from_plan(p, &ap, &e) != TS_OK) {
        out->failed = 1;
        return;
    }
    if (strcmp(format, "json") == 0) {
        json_with_current(p, &ap, cur, out);
    } else {
        report_text(p, out);
        reconf_text(&ap, cur->inv, cur->n, cur->cat, out);
    }
    reconf_plan_release(&ap);
}

static int emit(const struct plan *p, const char *format, const char *svg_path,
                const struct current *cur)
{
    struct ts_sbuf out;
    ts_sbuf_init(&out, 64u << 20);
    if (cur->inv)
        report_current(p, format, cur, &out);
    else if (strcmp(format, "json") == 0)
        report_json(p, &out);
    else
        report_text(p, &out);
    int rc = ts_sbuf_status(&out) ? CLI_FAIL : cli_write("-", out.data, out.len);
    ts_sbuf_release(&out);
    if (rc == CLI_OK && svg_path) {
        render_svg(p, &out);
        rc = ts_sbuf_status(&out) ? CLI_FAIL : cli_write(svg_path, out.data, out.len);
        ts_sbuf_release(&out);
    }
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'}, {"catalog", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},   {"svg", required_argument, NULL, 's'},
        {"solver", required_argument, NULL, 'S'},   {"time-limit", required_argument, NULL, 't'},
        {"current", required_argument, NULL, 'C'},  {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct cli_files spec = {0}, catalog = {0}, current = {0};
    const char *format = "text", *svg = NULL;
    struct plan_options popt = {PLAN_SOLVER_AUTO, 10.0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'f': if (!cli_files_add(&spec, optarg)) return CLI_BAD_INPUT; break;
        case 'c': if (!cli_files_add(&catalog, optarg)) return CLI_BAD_INPUT; break;
        case 'C': if (!cli_files_add(&current, optarg)) return CLI_BAD_INPUT; break;
        case 'o': format = optarg; break;
        case 's': svg = optarg; break;
        case 'S':
            if (!parse_solver(optarg, &popt.solver)) {
                fprintf(stderr, "tessera: --solver must be auto, exact or heuristic\n");
                return CLI_BAD_INPUT;
            }
            break;
        case 't':
            popt.time_limit_s = strtod(optarg, &end);
            if (!end || *end || popt.time_limit_s <= 0 || popt.time_limit_s > 3600) {
                fprintf(stderr, "tessera: --time-limit must be seconds between 0 and 3600\n");
                return CLI_BAD_INPUT;
            }
            break;
        case 'h': plan_usage(stdout); return CLI_OK;
        default: plan_usage(stderr); return CLI_BAD_INPUT;
        }
    }
    if (optind < argc || (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)) {
        fprintf(stderr, "tessera: %s\n", optind < argc ? "unexpected argument" :
                "-o must be text or json");
        plan_usage(stderr);
        return CLI_BAD_INPUT;
    }
    struct cli_job job;
    struct current cur = {NULL, 0, NULL};
    int rc = current.n ? load_current(&current, &cur) : CLI_OK;
    if (rc == CLI_OK)
        rc = cli_job_plan(&job, &spec, &catalog, &popt);
    else
        memset(&job, 0, sizeof job);
    cur.cat = job.cat;
    if (rc == CLI_OK)
        rc = emit(job.plan, format, svg, &cur);
    cli_job_free(&job);
    free(cur.inv);
    return rc;
}
