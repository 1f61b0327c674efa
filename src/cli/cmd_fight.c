/*
 * cmd_fight.c - `tessera fight`: the noisy-neighbour acceptance test
 * (src/fight/, docs/fight.md) from the command line, and its hidden
 * `--worker sla|noisy` mode, which the harness execs once per tenant.
 * Exit codes: 0 PASS (every gating mechanism's p99 change interval lies
 * within the tolerance), 1 FAIL (one lies above it) or the test could not
 * run (no driver, no device, a run that failed), 2 bad usage, 3
 * INCONCLUSIVE (an interval straddles the tolerance), 4 too noisy (the
 * A/A control did not pass, nothing was judged). Progress on stderr.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "fight/fight.h"
#include "util/sbuf.h"
#include "util/time.h"

static const struct cli_opt OPTS[] = {
    CLI_LONG('k', "noisy-kind", "KIND", CLI_ALL,
             "the neighbour: matmul (default), stream, burst, memory or idle"),
    CLI_LONG(
        'd', "noisy-depth", "N", CLI_ALL,
        "operations the neighbour keeps in flight, 1 to " CLI_STR(FIGHT_DEPTH_MAX) " (default 4)"),
    CLI_LONG('R', "rate", "N", CLI_ALL, "SLA requests per second, open loop (default 1000)"),
    CLI_LONG('a', "arrival", "HOW", CLI_ALL,
             "poisson (default) or fixed: open loop at --rate; closed: one at a time"),
    CLI_LONG('M', "memory", NULL, CLI_ALL, "also fight over memory (allocations per request)"),
    CLI_LONG('m', "mechanisms", "LIST", CLI_ALL, "timeslice,shim,mps,mig (default: all)"),
    CLI_LONG('e', "expect", "LIST", CLI_ALL, "the mechanisms that decide the exit code"),
    CLI_LONG('t', "tolerance", "PCT", CLI_ALL,
             "the p99 rise allowed over the baseline (default 10)"),
    CLI_LONG('C', "control-tolerance", "PCT", CLI_ALL,
             "the A/A control's tolerance, either way (default: --tolerance)"),
    CLI_LONG('n', "requests", "N", CLI_ALL, "SLA requests measured per run (default 2000)"),
    CLI_LONG('w', "warmup", "N", CLI_ALL,
             "most SLA requests the warm-up may take before steady state (default 1000)"),
    CLI_LONG('r', "repeat", "N", CLI_ALL,
             "runs per phase, 1 to " CLI_STR(FIGHT_REPEAT_MAX) " (default 9)"),
    CLI_LONG('s', "seed", "N", CLI_ALL,
             "shuffles the order of the runs, draws the arrivals (default 1)"),
    CLI_LONG('P', "phase-time", "DUR", CLI_ALL, "the longest run (default 60s)"),
    CLI_LONG('S', "solo-time", "DUR", CLI_ALL,
             "the neighbour alone, for its slowdown (default 2s)"),
    CLI_LONG('y', "synthetic", NULL, CLI_ALL, "sleep kernels instead of real work"),
    CLI_LONG('A', "sla", "CMD", CLI_ALL, "your own SLA tenant (with --noisy)"),
    CLI_LONG('N', "noisy", "CMD", CLI_ALL, "your own neighbour (with --sla)"),
    CLI_LONG('K', "kernels", "FILE", CLI_ALL, "fatbin, cubin or PTX of the kernels"),
    CLI_LONG('L', "shim", "PATH", CLI_ALL, "libtessera-cuda.so for the shim mechanism"),
    CLI_LONG('D', "driver", "LIB", CLI_ALL, "the CUDA driver (default libcuda.so.1)"),
    CLI_SHORT_C('o', "output", "FORMAT", CLI_ALL, cli_complete_formats,
                "text (default), json or yaml"),
    CLI_LONG('g', "svg", "FILE", CLI_ALL, "also write the latency tails as SVG"),
    CLI_LONG('W', "worker", "ROLE", CLI_ALL, NULL), /* the harness's own tenants */
    CLI_END};

