/*
 * cmd_prom.c - `tessera meter prometheus`: the DCGM series of a time range
 * read from an existing Prometheus (meter/promq.h) and stored like `meter
 * import` stores the same scrapes; with --follow, window after window as
 * Prometheus gets them, until SIGTERM or SIGINT. Dispatched from
 * cmd_meter.c; shares its spec + store opening (cli_meter_open).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "meter/fetch.h"
#include "meter/promq.h"
#include "store/store.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/time.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static const struct cli_opt OPTS[] = {
    CLI_SHORT('f', "filename", "SPEC", CLI_ALL, "tenancy spec (repeat for several files)"),
    CLI_LONG('d', "db", "DB", CLI_ALL, "the store: sqlite:PATH or postgres://..."),
    CLI_LONG('u', "url", "URL", CLI_ALL, "Prometheus' base URL (http://prometheus:9090)"),
    CLI_LONG('F', "from", "TIME", CLI_ALL, "the first sample time read"),
    CLI_LONG('T', "to", "TIME", CLI_ALL, "the last sample time read (included)"),
    CLI_LONG('w', "follow", NULL, CLI_ALL, "keep reading new scrapes until SIGTERM/SIGINT"),
    CLI_LONG('D', "delay", "DUR", CLI_ALL, "with --follow: stay this far behind now (60s)"),
    CLI_LONG('i', "interval", "DUR", CLI_ALL,
             "Prometheus' scrape interval: a window is 60 of it (15s)"),
    CLI_LONG('q', "query", "SELECTOR", CLI_ALL,
             "a vector selector read (repeat for several; default {__name__=~\"DCGM_FI_.*\"}, "
             "and Istio's istio_requests_total of the used workloads under sharedSplit: usage)"),
    CLI_LONG('t', "timeout", "DUR", CLI_ALL, "the limit of one request (default 60s)"),
    CLI_LONG('c', "cacert", "FILE", CLI_ALL, "CA certificates for an https:// URL"),
    CLI_LONG('K', "insecure", NULL, CLI_ALL, "do not verify an https:// URL's certificate"),
    CLI_LONG('k', "hmac-key-file", "FILE", CLI_ALL, "the ledger's key for custody violations"),
    CLI_LONG('E', "max-age", "DUR", CLI_ALL,
             "refuse samples older than now less DUR (default 3650d)"),
    CLI_LONG('H', "max-ahead", "DUR", CLI_ALL,
             "refuse samples later than now plus DUR (default 1h)"),
    CLI_LONG('g', "catalog", "FILE", CLI_ALL,
             "extra GpuModel documents (e.g. from 'tessera catalog import')"),
    CLI_END};

const struct cli_verb cli_verb_prometheus = {
    "meter prometheus",
    "usage: tessera meter prometheus -f SPEC --db DB --url URL --from TIME --to TIME\n"
    "       tessera meter prometheus -f SPEC --db DB --url URL --follow [--from TIME]\n"
    "                            [--delay 60s]\n"
    "                            [--interval 15s] [--query SELECTOR]... [--timeout 60s]\n"
    "                            [--cacert FILE] [--insecure] [--hmac-key-file FILE]\n"
    "                            [--catalog FILE]\n\n"
    "Read the dcgm-exporter series an existing Prometheus scraped, through its HTTP\n"
    "API, as raw samples: every sample from --from to --to (both included), each at\n"
    "the time Prometheus stored it (its scrape's time, or the exporter's timestamp),\n"
    "in windows of 60 --interval (/api/v1/query of SELECTOR[Wms] at a window's last\n"
    "ms), and store them as `tessera meter import` stores the same scrapes: each\n"
    "sample is the exporter's line with the labels the exporter set (Prometheus' own\n"
    "instance and job left out) and its own timestamp, so the usage equals a direct\n"
    "import of the pages Prometheus scraped. An answer that is not Prometheus'\n"
    "success is refused with its error; a bad field is named by its JSON path\n"
    "(data.result[3].values[17][1]), as is a series' sample out of order or twice,\n"
    "or outside the window asked for.\n"
    "Exit 0 when everything was stored, 1 when Prometheus or the store failed,\n"
    "2 on bad usage or a bad answer.\n\n"
    "--follow reads on from --from, else from the millisecond after the store's\n"
    "newest sample, else from now less --delay: windows of whole --interval steps,\n"
    "at most 60, that end --delay before now (longer than the scrape timeout, so\n"
    "Prometheus has them whole), one log line each on stderr.\n"
    "A window that fails (Prometheus or the store down) is tried again after 1 s,\n"
    "2 s, 4 s... (at most 60 s); an error that would exit 2 ends the run. SIGTERM or\n"
    "SIGINT ends it after the current window; exit 0, or 1 when a window failed.\n",
    OPTS,
    "TIME is Unix seconds or RFC 3339; DB is sqlite:PATH or postgres://...\n",
    NULL,
    CLI_ALL};

struct prom_args {
    struct cli_files spec, catalog;
    const char *db, *keyfile;
    struct meter_promq_opts o;
    int have_from, have_to, follow;
    int64_t delay_ms, max_age_ms, max_ahead_ms;
};

static int parse_flag(struct prom_args *a, int c, const char *arg)
{
    struct meter_promq_opts *o = &a->o;
    switch (c) {
    case 'f': return cli_files_add(&a->spec, arg);
    case 'g': return cli_files_add(&a->catalog, arg);
    case 'd': a->db = arg; return 1;
    case 'u': o->url = arg; return meter_fetch_url_ok(arg);
    case 'q':
        if (!*arg || o->nqueries == METER_PROM_QUERIES_MAX)
            return 0;
        o->queries[o->nqueries++] = arg;
        return 1;
    case 'k': a->keyfile = arg; return 1;
    case 'c': o->cacert = arg; return 1;
    case 'K': o->insecure = 1; return 1;
    case 'F': return a->have_from = ts_time_parse(arg, &o->from_ms);
    case 'T': return a->have_to = ts_time_parse(arg, &o->to_ms);
    case 'i': return ts_duration_parse(arg, &o->step_ms) && o->step_ms > 0;
    case 'w': a->follow = 1; return 1;
    case 'D': return ts_duration_parse(arg, &a->delay_ms);
    case 'E': return ts_duration_parse(arg, &a->max_age_ms);
    case 'H': return ts_duration_parse(arg, &a->max_ahead_ms);
    case 't': return ts_duration_parse(arg, &o->timeout_ms) && o->timeout_ms > 0;
    default: return 0;
    }
}

static int set(void *ctx, int key, const char *arg)
{
    if (parse_flag(ctx, key, arg))
        return CLI_OK;
    if (key != 'f' && key != 'g')
        fprintf(stderr, "tessera: meter prometheus: bad value '%s' for --%s\n",
                key == 'u' ? "(not an http:// or https:// URL)" : arg,
                cli_opt_name(&cli_verb_prometheus, key));
    return CLI_BAD_INPUT;
}

static int parse_args(int argc, char **argv, struct prom_args *a)
{
    int rc = cli_parse(&cli_verb_prometheus, CLI_ALL, argc, argv, set, a);
    if (rc == CLI_HELP)
        cli_help(&cli_verb_prometheus, CLI_ALL);
    if (rc != CLI_OK)
        return rc;
    int range = a->follow ? !a->have_to : a->have_from && a->have_to;
    if (!a->spec.n || !a->db || !a->o.url || !range || optind < argc) {
        fprintf(stderr, "tessera: meter prometheus needs -f SPEC, --db DB, --url URL, and "
                        "--from TIME and --to TIME, or --follow without --to (see tessera "
                        "meter prometheus --help)\n");
        return CLI_BAD_INPUT;
    }
    if (!a->follow && a->o.from_ms > a->o.to_ms) {
        fprintf(stderr, "tessera: meter prometheus: --from is after --to\n");
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

/* Read [from, to] into the store; the counts of that range into *c, exit
 * code CLI_FAIL into *rc on rejected lines or a violation not recorded. */
