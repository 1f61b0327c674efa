/*
 * cmd_ledger.c - `tessera ledger record|who|history|export|verify`: the
 * custody ledger (src/ledger/) from the command line. Exit codes: 0 ok
 * (verify: the chain is intact), 1 the job failed (verify: the chain is
 * broken; who: no record), 2 bad usage or bad input.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "inventory/inventory.h"
#include "reconf/reconf.h"
#include "cli/cli.h"
#include "ledger/ledger.h"
#include "store/store.h"
#include "util/file.h"
#include "util/jsonfree.h"

struct lopts {
    const char *db, *tenant, *gpu, *inst, *gi, *profile, *placement, *node, *workload,
        *source, *at, *from, *to, *out, *keyfile, *smi, *inventory, *spec;
};

static const struct option OPTS[] = {
    {"db", required_argument, NULL, 'd'},         {"tenant", required_argument, NULL, 't'},
    {"gpu-uuid", required_argument, NULL, 'g'},   {"instance-uuid", required_argument, NULL, 'i'},
    {"instance", required_argument, NULL, 'I'},   {"gi-id", required_argument, NULL, 'G'},
    {"profile", required_argument, NULL, 'p'},    {"placement", required_argument, NULL, 'P'},
    {"node", required_argument, NULL, 'n'},       {"workload", required_argument, NULL, 'w'},
    {"source", required_argument, NULL, 's'},     {"at", required_argument, NULL, 'a'},
    {"from", required_argument, NULL, 'F'},       {"to", required_argument, NULL, 'T'},
    {"output", required_argument, NULL, 'o'},     {"hmac-key-file", required_argument, NULL, 'k'},
    {"from-nvidia-smi", required_argument, NULL, 'S'}, {"inventory", required_argument, NULL, 'Y'},
    {"filename", required_argument, NULL, 'f'},   {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

struct verb {
    const char *name, *allowed, *usage;
    int (*run)(const struct lopts *o);
};

static void ledger_usage(FILE *f)
{
    fprintf(f,
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
            "                              [-o text|json]\n"
            "       tessera ledger export --db DB [-o csv|json]\n"
            "       tessera ledger verify --db DB [--hmac-key-file F]\n\n"
            "DB is sqlite:PATH or postgres://...; TIME is Unix seconds or RFC 3339\n"
            "(2026-11-30T10:00:00Z, 2026-11-30T11:00:00+01:00). --inventory FILE is the\n"
            "output of 'tessera agent inventory -o json': one event per GPU instance (or\n"
            "whole GPU), source inventory; with -f SPEC the tenant of each instance is the\n"
            "plan's for that node, GPU and placement. verify exits 0 when the\n"
            "hash chain is intact and 1 naming the first bad entry when it is not.\n");
}

static int fail_err(const struct ts_error *e)
{
    cli_print_error(e);
    return (e->code == TS_USAGE || e->code == TS_INVALID || e->code == TS_SYNTAX)
               ? CLI_BAD_INPUT : CLI_FAIL;
}

static int need(const char *v, const char *flag)
{
    if (v)
        return 1;
    fprintf(stderr, "tessera: ledger: %s is required\n", flag);
    return 0;
}

static int open_db(const struct lopts *o, struct store **st)
{
    struct ts_error e = {0};
    if (!need(o->db, "--db"))
        return CLI_BAD_INPUT;
    if (store_open(o->db, st, &e) != TS_OK)
        return fail_err(&e);
    return CLI_OK;
}

static int time_arg(const char *s, int64_t *ms)
{
    struct ts_error e = {0};
    return ledger_parse_time(s, ms, &e) == TS_OK ? CLI_OK : fail_err(&e);
}

/* ---- record --------------------------------------------------------------- */

