/*
 * cmd_meter.c - `tessera meter import` (recorded dcgm-exporter scrapes into
 * the store) and `tessera usage` (GPU-hours per tenant, model and profile).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "ledger/ledger.h"
#include "meter/ingest.h"
#include "meter/invoice.h"
#include "meter/usage.h"
#include <jansson.h>
#include "util/file.h"
#include "util/sbuf.h"
#include "util/jsonfree.h"
#include "util/time.h"

static void meter_usage_text(FILE *out)
{
    fprintf(out,
            "usage: tessera meter import -f SPEC --db DB --at TIME [--hmac-key-file F] FILE...\n"
            "       tessera meter scrape -f SPEC --db DB --target URL... [--interval 15s]\n"
            "                     [--count N] ... (tessera meter scrape --help)\n"
            "       tessera usage -f SPEC --db DB [--interval 15s] [--from TIME] [--to TIME]\n"
            "                     [-o text|json]\n"
            "       tessera invoice -f SPEC --db DB --tenant T --period YYYY-MM [--interval 15s]\n"
            "                     [-o text|csv|json|html]\n\n"
            "import  store recorded dcgm-exporter scrapes (Prometheus text, streamed), one sample\n"
            "        per GPU or MIG instance and time, charged to the tenant that owns its pod's\n"
            "        namespace, else (no pod) to the ledger's or the plan's tenant, else\n"
            "        \"unattributed\"; shares by mechanism (docs/metering.md). A pod on a device\n"
            "        planned for another tenant is a custody violation: reported and recorded\n"
            "        in the ledger. A scrape stored before is not counted twice. TIME is Unix\n"
            "        seconds or RFC 3339; samples that carry a timestamp keep it.\n"
            "scrape  pull live from dcgm-exporters over HTTP(S) every --interval, with\n"
            "        timeouts and retries; what the store could not take is retried, not lost.\n"
            "usage   GPU-hours per tenant, GPU model and profile on the allocation basis (the\n"
            "        card share reserved) and the usage basis (times the engine-active ratio);\n"
            "        gaps between scrapes count at most twice --interval.\n"
            "invoice one tenant's month priced with the spec's PriceBook: a line per GPU model\n"
            "        and profile, billed on the allocation basis, rounded to cents once.\n"
            "DB is sqlite:PATH or postgres://...\n");
}

struct meter_args {
    struct cli_files spec;
    const char *db, *format, *tenant, *period, *keyfile;
    int64_t at_ms, from_ms, to_ms, interval_ms;
    int have_at;
};

static int parse_args(int argc, char **argv, struct meter_args *a)
{
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'}, {"db", required_argument, NULL, 'd'},
        {"at", required_argument, NULL, 'a'},       {"from", required_argument, NULL, 'F'},
        {"to", required_argument, NULL, 'T'},       {"interval", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},   {"tenant", required_argument, NULL, 't'},
        {"period", required_argument, NULL, 'p'},   {"help", no_argument, NULL, 'h'},
        {"hmac-key-file", required_argument, NULL, 'k'},
        {NULL, 0, NULL, 0}};
    int c, idx = -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:h", opts, &idx)) != -1) {
        int ok = 1;
        switch (c) {
        case 'f': ok = cli_files_add(&a->spec, optarg); break;
        case 'd': a->db = optarg; break;
        case 'o': a->format = optarg; break;
        case 't': a->tenant = optarg; break;
        case 'p': a->period = optarg; break;
        case 'k': a->keyfile = optarg; break;
        case 'a': ok = a->have_at = ts_time_parse(optarg, &a->at_ms); break;
        case 'F': ok = ts_time_parse(optarg, &a->from_ms); break;
        case 'T': ok = ts_time_parse(optarg, &a->to_ms); break;
        case 'i': ok = ts_duration_parse(optarg, &a->interval_ms); break;
        case 'h': meter_usage_text(stdout); exit(CLI_OK);
        default: ok = 0;
        }
        if (!ok) {
            char flag[40] = "";
            if (idx >= 0)
                snprintf(flag, sizeof(flag), " for --%s", opts[idx].name);
            else if (c != '?')
                snprintf(flag, sizeof(flag), " for -%c", c);
            fprintf(stderr, "tessera: bad value '%s'%s (times: Unix seconds or RFC 3339 like "
                    "2026-11-30T10:00:00Z; intervals like 15s)\n", optarg ? optarg : "", flag);
            return 0;
        }
        idx = -1;
    }
    return 1;
}

static int open_all(const struct meter_args *a, struct cli_job *job, struct store **st)
{
    int rc = cli_job_decide(job, &a->spec, &(struct cli_files){0});
    struct ts_error e = {0};
    if (rc == CLI_OK && store_open(a->db, st, &e) != TS_OK) {
        cli_print_error(&e);
        rc = e.code == TS_USAGE ? CLI_BAD_INPUT : CLI_FAIL;
    }
    return rc;
}

int cli_meter_open(const struct cli_files *spec, const char *db, struct cli_meter *m)
{
    memset(m, 0, sizeof(*m));
    struct plan_options popt = {PLAN_SOLVER_AUTO, 10.0}; /* as `tessera plan` lays it out */
    int rc = cli_job_plan(&m->job, spec, &(struct cli_files){0}, &popt);
    struct ts_error e = {0};
    if (rc == CLI_OK && store_open(db, &m->st, &e) != TS_OK)
        rc = e.code == TS_USAGE ? CLI_BAD_INPUT : CLI_FAIL;
    m->ctx = (struct meter_ctx){m->job.model, m->job.cat, m->job.plan, NULL, 0, 0};
    if (rc == CLI_OK && meter_ctx_load_custody(&m->ctx, m->st, &e) != TS_OK)
        rc = CLI_FAIL;
    if (e.code)
        cli_print_error(&e);
    return rc;
}