static ts_status read_range(struct prom_args *a, struct cli_meter *m, const char *shown,
                            struct meter_ingest_counts *c, int *rc, struct ts_error *e)
{
    struct ts_diag diag = {0};
    struct meter_ingest *in = NULL;
    ts_status st = meter_ingest_new(&m->ctx, m->st, a->o.from_ms, shown, &diag, &in);
    if (st == TS_OK) {
        meter_ingest_overlap(in); /* the store is this range's until it is read */
        st = meter_promq_import(&a->o, in, e);
    }
    if (st == TS_OK)
        st = meter_ingest_finish(in, e);
    cli_print_diag(&diag);
    *c = (struct meter_ingest_counts){0};
    if (in)
        meter_ingest_counts(in, c);
    if (c->rejected_lines || (in && cli_meter_violations(m, in) != CLI_OK))
        *rc = CLI_FAIL;
    meter_ingest_free(in);
    return st;
}

/* Read the range into the store; an exit code. */
static int run(struct prom_args *a, struct cli_meter *m)
{
    struct ts_error e = {0};
    struct meter_ingest_counts c;
    char shown[512];
    int rc = CLI_OK;
    meter_fetch_redact(a->o.url, shown, sizeof(shown));
    ts_status st = read_range(a, m, shown, &c, &rc, &e);
    if (e.code)
        cli_print_error(&e);
    char warnings[512];
    cli_meter_warnings(&c, warnings, sizeof(warnings));
    printf("%s: %zu device scrapes, %zu new samples, %d lines rejected, %d custody "
           "violations%s\n",
           shown, c.devices, c.inserted, c.rejected_lines, c.violations, warnings);
    return st != TS_OK ? cli_exit(st, CLI_DOING) : rc;
}

