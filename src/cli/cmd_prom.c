/*
 * cmd_prom.c - `tessera meter prometheus`: the DCGM series of a time range
 * read from an existing Prometheus (meter/promq.h) and stored like `meter
 * import` stores the same scrapes. Dispatched from cmd_meter.c; shares its
 * spec + store opening (cli_meter_open).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "meter/fetch.h"
#include "meter/promq.h"
#include "util/time.h"

static const struct cli_opt OPTS[] = {
    CLI_SHORT('f', "filename", "SPEC", CLI_ALL, "tenancy spec (repeat for several files)"),
    CLI_LONG('d', "db", "DB", CLI_ALL, "the store: sqlite:PATH or postgres://..."),
    CLI_LONG('u', "url", "URL", CLI_ALL, "Prometheus' base URL (http://prometheus:9090)"),
    CLI_LONG('F', "from", "TIME", CLI_ALL, "the first scrape time read"),
    CLI_LONG('T', "to", "TIME", CLI_ALL, "the last scrape time read (included)"),
    CLI_LONG('i', "interval", "DUR", CLI_ALL, "the scrape interval, the query's step (15s)"),
    CLI_LONG('q', "query", "PROMQL", CLI_ALL,
             "the series read (default {__name__=~\"DCGM_FI_.*\"})"),
    CLI_LONG('t', "timeout", "DUR", CLI_ALL, "the limit of one request (default 60s)"),
    CLI_LONG('c', "cacert", "FILE", CLI_ALL, "CA certificates for an https:// URL"),
    CLI_LONG('K', "insecure", NULL, CLI_ALL, "do not verify an https:// URL's certificate"),
    CLI_LONG('k', "hmac-key-file", "FILE", CLI_ALL, "the ledger's key for custody violations"),
    CLI_END};

static const struct cli_verb VERB = {
    "meter",
    "usage: tessera meter prometheus -f SPEC --db DB --url URL --from TIME --to TIME\n"
    "                            [--interval 15s] [--query PROMQL] [--timeout 60s]\n"
    "                            [--cacert FILE] [--insecure] [--hmac-key-file FILE]\n\n"
    "Read the dcgm-exporter series an existing Prometheus scraped, through its HTTP\n"
    "API (/api/v1/query_range from --from to --to, both included, step --interval,\n"
    "60 steps a request), and store them as `tessera meter import` stores the\n"
    "same scrapes: each point is the exporter's line with the labels the exporter set\n"
    "(Prometheus' own instance and job left out), stamped with the step's time. With\n"
    "--interval the scrape interval and --from on a scrape time, the points are the\n"
    "scrapes themselves. An answer that is not Prometheus' success is refused with its\n"
    "error; a bad field is named by its JSON path (data.result[3].values[17][1]).\n"
    "Exit 0 when everything was stored, 1 when Prometheus or the store failed,\n"
    "2 on bad usage or a bad answer.\n",
    OPTS,
    "TIME is Unix seconds or RFC 3339; DB is sqlite:PATH or postgres://...\n",
    NULL,
    CLI_ALL};

struct prom_args {
    struct cli_files spec, catalog; /* no --catalog here (-c is --cacert): the built-in one */
    const char *db, *keyfile;
    struct meter_promq_opts o;
    int have_from, have_to;
};

static int parse_flag(struct prom_args *a, int c, const char *arg)
{
    struct meter_promq_opts *o = &a->o;
    switch (c) {
    case 'f': return cli_files_add(&a->spec, arg);
    case 'd': a->db = arg; return 1;
    case 'u': o->url = arg; return meter_fetch_url_ok(arg);
    case 'q': o->query = arg; return *arg != '\0';
    case 'k': a->keyfile = arg; return 1;
    case 'c': o->cacert = arg; return 1;
    case 'K': o->insecure = 1; return 1;
    case 'F': return a->have_from = ts_time_parse(arg, &o->from_ms);
    case 'T': return a->have_to = ts_time_parse(arg, &o->to_ms);
    case 'i': return ts_duration_parse(arg, &o->step_ms) && o->step_ms > 0;
    case 't': return ts_duration_parse(arg, &o->timeout_ms) && o->timeout_ms > 0;
    default: return 0;
    }
}

static int set(void *ctx, int key, const char *arg)
{
    if (parse_flag(ctx, key, arg))
        return CLI_OK;
    if (key != 'f')
        fprintf(stderr, "tessera: meter prometheus: bad value '%s' for --%s\n",
                key == 'u' ? "(not an http:// or https:// URL)" : arg, cli_opt_name(&VERB, key));
    return CLI_BAD_INPUT;
}

static int parse_args(int argc, char **argv, struct prom_args *a)
{
    int rc = cli_parse(&VERB, CLI_ALL, argc, argv, set, a);
    if (rc == CLI_HELP)
        cli_help(&VERB, CLI_ALL);
    if (rc != CLI_OK)
        return rc;
    if (!a->spec.n || !a->db || !a->o.url || !a->have_from || !a->have_to || optind < argc) {
        fprintf(stderr, "tessera: meter prometheus needs -f SPEC, --db DB, --url URL, --from "
                        "TIME and --to TIME (see tessera meter prometheus --help)\n");
        return CLI_BAD_INPUT;
    }
    if (a->o.from_ms > a->o.to_ms) {
        fprintf(stderr, "tessera: meter prometheus: --from is after --to\n");
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

/* Read the range into the store; an exit code. */
static int run(struct prom_args *a, struct cli_meter *m)
{
    struct ts_diag diag = {0};
    struct ts_error e = {0};
    struct meter_ingest *in = NULL;
    char shown[512];
    meter_fetch_redact(a->o.url, shown, sizeof(shown));
    ts_status st = meter_ingest_new(&m->ctx, m->st, a->o.from_ms, shown, &diag, &in);
    if (st == TS_OK)
        st = meter_promq_import(&a->o, in, &e);
    if (st == TS_OK)
        st = meter_ingest_finish(in, &e);
    cli_print_diag(&diag);
    if (e.code)
        cli_print_error(&e);
    struct meter_ingest_counts c = {0};
    if (in)
        meter_ingest_counts(in, &c);
    printf("%s: %zu device scrapes, %zu new samples, %d lines rejected, %d custody "
           "violations\n",
           shown, c.devices, c.inserted, c.rejected_lines, c.violations);
    int rc = st != TS_OK ? cli_exit(st, CLI_DOING) : c.rejected_lines ? CLI_FAIL : CLI_OK;
    if (in && cli_meter_violations(m, in) != CLI_OK)
        rc = CLI_FAIL;
    meter_ingest_free(in);
    return rc;
}

int cmd_meter_prometheus(int argc, char **argv)
{
    struct prom_args a = {.o = {.step_ms = 15000, .timeout_ms = 60000}};
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? CLI_OK : rc;
    struct cli_meter m;
    rc = cli_meter_open(&a.spec, &a.catalog, a.db, &m);
    if (rc == CLI_OK)
        rc = cli_read_key(a.keyfile, &m.key, &m.key_len);
    if (rc == CLI_OK)
        rc = run(&a, &m);
    cli_meter_close(&m);
    return rc;
}
