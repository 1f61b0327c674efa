/*
 * cmd_scrape.c - `tessera meter scrape`: flags, signals and the log lines of
 * the live scraper (meter/scrape.h does the work). Dispatched from
 * cmd_meter.c; shares its spec + store opening (cli_meter_open).
 */
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "catalog/catalog.h"
#include "cli/cli.h"
#include "decide/decide.h"
#include "meter/discover.h"
#include "meter/scrape.h"
#include "plan/plan.h"
#include "spec/spec.h"
#include "serve/serve.h"
#include "util/log.h"
#include "util/time.h"

static volatile sig_atomic_t stop_requested, hup_requested;
static int log_json; /* --log-format json */
/* --max-age, --max-ahead: the window of scrape times taken */
static int64_t max_age_ms = METER_MAX_AGE_DEFAULT_MS, max_ahead_ms = METER_MAX_AHEAD_DEFAULT_MS;

/* What --listen shows; log_event counts under the lock. */
static struct {
    pthread_mutex_t lock;
    long rounds, ok, failed, lost, reloads_ok, reloads_failed;
    int64_t last_ok_ms;
    unsigned long long warnings[5]; /* by warning_kinds */
} seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* tessera_meter_warnings_total's kinds: what an ingest counts and keeps */
static const char *const warning_kinds[5] = {"unreadable_utilisation", "outside_time_window",
                                             "ledger_other_profile", "conflicting_duplicate",
                                             "already_stored"};

static void count_warnings(const struct meter_ingest *in)
{
    struct meter_ingest_counts c;
    meter_ingest_counts(in, &c);
    seen.warnings[0] += c.unreadable;
    seen.warnings[1] += (unsigned)c.out_of_window;
    seen.warnings[2] += c.stale_custody;
    seen.warnings[3] += (unsigned)c.duplicates;
    seen.warnings[4] += c.already_stored;
}

static void on_signal(int sig)
{
    if (sig == SIGHUP)
        hup_requested = 1;
    else
        stop_requested = 1;
}

static const struct cli_opt OPTS[] = {
    CLI_SHORT('f', "filename", "SPEC", CLI_ALL, "tenancy spec (repeat for several files)"),
    CLI_LONG('d', "db", "DB", CLI_ALL, "the store: sqlite:PATH or postgres://..."),
    CLI_LONG('u', "target", "URL", CLI_ALL, "a dcgm-exporter's /metrics (repeat for several)"),
    CLI_LONG('D', "discover", "NS/SVC[:PORT]", CLI_ALL,
             "every ready endpoint of a Service, from the API each round"),
    CLI_LONG('A', "api-server", "URL", CLI_ALL, "the Kubernetes API (default: the pod's own)"),
    CLI_LONG('T', "api-token-file", "FILE", CLI_ALL,
             "its bearer token (default: the pod's service-account token)"),
    CLI_LONG('Y', "api-ca-file", "FILE", CLI_ALL, "its CA (default: the pod's service-account CA)"),
    CLI_LONG('i', "interval", "DUR", CLI_ALL, "time between rounds (default 15s)"),
    CLI_LONG('t', "timeout", "DUR", CLI_ALL, "the limit of one attempt (default 5s)"),
    CLI_LONG('C', "connect-timeout", "DUR", CLI_ALL,
             "the limit of its connection (default: --timeout)"),
    CLI_LONG('r', "retries", "N", CLI_ALL,
             "attempts after the first (default 3, at most " CLI_STR(CLI_RETRIES_MAX) ")"),
    CLI_LONG('n', "count", "N", CLI_ALL, "rounds to run (default: until a signal)"),
    CLI_LONG('m', "max-body", "SIZE", CLI_ALL, "the largest body taken (default 256M; K, M, G)"),
    CLI_LONG('c', "cacert", "FILE", CLI_ALL, "CA certificates for https:// targets"),
    CLI_LONG('K', "insecure", NULL, CLI_ALL, "do not verify https:// targets' certificates"),
    CLI_LONG('k', "hmac-key-file", "FILE", CLI_ALL, "the ledger's key for custody violations"),
    CLI_LONG('E', "max-age", "DUR", CLI_ALL,
             "refuse samples older than now less DUR (default 3650d)"),
    CLI_LONG('H', "max-ahead", "DUR", CLI_ALL,
             "refuse samples later than now plus DUR (default 1h)"),
    CLI_LONG('g', "catalog", "FILE", CLI_ALL,
             "extra GpuModel documents (e.g. from 'tessera catalog import')"),
    CLI_LONG_C('L', "log-format", "FMT", CLI_ALL, cli_complete_log_formats,
               "text (key=value, default) or json"),
    CLI_LONG('l', "listen", "ADDR:PORT", CLI_ALL, "plain HTTP /healthz, /readyz, /metrics"),
    CLI_END};