/* ---- --follow ---------------------------------------------------------- */

struct follow {
    int64_t next_ms; /* the first step not read yet */
    int64_t backoff_ms;
    long windows, failed;
    size_t inserted;
    int rejected, rc;
};

/* Sleep ms, waking early on a stop. */
static void nap(int64_t ms)
{
    while (ms > 0 && !stop_requested) {
        int64_t d = ms < 200 ? ms : 200;
        struct timespec t = {0, (long)d * 1000000};
        nanosleep(&t, NULL);
        ms -= d;
    }
}

/* Where reading starts: --from, else the step after the store's newest
 * sample, else now less --delay (on a step). */
static ts_status follow_start(struct prom_args *a, struct cli_meter *m, int64_t *next,
                              struct ts_error *e)
{
    int64_t step = a->o.step_ms, last = 0;
    int found = 0;
    ts_status st = a->have_from ? TS_OK : store_last_sample(m->st, &last, &found, e);
    int64_t t = ts_clock_ms(CLOCK_REALTIME) - a->delay_ms, aligned = t - (t % step + step) % step;
    *next = a->have_from ? a->o.from_ms : found ? last + 1 : aligned;
    if (!a->have_from && found && last > t) { /* a sample from the future: never wait for it */
        char at[40];
        ts_time_format(last, at);
        const struct ts_log_kv kv[] = {{"newest_sample", at}};
        ts_log(0, "warn", "store-newest-sample-ahead-of-now", kv, 1);
        *next = aligned;
    }
    return st;
}

static void log_window(const struct follow *f, const char *level, const char *msg, int64_t to,
                       const struct meter_ingest_counts *c, const char *error)
{
    char from_s[40], to_s[40], dev[24], ins[24], rej[24], back[24];
    ts_time_format(f->next_ms, from_s);
    ts_time_format(to, to_s);
    snprintf(dev, sizeof(dev), "%zu", c->devices);
    snprintf(ins, sizeof(ins), "%zu", c->inserted);
    snprintf(rej, sizeof(rej), "%d", c->rejected_lines);
    snprintf(back, sizeof(back), "%lld", (long long)f->backoff_ms);
    const struct ts_log_kv kv[] = {{"from", from_s},        {"to", to_s},
                                   {"devices", dev},        {"new_samples", ins},
                                   {"rejected_lines", rej}, {"retry_in_ms", error ? back : NULL},
                                   {"error", error}};
    ts_log(0, level, msg, kv, error ? 7 : 5);
}

