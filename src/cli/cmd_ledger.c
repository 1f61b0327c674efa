/*
 * cmd_ledger.c - `tessera ledger record|who|history|export|verify`: the
 * custody ledger (src/ledger/) from the command line. Exit codes (cli_exit):
 * 0 ok (verify: the chain is intact), 1 the job failed (verify: the chain
 * is broken; who: no record), 2 bad usage or bad input.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "inventory/inventory.h"
#include "ledger/ledger.h"
#include "reconf/reconf.h"
#include "store/store.h"
#include "util/file.h"
#include "util/jsonfree.h"
#include "util/text.h"

struct lopts {
    const char *db, *tenant, *gpu, *inst, *gi, *profile, *placement, *node, *workload, *source, *at,
        *from, *to, *out, *keyfile, *smi, *inventory, *spec;
};

/* The subcommands, a bit each: which options each allows. */
enum { REC = 1, WHO = 2, HIST = 4, EXPORT = 8, VERIFY = 16 };

/* What -o writes: history as text, export as CSV, both as JSON or YAML. */
static const char *const export_formats[] = {"csv", "json", "yaml", NULL};
static const struct cli_complete output_values[] = {
    {HIST, CLI_COMPLETE_WORDS, cli_formats}, {EXPORT, CLI_COMPLETE_WORDS, export_formats}, {0}};

static const struct cli_opt OPTS[] = {
    CLI_LONG('d', "db", "DB", CLI_ALL, "the store: sqlite:PATH or postgres://..."),
    CLI_LONG_C('t', "tenant", "T", REC | HIST, cli_complete_tenants,
               "record: the tenant holding the device; history: whose entries"),
    CLI_LONG('g', "gpu-uuid", "U", REC, "the GPU's UUID"),
    CLI_LONG('i', "instance-uuid", "U", REC, "the MIG device's UUID (none: the whole GPU)"),
    CLI_LONG('I', "instance", "UUID", WHO, "the GPU or MIG device UUID asked about"),
    CLI_LONG('G', "gi-id", "N", REC, "the GPU instance id"),
    CLI_LONG('p', "profile", "P", REC, "the MIG profile (1g.10gb)"),
    CLI_LONG('P', "placement", "S:N", REC, "the instance's placement: start and size"),
    CLI_LONG('n', "node", "N", REC, "the node"),
    CLI_LONG('w', "workload", "W", REC, "the tenant's workload"),
    CLI_LONG('s', "source", "S", REC, "plan (default), observed or nvidia-smi"),
    CLI_LONG('a', "at", "TIME", REC | WHO, "record: when (default now); who: the time asked about"),
    CLI_LONG('F', "from", "TIME", HIST, "the first time listed"),
    CLI_LONG('T', "to", "TIME", HIST, "the time the list stops before"),
    CLI_SHORT_C('o', "output", "FORMAT", HIST | EXPORT, output_values,
                "history: text (default), json or yaml; export: csv\n"
                "(default), json or yaml"),
    CLI_LONG('k', "hmac-key-file", "F", REC | VERIFY,
             "the key that macs (record) or checks (verify) the entries"),
    CLI_LONG('S', "from-nvidia-smi", "FILE", REC, "one event per device of nvidia-smi -L output"),
    CLI_LONG('Y', "inventory", "FILE", REC,
             "one event per device of 'tessera agent inventory -o json'"),
    CLI_SHORT('f', "filename", "SPEC", REC, "with --inventory: each device's tenant from the plan"),
    CLI_END};

const struct cli_verb cli_verb_ledger = {
    "ledger",
    "usage: tessera ledger record --db DB --tenant T --gpu-uuid U [--instance-uuid U]\n"
    "                             [--gi-id N] [--profile P] [--placement S:N] [--node N]\n"
    "                             [--workload W] [--source plan|observed|nvidia-smi]\n"
    "                             [--at TIME] [--hmac-key-file F]\n"
    "       tessera ledger record --db DB --from-nvidia-smi FILE [--tenant T] [--node N]\n"
    "                             [--at TIME] [--hmac-key-file F]\n"
    "       tessera ledger record --db DB --inventory FILE [-f SPEC | --tenant T]\n"
    "                             [--node N] [--at TIME] [--hmac-key-file F]\n"
    "       tessera ledger who --db DB --instance UUID --at TIME\n"
    "       tessera ledger history --db DB --tenant T [--from TIME] [--to TIME]\n"
    "                              [-o text|json|yaml]\n"
    "       tessera ledger export --db DB [-o csv|json|yaml]\n"
    "       tessera ledger verify --db DB [--hmac-key-file F]\n",
    OPTS,
    "DB is sqlite:PATH or postgres://...; TIME is Unix seconds or RFC 3339\n"
    "(2026-11-30T10:00:00Z, 2026-11-30T11:00:00+01:00). --inventory FILE is the\n"
    "output of 'tessera agent inventory -o json': one event per GPU instance (or\n"
    "whole GPU), source inventory; with -f SPEC the tenant of each instance is the\n"
    "plan's for that node, GPU and placement. verify exits 0 when the\n"
    "hash chain is intact and 1 naming the first bad entry when it is not.\n",
    "record who history export verify",
    CLI_ALL};

