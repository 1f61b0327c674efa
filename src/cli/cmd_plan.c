/*
 * cmd_plan.c - `tessera plan`: decide and lay out, print text or JSON,
 * optionally write the SVG picture; with --current, each planned card
 * against what the nodes hold (NodeInventory) or a replan against what runs
 * now (a previous plan's JSON) with its ordered steps (reconf/).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "cli/cli.h"
#include "inventory/inventory.h"
#include "reconf/reconf.h"
#include "render/svg.h"
#include "report/report.h"
#include "util/file.h"
#include "util/units.h"

static const struct cli_opt OPTS[] = {
    CLI_SHORT('f', "filename", "FILE", CLI_ALL, "tenancy spec (YAML; repeat for several files)"),
    CLI_LONG('c', "catalog", "FILE", CLI_ALL,
             "extra GpuModel documents (e.g. from 'tessera catalog import')"),
    CLI_SHORT_C('o', "output", "FORMAT", CLI_ALL, cli_complete_formats,
                "text (default), json (see docs/plan-json.md) or yaml"),
    CLI_LONG('s', "svg", "FILE", CLI_ALL, "also write the fleet picture as SVG"),
    CLI_LONG('w', "wide", NULL, CLI_ALL,
             "text: each reason on its row's line, whatever the\n"
             "terminal's width (else wrapped under the row to $COLUMNS\n"
             "or the terminal's width)"),
    CLI_LONG_C('S', "solver", "NAME", CLI_ALL, CLI_WORDS(plan_solver_names),
               "auto (default): heuristic, GLPK when it may save a card;\n"
               "exact: always GLPK; heuristic: never GLPK; with a PriceBook,\n"
               "GLPK also chooses the card models for the least cost\n"
               "(heuristic, or --time-limit 0: one workload at a time)"),
    CLI_LONG('t', "time-limit", "SEC", CLI_ALL,
             "GLPK time limit per GPU model, 0 to 3600 (default " CLI_STR(
                 PLAN_TIME_LIMIT_DEFAULT_S) ");\n0: no GLPK, the heuristic's layout (as --solver "
                                            "heuristic)"),
    CLI_LONG('C', "current", "FILE", CLI_ALL,
             "what runs now: a previous 'tessera plan -o json' (replan:\n"
             "keep running placements, ordered steps; JSON: the replan\n"
             "key; see docs/replanning.md), and/or a node's 'tessera agent\n"
             "inventory -o json' (repeat for several nodes): per planned\n"
             "card, keep or the steps (JSON: the reconfiguration key)"),
    CLI_LONG('D', "max-drains", "N", CLI_ALL,
             "replan: drain at most N cards (0: none; default no limit;\n"
             "a removed node's cards do not count); when no plan found\n"
             "meets it, running work is kept and what does not fit is\n"
             "named (exit 1)"),
    CLI_LONG('K', "max-cards", "N", CLI_ALL, "replan: a card budget: use at most N cards"),
    CLI_LONG('X', "max-cost", "PRICE", CLI_ALL,
             "replan: a cost budget: at most PRICE per hour (PriceBook)"),
    CLI_LONG_C('P', "prefer", "WHAT", CLI_ALL, CLI_WORDS(reconf_prefer_names),
               "replan: of the plans found within the limits,\n"
               "fewer-drains (default): fewest drains, then cards, cost;\n"
               "fewer-cards: fewest cards, then drains, cost;\n"
               "lower-cost: lowest cost, then drains, cards"),
    CLI_LONG('R', "removed-node", "NODE", CLI_ALL,
             "replan: NODE left the fleet: its running cards are torn\n"
             "down (repeat for several nodes)"),
    CLI_END};

const struct cli_verb cli_verb_plan = {
    "plan",
    "usage: tessera plan -f SPEC [-f SPEC...] [--catalog FILE] [-o text|json|yaml]\n"
    "                    [--svg FILE] [--solver auto|exact|heuristic] [--time-limit SEC]\n"
    "                    [--current PLAN.json|INVENTORY.json...]\n"
    "                    [--max-drains N] [--max-cards N] [--max-cost PRICE]\n"
    "                    [--prefer fewer-drains|fewer-cards|lower-cost]\n"
    "                    [--removed-node NODE...]\n\n"
    "Decide each workload's isolation mechanism (with the rule and the reason) and\n"
    "lay out every GPU of the fleet: MIG geometries with placements, sharing pools,\n"
    "whole GPUs; totals against the lower bound and the naive layout.\n"
    "The card lower bound is the configuration LP bound per model, sharing pools\n"
    "counted per trust group; with a PriceBook, the cost lower bound is the cost\n"
    "program's LP with configuration cuts per pool group, raised by a short branch\n"
    "and bound (docs/spec.md, docs/plan-json.md).\n",
    OPTS,
    "When the fleet cannot hold the spec, the errors go to stderr, the plan of the\n"
    "workloads that fit (and, at its end, each that does not with why; in JSON,\n"
    "\"unplaced\") to stdout, and the exit code is 1. A replan that keeps running\n"
    "work but cannot place all new work within --max-drains prints its plan and\n"
    "steps, names each workload left out (stderr, and the replan's \"unplaced\"),\n"
    "and exits 1 (a running MIG workload that grew past its slice stays at its\n"
    "running profile, its new size named; one whose new decision cannot keep it in\n"
    "place, e.g. another mechanism, stays as it runs, named); so does a replan of\n"
    "a spec the fleet cannot hold whole, which keeps first the workloads that run\n"
    "unchanged.\n",
    NULL,
    CLI_ALL};

struct plan_args {
    struct cli_files spec, catalog, current, removed;
    const char *format, *svg;
    struct plan_options popt;
    struct reconf_replan_opts ropt;
    int replan_flags; /* --max-drains, --max-cards, --max-cost, --prefer or --removed-node */
    int wide;
};