void cli_meter_close(struct cli_meter *m)
{
    meter_ctx_release(&m->ctx);
    store_close(m->st);
    cli_job_free(&m->job);
    free(m->key);
}

/* Report each custody violation and record it in the ledger (source
 * "observed"; the workload field names the pod). */
int cli_meter_violations(struct cli_meter *m, const struct meter_ingest *in)
{
    size_t n;
    const struct meter_violation *v = meter_ingest_violations(in, &n);
    int rc = CLI_OK;
    for (size_t i = 0; i < n; i++) {
        char when[40], pod[2 * METER_NAME_MAX + 2];
        ts_time_format(v[i].ts_ms, when);
        snprintf(pod, sizeof(pod), "%s/%s", v[i].ns, v[i].pod);
        fprintf(stderr, "tessera: custody violation: %s on %s (node %s) at %s: pod %s of tenant "
                "'%s' on a device planned for '%s'\n", v[i].device, v[i].profile[0] ?
                v[i].profile : "whole GPU", v[i].node, when, pod, v[i].observed, v[i].planned);
        struct ledger_event ev = {v[i].ts_ms, v[i].node, v[i].gpu_uuid, "", v[i].gi_id,
                                  v[i].profile, "", v[i].observed, pod, "observed"};
        struct ts_error e = {0};
        if (ledger_record(m->st, m->key, m->key_len, &ev, NULL, &e) != TS_OK) {
            cli_print_error(&e);
            rc = CLI_FAIL;
        }
    }
    return rc;
}

/* Keep a file's text for the tenant-labelled /metrics of `tessera serve
 * --db` (a one-scrape file; a history larger than the cap is not kept). */
static void keep_exposition(struct cli_meter *m, const char *path, int64_t at_ms,
                            const struct ts_sbuf *body)
{
    struct ts_error e = {0};
    if (ts_sbuf_status(body) == TS_OK &&
        store_put_exposition(m->st, path, at_ms, ts_sbuf_str(body), body->len, &e) != TS_OK)
        cli_print_error(&e);
}

