/*
 * cmd_meter.c - `tessera meter import` (recorded dcgm-exporter scrapes into
 * the store), `tessera usage` (GPU-hours per tenant, model and profile) and
 * `tessera invoice` (a tenant's month priced), with the opening of spec,
 * store and custody context that `meter scrape` (cmd_scrape.c) shares.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "cli/cli.h"
#include "meter/agg.h"
#include "meter/ingest.h"
#include "meter/invoice.h"
#include "meter/usage.h"
#include "meter/usage_report.h"
#include "util/sbuf.h"
#include "util/text.h"
#include "util/time.h"

enum { IMPORT = 1, USAGE = 2, INVOICE = 4 };

/* What -o writes: an invoice in more forms than the usage report. */
static const char *const invoice_formats[] = {"text", "csv", "json", "yaml", "html", NULL};
static const struct cli_complete output_values[] = {
    {USAGE, CLI_COMPLETE_WORDS, cli_formats}, {INVOICE, CLI_COMPLETE_WORDS, invoice_formats}, {0}};

static const struct cli_opt OPTS[] = {
    CLI_SHORT('f', "filename", "SPEC", CLI_ALL, "tenancy spec (repeat for several files)"),
    CLI_LONG('d', "db", "DB", CLI_ALL, "the store: sqlite:PATH or postgres://..."),
    CLI_LONG('c', "catalog", "FILE", CLI_ALL,
             "extra GpuModel documents (e.g. from 'tessera catalog import')"),
    CLI_LONG('a', "at", "TIME", IMPORT, "the scrape time of samples without a timestamp"),
    CLI_LONG('k', "hmac-key-file", "F", IMPORT, "the ledger's key for custody violations"),
    CLI_LONG('E', "max-age", "DUR", IMPORT,
             "refuse samples older than now less DUR (default 3650d)"),
    CLI_LONG('H', "max-ahead", "DUR", IMPORT,
             "refuse samples later than now plus DUR (default 1h)"),
    CLI_LONG('F', "from", "TIME", USAGE, "count the samples from TIME on (default: all)"),
    CLI_LONG('T', "to", "TIME", USAGE, "count the samples before TIME (default: all)"),
    CLI_LONG('i', "interval", "DUR", USAGE | INVOICE, "the scrape interval (default 15s)"),
    CLI_SHORT_C('o', "output", "FORMAT", USAGE | INVOICE, output_values,
                "usage: text (default), json or yaml; invoice: text\n"
                "(default), csv, json, yaml or html"),
    CLI_LONG_C('t', "tenant", "T", INVOICE, cli_complete_tenants, "the tenant invoiced"),
    CLI_LONG('p', "period", "YYYY-MM", INVOICE, "the month invoiced"),
    CLI_LONG('O', "out-dir", "DIR", INVOICE,
             "write every tenant's invoice (--tenant: that one's) as\n"
             "DIR/TENANT.FORMAT, in one run (text, csv, json or html)"),
    CLI_LONG('V', "verify", NULL, INVOICE,
             "also integrate the month from the samples and compare it with\n"
             "the usage aggregate the invoice read (exit 1 if they differ)"),
    CLI_END};

#define IMPORT_SYNOPSIS                                                                         \
    "usage: tessera meter import -f SPEC --db DB --at TIME [--catalog F] [--hmac-key-file F]\n" \
    "                            FILE...\n"                                                     \
    "       tessera meter scrape -f SPEC --db DB --target URL... [--interval 15s]\n"            \
    "                     [--count N] ... (tessera meter scrape --help)\n"                      \
    "       tessera meter prometheus -f SPEC --db DB --url URL --from T --to T|--follow\n"      \
    "                     [--interval 15s] ... (tessera meter prometheus --help)\n\n"
#define IMPORT_TEXT                                                                          \
    "import  store recorded dcgm-exporter scrapes (Prometheus text, streamed), one sample\n" \
    "        per GPU or MIG instance and time, charged to the tenant that owns its pod's\n"  \
    "        namespace, else (no pod) to the ledger's or the plan's tenant, else\n"          \
    "        \"unattributed\"; shares by mechanism (docs/metering.md). A pod on a device\n"  \
    "        planned for another tenant is a custody violation: reported and recorded\n"     \
    "        in the ledger. A scrape stored before is not counted twice. TIME is Unix\n"     \
    "        seconds or RFC 3339; samples that carry a timestamp keep it.\n"                 \
    "scrape  pull live from dcgm-exporters over HTTP(S) every --interval, with\n"            \
    "        timeouts and retries; what the store could not take is retried, not lost.\n"    \
    "prometheus  read the raw samples an existing Prometheus holds (/api/v1/query)\n"        \
    "        and store them as import stores the same scrapes.\n"                            \
    "(tessera usage and tessera invoice read what these store.)\n"
