/*
 * cmd_fight.c - `tessera fight`: the noisy-neighbour acceptance test
 * (src/fight/, docs/fight.md) from the command line, and its hidden
 * `--worker sla|noisy` mode, which the harness execs once per tenant.
 * Exit codes: 0 every gating mechanism kept the SLA p99 within the
 * tolerance, 1 one did not (or the run failed), 2 bad usage or no driver.
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

static const struct option OPTS[] = {
    {"noisy-kind", required_argument, NULL, 'k'}, {"mechanisms", required_argument, NULL, 'm'},
    {"expect", required_argument, NULL, 'e'},     {"tolerance", required_argument, NULL, 't'},
    {"seed", required_argument, NULL, 's'},       {"repeat", required_argument, NULL, 'r'},
    {"requests", required_argument, NULL, 'n'},   {"warmup", required_argument, NULL, 'w'},
    {"phase-time", required_argument, NULL, 'P'}, {"solo-time", required_argument, NULL, 'S'},
    {"sla", required_argument, NULL, 'A'},        {"noisy", required_argument, NULL, 'N'},
    {"kernels", required_argument, NULL, 'K'},    {"shim", required_argument, NULL, 'L'},
    {"driver", required_argument, NULL, 'D'},     {"synthetic", no_argument, NULL, 'y'},
    {"memory", no_argument, NULL, 'M'},           {"output", required_argument, NULL, 'o'},
    {"svg", required_argument, NULL, 'g'},        {"worker", required_argument, NULL, 'W'},
    {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0}};

static void fight_usage(FILE *f)
{
    fprintf(f,
            "usage: tessera fight [--noisy-kind matmul|stream|burst] [--memory]\n"
            "                     [--mechanisms LIST] [--expect LIST] [--tolerance PCT]\n"
            "                     [--requests N] [--warmup N] [--repeat N] [--seed N]\n"
            "                     [--phase-time DUR] [--solo-time DUR] [--synthetic]\n"
            "                     [--sla CMD --noisy CMD] [--kernels FILE] [--shim PATH]\n"
            "                     [--driver LIB] [-o text|json] [--svg FILE]\n\n"
            "Two tenants fight for GPU 0: an SLA tenant serving fixed requests and a noisy\n"
            "neighbour. The SLA tenant's latency is measured alone (baseline) and beside the\n"
            "neighbour under each mechanism of LIST (timeslice,shim,mps,mig; default all,\n"
            "those that cannot run here are skipped with the reason). A mechanism PASSes\n"
            "when the SLA p99 stays within PCT (default 10) of its baseline. --expect LIST\n"
            "names the mechanisms that decide the exit code (default: every mechanism that\n"
            "ran except timeslice, or timeslice when it ran alone). --sla/--noisy run your\n"
            "own programs, which write \"latency_us <number>\" lines to the file descriptor\n"
            "in $TESSERA_FIGHT_FD (docs/fight.md). DUR is like 60s or 500ms.\n"
            "Exit codes: 0 pass, 1 a gating mechanism failed, 2 bad usage or no driver.\n");
}

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

static int parse_tolerance(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end && strcmp(end, "%") != 0) || !(v >= 0 && v <= 1000))
        return 0;
    *out = v / 100;
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
    struct fight_worker_opts w = {role, o->driver, o->kernels, o->noisy_kind, o->synthetic,
                                  o->memory, o->requests, (int)fdn};
    struct ts_error e = {0};
    if (fight_worker(&w, &e) != TS_OK) {
        char who[32];
        snprintf(who, sizeof(who), "%s worker", role);
        print_error(who, &e);
        return e.code == TS_NOT_FOUND ? CLI_BAD_INPUT : CLI_FAIL;
    }
    return CLI_OK;
}

/* One option into o; CLI_OK or an exit code. */
static int one_opt(int c, const char *arg, struct fight_opts *o, const char **fmt,
                   const char **svg, const char **worker)
{
    int64_t ms;
    size_t v;
    int k;
    switch (c) {
    case 'k':
        if ((k = fight_noisy_parse(arg)) < 0)
            return bad_usage("unknown --noisy-kind (matmul, stream, burst)", arg);
        o->noisy_kind = k;
        return CLI_OK;
    case 'm':
    case 'e':
        if (!parse_mechs(arg, c == 'm' ? &o->mechs : &o->expect))
            return bad_usage("unknown mechanism (timeslice, shim, mps, mig) in", arg);
        return CLI_OK;
    case 't':
        return parse_tolerance(arg, &o->tolerance)
                   ? CLI_OK : bad_usage("--tolerance must be a percentage from 0 to 1000, not", arg);
    case 's':
        if (!parse_size(arg, 0, SIZE_MAX, &v))
            return bad_usage("--seed must be a non-negative integer, not", arg);
        o->seed = v;
        return CLI_OK;
    case 'r':
        if (!parse_size(arg, 1, 16, &v))
            return bad_usage("--repeat must be 1 to 16, not", arg);
        o->repeat = (int)v;
        return CLI_OK;
    case 'n':
    case 'w':
        if (!parse_size(arg, c == 'n' ? 2 : 0, 1000000, &v))
            return bad_usage(c == 'n' ? "--requests must be 2 to 1000000, not"
                                      : "--warmup must be 0 to 1000000, not", arg);
        *(c == 'n' ? &o->requests : &o->warmup) = v;
        return CLI_OK;
    case 'P':
    case 'S':
        if (!ts_duration_parse(arg, &ms) || ms <= 0)
            return bad_usage("a duration is like 30s, 500ms or 2m, not", arg);
        *(c == 'P' ? &o->phase_ms : &o->solo_ms) = ms;
        return CLI_OK;
    case 'A': o->sla_cmd = arg; return CLI_OK;
    case 'N': o->noisy_cmd = arg; return CLI_OK;
    case 'K': o->kernels = arg; return CLI_OK;
    case 'L': o->shim = arg; return CLI_OK;
    case 'D': o->driver = arg; return CLI_OK;
    case 'y': o->synthetic = 1; return CLI_OK;
    case 'M': o->memory = 1; return CLI_OK;
    case 'o':
        if (strcmp(arg, "text") != 0 && strcmp(arg, "json") != 0)
            return bad_usage("-o takes text or json, not", arg);
        *fmt = arg;
        return CLI_OK;
    case 'g': *svg = arg; return CLI_OK;
    case 'W': *worker = arg; return CLI_OK;
    default: fight_usage(stderr); return CLI_BAD_INPUT;
    }
}

