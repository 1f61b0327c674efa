/*
 * cmd_scrape.c - `tessera meter scrape`: flags, signals and the log lines of
 * the live scraper (meter/scrape.h does the work). Dispatched from
 * cmd_meter.c; shares its spec + store opening (cli_meter_open).
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "meter/scrape.h"
#include "util/time.h"

#define TARGETS_MAX 256

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void scrape_usage(FILE *out)
{
    fprintf(out,
            "usage: tessera meter scrape -f SPEC --db DB --target URL [--target URL ...]\n"
            "                            [--interval 15s] [--timeout 5s] [--connect-timeout T]\n"
            "                            [--retries 3] [--count N] [--max-body 256M]\n"
            "                            [--cacert FILE] [--insecure] [--hmac-key-file FILE]\n\n"
            "Every --interval (rounds aligned to multiples of it) GET each target's\n"
            "dcgm-exporter /metrics over http:// or https:// and store one sample per GPU or\n"
            "MIG instance, stamped with the time the request was sent (or the sample's own\n"
            "timestamp). --timeout bounds each attempt, --connect-timeout (default: --timeout)\n"
            "its connection; a refused or lost connection, a timeout or a 5xx answer is tried\n"
            "again --retries times, waiting 0.5 s, then 1 s, 2 s...; a 4xx, a TLS failure or a\n"
            "body over --max-body is not. Scrapes the store could not take wait and are\n"
            "flushed again before each round and, for up to 30 s, at the end. Each target's\n"
            "latest body (up to 16 MiB) is kept for tenant-labelled /metrics.\n"
            "Runs --count rounds, or until SIGINT/SIGTERM (the current round finishes).\n"
            "One key=value line per scrape on stderr; a summary on stdout. Exit 0 when every\n"
            "scrape was fetched, parsed and stored, 1 otherwise, 2 on bad usage.\n");
}

struct scrape_args {
    struct cli_files spec;
    const char *db, *keyfile, *targets[TARGETS_MAX];
    size_t ntargets;
    struct meter_scrape_opts o;
    int have_connect;
};

/* "1048576", "64K", "256M", "1G" into bytes; 1 on success. */
static int parse_size(const char *text, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    unsigned shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (end == text || *text == '-' || (shift && end[1]) || (!shift && *end) ||
        v > (SIZE_MAX >> shift) || v == 0)
        return 0;
    *out = (size_t)(v << shift);
    return 1;
}

static int parse_count(const char *text, long *out, long min)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < min || v > 1000000000L)
        return 0;
    *out = v;
    return 1;
}

static int add_target(struct scrape_args *a, const char *url)
{
    if (!meter_fetch_url_ok(url)) {
        char shown[512];
        meter_fetch_redact(url, shown, sizeof(shown));
        fprintf(stderr, "tessera: meter scrape: --target '%s': not an http:// or https:// URL\n",
                shown);
        return 0;
    }
    if (a->ntargets == TARGETS_MAX) {
        fprintf(stderr, "tessera: at most %d --target\n", TARGETS_MAX);
        return 0;
    }
    a->targets[a->ntargets++] = url;
    return 1;
}

static int parse_flag(struct scrape_args *a, int c)
{
    long n = 0;
    struct meter_fetch_opts *f = &a->o.fetch;
    switch (c) {
    case 'f': return cli_files_add(&a->spec, optarg);
    case 'd': a->db = optarg; return 1;
    case 'u': return add_target(a, optarg);
    case 'k': a->keyfile = optarg; return 1;
    case 'c': f->cacert = optarg; return 1;
    case 'K': f->insecure = 1; return 1;
    case 'i': return ts_duration_parse(optarg, &a->o.interval_ms) && a->o.interval_ms > 0;
    case 't': return ts_duration_parse(optarg, &f->timeout_ms) && f->timeout_ms > 0;
    case 'C':
        a->have_connect = 1;
        return ts_duration_parse(optarg, &f->connect_timeout_ms) && f->connect_timeout_ms > 0;
    case 'r': return parse_count(optarg, &n, 0) && n <= 100 && (f->retries = (int)n, 1);
    case 'n': return parse_count(optarg, &a->o.count, 1);
    case 'm': return parse_size(optarg, &f->max_body);
    default: return 0;
    }
}