static int set(void *ctx, int key, const char *v)
{
    struct lopts *o = ctx;
    const char **slot[] = {&o->db,      &o->tenant,  &o->gpu,       &o->inst, &o->inst,
                           &o->gi,      &o->profile, &o->placement, &o->node, &o->workload,
                           &o->source,  &o->at,      &o->from,      &o->to,   &o->out,
                           &o->keyfile, &o->smi,     &o->inventory, &o->spec};
    static const char keys[] = "dtgiIGpPnwsaFTokSYf";
    const char *at = key ? strchr(keys, key) : NULL;
    if (!at)
        return CLI_BAD_INPUT;
    *slot[at - keys] = v;
    return CLI_OK;
}

static int need(const char *v, const char *flag)
{
    if (v)
        return 1;
    fprintf(stderr, "tessera: ledger: %s is required\n", flag);
    return 0;
}

/* The store; only `record` (write) may create it: a missing one is bad input. */
static int open_db(const struct lopts *o, struct store **st, int write)
{
    struct ts_error e = {0};
    if (!need(o->db, "--db"))
        return CLI_BAD_INPUT;
    ts_status rc = write ? store_open(o->db, st, &e) : store_open_existing(o->db, st, &e);
    if (rc != TS_OK)
        return cli_fail(&e, rc == TS_NOT_FOUND ? CLI_READING : CLI_DOING);
    return CLI_OK;
}

static int time_arg(const char *s, int64_t *ms)
{
    struct ts_error e = {0};
    return ledger_parse_time(s, ms, &e) == TS_OK ? CLI_OK : cli_fail(&e, CLI_READING);
}

/* ---- record --------------------------------------------------------------- */

static int record_events(const struct lopts *o, const struct ledger_event *evs, size_t n)
{
    struct store *st = NULL;
    char *key = NULL;
    size_t klen = 0;
    int rc = cli_read_key(o->keyfile, &key, &klen);
    if (rc == CLI_OK)
        rc = open_db(o, &st, 1);
    for (size_t i = 0; rc == CLI_OK && i < n; i++) {
        struct ts_error e = {0};
        int64_t seq = 0;
        if (ledger_record(st, key, klen, &evs[i], &seq, &e) != TS_OK)
            rc = cli_fail(&e, CLI_DOING);
        else
            printf("recorded seq %" PRId64 ": %s %s -> %s\n", seq, evs[i].gpu_uuid,
                   evs[i].instance_uuid && *evs[i].instance_uuid ? evs[i].instance_uuid : "-",
                   evs[i].tenant);
    }
    store_close(st);
    free(key);
    return rc;
}

static int record_smi(const struct lopts *o, const struct ledger_event *tmpl)
{
    char *text = NULL, *arena = NULL;
    size_t len = 0, n = 0;
    struct ledger_event *evs = NULL;
    struct ts_error e = {0};
    if (ts_file_read(o->smi, CLI_SMI_FILE_MAX, &text, &len, &e) != TS_OK)
        return cli_fail(&e, CLI_READING);
    ts_status st = ledger_parse_smi(text, tmpl, &evs, &n, &arena, &e);
    free(text);
    if (st != TS_OK) {
        snprintf(e.file, sizeof e.file, "%s", o->smi);
        return cli_fail(&e, CLI_READING);
    }
    int rc = record_events(o, evs, n);
    free(evs);
    free(arena);
    return rc;
}