const struct cli_verb cli_verb_scrape = {
    "meter",
    "usage: tessera meter scrape -f SPEC --db DB --target URL [--target URL ...]\n"
    "                            | --discover NS/SERVICE[:PORT] [--api-server URL]\n"
    "                              [--api-token-file FILE] [--api-ca-file FILE]\n"
    "                            [--interval 15s] [--timeout 5s] [--connect-timeout T]\n"
    "                            [--retries 3] [--count N] [--max-body 256M]\n"
    "                            [--cacert FILE] [--insecure] [--hmac-key-file FILE]\n"
    "                            [--log-format text|json] [--listen ADDR:PORT]\n\n"
    "Every --interval (rounds aligned to multiples of it) GET each target's\n"
    "dcgm-exporter /metrics over http:// or https:// and store one sample per GPU or\n"
    "MIG instance, stamped with the time the request was sent (or the sample's own\n"
    "timestamp). --timeout bounds each attempt, --connect-timeout (default: --timeout)\n"
    "its connection; a refused or lost connection, a timeout or a 5xx answer is tried\n"
    "again --retries times, waiting 0.5 s, then 1 s, 2 s...; a 4xx, a TLS failure or a\n"
    "body over --max-body is not. Scrapes the store could not take wait and are\n"
    "flushed again before each round and, for up to 30 s, at the end. Each target's\n"
    "latest body (up to 16 MiB) is kept for tenant-labelled /metrics.\n"
    "--discover: before each round, the ready endpoints of the Service's\n"
    "EndpointSlices (one exporter per node, PORT a name or number; default its only\n"
    "port) read through the Kubernetes API (RBAC: list endpointslices in NS) are the\n"
    "targets, http://ADDRESS:PORT/metrics each; the Service's own address would reach\n"
    "one node's exporter at random. When the API cannot be read the previous list\n"
    "stays (msg=discover result=failed).\n"
    "Runs --count rounds, or until SIGINT/SIGTERM (the current round finishes).\n"
    "Before each round, when a -f or --catalog file changed (inode, size, mtime) or\n"
    "after SIGHUP, the spec is loaded again; the next rounds are charged by it. If it\n"
    "fails to load, the previous spec stays and msg=reload result=failed is logged\n"
    "with the file:line:col.\n"
    "One log line per scrape on stderr (msg=scrape key=value, or JSON with\n"
    "--log-format json: the log serve and agent watch write); a summary on\n"
    "stdout. Exit 0 when every scrape was fetched, parsed and stored, 1 otherwise,\n"
    "2 on bad usage. --listen: /healthz (200 while running), /readyz (200 after the\n"
    "first round), /metrics (scrapes by result, rounds, lost, last success,\n"
    "reloads by result).\n",
    OPTS,
    NULL,
    NULL,
    CLI_ALL};