/* Stream one recorded file through the ingest. */
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
    struct ts_sbuf body;
    ts_sbuf_init(&body, STORE_EXPOSITION_MAX);
    ts_status st = meter_ingest_new(&m->ctx, m->st, a->at_ms, path, &diag, &in);
    static char chunk[1 << 16];
    size_t got;
    while (st == TS_OK && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        st = meter_ingest_feed(in, chunk, got, &e);
        if (!body.failed)
            ts_sbuf_add(&body, chunk, got);
    }
    if (st == TS_OK && ferror(f))
        st = ts_err(&e, TS_IO, "%s: read error: %s", path, strerror(errno));
    if (st == TS_OK)
        st = meter_ingest_finish(in, &e);
    fclose(f);
    cli_print_diag(&diag);
    if (e.code)
        cli_print_error(&e);
    if (st == TS_OK)
        keep_exposition(m, path, a->at_ms, &body);
    ts_sbuf_release(&body);
    struct meter_ingest_counts c = {0};
    if (in)
        meter_ingest_counts(in, &c);
    printf("%s: %zu device scrapes, %zu new samples, %d lines rejected, %d custody "
           "violations\n", path, c.devices, c.inserted, c.rejected_lines, c.violations);
    int rc = st != TS_OK ? CLI_FAIL : c.rejected_lines ? CLI_FAIL : CLI_OK;
    if (in && cli_meter_violations(m, in) != CLI_OK)
        rc = CLI_FAIL;
    meter_ingest_free(in);
    return rc;
}

int cmd_meter(int argc, char **argv)
{
    struct meter_args a = {.format = "text"};
    if (argc >= 2 && strcmp(argv[1], "scrape") == 0)
        return cmd_meter_scrape(argc - 1, argv + 1);
    if (argc < 2 || strcmp(argv[1], "import") != 0) {
        int help = argc >= 2 && strcmp(argv[1], "--help") == 0;
        meter_usage_text(help ? stdout : stderr);
        return help ? CLI_OK : CLI_BAD_INPUT;
    }
    if (!parse_args(argc - 1, argv + 1, &a))
        return CLI_BAD_INPUT;
    if (!a.db || !a.have_at || optind + 1 >= argc) {
        fprintf(stderr, "tessera: meter import needs -f SPEC, --db DB, --at TIME and FILE...\n");
        return CLI_BAD_INPUT;
    }
    struct cli_meter m;
    int rc = cli_meter_open(&a.spec, a.db, &m);
    if (rc == CLI_OK)
        rc = cli_read_key(a.keyfile, &m.key, &m.key_len);
    for (int i = optind + 1; rc != CLI_BAD_INPUT && m.st && i < argc; i++) {
        int r = import_file(&a, &m, argv[i]);
        rc = r > rc ? r : rc;
    }
    cli_meter_close(&m);
    return rc;
}

static int add_point(void *ctx, const struct store_sample *s)
{
    struct meter_usage *u = ctx;
    struct meter_point p = {s->device, s->ts_ms, s->tenant, s->model, s->profile, s->share_ppm,
                            s->util_ppm};
    meter_usage_add(u, &p); /* the store returns points in order */
    return 0;
}

static void print_json(const struct meter_usage *u)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < u->ntotals; i++) {
        const struct meter_total *t = &u->totals[i];
        json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:I, s:I}", "tenant", t->tenant,
                                              "model", t->model, "profile", t->profile,
                                              "allocationMicroGpuHours",
                                              (json_int_t)meter_alloc_uh(t),
                                              "usageMicroGpuHours",
                                              (json_int_t)meter_usage_uh(t)));
    }
    json_t *doc = json_pack("{s:s, s:s, s:o}", "apiVersion", "tessera.dev/v1alpha1", "kind",
                            "Usage", "rows", rows);
    char *text = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2));
    if (text)
        puts(text);
    json_free_text(text);
    json_decref(doc);
}