/* The plan of -f SPEC as reconf sees it (laid out as `tessera plan` does). */
static int load_plan(const char *spec_path, struct cli_job *job, struct reconf_plan *plan)
{
    struct cli_files spec = {{spec_path}, 1}, none = {0};
    struct plan_options popt = PLAN_OPTIONS_DEFAULT;
    struct ts_error e = {0};
    int rc = cli_job_plan(job, &spec, &none, &popt);
    if (rc == CLI_OK && reconf_plan_from_plan(job->plan, plan, &e) != TS_OK)
        rc = cli_fail(&e, CLI_DOING);
    return rc;
}

static int record_inventory(const struct lopts *o, const struct ledger_event *tmpl)
{
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct cli_job job = {0};
    struct reconf_plan plan = {0};
    struct ledger_events evs = {0};
    struct ts_error e = {0};
    int rc = inv ? CLI_OK : CLI_FAIL;
    if (rc == CLI_OK && inv_load(o->inventory, inv, &e) != TS_OK)
        rc = cli_fail(&e, CLI_READING);
    if (rc == CLI_OK && o->spec)
        rc = load_plan(o->spec, &job, &plan);
    if (rc == CLI_OK &&
        ledger_inventory_events(inv, o->spec ? &plan : NULL, tmpl, &evs, &e) != TS_OK)
        rc = cli_fail(&e, CLI_DOING);
    if (rc == CLI_OK)
        rc = record_events(o, evs.ev, evs.n);
    ledger_events_release(&evs);
    reconf_plan_release(&plan);
    cli_job_free(&job);
    free(inv);
    return rc;
}

/* One event from the flags, its time in ev already. */
static int record_one(const struct lopts *o, struct ledger_event *ev)
{
    if (!need(o->tenant, "--tenant") || !need(o->gpu, "--gpu-uuid"))
        return CLI_BAD_INPUT;
    if (o->gi && (!*o->gi || o->gi[strspn(o->gi, "0123456789")])) {
        fprintf(stderr, "tessera: ledger: --gi-id must be a number\n");
        return CLI_BAD_INPUT;
    }
    ev->gpu_uuid = o->gpu;
    ev->instance_uuid = o->inst;
    ev->gi_id = o->gi;
    ev->profile = o->profile;
    ev->placement = o->placement;
    ev->workload = o->workload;
    ev->source = o->source ? o->source : "plan";
    return record_events(o, ev, 1);
}

static int run_record(const struct lopts *o)
{
    struct ledger_event ev = {.node = o->node, .tenant = o->tenant};
    int rc = o->at ? time_arg(o->at, &ev.ts_ms) : CLI_OK;
    if (!o->at)
        ev.ts_ms = (int64_t)time(NULL) * 1000;
    if (rc != CLI_OK)
        return rc;
    if (o->smi && o->inventory) {
        fprintf(stderr, "tessera: ledger: --from-nvidia-smi and --inventory exclude each other\n");
        return CLI_BAD_INPUT;
    }
    if ((o->spec && !o->inventory) || (o->spec && o->tenant)) {
        fprintf(stderr, "tessera: ledger: -f SPEC goes with --inventory, instead of --tenant\n");
        return CLI_BAD_INPUT;
    }
    if (o->smi)
        return record_smi(o, &ev);
    if (o->inventory)
        return record_inventory(o, &ev);
    return record_one(o, &ev);
}

/* ---- who ------------------------------------------------------------------ */

/* Write b to stdout and release it. */
static void put_out(struct ts_sbuf *b)
{
    fwrite(ts_sbuf_str(b), 1, b->len, stdout);
    ts_sbuf_release(b);
}

/* The ledger's strings came from arguments and scrapes: escaped. */
static void print_row(const struct ledger_row *r)
{
    char t[40], seq[32];
    ledger_format_time(r->ts_ms, t);
    snprintf(seq, sizeof seq, "%" PRId64, r->seq);
    const char *label[] = {"tenant",        "workload", "profile", "node",  "gpu uuid",
                           "instance uuid", "since",    "seq",     "source"};
    const char *val[] = {r->tenant,        r->workload, r->profile, r->node,  r->gpu_uuid,
                         r->instance_uuid, t,           seq,        r->source};
    struct ts_sbuf b;
    ts_sbuf_init(&b, CLI_REPORT_MAX);
    for (size_t i = 0; i < sizeof val / sizeof val[0]; i++) {
        ts_sbuf_printf(&b, "%s:", label[i]);
        ts_sbuf_printf(&b, "%*s", (int)(14 - strlen(label[i])), "");
        ts_text_plain(&b, val[i]);
        ts_sbuf_add(&b, "\n", 1);
    }
    put_out(&b);
}