struct scrape_args {
    struct cli_files spec, catalog;
    const char *db, *keyfile, *listen, *targets[CLI_TARGETS_MAX];
    size_t ntargets;
    struct meter_scrape_opts o;
    int have_connect;
    const char *discover;
    struct meter_discover_opts disc;
    char disc_buf[256];
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
    if (end == text || *end || v < min || v > CLI_COUNT_MAX)
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
    if (a->ntargets == CLI_TARGETS_MAX) {
        fprintf(stderr, "tessera: at most %d --target\n", CLI_TARGETS_MAX);
        return 0;
    }
    a->targets[a->ntargets++] = url;
    return 1;
}

static int parse_flag(struct scrape_args *a, int c, const char *arg)
{
    long n = 0;
    struct meter_fetch_opts *f = &a->o.fetch;
    switch (c) {
    case 'f': return cli_files_add(&a->spec, arg);
    case 'g': return cli_files_add(&a->catalog, arg);
    case 'd': a->db = arg; return 1;
    case 'u': return add_target(a, arg);
    case 'D': a->discover = arg; return 1;
    case 'A': a->disc.api = arg; return meter_fetch_url_ok(arg);
    case 'T': a->disc.token_file = arg; return 1;
    case 'Y': a->disc.ca_file = arg; return 1;
    case 'k': a->keyfile = arg; return 1;
    case 'c': f->cacert = arg; return 1;
    case 'K': f->insecure = 1; return 1;
    case 'i': return ts_duration_parse(arg, &a->o.interval_ms) && a->o.interval_ms > 0;
    case 't': return ts_duration_parse(arg, &f->timeout_ms) && f->timeout_ms > 0;
    case 'C':
        a->have_connect = 1;
        return ts_duration_parse(arg, &f->connect_timeout_ms) && f->connect_timeout_ms > 0;
    case 'r': return parse_count(arg, &n, 0) && n <= CLI_RETRIES_MAX && (f->retries = (int)n, 1);
    case 'n': return parse_count(arg, &a->o.count, 1);
    case 'm': return parse_size(arg, &f->max_body);
    case 'l': a->listen = arg; return 1;
    case 'E': return ts_duration_parse(arg, &max_age_ms);
    case 'H': return ts_duration_parse(arg, &max_ahead_ms);
    case 'L': return (log_json = !strcmp(arg, "json")) || !strcmp(arg, "text");
    default: return 0;
    }
}

static int set(void *ctx, int key, const char *arg)
{
    if (parse_flag(ctx, key, arg))
        return CLI_OK;
    if (key != 'f' && key != 'u') /* those two said why */
        fprintf(stderr, "tessera: meter scrape: bad value '%s' for --%s\n", arg,
                cli_opt_name(&cli_verb_scrape, key));
    return CLI_BAD_INPUT;
}

/* CLI_OK to go on, CLI_HELP after --help, else an exit code (a message printed). */
static int parse_args(int argc, char **argv, struct scrape_args *a)
{
    int rc = cli_parse(&cli_verb_scrape, CLI_ALL, argc, argv, set, a);
    if (rc == CLI_HELP)
        cli_help(&cli_verb_scrape, CLI_ALL);
    if (rc != CLI_OK)
        return rc;
    if (!a->spec.n || !a->db || !(a->ntargets || a->discover) || optind < argc) {
        fprintf(stderr, "tessera: meter scrape needs -f SPEC, --db DB and --target URL or "
                        "--discover NS/SERVICE (see tessera meter scrape --help)\n");
        return CLI_BAD_INPUT;
    }
    struct ts_error e = {0};
    if (a->discover &&
        meter_discover_spec(a->discover, a->disc_buf, sizeof(a->disc_buf), &a->disc, &e) != TS_OK) {
        fprintf(stderr, "tessera: meter scrape: %s\n", e.msg);
        return CLI_BAD_INPUT;
    }
    if (!a->have_connect)
        a->o.fetch.connect_timeout_ms = a->o.fetch.timeout_ms;
    return CLI_OK;
}