static void print_usage(const struct meter_usage *u, int json)
{
    if (json) {
        print_json(u);
        return;
    }
    printf("%-20s %-26s %-10s %16s %16s\n", "TENANT", "GPU MODEL", "PROFILE", "GPU-HOURS",
           "USED GPU-HOURS");
    for (size_t i = 0; i < u->ntotals; i++) {
        const struct meter_total *t = &u->totals[i];
        int64_t a = meter_alloc_uh(t), b = meter_usage_uh(t);
        printf("%-20s %-26s %-10s %9" PRId64 ".%06" PRId64 " %9" PRId64 ".%06" PRId64 "\n",
               t->tenant, t->model, t->profile[0] ? t->profile : "whole", a / 1000000,
               a % 1000000, b / 1000000, b % 1000000);
    }
}

/* Open everything and integrate [from, to) into u (totals sorted). */
static int integrate(const struct meter_args *a, struct cli_job *job, struct meter_usage *u)
{
    struct store *st = NULL;
    int rc = open_all(a, job, &st);
    meter_usage_init(u, a->interval_ms);
    struct ts_error e = {0};
    if (rc == CLI_OK && store_scan_samples(st, a->from_ms, a->to_ms, add_point, u, &e) != TS_OK) {
        cli_print_error(&e);
        rc = CLI_FAIL;
    }
    store_close(st);
    meter_usage_sort(u);
    return rc;
}

int cmd_usage(int argc, char **argv)
{
    struct meter_args a = {.format = "text", .to_ms = INT64_MAX, .interval_ms = 15000};
    if (!parse_args(argc, argv, &a))
        return CLI_BAD_INPUT;
    int json = strcmp(a.format, "json") == 0;
    if (!a.db || optind < argc || (!json && strcmp(a.format, "text") != 0)) {
        fprintf(stderr, "tessera: usage needs -f SPEC and --db DB; -o is text or json\n");
        return CLI_BAD_INPUT;
    }
    struct cli_job job;
    struct meter_usage u;
    int rc = integrate(&a, &job, &u);
    if (rc == CLI_OK)
        print_usage(&u, json);
    meter_usage_release(&u);
    cli_job_free(&job);
    return rc;
}

int cmd_invoice(int argc, char **argv)
{
    struct meter_args a = {.format = "text", .interval_ms = 15000};
    static const char *const formats[] = {"text", "csv", "json", "html"};
    if (!parse_args(argc, argv, &a))
        return CLI_BAD_INPUT;
    int known = 0;
    for (int i = 0; i < 4; i++)
        known |= strcmp(a.format, formats[i]) == 0;
    if (!a.db || !a.tenant || !a.period || optind < argc || !known) {
        fprintf(stderr, "tessera: invoice needs -f SPEC, --db DB, --tenant T and --period "
                "YYYY-MM; -o is text, csv, json or html\n");
        return CLI_BAD_INPUT;
    }
    if (!invoice_period(a.period, &a.from_ms, &a.to_ms)) {
        fprintf(stderr, "tessera: --period '%s': expected a month as YYYY-MM (2026-11)\n",
                a.period);
        return CLI_BAD_INPUT;
    }
    struct cli_job job;
    struct meter_usage u;
    int rc = integrate(&a, &job, &u);
    struct ts_arena arena;
    ts_arena_init(&arena);
    struct invoice inv;
    struct ts_error e = {0};
    if (rc == CLI_OK && !spec_tenant_find(job.model, a.tenant) && strcmp(a.tenant, "unattributed")) {
        fprintf(stderr, "tessera: no tenant '%s' in the spec\n", a.tenant);
        rc = CLI_BAD_INPUT;
    }
    if (rc == CLI_OK && invoice_build(&u, job.model, job.cat, a.tenant, a.period, &arena, &inv,
                                      &e) != TS_OK) {
        cli_print_error(&e);
        rc = CLI_BAD_INPUT;
    }
    if (rc == CLI_OK) {
        struct ts_sbuf out;
        ts_sbuf_init(&out, 16u << 20);
        rc = invoice_write(&inv, a.format, &out) == TS_OK ? cli_write("-", out.data, out.len)
                                                          : CLI_FAIL;
        ts_sbuf_release(&out);
    }
    ts_arena_free(&arena);
    meter_usage_release(&u);
    cli_job_free(&job);
    return rc;
}