static void print_rows(const char *title, const struct ledger_list *l)
{
    printf("%s: %zu\n", title, l->n);
    for (size_t i = 0; i < l->n; i++) {
        printf("\n");
        print_row(&l->rows[i]);
    }
}

static int run_who(const struct lopts *o)
{
    int64_t at = 0;
    if (!need(o->inst, "--instance") || !need(o->at, "--at"))
        return CLI_BAD_INPUT;
    int rc = time_arg(o->at, &at);
    struct store *st = NULL;
    if (rc != CLI_OK || (rc = open_db(o, &st, 0)) != CLI_OK)
        return rc;
    struct ledger_holders h;
    struct ts_error e = {0};
    if (ledger_holders(st, o->inst, at, &h, &e) != TS_OK) {
        rc = cli_fail(&e, CLI_DOING);
    } else if (!h.custody.n && !h.observed.n) {
        struct ts_sbuf b;
        ts_sbuf_init(&b, CLI_REPORT_MAX);
        ts_sbuf_puts(&b, "tessera: no custody record for ");
        ts_text_plain(&b, o->inst);
        fprintf(stderr, "%s at %s\n", ts_sbuf_str(&b), o->at);
        ts_sbuf_release(&b);
        rc = CLI_FAIL;
    } else {
        print_rows("custody (holders)", &h.custody);
        if (h.observed.n)
            printf("\n");
        if (h.observed.n)
            print_rows("observed (seen on the device, not custody)", &h.observed);
    }
    ledger_holders_free(&h);
    store_close(st);
    return rc;
}

/* ---- history and export --------------------------------------------------- */

static void print_table(const struct ledger_list *l)
{
    struct ts_sbuf b;
    ts_sbuf_init(&b, CLI_LEDGER_CSV_MAX);
    ts_sbuf_printf(&b, "%-6s %-20s %-14s %-14s %-10s %-40s %-40s %s\n", "SEQ", "TIME", "TENANT",
                   "WORKLOAD", "PROFILE", "GPU", "INSTANCE", "SOURCE");
    for (size_t i = 0; i < l->n; i++) {
        const struct ledger_row *r = &l->rows[i];
        char t[40];
        ledger_format_time(r->ts_ms, t);
        ts_sbuf_printf(&b, "%-6" PRId64 " %-20s ", r->seq, t);
        const char *col[] = {r->tenant, *r->workload ? r->workload : "-",
                             *r->profile ? r->profile : "-", r->gpu_uuid,
                             *r->instance_uuid ? r->instance_uuid : "-"};
        static const size_t width[] = {14, 14, 10, 40, 40};
        for (size_t c = 0; c < sizeof col / sizeof col[0]; c++) {
            ts_text_pad(&b, col[c], width[c]);
            ts_sbuf_add(&b, " ", 1);
        }
        ts_text_plain(&b, r->source);
        ts_sbuf_add(&b, "\n", 1);
    }
    put_out(&b);
}

static int print_list(const struct ledger_list *l, const char *fmt)
{
    struct ts_error e = {0};
    if (strcmp(fmt, "text") == 0) {
        print_table(l);
    } else if (strcmp(fmt, "csv") == 0) {
        struct ts_sbuf b;
        ts_sbuf_init(&b, CLI_LEDGER_CSV_MAX);
        ledger_csv(l, &b);
        if (ts_sbuf_status(&b) != TS_OK) {
            ts_sbuf_release(&b);
            fprintf(stderr, "tessera: out of memory\n");
            return CLI_FAIL;
        }
        fwrite(b.data ? b.data : "", 1, b.len, stdout);
        ts_sbuf_release(&b);
    } else {
        char *text = NULL;
        if (ledger_json(l, &text, &e) != TS_OK)
            return cli_fail(&e, CLI_DOING);
        int rc = cli_write_as(fmt, text, strlen(text));
        if (rc == CLI_OK && strcmp(fmt, "json") == 0)
            putchar('\n');
        json_free_text(text);
        return rc;
    }
    return CLI_OK;
}