/* 1: go on; 0: exit with *rc (help, or a message printed). */
static int parse_args(int argc, char **argv, struct scrape_args *a, int *rc)
{
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'}, {"db", required_argument, NULL, 'd'},
        {"target", required_argument, NULL, 'u'},   {"interval", required_argument, NULL, 'i'},
        {"timeout", required_argument, NULL, 't'},  {"connect-timeout", required_argument, NULL, 'C'},
        {"retries", required_argument, NULL, 'r'},  {"count", required_argument, NULL, 'n'},
        {"max-body", required_argument, NULL, 'm'}, {"cacert", required_argument, NULL, 'c'},
        {"insecure", no_argument, NULL, 'K'},       {"hmac-key-file", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
    int c, idx = -1;
    optind = 1;
    *rc = CLI_BAD_INPUT;
    while ((c = getopt_long(argc, argv, "f:h", opts, &idx)) != -1) {
        if (c == 'h') {
            scrape_usage(stdout);
            *rc = CLI_OK;
            return 0;
        }
        if (!parse_flag(a, c)) {
            if (c != '?' && c != 'f' && c != 'u')
                fprintf(stderr, "tessera: meter scrape: bad value '%s' for --%s\n", optarg,
                        idx >= 0 ? opts[idx].name : "?");
            return 0;
        }
        idx = -1;
    }
    if (!a->spec.n || !a->db || !a->ntargets || optind < argc) {
        fprintf(stderr, "tessera: meter scrape needs -f SPEC, --db DB and --target URL "
                "(see tessera meter scrape --help)\n");
        return 0;
    }
    if (!a->have_connect)
        a->o.fetch.connect_timeout_ms = a->o.fetch.timeout_ms;
    return 1;
}

/* ---- log lines -------------------------------------------------------- */

/* Append key=value, quoting values that need it. */
static void kv(FILE *out, const char *key, const char *val)
{
    if (!val || !*val)
        return;
    if (!strpbrk(val, " \"=\\\n\t")) {
        fprintf(out, " %s=%s", key, val);
        return;
    }
    fprintf(out, " %s=\"", key);
    for (const char *p = val; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', out);
        fputc(*p == '\n' ? ' ' : *p, out);
    }
    fputc('"', out);
}

static void kv_num(FILE *out, const char *key, long long v)
{
    fprintf(out, " %s=%lld", key, v);
}

static const char *const event_names[] = {"scrape", "stored-late", "store-wait", "lost",
                                          "exposition-skipped", "overrun"};

static void log_event(void *ctx, const struct meter_scrape_event *e)
{
    struct cli_meter *m = ctx;
    char now[40], msg[TS_MSG_MAX + TS_PATH_MAX + 64] = "", first[TS_MSG_MAX + TS_PATH_MAX];
    ts_time_format(meter_fetch_now_ms(), now);
    int bad = e->error || (e->diag && e->diag->count) || e->kind == METER_EV_LOST;
    fprintf(stderr, "ts=%s level=%s event=%s", now, bad ? "error" : "info",
            event_names[e->kind]);
    kv_num(stderr, "round", e->round);
    kv(stderr, "target", e->target);
    if (e->kind == METER_EV_SCRAPE) {
        kv_num(stderr, "status", e->status);
        kv_num(stderr, "bytes", (long long)e->bytes);
        kv_num(stderr, "attempts", e->attempts);
    }
    if (e->kind == METER_EV_SCRAPE || e->kind == METER_EV_STORED_LATE) {
        kv_num(stderr, "devices", (long long)e->devices);
        kv_num(stderr, "new_samples", (long long)e->inserted);
        kv_num(stderr, "rejected_lines", e->rejected_lines);
    }
    if (e->kind == METER_EV_OVERRUN)
        kv_num(stderr, "skipped_rounds", e->skipped);
    if (e->kind != METER_EV_STORE_WAIT && e->kind != METER_EV_LOST)
        kv_num(stderr, "ms", e->ms);
    if (e->error)
        ts_error_format(e->error, msg, sizeof(msg));
    kv(stderr, "error", msg);
    if (e->diag && e->diag->count) {
        ts_error_format(&e->diag->items[0], first, sizeof(first));
        kv(stderr, "first_rejected", first);
    }
    fputc('\n', stderr);
    if (e->ingest)
        cli_meter_violations(m, e->ingest);
}

/* ---- the command ------------------------------------------------------ */

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; /* no SA_RESTART: a sleep ends at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cmd_meter_scrape(int argc, char **argv)
{
    struct scrape_args a = {0};
    a.o = (struct meter_scrape_opts){
        .interval_ms = 15000, .expo_max = STORE_EXPOSITION_MAX,
        .drain_ms = METER_SCRAPE_DRAIN_MS, .stop = &stop_requested,
        .fetch = {.timeout_ms = 5000, .retries = 3, .backoff_ms = 500,
                  .max_body = METER_SCRAPE_BODY_MAX, .stop = &stop_requested}};
    int rc;
    if (!parse_args(argc, argv, &a, &rc))
        return rc;
    a.o.targets = a.targets;
    a.o.ntargets = a.ntargets;
    struct cli_meter m;
    rc = cli_meter_open(&a.spec, a.db, &m);
    if (rc == CLI_OK)
        rc = cli_read_key(a.keyfile, &m.key, &m.key_len);
    struct meter_scrape_totals t = {0};
    struct ts_error e = {0};
    if (rc == CLI_OK) {
        install_signals();
        if (meter_scrape_run(&m.ctx, m.st, &a.o, log_event, &m, &t, &e) != TS_OK) {
            cli_print_error(&e);
            rc = e.code == TS_USAGE ? CLI_BAD_INPUT : CLI_FAIL;
        }
        printf("rounds=%ld scrapes=%zu failed=%zu rejected=%zu new_samples=%zu lost=%zu\n",
               t.rounds, t.scrapes, t.failed, t.rejected, t.inserted, t.lost);
    }
    cli_meter_close(&m);
    return rc == CLI_OK && (t.failed || t.lost || t.rejected) ? CLI_FAIL : rc;
}