/* ---- log lines (util/log.h, shared with serve and agent watch) ---------- */

struct line {
    struct ts_log_kv kv[12];
    char num[8][24];
    size_t n, nnum;
};

/* key=value, left out when empty (as before the logger was shared) */
static void kv(struct line *l, const char *key, const char *val)
{
    if (val && *val && l->n < sizeof l->kv / sizeof l->kv[0])
        l->kv[l->n++] = (struct ts_log_kv){key, val};
}

static void kv_num(struct line *l, const char *key, long long v)
{
    if (l->nnum == sizeof l->num / sizeof l->num[0])
        return;
    snprintf(l->num[l->nnum], sizeof l->num[0], "%lld", v);
    kv(l, key, l->num[l->nnum++]);
}

static const char *const event_names[] = {"scrape", "stored-late",        "store-wait",
                                          "lost",   "exposition-skipped", "overrun"};

static void event_counts(struct line *l, const struct meter_scrape_event *e)
{
    if (e->kind == METER_EV_SCRAPE) {
        kv_num(l, "status", e->status);
        kv_num(l, "bytes", (long long)e->bytes);
        kv_num(l, "attempts", e->attempts);
    }
    if (e->kind == METER_EV_SCRAPE || e->kind == METER_EV_STORED_LATE) {
        kv_num(l, "devices", (long long)e->devices);
        kv_num(l, "new_samples", (long long)e->inserted);
        kv_num(l, "rejected_lines", e->rejected_lines);
    }
    if (e->kind == METER_EV_OVERRUN)
        kv_num(l, "skipped_rounds", e->skipped);
    if (e->kind != METER_EV_STORE_WAIT && e->kind != METER_EV_LOST)
        kv_num(l, "ms", e->ms);
}

static void log_event(void *ctx, const struct meter_scrape_event *e)
{
    struct cli_meter *m = ctx;
    char msg[TS_MSG_MAX + TS_PATH_MAX + 64] = "", first[TS_MSG_MAX + TS_PATH_MAX] = "";
    struct line l = {.n = 0};
    int bad = e->error || (e->diag && e->diag->count) || e->kind == METER_EV_LOST;
    kv_num(&l, "round", e->round);
    kv(&l, "target", e->target);
    event_counts(&l, e);
    if (e->error)
        ts_error_format(e->error, msg, sizeof(msg));
    kv(&l, "error", msg);
    if (e->diag && e->diag->count)
        ts_error_format(&e->diag->items[0], first, sizeof(first));
    kv(&l, "first_rejected", first);
    ts_log(log_json, bad ? "error" : "info", event_names[e->kind], l.kv, l.n);
    pthread_mutex_lock(&seen.lock);
    seen.rounds = e->round > seen.rounds ? e->round : seen.rounds;
    seen.ok += e->kind == METER_EV_SCRAPE && !e->error;
    seen.failed += e->kind == METER_EV_SCRAPE && e->error;
    seen.lost += e->kind == METER_EV_LOST;
    seen.last_ok_ms = e->kind == METER_EV_SCRAPE && !e->error ? e->at_ms : seen.last_ok_ms;
    if (e->ingest)
        count_warnings(e->ingest);
    pthread_mutex_unlock(&seen.lock);
    if (e->ingest)
        cli_meter_violations(m, e->ingest);
}

/* ---- --listen ---------------------------------------------------------- */