#define USAGE_TEXT                                                                        \
    "usage: tessera usage -f SPEC --db DB [--catalog F] [--interval 15s] [--from TIME]\n" \
    "                     [--to TIME] [-o text|json|yaml]\n\n"                            \
    "GPU-hours per tenant, GPU model and profile on the allocation basis (the card\n"     \
    "share reserved) and the usage basis (times the engine-active ratio), from what\n"    \
    "tessera meter import or scrape stored; gaps between scrapes count at most twice\n"   \
    "--interval.\n"
#define INVOICE_TEXT                                                                        \
    "usage: tessera invoice -f SPEC --db DB --tenant T --period YYYY-MM [--catalog F]\n"    \
    "                     [--interval 15s] [--verify] [-o text|csv|json|yaml|html]\n"       \
    "       tessera invoice -f SPEC --db DB --period YYYY-MM --out-dir DIR [-o FORMAT]\n\n" \
    "One tenant's month priced with the spec's PriceBook: a line per GPU model and\n"       \
    "profile in GPU-hours (GPU-h), billed on the allocation basis, the usage basis\n"       \
    "beside it (showback). Money is in the currency's minor unit (ISO 4217: EUR 2\n"        \
    "decimals, JPY 0): each line is rounded once, half to even, and the total is the\n"     \
    "sum of the lines. The invoice number is TS-YYYYMM- and a hash of the tenant; the\n"    \
    "issue date is today (UTC). html is a printable page (no script, nothing fetched);\n"   \
    "for a PDF, print it from a browser. The month's totals are integrated once and\n"      \
    "kept in the store (the usage aggregate) for the other tenants' invoices, until a\n"    \
    "sample within its reach is stored.\n"

#define METER_NOTES                                                                  \
    "DB is sqlite:PATH or postgres://...; --catalog (or TESSERA_CATALOG) adds the\n" \
    "GpuModel documents `tessera plan --catalog` used, so every verb sees one catalog.\n"

const struct cli_verb cli_verb_meter = {"meter",     IMPORT_SYNOPSIS IMPORT_TEXT, OPTS,
                                        METER_NOTES, "import scrape prometheus",  IMPORT};
const struct cli_verb cli_verb_usage = {"usage", USAGE_TEXT, OPTS, METER_NOTES, NULL, USAGE};
const struct cli_verb cli_verb_invoice = {"invoice",   INVOICE_TEXT, OPTS,
                                          METER_NOTES, NULL,         INVOICE};

struct meter_args {
    const struct cli_verb *verb;
    struct cli_files spec, catalog;
    const char *db, *format, *tenant, *period, *keyfile, *out_dir;
    int64_t at_ms, from_ms, to_ms, interval_ms;
    int64_t max_age_ms, max_ahead_ms; /* import: the window of scrape times */
    int have_at;
    int verify; /* invoice --verify */
};