static int set_max_drains(struct plan_args *a, const char *arg)
{
    char *end = NULL;
    long n = strtol(arg, &end, 10);
    a->replan_flags = 1;
    if (!end || *end || end == arg || n < 0 || n > RECONF_MAX_DRAINS_MAX) {
        fprintf(stderr, "tessera: --max-drains must be a whole number from 0 to %d\n",
                RECONF_MAX_DRAINS_MAX);
        return CLI_BAD_INPUT;
    }
    a->ropt.max_drains = (int)n;
    return CLI_OK;
}

static int set_max_cards(struct plan_args *a, const char *arg)
{
    char *end = NULL;
    long n = strtol(arg, &end, 10);
    a->replan_flags = 1;
    if (!end || *end || end == arg || n < 1 || n > RECONF_MAX_CARDS_MAX) {
        fprintf(stderr, "tessera: --max-cards must be a whole number from 1 to %d\n",
                RECONF_MAX_CARDS_MAX);
        return CLI_BAD_INPUT;
    }
    a->ropt.max_cards = (int)n;
    return CLI_OK;
}

static int set_max_cost(struct plan_args *a, const char *arg)
{
    char *end = NULL;
    double v = strtod(arg, &end);
    a->replan_flags = 1;
    if (!end || *end || end == arg || !(v > 0 && v <= 1e9)) {
        fprintf(stderr, "tessera: --max-cost must be a price per hour above 0 (at most 1e9)\n");
        return CLI_BAD_INPUT;
    }
    a->ropt.max_cost = (int64_t)(v * TS_MICRO + 0.5);
    return CLI_OK;
}

static int set_prefer(struct plan_args *a, const char *arg)
{
    a->replan_flags = 1;
    for (int i = 0; reconf_prefer_names[i]; i++)
        if (strcmp(arg, reconf_prefer_names[i]) == 0) {
            a->ropt.prefer = i;
            return CLI_OK;
        }
    fprintf(stderr, "tessera: --prefer must be fewer-drains, fewer-cards or lower-cost\n");
    return CLI_BAD_INPUT;
}

/* The width the text report wraps reasons to: 0 (one line a row) with
 * --wide or when stdout is no terminal and $COLUMNS is unset; else
 * $COLUMNS, else the terminal's. Set once per run. */
static int text_cols;