const struct cli_verb cli_verb_fight = {
    "fight",
    "usage: tessera fight [--noisy-kind KIND] [--noisy-depth N] [--memory]\n"
    "                     [--rate N] [--arrival poisson|fixed|closed]\n"
    "                     [--mechanisms LIST] [--expect LIST] [--tolerance PCT]\n"
    "                     [--control-tolerance PCT]\n"
    "                     [--requests N] [--warmup N] [--repeat N] [--seed N]\n"
    "                     [--phase-time DUR] [--solo-time DUR] [--synthetic]\n"
    "                     [--sla CMD --noisy CMD] [--kernels FILE] [--shim PATH]\n"
    "                     [--driver LIB] [-o text|json|yaml] [--svg FILE]\n\n"
    "Two tenants fight for GPU 0: an SLA tenant sending requests at --rate (open\n"
    "loop: latency from the intended send time) and a noisy neighbour. First an A/A\n"
    "control: the SLA tenant alone and beside an idle neighbour; unless that PASSes\n"
    "the card is too noisy and nothing is judged. Then, in --repeat rounds of\n"
    "shuffled order, the SLA tenant alone on the whole card and on what each\n"
    "mechanism of LIST gives it (timeslice,shim,mps,mig; default all; those that\n"
    "cannot run here are skipped with the reason), and beside the neighbour under\n"
    "each. A mechanism PASSes when the upper end of the 95% interval of its median\n"
    "p99 change over the repeats stays within PCT (default 10) of its baseline,\n"
    "FAILs when the lower end lies above it, and is INCONCLUSIVE otherwise (with\n"
    "the repeats that would decide it). --expect LIST names the mechanisms that\n"
    "decide the exit code (default: every mechanism that ran except timeslice, or\n"
    "timeslice when it ran alone). --sla/--noisy run your own programs, which\n"
    "write \"latency_us <number>\" lines to the file descriptor in\n"
    "$TESSERA_FIGHT_FD (docs/fight.md). DUR is like 60s or 500ms. Progress goes\n"
    "to stderr, one line a run.\n",
    OPTS,
    "Exit codes: 0 PASS, 1 FAIL (a gating mechanism failed) or the test could not\n"
    "run (no driver, no device), 2 bad usage, 3 INCONCLUSIVE (more repeats needed),\n"
    "4 too noisy (the A/A control did not pass).\n",
    NULL,
    CLI_ALL};

static int bad_usage(const char *what, const char *arg)
{
    fprintf(stderr, "tessera: fight: %s '%s'\n", what, arg);
    return CLI_BAD_INPUT;
}

/* "tessera: fight: [who: ]file:line:col: message" (the place when e has one). */
static void print_error(const char *who, const struct ts_error *e)
{
    char buf[TS_MSG_MAX + 2 * TS_PATH_MAX + 64];
    ts_error_format(e, buf, sizeof(buf));
    fprintf(stderr, "tessera: fight: %s%s%s\n", who ? who : "", who ? ": " : "", buf);
}

static int parse_size(const char *s, size_t lo, size_t hi, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || v < lo || v > hi)
        return 0;
    *out = (size_t)v;
    return 1;
}

static int parse_mechs(const char *s, unsigned *out)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", s);
    *out = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int m = fight_mech_parse(t);
        if (m < 0)
            return 0;
        *out |= 1u << m;
    }
    return *out != 0;
}

static int parse_tolerance(const char *s, double max, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end && strcmp(end, "%") != 0) || !(v >= 0 && v <= max))
        return 0;
    *out = v / 100;
    return 1;
}

static int parse_rate(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0 && v <= FIGHT_RATE_MAX))
        return 0;
    *out = v;
    return 1;
}

static int run_worker(const char *role, const struct fight_opts *o)
{
    const char *fd = getenv("TESSERA_FIGHT_FD");
    size_t fdn;
    if (strcmp(role, "sla") != 0 && strcmp(role, "noisy") != 0)
        return bad_usage("--worker takes sla or noisy, not", role);
    if (!fd || !parse_size(fd, 0, INT_MAX, &fdn))
        return bad_usage("--worker needs TESSERA_FIGHT_FD, got", fd ? fd : "nothing");
    /* The harness passes --requests with the warm-up already counted in. */
    struct fight_worker_opts w = {role,         o->driver, o->kernels,  o->noisy_kind,
                                  o->synthetic, o->memory, o->requests, (int)fdn,
                                  o->arrival,   o->rate,   o->seed,     o->noisy_depth};
    struct ts_error e = {0};
    if (fight_worker(&w, &e) != TS_OK) {
        char who[32];
        snprintf(who, sizeof(who), "%s worker", role);
        print_error(who, &e);
        return cli_exit(e.code, CLI_DOING);
    }
    return CLI_OK;
}