static unsigned status(void *ctx, const char *path, struct ts_sbuf *b)
{
    (void)ctx;
    pthread_mutex_lock(&seen.lock);
    long rounds = seen.rounds, ok = seen.ok, failed = seen.failed, lost = seen.lost;
    long rel_ok = seen.reloads_ok, rel_failed = seen.reloads_failed;
    int64_t last = seen.last_ok_ms;
    unsigned long long warnings[5];
    memcpy(warnings, seen.warnings, sizeof(warnings));
    pthread_mutex_unlock(&seen.lock);
    if (strcmp(path, "/healthz") == 0)
        return ts_sbuf_puts(b, "ok\n"), 200;
    if (strcmp(path, "/readyz") == 0)
        return ts_sbuf_puts(b, ok + failed ? "ready\n" : "no round yet\n"), ok + failed ? 200 : 503;
    if (strcmp(path, "/metrics") != 0)
        return ts_sbuf_puts(b, "not found\n"), 404;
    ts_sbuf_printf(b,
                   "# HELP tessera_scrape_scrapes_total Scrapes by result.\n"
                   "# TYPE tessera_scrape_scrapes_total counter\n"
                   "tessera_scrape_scrapes_total{result=\"ok\"} %ld\n"
                   "tessera_scrape_scrapes_total{result=\"failed\"} %ld\n"
                   "# HELP tessera_scrape_rounds_total Rounds started.\n"
                   "# TYPE tessera_scrape_rounds_total counter\ntessera_scrape_rounds_total %ld\n"
                   "# HELP tessera_scrape_lost_total Scrapes whose samples were lost.\n"
                   "# TYPE tessera_scrape_lost_total counter\ntessera_scrape_lost_total %ld\n"
                   "# HELP tessera_scrape_last_success_timestamp_seconds Last good scrape.\n"
                   "# TYPE tessera_scrape_last_success_timestamp_seconds gauge\n"
                   "tessera_scrape_last_success_timestamp_seconds %.3f\n"
                   "# HELP tessera_meter_reloads_total Spec and catalog reloads by result.\n"
                   "# TYPE tessera_meter_reloads_total counter\n"
                   "tessera_meter_reloads_total{result=\"ok\"} %ld\n"
                   "tessera_meter_reloads_total{result=\"failed\"} %ld\n",
                   ok, failed, rounds, lost, (double)last / 1000.0, rel_ok, rel_failed);
    ts_sbuf_puts(b, "# HELP tessera_meter_warnings_total What scrapes held that was not billed "
                    "as read.\n# TYPE tessera_meter_warnings_total counter\n");
    for (int i = 0; i < 5; i++)
        ts_sbuf_printf(b, "tessera_meter_warnings_total{kind=\"%s\"} %llu\n", warning_kinds[i],
                       warnings[i]);
    return 200;
}

/* ---- reloading the spec and catalog ------------------------------------ */

/* One loaded spec: a job and the context that borrows it. */
struct generation {
    struct cli_job job;
    struct meter_ctx ctx;
    struct generation *older; /* kept to the end: waiting scrapes hold their context */
};

struct reload {
    const struct cli_files *spec, *catalog;
    struct store *st;
    struct stat seen[2 * CLI_MAX_FILES]; /* what each file was when last loaded */
    struct generation *gens;
};

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Stat every file into now; 1 when any differs from what was last loaded. */
static int files_changed(struct reload *rl, struct stat *now)
{
    int changed = 0;
    size_t k = 0;
    const struct cli_files *sets[] = {rl->spec, rl->catalog};
    for (size_t s = 0; s < 2; s++)
        for (size_t i = 0; i < sets[s]->n; i++, k++) {
            if (stat(sets[s]->paths[i], &now[k]) != 0)
                memset(&now[k], 0, sizeof(now[k]));
            changed |= !same_file(&now[k], &rl->seen[k]);
        }
    return changed;
}