static int record_events(const struct lopts *o, const struct ledger_event *evs, size_t n)
{
    struct store *st = NULL;
    char *key = NULL;
    size_t klen = 0;
    int rc = cli_read_key(o->keyfile, &key, &klen);
    if (rc == CLI_OK)
        rc = open_db(o, &st);
    for (size_t i = 0; rc == CLI_OK && i < n; i++) {
        struct ts_error e = {0};
        int64_t seq = 0;
        if (ledger_record(st, key, klen, &evs[i], &seq, &e) != TS_OK)
            rc = fail_err(&e);
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
    if (ts_file_read(o->smi, 16u << 20, &text, &len, &e) != TS_OK)
        return fail_err(&e);
    ts_status st = ledger_parse_smi(text, tmpl, &evs, &n, &arena, &e);
    free(text);
    if (st != TS_OK) {
        snprintf(e.file, sizeof e.file, "%s", o->smi);
        return fail_err(&e);
    }
    int rc = record_events(o, evs, n);
    free(evs);
    free(arena);
    return rc;
}

/* ---- record --inventory ------------------------------------------------- */

/* Tenant and workload of the plan's instance of the same profile and
 * placement ("unassigned" if the plan has none there). */
static void assign(const struct reconf_plan *plan, const char *node, int index,
                   const struct inv_gi *gi, struct ledger_event *ev)
{
    const struct reconf_want *w = plan ? reconf_plan_find(plan, node, index, gi->pl.start) : NULL;
    if (!plan)
        return;
    if (w && (w->size != gi->pl.size || strcmp(w->profile, gi->profile) != 0))
        w = NULL;
    ev->tenant = w && w->tenant ? w->tenant : "unassigned";
    ev->workload = w && w->workload ? w->workload : "";
}

/* One event per GPU instance, or per GPU without any; strings live in inv
 * and in *bufs (gi ids and placements, 32 bytes an event). */
static size_t inventory_events(const struct inv_node *inv, const struct reconf_plan *plan,
                               const struct ledger_event *tmpl, struct ledger_event *evs,
                               char (*bufs)[2][16])
{
    size_t n = 0;
    const char *node = tmpl->node ? tmpl->node : inv->node;
    for (int i = 0; i < inv->ngpu; i++) {
        const struct inv_gpu *g = &inv->gpu[i];
        struct ledger_event t = *tmpl;
        t.node = node;
        if (g->ngi == 0) {
            const struct reconf_card *card = plan ? reconf_plan_card(plan, node, g->index) : NULL;
            if (plan) {
                t.tenant = card && card->owner ? card->owner : "unassigned";
                t.workload = card && card->owner_workload ? card->owner_workload : "";
            }
            evs[n++] = ledger_event_of(&t, g->uuid, "", "", "inventory");
            continue;
        }
        for (int k = 0; k < g->ngi; k++, n++) {
            const struct inv_gi *gi = &g->gi[k];
            assign(plan, node, g->index, gi, &t);
            evs[n] = ledger_event_of(&t, g->uuid, gi->nci ? gi->ci[0].uuid : "", gi->profile,
                                     "inventory");
            snprintf(bufs[n][0], sizeof bufs[n][0], "%d", gi->id);
            snprintf(bufs[n][1], sizeof bufs[n][1], "%d:%d", gi->pl.start, gi->pl.size);
            evs[n].gi_id = bufs[n][0];
            evs[n].placement = bufs[n][1];
        }
    }
    return n;
}

static int load_inventory(const char *path, struct inv_node *inv)
{
    struct ts_error e = {0};
    return inv_load(path, inv, &e) == TS_OK ? CLI_OK : fail_err(&e);
}

static int record_inventory(const struct lopts *o, const struct ledger_event *tmpl)
{
    enum { EVS_MAX = INV_GPUS_MAX * INV_GIS_MAX };
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct ledger_event *evs = calloc(EVS_MAX, sizeof *evs);
    char(*bufs)[2][16] = calloc(EVS_MAX, sizeof *bufs);
    struct cli_job job = {0};
    struct reconf_plan plan = {0}, *pp = NULL;
    struct cli_files spec = {{o->spec}, 1}, none = {0};
    struct plan_options popt = {PLAN_SOLVER_AUTO, 10.0};
    struct ts_error e = {0};
    int rc = inv && evs && bufs ? load_inventory(o->inventory, inv) : CLI_FAIL;
    if (rc == CLI_OK && o->spec)
        rc = cli_job_plan(&job, &spec, &none, &popt);
    if (rc == CLI_OK && o->spec)
        rc = reconf_plan_from_plan(job.plan, &plan, &e) == TS_OK ? CLI_OK : fail_err(&e);
    pp = rc == CLI_OK && o->spec ? &plan : NULL;
    if (rc == CLI_OK)
        rc = record_events(o, evs, inventory_events(inv, pp, tmpl, evs, bufs));
    if (pp)
        reconf_plan_release(&plan);
    cli_job_free(&job);
    free(inv);
    free(evs);
    free(bufs);
    return rc;
}

static int run_record(const struct lopts *o)
{
    struct ledger_event ev = {0};
    if (o->at) {
        int rc = time_arg(o->at, &ev.ts_ms);
        if (rc != CLI_OK)
            return rc;
    } else {
        ev.ts_ms = (int64_t)time(NULL) * 1000;
    }
    ev.node = o->node;
    ev.tenant = o->tenant;
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
    if (!need(o->tenant, "--tenant") || !need(o->gpu, "--gpu-uuid"))
        return CLI_BAD_INPUT;
    if (o->gi && (!*o->gi || o->gi[strspn(o->gi, "0123456789")])) {
        fprintf(stderr, "tessera: ledger: --gi-id must be a number\n");
        return CLI_BAD_INPUT;
    }
    ev.gpu_uuid = o->gpu;
    ev.instance_uuid = o->inst;
    ev.gi_id = o->gi;
    ev.profile = o->profile;
    ev.placement = o->placement;
    ev.workload = o->workload;
    ev.source = o->source ? o->source : "plan";
    return record_events(o, &ev, 1);
}

/* ---- who ------------------------------------------------------------------ */

static void print_row(const struct ledger_row *r)
{
    char t[40];
    ledger_format_time(r->ts_ms, t);
    printf("tenant:        %s\nworkload:      %s\nprofile:       %s\nnode:          %s\n"
           "gpu uuid:      %s\ninstance uuid: %s\nsince:         %s\nseq:           %" PRId64
           "\nsource:        %s\n",
           r->tenant, r->workload, r->profile, r->node, r->gpu_uuid, r->instance_uuid, t,
           r->seq, r->source);
}

static int run_who(const struct lopts *o)
{
    int64_t at = 0;
    if (!need(o->inst, "--instance") || !need(o->at, "--at"))
        return CLI_BAD_INPUT;
    int rc = time_arg(o->at, &at);
    struct store *st = NULL;
    if (rc != CLI_OK || (rc = open_db(o, &st)) != CLI_OK)
        return rc;
    struct ledger_row row;
    struct ts_error e = {0};
    int found = 0;
    if (ledger_who(st, o->inst, at, &row, &found, &e) != TS_OK)
        rc = fail_err(&e);
    else if (!found) {
        fprintf(stderr, "tessera: no custody record for %s at %s\n", o->inst, o->at);
        rc = CLI_FAIL;
    } else {
        print_row(&row);
        ledger_row_free(&row);
    }
    store_close(st);
    return rc;
}

/* ---- history and export --------------------------------------------------- */

static void print_table(const struct ledger_list *l)
{
    printf("%-6s %-20s %-14s %-14s %-10s %-40s %-40s %s\n", "SEQ", "TIME", "TENANT", "WORKLOAD",
           "PROFILE", "GPU", "INSTANCE", "SOURCE");
    for (size_t i = 0; i < l->n; i++) {
        const struct ledger_row *r = &l->rows[i];
        char t[40];
        ledger_format_time(r->ts_ms, t);
        printf("%-6" PRId64 " %-20s %-14s %-14s %-10s %-40s %-40s %s\n", r->seq, t, r->tenant,
               *r->workload ? r->workload : "-", *r->profile ? r->profile : "-", r->gpu_uuid,
               *r->instance_uuid ? r->instance_uuid : "-", r->source);
    }
}

static int print_list(const struct ledger_list *l, const char *fmt)
{
    struct ts_error e = {0};
    if (strcmp(fmt, "text") == 0) {
        print_table(l);
    } else if (strcmp(fmt, "csv") == 0) {
        struct ts_sbuf b;
        ts_sbuf_init(&b, (size_t)1 << 34);
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
            return fail_err(&e);
        printf("%s\n", text);
        json_free_text(text);
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
    if ((rc = open_db(o, &st)) != CLI_OK)
        return rc;
    struct ledger_list l;
    struct ts_error e = {0};
    if (ledger_history(st, tenant, from, to, &l, &e) != TS_OK) {
        rc = fail_err(&e);
    } else {
        rc = print_list(&l, fmt);
        ledger_list_free(&l);
    }
    store_close(st);
    return rc;
}

static int bad_format(const char *fmt, const char *a, const char *b)
{
    if (!strcmp(fmt, a) || !strcmp(fmt, b))
        return 0;
    fprintf(stderr, "tessera: ledger: -o must be %s or %s, not '%s'\n", a, b, fmt);
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
    if (rc != CLI_OK || (rc = open_db(o, &st)) != CLI_OK) {
        free(key);
        return rc;
    }
    struct ledger_report r;
    struct ts_error e = {0};
    if (ledger_verify(st, key, klen, &r, &e) != TS_OK)
        rc = fail_err(&e);
    else if (r.intact)
        printf("ledger intact: %" PRId64 " entries, head seq %" PRId64 " hash %s (%s)\n",
               r.entries, r.last_seq, r.last_hash,
               key ? "macs checked" : "macs not checked: no key");
    else {
        printf("ledger broken at seq %" PRId64 ": %s\n", r.bad_seq, r.problem);
        rc = CLI_FAIL;
    }
    store_close(st);
    free(key);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------- */

static const struct verb VERBS[] = {
    {"record", "dtgiGpPnwsakSYf", "record one custody event, or every device of nvidia-smi -L",
     run_record},
    {"who", "dIa", "the tenant that held a GPU or MIG instance at a time", run_who},
    {"history", "dtFTo", "a tenant's custody entries in [--from, --to)", run_history},
    {"export", "do", "every entry, as CSV or JSON for an auditor", run_export},
    {"verify", "dk", "check the hash chain (and macs with a key); exit 1 if broken",
     run_verify},
};

static int set_opt(struct lopts *o, int c, const char *v)
{
    const char **slot[] = {&o->db, &o->tenant, &o->gpu, &o->inst, &o->inst, &o->gi,
                           &o->profile, &o->placement, &o->node, &o->workload, &o->source,
                           &o->at, &o->from, &o->to, &o->out, &o->keyfile, &o->smi,
                           &o->inventory, &o->spec};
    static const char codes[] = "dtgiIGpPnwsaFTokSYf";
    const char *at = strchr(codes, c);
    if (!c || !at)
        return 0;
    *slot[at - codes] = v;
    return 1;
}

static int parse(const struct verb *v, int argc, char **argv, struct lopts *o)
{
    static char prog[48];
    int c;
    snprintf(prog, sizeof prog, "tessera ledger %s", v->name);
    argv[0] = prog; /* getopt's own messages name the subcommand */
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "o:f:h", OPTS, NULL)) != -1) {
        if (c == 'h') {
            printf("tessera ledger %s: %s\n\n", v->name, v->usage);
            ledger_usage(stdout);
            return -1;
        }
        if (c == '?' || !strchr(v->allowed, c) || !set_opt(o, c, optarg)) {
            if (c != '?')
                fprintf(stderr, "tessera: ledger %s: option '%s' does not apply\n", v->name,
                        argv[optind - 1]);
            return CLI_BAD_INPUT;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tessera: ledger %s: unexpected argument '%s'\n", v->name, argv[optind]);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

int cmd_ledger(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        ledger_usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof(VERBS) / sizeof(VERBS[0]); i++) {
        if (strcmp(name, VERBS[i].name) != 0)
            continue;
        struct lopts o = {0};
        int rc = parse(&VERBS[i], argc - 1, argv + 1, &o);
        return rc < 0 ? CLI_OK : rc != CLI_OK ? rc : VERBS[i].run(&o);
    }
    fprintf(stderr, *name ? "tessera: ledger: unknown subcommand '%s'\n"
                          : "tessera: ledger: missing subcommand%s\n", name);
    ledger_usage(stderr);
    return CLI_BAD_INPUT;
}