static int list_cmd(const struct lopts *o, const char *tenant, const char *fmt)
{
    int64_t from = INT64_MIN, to = INT64_MAX;
    int rc = CLI_OK;
    if ((o->from && (rc = time_arg(o->from, &from)) != CLI_OK) ||
        (o->to && (rc = time_arg(o->to, &to)) != CLI_OK))
        return rc;
    struct store *st = NULL;
    if ((rc = open_db(o, &st, 0)) != CLI_OK)
        return rc;
    struct ledger_list l;
    struct ts_error e = {0};
    if (ledger_history(st, tenant, from, to, &l, &e) != TS_OK) {
        rc = cli_fail(&e, CLI_DOING);
    } else {
        rc = print_list(&l, fmt);
        ledger_list_free(&l);
    }
    store_close(st);
    return rc;
}

static int bad_format(const char *fmt, const char *a, const char *b)
{
    if (!strcmp(fmt, a) || !strcmp(cli_format_built(fmt), b))
        return 0;
    fprintf(stderr, "tessera: ledger: -o must be %s, %s or yaml, not '%s'\n", a, b, fmt);
    return 1;
}

static int run_history(const struct lopts *o)
{
    const char *fmt = o->out ? o->out : "text";
    if (!need(o->tenant, "--tenant") || bad_format(fmt, "text", "json"))
        return CLI_BAD_INPUT;
    return list_cmd(o, o->tenant, fmt);
}

static int run_export(const struct lopts *o)
{
    const char *fmt = o->out ? o->out : "csv";
    if (bad_format(fmt, "csv", "json"))
        return CLI_BAD_INPUT;
    return list_cmd(o, NULL, fmt);
}

/* ---- verify --------------------------------------------------------------- */

static int run_verify(const struct lopts *o)
{
    char *key = NULL;
    size_t klen = 0;
    struct store *st = NULL;
    int rc = cli_read_key(o->keyfile, &key, &klen);
    if (rc != CLI_OK || (rc = open_db(o, &st, 0)) != CLI_OK) {
        free(key);
        return rc;
    }
    struct ledger_report r;
    struct ts_error e = {0};
    if (ledger_verify(st, key, klen, &r, &e) != TS_OK)
        rc = cli_fail(&e, CLI_DOING);
    else if (r.intact)
        printf("ledger intact: %" PRId64 " entries, head seq %" PRId64 " hash %s (%s)\n", r.entries,
               r.last_seq, r.last_hash, key ? "macs checked" : "macs not checked: no key");
    else {
        printf("ledger broken at seq %" PRId64 ": %s\n", r.bad_seq, r.problem);
        rc = CLI_FAIL;
    }
    store_close(st);
    free(key);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------- */

struct verb {
    const char *name;
    unsigned bit;
    const char *summary;
    int (*run)(const struct lopts *o);
};

static const struct verb VERBS[] = {
    {"record", REC, "record one custody event, or every device of nvidia-smi -L", run_record},
    {"who", WHO,
     "every holder of a GPU (each MIG instance) or instance at a time, and who was seen on it",
     run_who},
    {"history", HIST, "a tenant's custody entries in [--from, --to)", run_history},
    {"export", EXPORT, "every entry, as CSV or JSON for an auditor", run_export},
    {"verify", VERIFY, "check the hash chain (and macs with a key); exit 1 if broken", run_verify},
};

static int run_verb(const struct verb *v, int argc, char **argv)
{
    struct lopts o = {0};
    int rc = cli_parse(&cli_verb_ledger, v->bit, argc, argv, set, &o);
    if (rc == CLI_HELP) {
        printf("tessera ledger %s: %s\n\n", v->name, v->summary);
        return cli_help(&cli_verb_ledger, v->bit);
    }
    if (rc == CLI_OK && optind < argc) {
        fprintf(stderr, "tessera: ledger %s: unexpected argument '%s'\n", v->name, argv[optind]);
        rc = CLI_BAD_INPUT;
    }
    return rc == CLI_OK ? v->run(&o) : rc;
}

int cmd_ledger(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        return cli_help(&cli_verb_ledger, CLI_ALL);
    for (size_t i = 0; i < sizeof(VERBS) / sizeof(VERBS[0]); i++)
        if (strcmp(name, VERBS[i].name) == 0)
            return run_verb(&VERBS[i], argc - 1, argv + 1);
    fprintf(stderr,
            *name ? "tessera: ledger: unknown subcommand '%s'\n"
                  : "tessera: ledger: missing subcommand%s\n",
            name);
    cli_usage(&cli_verb_ledger, CLI_ALL, stderr);
    return CLI_BAD_INPUT;
}