static int write_outputs(const struct fight_result *r, const char *fmt, const char *svg)
{
    struct ts_sbuf b;
    struct ts_error e = {0};
    ts_sbuf_init(&b, 64u << 20);
    int rc = CLI_OK;
    if (strcmp(fmt, "json") == 0) {
        if (fight_report_json(r, &b, &e) != TS_OK) {
            cli_print_error(&e);
            rc = CLI_FAIL;
        }
    } else {
        fight_report_text(r, &b);
    }
    if (rc == CLI_OK)
        rc = cli_write("-", ts_sbuf_str(&b), b.len);
    ts_sbuf_release(&b);
    if (rc == CLI_OK && svg) {
        ts_sbuf_init(&b, 64u << 20);
        fight_plot_svg(r, &b);
        rc = ts_sbuf_status(&b) == TS_OK ? cli_write(svg, ts_sbuf_str(&b), b.len) : CLI_FAIL;
        ts_sbuf_release(&b);
    }
    return rc;
}

int cmd_fight(int argc, char **argv)
{
    struct fight_opts o;
    fight_opts_default(&o);
    const char *fmt = "text", *svg = NULL, *worker = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", OPTS, NULL)) != -1) {
        if (c == 'h') {
            fight_usage(stdout);
            return CLI_OK;
        }
        int rc = one_opt(c, optarg, &o, &fmt, &svg, &worker);
        if (rc != CLI_OK)
            return rc;
    }
    if (optind < argc)
        return bad_usage("unexpected argument", argv[optind]);
    if (worker)
        return run_worker(worker, &o);
    if (!o.sla_cmd != !o.noisy_cmd)
        return bad_usage("--sla and --noisy go together; missing", o.sla_cmd ? "--noisy" : "--sla");
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return bad_usage("cannot find the tessera binary through", "/proc/self/exe");
    self[n] = '\0';
    o.self = self;
    struct fight_result r;
    struct ts_error e = {0};
    ts_status st = fight_run(&o, &r, &e);
    if (st != TS_OK) {
        print_error(NULL, &e);
        fight_result_release(&r);
        return st == TS_NOT_FOUND || st == TS_USAGE ? CLI_BAD_INPUT : CLI_FAIL;
    }
    int rc = write_outputs(&r, fmt, svg);
    if (rc == CLI_OK && r.verdict != FIGHT_ST_PASS)
        rc = CLI_FAIL;
    fight_result_release(&r);
    return rc;
}