struct fight_args {
    struct fight_opts o;
    const char *fmt, *svg, *worker;
};

/* --seed, --repeat, --requests, --warmup, --noisy-depth. */
static int set_count(int c, const char *arg, struct fight_opts *o)
{
    size_t v;
    switch (c) {
    case 'd':
        if (!parse_size(arg, 1, FIGHT_DEPTH_MAX, &v))
            return bad_usage("--noisy-depth must be 1 to " CLI_STR(FIGHT_DEPTH_MAX) ", not", arg);
        o->noisy_depth = (int)v;
        return CLI_OK;
    case 's':
        if (!parse_size(arg, 0, SIZE_MAX, &v))
            return bad_usage("--seed must be a non-negative integer, not", arg);
        o->seed = v;
        return CLI_OK;
    case 'r':
        if (!parse_size(arg, 1, FIGHT_REPEAT_MAX, &v))
            return bad_usage("--repeat must be 1 to " CLI_STR(FIGHT_REPEAT_MAX) ", not", arg);
        o->repeat = (int)v;
        return CLI_OK;
    default: /* 'n', 'w' */
        if (!parse_size(arg, c == 'n' ? 2 : 0, FIGHT_REQUESTS_MAX, &v))
            return bad_usage(c == 'n'
                                 ? "--requests must be 2 to " CLI_STR(FIGHT_REQUESTS_MAX) ", not"
                                 : "--warmup must be 0 to " CLI_STR(FIGHT_REQUESTS_MAX) ", not",
                             arg);
        *(c == 'n' ? &o->requests : &o->warmup) = v;
        return CLI_OK;
    }
}

/* --noisy-kind, --arrival, --rate, --mechanisms, --expect, --tolerance,
 * --control-tolerance, --phase-time, --solo-time. */
static int set_choice(int c, const char *arg, struct fight_opts *o)
{
    int64_t ms;
    int k;
    switch (c) {
    case 'k':
        if ((k = fight_noisy_parse(arg)) < 0)
            return bad_usage("unknown --noisy-kind (matmul, stream, burst, memory, idle)", arg);
        o->noisy_kind = k;
        return CLI_OK;
    case 'a':
        if ((k = fight_arrival_parse(arg)) < 0)
            return bad_usage("unknown --arrival (poisson, fixed, closed)", arg);
        o->arrival = k;
        return CLI_OK;
    case 'R':
        if (!parse_rate(arg, &o->rate))
            return bad_usage(
                "--rate must be requests per second, above 0 to " CLI_STR(FIGHT_RATE_MAX) ", not",
                arg);
        return CLI_OK;
    case 'm':
    case 'e':
        if (!parse_mechs(arg, c == 'm' ? &o->mechs : &o->expect))
            return bad_usage("unknown mechanism (timeslice, shim, mps, mig) in", arg);
        return CLI_OK;
    case 't':
    case 'C':
        if (!parse_tolerance(arg, c == 't' ? 1000 : 100000,
                             c == 't' ? &o->tolerance : &o->control_tol))
            return bad_usage(c == 't' ? "--tolerance must be a percentage from 0 to 1000, not"
                                      : "--control-tolerance must be a percentage from 0 to "
                                        "100000, not",
                             arg);
        return CLI_OK;
    default: /* 'P', 'S' */
        if (!ts_duration_parse(arg, &ms) || ms <= 0)
            return bad_usage("a duration is like 30s, 500ms or 2m, not", arg);
        *(c == 'P' ? &o->phase_ms : &o->solo_ms) = ms;
        return CLI_OK;
    }
}