/* Load, decide and plan as `tessera plan` does; the first error into why. */
static ts_status load_generation(struct reload *rl, struct generation *g, struct ts_error *why)
{
    struct ts_diag diag = {0};
    struct cli_job *j = &g->job;
    struct plan_options popt = PLAN_OPTIONS_DEFAULT;
    ts_status st = cat_load(rl->catalog->paths, rl->catalog->n, &j->cat, &diag);
    if (st == TS_OK)
        st = spec_load(rl->spec->paths, rl->spec->n, &j->model, &diag);
    if (st == TS_OK)
        st = plan_decide(j->model, j->cat, &popt, &j->decisions, &diag);
    if (st == TS_OK)
        st = plan_build(j->model, j->cat, j->decisions, &popt, &j->plan, &diag);
    if (st == TS_OK)
        st = plan_verify(j->plan, why);
    g->ctx = (struct meter_ctx){j->model, j->cat, j->plan, NULL, 0, 0, max_age_ms, max_ahead_ms};
    if (st == TS_OK)
        return meter_ctx_load_custody(&g->ctx, rl->st, why);
    for (int i = 0; i < diag.count; i++)
        if (diag.items[i].severity == TS_SEV_ERROR)
            return *why = diag.items[i], st;
    return why->code ? st : ts_err(why, st, "%s", ts_status_str(st));
}

static void log_reload(const char *reason, const struct ts_error *e)
{
    char msg[TS_MSG_MAX + 2 * TS_PATH_MAX + 64] = "";
    if (e)
        ts_error_format(e, msg, sizeof(msg));
    struct ts_log_kv kv[] = {{"result", e ? "failed" : "ok"}, {"reason", reason}, {"error", msg}};
    ts_log(log_json, e ? "error" : "info", "reload", kv, e ? 3 : 2);
    pthread_mutex_lock(&seen.lock);
    seen.reloads_ok += !e;
    seen.reloads_failed += !!e;
    pthread_mutex_unlock(&seen.lock);
}

/* meter_scrape_opts.refresh: a new context when a file changed or SIGHUP came. */
static const struct meter_ctx *refresh(void *arg)
{
    struct reload *rl = arg;
    struct stat now[2 * CLI_MAX_FILES];
    int hup = hup_requested, changed = files_changed(rl, now);
    if (!hup && !changed)
        return NULL;
    hup_requested = 0;
    memcpy(rl->seen, now, sizeof(now)); /* a broken file is tried again once it changes */
    struct generation *g = calloc(1, sizeof(*g));
    struct ts_error why = {0};
    ts_status st = g ? load_generation(rl, g, &why) : ts_err(&why, TS_NOMEM, "out of memory");
    if (st != TS_OK) {
        log_reload(hup ? "signal" : "changed", &why);
        if (g)
            meter_ctx_release(&g->ctx), cli_job_free(&g->job);
        free(g);
        return NULL;
    }
    log_reload(hup ? "signal" : "changed", NULL);
    g->older = rl->gens;
    rl->gens = g;
    return &g->ctx;
}

static void reload_free(struct reload *rl)
{
    for (struct generation *g = rl->gens, *next; g; g = next) {
        next = g->older;
        meter_ctx_release(&g->ctx);
        cli_job_free(&g->job);
        free(g);
    }
}

/* ---- --discover --------------------------------------------------------- */

struct discovered {
    const struct meter_discover_opts *o;
    struct meter_fetch *f;
    struct meter_target *v;
    size_t n, logged;
    long failed, empty; /* rounds whose list could not be read; found none ready */
    const char *urls[METER_DISCOVER_TARGETS_MAX];
};

static void log_discover(const struct discovered *d, const struct ts_error *e)
{
    char n[32];
    snprintf(n, sizeof(n), "%zu", d->n);
    struct ts_log_kv kv[] = {{"result", e ? "failed" : "ok"},
                             {"service", d->o->service},
                             {"targets", n},
                             {"error", e ? e->msg : ""}};
    ts_log(log_json, e || !d->n ? "error" : "info", "discover", kv, e ? 4 : 3);
}

/* meter_scrape_opts.retarget: the Service's ready endpoints now, or NULL
 * (the previous list stays) when the API could not be read. Logged when
 * the count changes, when none is ready, and on every failure. */