static int set(void *ctx, int key, const char *arg)
{
    struct meter_args *a = ctx;
    int ok = 1;
    switch (key) {
    case 'f': return cli_files_add(&a->spec, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'c': return cli_files_add(&a->catalog, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'd': a->db = arg; break;
    case 'o': a->format = arg; break;
    case 't': a->tenant = arg; break;
    case 'p': a->period = arg; break;
    case 'k': a->keyfile = arg; break;
    case 'V': a->verify = 1; break;
    case 'O': a->out_dir = arg; break;
    case 'a': ok = a->have_at = ts_time_parse(arg, &a->at_ms); break;
    case 'F': ok = ts_time_parse(arg, &a->from_ms); break;
    case 'T': ok = ts_time_parse(arg, &a->to_ms); break;
    case 'i': ok = ts_duration_parse(arg, &a->interval_ms); break;
    case 'E': ok = ts_duration_parse(arg, &a->max_age_ms); break;
    case 'H': ok = ts_duration_parse(arg, &a->max_ahead_ms); break;
    default: return CLI_BAD_INPUT;
    }
    if (ok)
        return CLI_OK;
    fprintf(stderr,
            "tessera: bad value '%s' for --%s (times: Unix seconds or RFC 3339 like "
            "2026-11-30T10:00:00Z; intervals like 15s)\n",
            arg, cli_opt_name(a->verb, key));
    return CLI_BAD_INPUT;
}

int cli_meter_open(const struct cli_files *spec, const struct cli_files *catalog, const char *db,
                   struct cli_meter *m)
{
    memset(m, 0, sizeof(*m));
    struct plan_options popt = PLAN_OPTIONS_DEFAULT; /* as `tessera plan` lays it out */
    int rc = cli_job_plan(&m->job, spec, catalog, &popt);
    struct ts_error e = {0};
    if (rc == CLI_OK && store_open(db, &m->st, &e) != TS_OK)
        rc = cli_exit(e.code, CLI_DOING);
    m->ctx = (struct meter_ctx){m->job.model, m->job.cat, m->job.plan, NULL, 0, 0, 0, 0};
    if (rc == CLI_OK && meter_ctx_load_custody(&m->ctx, m->st, &e) != TS_OK)
        rc = cli_exit(e.code, CLI_DOING);
    if (e.code)
        cli_print_error(&e);
    return rc;
}

void cli_meter_close(struct cli_meter *m)
{
    meter_ctx_release(&m->ctx);
    meter_violation_log_free(&m->recorded);
    store_close(m->st);
    cli_job_free(&m->job);
    free(m->key);
}

/* One stderr line for v: its fields come from a scrape, control bytes escaped. */
static void print_violation(const struct meter_violation *v)
{
    char when[40];
    ts_time_format(v->ts_ms, when);
    const char *part[] = {"tessera: custody violation: ",
                          v->device,
                          " on ",
                          v->profile[0] ? v->profile : "whole GPU",
                          " (node ",
                          v->node,
                          ") at ",
                          when,
                          ": pod ",
                          v->ns,
                          "/",
                          v->pod,
                          " of tenant '",
                          v->observed,
                          "' on a device planned for '",
                          v->planned,
                          "'"};
    struct ts_sbuf b;
    ts_sbuf_init(&b, CLI_REPORT_MAX);
    for (size_t i = 0; i < sizeof part / sizeof part[0]; i++)
        ts_text_plain(&b, part[i]);
    fprintf(stderr, "%s\n", ts_sbuf_str(&b));
    ts_sbuf_release(&b);
}

/* Report each custody violation and record it in the ledger. */
int cli_meter_violations(struct cli_meter *m, const struct meter_ingest *in)
{
    size_t n;
    const struct meter_violation *v = meter_ingest_violations(in, &n);
    int rc = CLI_OK;
    for (size_t i = 0; i < n; i++) {
        int first = meter_violation_first(&m->recorded, &v[i]);
        if (first < 0) {
            fprintf(stderr, "tessera: out of memory\n");
            return CLI_FAIL;
        }
        if (!first)
            continue; /* recorded before in this run (an earlier window or file) */
        print_violation(&v[i]);
        struct ts_error e = {0};
        if (meter_violation_record(m->st, m->key, m->key_len, &v[i], &e) != TS_OK)
            rc = cli_fail(&e, CLI_DOING);
    }
    return rc;
}

/* Keep a file's text for the tenant-labelled /metrics of `tessera console
 * --db` (a one-scrape file; a history larger than the cap is not kept). */
static void keep_exposition(struct cli_meter *m, const char *path, int64_t at_ms,
                            const struct ts_sbuf *body)
{
    struct ts_error e = {0};
    if (ts_sbuf_status(body) == TS_OK &&
        store_put_exposition(m->st, path, at_ms, ts_sbuf_str(body), body->len, &e) != TS_OK)
        cli_print_error(&e);
}

/* The chunk added to the file's copy; past its cap the copy is of no use
 * and its memory goes at once (a history piped in held 16 MiB to the end). */
static void keep_chunk(struct ts_sbuf *body, const char *chunk, size_t got)
{
    if (body->failed)
        return;
    ts_sbuf_add(body, chunk, got);
    if (body->failed) {
        int why = body->failed;
        ts_sbuf_release(body);
        body->failed = why;
    }
}

/* Stream f through the ingest (its text kept in body as far as it fits). */
static ts_status stream_file(FILE *f, const char *path, struct meter_ingest *in,
                             struct ts_sbuf *body, struct ts_error *e)
{
    static char chunk[1 << 16];
    size_t got;
    ts_status st = TS_OK;
    while (st == TS_OK && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        st = meter_ingest_feed(in, chunk, got, e);
        keep_chunk(body, chunk, got);
    }
    if (st == TS_OK && ferror(f))
        st = ts_err(e, TS_IO, "%s: read error: %s", path, strerror(errno));
    if (st == TS_OK)
        st = meter_ingest_finish(in, e);
    return st;
}

void cli_meter_warnings(const struct meter_ingest_counts *c, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    if (c->unreadable)
        n += (size_t)snprintf(buf + n, size - n, ", %zu unreadable utilisation (unknown use)",
                              c->unreadable);
    if (c->out_of_window && n < size)
        n += (size_t)snprintf(buf + n, size - n, ", %d lines outside the time window (refused)",
                              c->out_of_window);
    if (c->stale_custody && n < size)
        n += (size_t)snprintf(buf + n, size - n,
                              ", %zu ledger entries of another profile (not applied)",
                              c->stale_custody);
    if (c->duplicates && n < size)
        n += (size_t)snprintf(buf + n, size - n, ", %d conflicting duplicates (the first kept)",
                              c->duplicates);
    if (c->already_stored && n < size)
        n += (size_t)snprintf(buf + n, size - n, ", %zu already stored (the first kept)",
                              c->already_stored);
}

/* The summary line of one file and its exit code. */
static int summarise(struct cli_meter *m, const char *path, struct meter_ingest *in, ts_status st)
{
    struct meter_ingest_counts c = {0};
    char warnings[512];
    if (in)
        meter_ingest_counts(in, &c);
    cli_meter_warnings(&c, warnings, sizeof(warnings));
    printf("%s: %zu device scrapes, %zu new samples, %d lines rejected, %d custody "
           "violations%s\n",
           path, c.devices, c.inserted, c.rejected_lines, c.violations, warnings);
    int rc = st != TS_OK ? cli_exit(st, CLI_DOING) : c.rejected_lines ? CLI_FAIL : CLI_OK;
    if (in && cli_meter_violations(m, in) != CLI_OK)
        rc = CLI_FAIL;
    return rc;
}

/* Stream one recorded file into the store. */
static int import_file(const struct meter_args *a, struct cli_meter *m, const char *path)
{
    struct ts_diag diag = {0};
    struct ts_error e = {0};
    struct meter_ingest *in = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tessera: %s: cannot open: %s\n", path, strerror(errno));
        return CLI_BAD_INPUT;
    }
    struct ts_sbuf body; /* a file known to be past the cap is not copied only to fail */
    struct stat sb;
    int too_big = fstat(fileno(f), &sb) == 0 && sb.st_size > STORE_EXPOSITION_MAX;
    ts_sbuf_init(&body, too_big ? 0 : STORE_EXPOSITION_MAX);
    ts_status st = meter_ingest_new(&m->ctx, m->st, a->at_ms, path, &diag, &in);
    if (st == TS_OK) {
        meter_ingest_overlap(in); /* the store is this file's until its summary */
        st = stream_file(f, path, in, &body, &e);
    }
    fclose(f);
    cli_print_diag(&diag);
    if (e.code)
        cli_print_error(&e);
    if (st == TS_OK)
        keep_exposition(m, path, a->at_ms, &body);
    ts_sbuf_release(&body);
    int rc = summarise(m, path, in, st);
    meter_ingest_free(in);
    return rc;
}

static int run_import(const struct meter_args *a, int argc, char **argv)
{
    struct cli_meter m;
    int rc = cli_meter_open(&a->spec, &a->catalog, a->db, &m);
    m.ctx.max_age_ms = a->max_age_ms;
    m.ctx.max_ahead_ms = a->max_ahead_ms;
    if (rc == CLI_OK)
        rc = cli_read_key(a->keyfile, &m.key, &m.key_len);
    for (int i = 0; rc != CLI_BAD_INPUT && m.st && i < argc; i++) {
        int r = import_file(a, &m, argv[i]);
        rc = r > rc ? r : rc;
    }
    cli_meter_close(&m);
    return rc;
}

int cmd_meter(int argc, char **argv)
{
    struct meter_args a = {.verb = &cli_verb_meter,
                           .format = "text",
                           .max_age_ms = METER_MAX_AGE_DEFAULT_MS,
                           .max_ahead_ms = METER_MAX_AHEAD_DEFAULT_MS};
    if (argc >= 2 && strcmp(argv[1], "scrape") == 0)
        return cmd_meter_scrape(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "prometheus") == 0)
        return cmd_meter_prometheus(argc - 1, argv + 1);
    if (argc < 2 || strcmp(argv[1], "import") != 0) {
        int help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
        cli_usage(&cli_verb_meter, CLI_ALL, help ? stdout : stderr);
        return help ? CLI_OK : CLI_BAD_INPUT;
    }
    int rc = cli_parse(a.verb, IMPORT, argc - 1, argv + 1, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(a.verb, IMPORT) : rc;
    if (!a.db || !a.have_at || optind >= argc - 1) {
        fprintf(stderr, "tessera: meter import needs -f SPEC, --db DB, --at TIME and FILE...\n");
        return CLI_BAD_INPUT;
    }
    return run_import(&a, argc - 1 - optind, argv + 1 + optind);
}

/* invoice --verify: the month's aggregate against its samples; an exit code. */
static int verify(const struct meter_args *a, struct store *st)
{
    struct ts_error e = {0};
    char diff[1024];
    int held = 0, same = 0;
    if (meter_agg_verify(st, a->from_ms, a->to_ms, a->interval_ms, &held, &same, diff, sizeof(diff),
                         &e) != TS_OK)
        return cli_fail(&e, CLI_DOING);
    if (!same) {
        fprintf(stderr,
                "tessera: invoice --verify: %s: the usage aggregate differs from the "
                "samples: %s\n",
                a->period, diff);
        return CLI_FAIL;
    }
    fprintf(stderr, "tessera: invoice --verify: %s: %s\n", a->period,
            held ? "the usage aggregate equals the samples"
                 : "no usage aggregate held (a batch of samples came in meanwhile)");
    return CLI_OK;
}

/* The store's samples in [from, to) integrated into u (an invoice reads
 * the usage aggregate); an exit code. */
static int integrate(const struct meter_args *a, struct cli_job *job, struct meter_usage *u)
{
    struct store *st = NULL;
    struct ts_error e = {0};
    int rc = cli_job_decide(job, &a->spec, &a->catalog);
    meter_usage_init(u, a->interval_ms);
    if (rc == CLI_OK && store_open_existing(a->db, &st, &e) != TS_OK)
        rc = cli_fail(&e, e.code == TS_NOT_FOUND ? CLI_READING : CLI_DOING);
    ts_status s = TS_OK;
    if (rc == CLI_OK && a->verb == &cli_verb_invoice)
        s = meter_agg_scan(st, a->from_ms, a->to_ms, u, NULL, &e);
    else if (rc == CLI_OK)
        s = meter_usage_scan(st, a->from_ms, a->to_ms, u, &e);
    if (s != TS_OK)
        rc = cli_fail(&e, CLI_DOING);
    if (rc == CLI_OK && a->verify)
        rc = verify(a, st);
    store_close(st);
    return rc;
}

static int write_out(const char *format, struct ts_sbuf *out, ts_status st)
{
    int rc = st == TS_OK ? cli_write_as(format, out->data, out->len) : CLI_FAIL;
    ts_sbuf_release(out);
    return rc;
}

int cmd_usage(int argc, char **argv)
{
    struct meter_args a = {
        .verb = &cli_verb_usage, .format = "text", .to_ms = INT64_MAX, .interval_ms = 15000};
    int rc = cli_parse(a.verb, USAGE, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(a.verb, USAGE) : rc;
    if (!a.db || optind < argc ||
        (strcmp(cli_format_built(a.format), "json") && strcmp(a.format, "text"))) {
        fprintf(stderr, "tessera: usage needs -f SPEC and --db DB; -o is text, json or yaml\n");
        return CLI_BAD_INPUT;
    }
    struct cli_job job;
    struct meter_usage u;
    rc = integrate(&a, &job, &u);
    if (rc == CLI_OK) {
        struct ts_sbuf out;
        ts_sbuf_init(&out, CLI_REPORT_MAX);
        rc = write_out(a.format, &out,
                       meter_usage_write(&u, job.cat, cli_format_built(a.format), &out));
    }
    meter_usage_release(&u);
    cli_job_free(&job);
    return rc;
}

static int invoice_args(struct meter_args *a, int argc)
{
    int known = 0;
    for (int i = 0; invoice_formats[i]; i++)
        known |= strcmp(a->format, invoice_formats[i]) == 0;
    if (!known) {
        fprintf(stderr, "tessera: invoice: no format '%s': -o is text, csv, json, yaml or html%s\n",
                a->format,
                strcmp(a->format, "pdf") ? ""
                                         : " (no PDF writer: for a PDF, print the html one "
                                           "from a browser)");
        return CLI_BAD_INPUT;
    }
    if (a->out_dir && !strcmp(a->format, "yaml")) {
        fprintf(stderr, "tessera: invoice --out-dir writes text, csv, json or html\n");
        return CLI_BAD_INPUT;
    }
    if (!a->db || (!a->tenant && !a->out_dir) || !a->period || optind < argc) {
        fprintf(stderr, "tessera: invoice needs -f SPEC, --db DB, --tenant T and --period "
                        "YYYY-MM; -o is text, csv, json, yaml or html\n");
        return CLI_BAD_INPUT;
    }
    if (!invoice_period(a->period, &a->from_ms, &a->to_ms)) {
        fprintf(stderr, "tessera: --period '%s': expected a month as YYYY-MM (2026-11)\n",
                a->period);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

/* Price u for tenant and a's period and write it to path ("-": stdout in
 * a's format); an exit code. */
static int price(const struct meter_args *a, const struct cli_job *job, const struct meter_usage *u,
                 const char *tenant, const char *path)
{
    if (!spec_tenant_find(job->model, tenant) && strcmp(tenant, "unattributed")) {
        fprintf(stderr, "tessera: no tenant '%s' in the spec\n", tenant);
        return CLI_BAD_INPUT;
    }
    struct ts_arena arena;
    ts_arena_init(&arena);
    struct invoice inv;
    struct ts_error e = {0};
    int rc = CLI_OK;
    if (invoice_build(u, job->model, job->cat, tenant, a->period, &arena, &inv, &e) != TS_OK)
        rc = cli_fail(&e, CLI_DOING);
    inv.issued_ms = (int64_t)time(NULL) * 1000; /* the day it is written, UTC */
    if (rc == CLI_OK) {
        struct ts_sbuf out;
        ts_sbuf_init(&out, CLI_DOC_MAX);
        ts_status st = invoice_write(&inv, cli_format_built(a->format), &out);
        if (st != TS_OK)
            rc = CLI_FAIL;
        else if (strcmp(path, "-"))
            rc = cli_write(path, out.data, out.len);
        else
            rc = cli_write_as(a->format, out.data, out.len);
        ts_sbuf_release(&out);
    }
    ts_arena_free(&arena);
    return rc;
}

/* --out-dir: each tenant's invoice (or --tenant's) as DIR/TENANT.FORMAT
 * (tenant names are DNS labels: no '/'); an exit code. */
static int price_all(const struct meter_args *a, const struct cli_job *job,
                     const struct meter_usage *u)
{
    int rc = CLI_OK;
    for (size_t i = 0; rc == CLI_OK && i < job->model->ntenants; i++) {
        const char *t = job->model->tenants[i].name;
        if (a->tenant && strcmp(a->tenant, t))
            continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/%s.%s", a->out_dir, t, a->format) >=
            sizeof(path)) {
            fprintf(stderr, "tessera: --out-dir '%s': the path is too long\n", a->out_dir);
            return CLI_BAD_INPUT;
        }
        rc = price(a, job, u, t, path);
    }
    return rc;
}

int cmd_invoice(int argc, char **argv)
{
    struct meter_args a = {.verb = &cli_verb_invoice, .format = "text", .interval_ms = 15000};
    int rc = cli_parse(a.verb, INVOICE, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(a.verb, INVOICE) : rc;
    if ((rc = invoice_args(&a, argc)) != CLI_OK)
        return rc;
    struct cli_job job;
    struct meter_usage u;
    rc = integrate(&a, &job, &u);
    if (rc == CLI_OK)
        rc = a.out_dir ? price_all(&a, &job, &u) : price(&a, &job, &u, a.tenant, "-");
    meter_usage_release(&u);
    cli_job_free(&job);
    return rc;
}