static int set(void *ctx, int c, const char *arg)
{
    struct fight_args *a = ctx;
    struct fight_opts *o = &a->o;
    switch (c) {
    case 's':
    case 'r':
    case 'n':
    case 'd':
    case 'w': return set_count(c, arg, o);
    case 'a':
    case 'R':
    case 'k':
    case 'm':
    case 'e':
    case 't':
    case 'C':
    case 'P':
    case 'S': return set_choice(c, arg, o);
    case 'A': o->sla_cmd = arg; return CLI_OK;
    case 'N': o->noisy_cmd = arg; return CLI_OK;
    case 'K': o->kernels = arg; return CLI_OK;
    case 'L': o->shim = arg; return CLI_OK;
    case 'D': o->driver = arg; return CLI_OK;
    case 'y': o->synthetic = 1; return CLI_OK;
    case 'M': o->memory = 1; return CLI_OK;
    case 'o':
        if (strcmp(arg, "text") != 0 && strcmp(cli_format_built(arg), "json") != 0)
            return bad_usage("-o takes text, json or yaml, not", arg);
        a->fmt = arg;
        return CLI_OK;
    case 'g': a->svg = arg; return CLI_OK;
    case 'W': a->worker = arg; return CLI_OK;
    default: return CLI_BAD_INPUT;
    }
}

static int write_outputs(const struct fight_result *r, const char *fmt, const char *svg)
{
    struct ts_sbuf b;
    struct ts_error e = {0};
    ts_sbuf_init(&b, CLI_REPORT_MAX);
    int rc = CLI_OK;
    if (strcmp(cli_format_built(fmt), "json") == 0) {
        if (fight_report_json(r, &b, &e) != TS_OK)
            rc = cli_fail(&e, CLI_DOING);
    } else {
        fight_report_text(r, &b);
    }
    if (rc == CLI_OK)
        rc = cli_write_as(fmt, ts_sbuf_str(&b), b.len);
    ts_sbuf_release(&b);
    if (rc == CLI_OK && svg) {
        ts_sbuf_init(&b, CLI_REPORT_MAX);
        fight_plot_svg(r, &b);
        rc = ts_sbuf_status(&b) == TS_OK ? cli_write(svg, ts_sbuf_str(&b), b.len) : CLI_FAIL;
        ts_sbuf_release(&b);
    }
    return rc;
}

/* The fight's own exit codes besides 0, 1 and 2 (in --help, docs/fight.md). */
enum { FIGHT_EXIT_INCONCLUSIVE = 3, FIGHT_EXIT_NOISY = 4 };

static void progress(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "tessera: fight: %s\n", line);
    fflush(stderr);
}

/* The test itself, o complete; an exit code. */
static int run(struct fight_args *a)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return bad_usage("cannot find the tessera binary through", "/proc/self/exe");
    self[n] = '\0';
    a->o.self = self;
    a->o.progress = progress;
    struct fight_result r;
    struct ts_error e = {0};
    ts_status st = fight_run(&a->o, &r, &e);
    if (st != TS_OK) {
        print_error(NULL, &e);
        fight_result_release(&r);
        return cli_exit(st, CLI_DOING);
    }
    int rc = write_outputs(&r, a->fmt, a->svg);
    if (rc == CLI_OK && r.verdict != FIGHT_ST_PASS)
        rc = r.verdict == FIGHT_ST_INCONCLUSIVE ? FIGHT_EXIT_INCONCLUSIVE
             : r.verdict == FIGHT_ST_NOISY      ? FIGHT_EXIT_NOISY
                                                : CLI_FAIL;
    fight_result_release(&r);
    return rc;
}

int cmd_fight(int argc, char **argv)
{
    struct fight_args a = {.fmt = "text"};
    fight_opts_default(&a.o);
    int rc = cli_parse(&cli_verb_fight, CLI_ALL, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_fight, CLI_ALL) : rc;
    if (optind < argc)
        return bad_usage("unexpected argument", argv[optind]);
    if (a.worker)
        return run_worker(a.worker, &a.o);
    if (!a.o.sla_cmd != !a.o.noisy_cmd)
        return bad_usage("--sla and --noisy go together; missing",
                         a.o.sla_cmd ? "--noisy" : "--sla");
    return run(&a);
}