static const char *const *retarget(void *arg, size_t *n)
{
    struct discovered *d = arg;
    struct meter_target *v;
    size_t k;
    struct ts_error e = {0};
    if (meter_discover(d->f, d->o, &v, &k, &e) != TS_OK) {
        d->failed++;
        log_discover(d, &e);
        return NULL;
    }
    d->empty += !k;
    free(d->v);
    d->v = v;
    d->n = k;
    for (size_t i = 0; i < k; i++)
        d->urls[i] = v[i].url;
    if (k != d->logged || !k)
        log_discover(d, NULL);
    d->logged = k;
    *n = k;
    return d->urls;
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
    sigaction(SIGHUP, &sa, NULL);
}

int cmd_meter_scrape(int argc, char **argv)
{
    struct scrape_args a = {0};
    a.o = (struct meter_scrape_opts){.interval_ms = 15000,
                                     .expo_max = STORE_EXPOSITION_MAX,
                                     .drain_ms = METER_SCRAPE_DRAIN_MS,
                                     .stop = &stop_requested,
                                     .fetch = {.timeout_ms = 5000,
                                               .retries = 3,
                                               .backoff_ms = 500,
                                               .max_body = METER_SCRAPE_BODY_MAX,
                                               .stop = &stop_requested}};
    int rc;
    if ((rc = parse_args(argc, argv, &a)) != CLI_OK)
        return rc == CLI_HELP ? CLI_OK : rc;
    a.o.targets = a.targets;
    a.o.ntargets = a.ntargets;
    struct reload rl = {&a.spec, &a.catalog, NULL, {{0}}, NULL};
    files_changed(&rl, rl.seen); /* before reading: a change while it reads is seen */
    struct cli_meter m;
    rc = cli_meter_open(&a.spec, &a.catalog, a.db, &m);
    m.ctx.max_age_ms = max_age_ms;
    m.ctx.max_ahead_ms = max_ahead_ms;
    if (rc == CLI_OK)
        rc = cli_read_key(a.keyfile, &m.key, &m.key_len);
    struct meter_scrape_totals t = {0};
    struct ts_error e = {0};
    struct serve_status *http = NULL;
    if (rc == CLI_OK && a.listen && serve_status_start(a.listen, status, NULL, &http, &e) != TS_OK)
        rc = cli_fail(&e, CLI_DOING);
    rl.st = m.st;
    struct discovered *d = a.discover ? calloc(1, sizeof(*d)) : NULL;
    if (rc == CLI_OK && a.discover) {
        a.disc.fetch = a.o.fetch;
        if (!d)
            ts_err(&e, TS_NOMEM, "out of memory");
        if (!d || meter_fetch_new(&d->f, &e) != TS_OK)
            rc = cli_fail(&e, CLI_DOING);
        else {
            d->o = &a.disc;
            a.o.retarget = retarget;
            a.o.retarget_arg = d;
        }
    }
    if (rc == CLI_OK) {
        a.o.refresh = refresh;
        a.o.refresh_arg = &rl;
        install_signals();
        if (meter_scrape_run(&m.ctx, m.st, &a.o, log_event, &m, &t, &e) != TS_OK)
            rc = cli_fail(&e, CLI_DOING);
        printf("rounds=%ld scrapes=%zu failed=%zu rejected=%zu new_samples=%zu lost=%zu", t.rounds,
               t.scrapes, t.failed, t.rejected, t.inserted, t.lost);
        if (d)
            printf(" discover_failed=%ld discover_empty=%ld", d->failed, d->empty);
        printf("\n");
    }
    /* a round without its exporters billed nothing: that is a failure too */
    int undiscovered = d && (d->failed || d->empty);
    serve_status_stop(http);
    if (d) {
        meter_fetch_free(d->f);
        free(d->v);
        free(d);
    }
    reload_free(&rl);
    cli_meter_close(&m);
    return rc == CLI_OK && (t.failed || t.lost || t.rejected || undiscovered) ? CLI_FAIL : rc;
}