static int width_for(int wide)
{
    const char *env = getenv("COLUMNS");
    long cols = env && *env ? strtol(env, NULL, 10) : 0;
    struct winsize ws;
    if (!cols && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
        cols = ws.ws_col;
    if (wide || cols <= 0)
        return 0;
    return cols < CLI_TEXT_MIN_COLUMNS ? CLI_TEXT_MIN_COLUMNS : (int)cols;
}

static int set_solver(struct plan_options *popt, const char *arg)
{
    for (int i = 0; plan_solver_names[i]; i++)
        if (strcmp(arg, plan_solver_names[i]) == 0) {
            popt->solver = i;
            return CLI_OK;
        }
    fprintf(stderr, "tessera: --solver must be auto, exact or heuristic\n");
    return CLI_BAD_INPUT;
}

static int set_time_limit(struct plan_options *popt, const char *arg)
{
    char *end = NULL;
    popt->time_limit_s = strtod(arg, &end);
    if (!end || *end || end == arg || !(popt->time_limit_s >= 0 && popt->time_limit_s <= 3600)) {
        fprintf(stderr, "tessera: --time-limit must be seconds from 0 (no GLPK: the heuristic's "
                        "layout) to 3600\n");
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

static int set(void *ctx, int key, const char *arg)
{
    struct plan_args *a = ctx;
    switch (key) {
    case 'f': return cli_files_add(&a->spec, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'c': return cli_files_add(&a->catalog, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'C': return cli_files_add(&a->current, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'o': a->format = arg; return CLI_OK;
    case 's': a->svg = arg; return CLI_OK;
    case 't': return set_time_limit(&a->popt, arg);
    case 'S': return set_solver(&a->popt, arg);
    case 'D': return set_max_drains(a, arg);
    case 'P': return set_prefer(a, arg);
    case 'K': return set_max_cards(a, arg);
    case 'X': return set_max_cost(a, arg);
    case 'R': a->replan_flags = 1; return cli_files_add(&a->removed, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'w': a->wide = 1; return CLI_OK;
    default: return CLI_BAD_INPUT;
    }
}

/* What --current gave: inventories (NULL, 0 when none) and at most one
 * previous plan (prev.t NULL when none). */
struct current {
    struct inv_node *inv;
    int n;
    const struct cat_catalog *cat;
    struct reconf_plan prev;
    const char *prev_path;
    const struct reconf_replan_opts *ropt;
    struct reconf_replan steps;
};

/* One --current file, read once (it may be a pipe): a previous plan's
 * JSON into cur->prev, else a NodeInventory (at most TS_INPUT_MAX bytes,
 * as inv_load reads it) into cur->inv. An exit code. */
static int load_one(const char *path, struct current *cur)
{
    struct ts_error e = {0};
    char *text = NULL;
    size_t len = 0;
    int rc = CLI_OK;
    if (ts_file_read(path, CLI_PLAN_FILE_MAX, &text, &len, &e) != TS_OK)
        return cli_fail(&e, CLI_READING);
    if (!reconf_text_is_plan(text, len)) {
        if (len > TS_INPUT_MAX)
            ts_err(&e, TS_TOO_LARGE, "%s: a NodeInventory is at most %u bytes (TS_INPUT_MAX)", path,
                   TS_INPUT_MAX);
        else if (inv_parse(text, len, path, &cur->inv[cur->n], &e) == TS_OK)
            cur->n++;
        rc = e.code != TS_OK ? cli_fail(&e, CLI_READING) : CLI_OK;
    } else if (cur->prev_path) {
        fprintf(stderr, "tessera: %s: --current takes one plan (%s is the other)\n", path,
                cur->prev_path);
        rc = CLI_BAD_INPUT;
    } else if (reconf_plan_parse(text, len, path, &cur->prev, &e) != TS_OK) {
        rc = cli_fail(&e, CLI_READING);
    } else {
        cur->prev_path = path;
    }
    free(text);
    return rc;
}

static int load_current(const struct cli_files *files, struct current *cur)
{
    cur->inv = calloc(files->n + 1, sizeof(*cur->inv));
    int rc = cur->inv ? CLI_OK : CLI_FAIL;
    for (size_t i = 0; rc == CLI_OK && i < files->n; i++)
        rc = load_one(files->paths[i], cur);
    return rc;
}

/* The plan JSON with its "replan" and "reconfiguration" keys. */
static void json_with_current(const struct plan *p, const struct reconf_plan *ap,
                              const struct current *cur, struct ts_sbuf *out)
{
    json_t *doc = report_json_doc(p);
    if (doc && cur->prev_path)
        json_object_set_new(doc, "replan", reconf_replan_json(&cur->steps, cur->ropt));
    if (doc && cur->n)
        json_object_set_new(doc, "reconfiguration", reconf_json(ap, cur->inv, cur->n, cur->cat));
    report_json_dump(doc, out);
    json_decref(doc);
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
    if (strcmp(cli_format_built(format), "json") == 0) {
        json_with_current(p, &ap, cur, out);
    } else {
        report_text_width(p, text_cols, out);
        if (cur->prev_path)
            reconf_replan_text(&cur->steps, out);
        if (cur->n)
            reconf_text(&ap, cur->inv, cur->n, cur->cat, out);
    }
    reconf_plan_release(&ap);
}

static int emit(const struct plan *p, const char *format, const char *svg_path,
                const struct current *cur)
{
    struct ts_sbuf out;
    ts_sbuf_init(&out, CLI_REPORT_MAX);
    if (cur->n || cur->prev_path)
        report_current(p, format, cur, &out);
    else if (strcmp(cli_format_built(format), "json") == 0)
        report_json(p, &out);
    else
        report_text_width(p, text_cols, &out);
    int rc = ts_sbuf_status(&out) ? CLI_FAIL : cli_write_as(format, out.data, out.len);
    ts_sbuf_release(&out);
    if (rc == CLI_OK && svg_path) {
        render_svg(p, &out);
        rc = ts_sbuf_status(&out) ? CLI_FAIL : cli_write(svg_path, out.data, out.len);
        ts_sbuf_release(&out);
    }
    return rc;
}

/* The running plan against the fleet and the catalog, every problem
 * printed: exit 2 when it is corrupt, before anything is planned. */
static int check_prev(const struct cli_job *job, const struct cli_files *removed,
                      struct current *cur)
{
    struct ts_diag diag = {0};
    struct ts_error e = {0};
    for (size_t i = 0; i < removed->n; i++)
        if (reconf_plan_remove_node(&cur->prev, job->model, removed->paths[i], &e) != TS_OK)
            return cli_fail(&e, CLI_READING);
    ts_status st = reconf_plan_check(&cur->prev, job->model, job->cat, cur->prev_path, &diag);
    if (st == TS_OK)
        return CLI_OK;
    cli_print_diag(&diag);
    return cli_exit(st, CLI_READING);
}

/* cli_job_plan, with --current's plan checked between deciding and laying
 * out: a corrupt running plan is bad input even where the spec does not fit. */
static int plan_job(struct cli_job *job, const struct plan_args *a, struct current *cur)
{
    struct ts_diag diag = {0};
    struct ts_error e;
    int rc = cli_job_decide_opt(job, &a->spec, &a->catalog, &a->popt);
    if (rc == CLI_OK && cur->prev_path)
        rc = check_prev(job, &a->removed, cur);
    if (rc != CLI_OK)
        return rc;
    ts_status st = plan_build(job->model, job->cat, job->decisions, &a->popt, &job->plan, &diag);
    int refit = cur->prev_path && (st == TS_INFEASIBLE || st == TS_INVALID); /* replan_what_fits */
    if (st != TS_OK && !refit) {
        cli_print_diag(&diag);
        if (diag.count == 0)
            fprintf(stderr, "tessera: plan: %s\n", ts_status_str(st));
    }
    if (st != TS_OK)
        return cli_exit(st, CLI_DOING);
    if (plan_verify(job->plan, &e) != TS_OK) {
        fprintf(stderr, "tessera: internal error: the plan breaks a rule: %s\n", e.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* Replace the fresh plan by the replan against the previous plan. */
static int replan(struct cli_job *job, struct current *cur)
{
    struct ts_error e = {0};
    if (reconf_replan(&job->plan, &cur->prev, cur->ropt, &cur->steps, &e) != TS_OK)
        return cli_fail(&e, CLI_DOING);
    return CLI_OK;
}

/* The fleet cannot hold the new spec whole, and a running plan was given:
 * the plan of what fits, the workloads that run unchanged taken first
 * (reconf_running_first), is replanned against what runs; what it leaves
 * out is named with the replan's own unplaced (exit 1, after the plan and
 * its steps). Under a drain limit the replan's no-drain plan keeps a
 * workload left out that runs (held at its running MIG profile, or kept as
 * it runs; named there): it is in that plan's rows, so not named again. A
 * running instance of one the plan leaves out is a drain. f owns the rows
 * that plan points to, and the options that name them: free it after the
 * job. */
struct fits {
    struct decide_result order;
    struct plan_partial pp;
    struct reconf_replan_opts ropt;
};

/* 1 when plan p's decision rows hold tenant/workload. */
static int has_row(const struct plan *p, const char *tenant, const char *workload)
{
    for (size_t i = 0; i < p->decisions->nrows; i++)
        if (!strcmp(p->decisions->rows[i].tenant->name, tenant) &&
            !strcmp(p->decisions->rows[i].workload->name, workload))
            return 1;
    return 0;
}

static int replan_what_fits(struct cli_job *job, struct current *cur, struct fits *f)
{
    struct plan_options heuristic = {PLAN_SOLVER_HEURISTIC, PLAN_TIME_LIMIT_DEFAULT_S};
    if (reconf_running_first(&cur->prev, job->decisions, &f->order) != TS_OK ||
        plan_build_partial(job->model, job->cat, &f->order, &heuristic, &f->pp) != TS_OK) {
        fprintf(stderr,
                "tessera: plan: the fleet cannot hold the spec, and planning what fits "
                "failed: %s\n",
                f->pp.nleft ? f->pp.why[0].msg : "out of memory");
        return CLI_FAIL;
    }
    job->plan = f->pp.plan;
    f->pp.plan = NULL;
    f->ropt = *cur->ropt;
    f->ropt.left = f->pp.left;
    f->ropt.nleft = f->pp.nleft;
    cur->ropt = &f->ropt;
    int rc = replan(job, cur);
    int kept = rc == CLI_OK && job->plan->decisions->nrows > f->pp.fit.nrows;
    for (size_t i = 0; rc == CLI_OK && i < f->pp.nleft; i++) {
        const struct decide_row *r = f->pp.left[i];
        if (kept && has_row(job->plan, r->tenant->name, r->workload->name))
            continue; /* the no-drain plan keeps it (pin.c), and names what it lacks */
        if (reconf_replan_unplaced_add(&cur->steps, r->tenant->name, r->workload->name,
                                       r->workload->replicas, f->pp.why[i].msg) != TS_OK)
            rc = CLI_FAIL;
    }
    return rc;
}

/* A replan kept running work but left new work out (its plan and steps
 * are printed): each on stderr, exit 1. */
static int name_unplaced(const struct reconf_replan *r)
{
    for (size_t i = 0; i < r->nunplaced; i++)
        fprintf(stderr, "tessera: replan: not placed: %s/%s, %d replica%s: %s\n",
                r->unplaced[i].tenant, r->unplaced[i].workload, r->unplaced[i].replicas,
                r->unplaced[i].replicas == 1 ? "" : "s", r->unplaced[i].why);
    return CLI_FAIL;
}

/* The fleet cannot hold the spec: the plan of what fits, then what does
 * not and why (text), or the plan's JSON with an "unplaced" list. */
static void partial_text(const struct plan_partial *pp, size_t total, struct ts_sbuf *out)
{
    ts_sbuf_printf(out,
                   "PARTIAL PLAN: the fleet holds %zu of %zu workloads; %zu do%s not fit "
                   "(listed at the end)\n\n",
                   pp->fit.nrows, total, pp->nleft, pp->nleft == 1 ? "es" : "");
    report_text_width(pp->plan, text_cols, out);
    ts_sbuf_printf(out, "\nDoes not fit:\n");
    for (size_t i = 0; i < pp->nleft; i++) {
        const struct decide_row *r = pp->left[i];
        ts_sbuf_printf(out, "  %s/%s (%d replica%s, %s): %s\n", r->tenant->name, r->workload->name,
                       r->workload->replicas, r->workload->replicas == 1 ? "" : "s",
                       decide_mech_names[r->mech], pp->why[i].msg);
    }
}

static void partial_json(const struct plan_partial *pp, struct ts_sbuf *out)
{
    json_t *doc = report_json_doc(pp->plan), *left = json_array();
    for (size_t i = 0; i < pp->nleft; i++)
        json_array_append_new(
            left, json_pack("{s:s, s:s, s:s}", "tenant", pp->left[i]->tenant->name, "workload",
                            pp->left[i]->workload->name, "reason", pp->why[i].msg));
    if (doc)
        json_object_set_new(doc, "unplaced", left);
    else
        json_decref(left);
    report_json_dump(doc, out);
    json_decref(doc);
}

/* After plan_build's failure: print the partial plan; the exit code stays 1. */
static int emit_partial(const struct cli_job *job, const char *format)
{
    struct plan_partial pp;
    struct plan_options heuristic = {PLAN_SOLVER_HEURISTIC, PLAN_TIME_LIMIT_DEFAULT_S};
    if (plan_build_partial(job->model, job->cat, job->decisions, &heuristic, &pp) != TS_OK) {
        plan_partial_free(&pp);
        return CLI_FAIL;
    }
    struct ts_sbuf out;
    ts_sbuf_init(&out, CLI_REPORT_MAX);
    if (strcmp(cli_format_built(format), "json") == 0)
        partial_json(&pp, &out);
    else
        partial_text(&pp, job->decisions->nrows, &out);
    if (ts_sbuf_status(&out) == TS_OK)
        cli_write_as(format, out.data, out.len);
    ts_sbuf_release(&out);
    plan_partial_free(&pp);
    return CLI_FAIL;
}

static int run(const struct plan_args *a)
{
    struct cli_job job = {0};
    struct reconf_replan_opts ropt = a->ropt;
    struct current cur = {.ropt = &ropt};
    struct fits fits = {0};
    int rc = a->current.n ? load_current(&a->current, &cur) : CLI_OK;
    if (rc == CLI_OK && a->replan_flags && !cur.prev_path) {
        fprintf(stderr, "tessera: --max-drains, --max-cards, --max-cost, --prefer and "
                        "--removed-node need --current PLAN.json (a previous 'tessera plan -o "
                        "json')\n");
        rc = CLI_BAD_INPUT;
    }
    if (rc == CLI_OK)
        rc = plan_job(&job, a, &cur);
    int refit = rc == CLI_FAIL && job.decisions && !job.plan;
    if (refit && !cur.prev_path && !cur.n)
        rc = emit_partial(&job, a->format);
    cur.cat = job.cat;
    ropt.cat = job.cat;
    if (refit && cur.prev_path)
        rc = replan_what_fits(&job, &cur, &fits);
    else if (rc == CLI_OK && cur.prev_path)
        rc = replan(&job, &cur);
    if (rc == CLI_OK)
        rc = emit(job.plan, a->format, a->svg, &cur);
    if (rc == CLI_OK && cur.steps.nunplaced)
        rc = name_unplaced(&cur.steps);
    cli_job_free(&job);
    plan_partial_free(&fits.pp);
    free(fits.order.rows);
    reconf_replan_release(&cur.steps);
    reconf_plan_release(&cur.prev);
    free(cur.inv);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    struct plan_args a = {.format = "text",
                          .popt = PLAN_OPTIONS_DEFAULT,
                          .ropt = {.max_drains = -1, .prefer = RECONF_PREFER_FEWER_DRAINS}};
    int rc = cli_parse(&cli_verb_plan, CLI_ALL, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_plan, CLI_ALL) : rc;
    if (optind < argc || (strcmp(a.format, "text") && strcmp(cli_format_built(a.format), "json"))) {
        fprintf(stderr, "tessera: %s\n",
                optind < argc ? "unexpected argument" : "-o must be text, json or yaml");
        cli_usage(&cli_verb_plan, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    if (a.popt.time_limit_s == 0 && a.popt.solver == PLAN_SOLVER_EXACT) {
        fprintf(stderr, "tessera: --solver exact and --time-limit 0 contradict each other: "
                        "GLPK would get no time (0 means the heuristic's layout)\n");
        return CLI_BAD_INPUT;
    }
    text_cols = width_for(a.wide);
    return run(&a);
}