/* One window [f->next_ms, to]; on failure f->backoff_ms is the wait. */
static ts_status follow_window(struct prom_args *a, struct cli_meter *m, const char *shown,
                               struct follow *f, int64_t to)
{
    struct ts_error e = {0};
    struct meter_ingest_counts c;
    a->o.from_ms = f->next_ms;
    a->o.to_ms = to;
    ts_status st = read_range(a, m, shown, &c, &f->rc, &e);
    f->windows++;
    f->inserted += c.inserted;
    f->rejected += c.rejected_lines;
    if (st == TS_OK) {
        f->backoff_ms = 0;
        log_window(f, "info", "window", to, &c, NULL);
        f->next_ms = to + 1;
        return TS_OK;
    }
    f->failed++;
    f->backoff_ms = f->backoff_ms ? f->backoff_ms * 2 : BACKOFF_FIRST_MS;
    f->backoff_ms = f->backoff_ms > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : f->backoff_ms;
    log_window(f, "error", "window-failed", to, &c, e.msg);
    return st;
}

/* Windows until a stop; an exit code. */
static int follow(struct prom_args *a, struct cli_meter *m)
{
    struct follow f = {0};
    struct ts_error e = {0};
    char shown[512];
    meter_fetch_redact(a->o.url, shown, sizeof(shown));
    if (follow_start(a, m, &f.next_ms, &e) != TS_OK)
        return cli_fail(&e, CLI_DOING);
    int64_t step = a->o.step_ms;
    while (!stop_requested) {
        int64_t ready = ts_clock_ms(CLOCK_REALTIME) - a->delay_ms; /* read up to before it */
        int64_t steps = (ready - f.next_ms) / step;
        if (steps < 1) {
            nap(f.next_ms + step - ready);
            continue;
        }
        steps = steps > METER_PROM_STEPS_MAX ? METER_PROM_STEPS_MAX : steps;
        ts_status st = follow_window(a, m, shown, &f, f.next_ms + steps * step - 1);
        if (st != TS_OK && cli_exit(st, CLI_DOING) == CLI_BAD_INPUT)
            return CLI_BAD_INPUT;
        nap(f.backoff_ms);
    }
    printf("windows=%ld failed=%ld new_samples=%zu rejected=%d\n", f.windows, f.failed, f.inserted,
           f.rejected);
    return f.failed || f.rc != CLI_OK ? CLI_FAIL : CLI_OK;
}

static void catch_stops(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cmd_meter_prometheus(int argc, char **argv)
{
    struct prom_args a = {.o = {.step_ms = 15000, .timeout_ms = 60000},
                          .delay_ms = 60000,
                          .max_age_ms = METER_MAX_AGE_DEFAULT_MS,
                          .max_ahead_ms = METER_MAX_AHEAD_DEFAULT_MS};
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? CLI_OK : rc;
    struct cli_meter m;
    rc = cli_meter_open(&a.spec, &a.catalog, a.db, &m);
    m.ctx.max_age_ms = a.max_age_ms;
    m.ctx.max_ahead_ms = a.max_ahead_ms;
    struct ts_sbuf query;
    ts_sbuf_init(&query, 64 * 1024);
    if (rc == CLI_OK && !a.o.nqueries) {
        meter_promq_default_query(m.job.model, &a.o, &query);
        if (ts_sbuf_status(&query) != TS_OK) {
            fprintf(stderr, "tessera: meter prometheus: the default query (DCGM and Istio's "
                            "counter of every used workload) passes 64 KiB: give --query\n");
            rc = CLI_BAD_INPUT;
        }
    }
    if (rc == CLI_OK)
        rc = cli_read_key(a.keyfile, &m.key, &m.key_len);
    if (rc == CLI_OK && a.follow)
        catch_stops();
    if (rc == CLI_OK)
        rc = a.follow ? follow(&a, &m) : run(&a, &m);
    cli_meter_close(&m);
    ts_sbuf_release(&query);
    return rc;
}
