/*
 * cmd_agent.c - `tessera agent inventory|apply|watch`: the node agent
 * (src/agent/) from the command line. inventory prints what the node's
 * GPUs hold (text or the NodeInventory JSON of docs/agent.md); apply brings
 * the node's cards to a plan's MIG geometry; watch does that for as long as
 * it runs (the DaemonSet's mode, agent/watch.c). Exit codes (cli_exit): 0
 * ok (watch: stopped by SIGTERM/SIGINT), 1 the job failed (NVML missing or
 * failing, a card refused or rolled back, a MIG mode change pending; watch:
 * --listen taken, a journal that cannot be recovered, the database), 2 bad
 * usage or bad input (a plan or inventory that cannot be read or is
 * malformed, unknown node, a plan for another model, a placement the card
 * does not list, overlapping instances).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/agent.h"
#include "cli/cli.h"
#include "serve/serve.h"
#include "store/store.h"
#include "util/file.h"

enum { INVENTORY = 1, APPLY = 2, WATCH = 4 };

static const struct cli_opt OPTS[] = {
    CLI_SHORT_C('o', "output", "FORMAT", INVENTORY, cli_complete_formats,
                "text (default), json (docs/agent.md) or yaml"),
    CLI_LONG('n', "node", "NAME", CLI_ALL,
             "the node (inventory: default $NODE_NAME, else the\n"
             "host name; apply: the plan's node to bring about)"),
    CLI_LONG('p', "plan", "PLAN.json", APPLY, "the output of 'tessera plan -o json'"),
    CLI_LONG('d', "dry-run", NULL, APPLY, "print the steps, change nothing"),
    CLI_LONG('c', "catalog", "FILE", APPLY | WATCH, "extra GpuModel documents"),
    CLI_LONG('i', "inventory", "FILE", APPLY,
             "with --dry-run: the node's NodeInventory (agent inventory\n"
             "-o json) instead of NVML; --node defaults to its node"),
    CLI_LONG('C', "node-config", "FILE", APPLY | WATCH,
             "the node's NodeConfig (tessera render's\n"
             "nodes/NODE/agent.json; the DaemonSet mounts ConfigMap\n"
             "tessera-agent-nodes) or a whole plan; --node defaults to\n"
             "the NodeConfig's node; watch reads it again every interval"),
    CLI_LONG('I', "inventory-out", "FILE", WATCH, "write the NodeInventory here every round"),
    CLI_LONG('P', "pid-map-out", "FILE", WATCH,
             "write the container-to-host pid map here every round"),
    CLI_LONG('j', "journal", "FILE", APPLY | WATCH,
             "the change in flight, for recovery after a crash\n"
             "(a host path that survives the pod)"),
    CLI_LONG('l', "listen", "ADDR:PORT", WATCH, "plain HTTP /healthz, /readyz, /metrics"),
    CLI_LONG('D', "db", "DB", WATCH, "the ledger for custody events (sqlite:PATH, postgres://)"),
    CLI_LONG('k', "hmac-key-file", "FILE", WATCH, "the ledger's key"),
    CLI_LONG('t', "interval-ms", "MS", WATCH, "time between rounds (default 10000)"),
    CLI_LONG('b', "backoff-max-ms", "MS", WATCH,
             "longest wait between retries after failures (default\n"
             "300000; doubling from the interval)"),
    CLI_LONG_C('L', "log-format", "FMT", WATCH, cli_complete_log_formats,
               "text (key=value, default) or json"),
    CLI_LONG('K', "kubelet-root", "DIR", WATCH,
             "the kubelet's folder, where the enforcement reads each\n"
             "pod's limit file (default /var/lib/kubelet)"),
    CLI_LONG('E', "enforce-interval-ms", "MS", WATCH,
             "time between enforcement rounds: each GPU process's\n"
             "container against its limit file (default 1000; 0: off)"),
    CLI_LONG('W', "sm-window-ms", "MS", WATCH,
             "the window each container's SM share is judged over\n"
             "(default 10000): over smPercent + 10 while the card was\n"
             "at least 90% busy and a neighbour ran"),
    CLI_LONG('A', "kube-api", "URL", WATCH,
             "the Kubernetes API for evict (https only; default\n"
             "in-cluster: $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)"),
    CLI_LONG('T', "kube-token-file", "FILE", WATCH,
             "its bearer token (default the service account's,\n"
             "/var/run/secrets/kubernetes.io/serviceaccount/token)"),
    CLI_LONG('R', "kube-ca-file", "FILE", WATCH,
             "the CA its certificate is verified with (default\n"
             "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt)"),
    CLI_END};

const struct cli_verb cli_verb_agent = {
    "agent",
    "usage: tessera agent inventory [-o text|json|yaml] [--node NAME]\n"
    "       tessera agent apply --plan PLAN.json --node NAME [--dry-run]\n"
    "                           [--catalog FILE] [--journal FILE]\n"
    "       tessera agent apply --node-config agent.json [--dry-run] [--journal FILE]\n"
    "       tessera agent apply --plan PLAN.json --dry-run --inventory FILE\n"
    "       tessera agent watch --node-config agent.json [--node NAME]\n"
    "                           [--inventory-out FILE] [--pid-map-out FILE]\n"
    "                           [--journal FILE] [--listen ADDR:PORT] [--db DB]\n"
    "                           [--hmac-key-file FILE] [--interval-ms MS]\n"
    "                           [--backoff-max-ms MS] [--log-format text|json]\n"
    "                           [--kubelet-root DIR] [--enforce-interval-ms MS]\n"
    "                           [--sm-window-ms MS] [--kube-api URL]\n"
    "                           [--kube-token-file FILE] [--kube-ca-file FILE]\n\n"
    "inventory  every GPU of this node through NVML: identity, memory, MIG mode,\n"
    "           GPU and compute instances with placements and MIG device UUIDs,\n"
    "           each MIG profile's possible placements (JSON: docs/agent.md)\n"
    "apply      make each card of NODE hold the MIG geometry of PLAN.json (the\n"
    "           output of 'tessera plan -o json') or of its NodeConfig: cards\n"
    "           that match are never touched; a card with processes (compute or\n"
    "           MPS) on an instance it would destroy is refused; a failure is\n"
    "           rolled back. --dry-run prints the steps and changes nothing;\n"
    "           with --inventory it needs no NVML. Before any change the whole\n"
    "           target is checked against each card's own placement list, and\n"
    "           a card with a MIG mode change pending is refused. --journal\n"
    "           records each change in flight and, at the next start, cleans\n"
    "           up what a crash left half made before applying.\n"
    "watch      the DaemonSet's mode: every --interval-ms read --node-config; when\n"
    "           this node's part of it changed, apply it with the checks\n"
    "           of apply (busy cards left alone and reported; failures retried\n"
    "           with exponential backoff); write the inventory and pid map;\n"
    "           custody events to --db for instances created or destroyed;\n"
    "           /healthz, /readyz, /metrics on --listen. SIGTERM ends it (exit\n"
    "           0) after the change in progress; --journal lets a restart clean\n"
    "           up a change cut short by a crash. Every --enforce-interval-ms it\n"
    "           judges each GPU process's container (its cgroup) against its\n"
    "           pod's limit file (the kubelet's copy) and reports, evicts or\n"
    "           kills by the file's policy (docs/agent.md); an eviction goes\n"
    "           through the Kubernetes API (in-cluster, or --kube-api), and one\n"
    "           refused (a PodDisruptionBudget) or failing kills instead.\n"
    "           Without --node the node is the NodeConfig's.\n",
    OPTS,
    "NVML is libnvidia-ml.so.1 from the NVIDIA driver; TESSERA_NVML_LIBRARY names\n"
    "another file. The node name: --node, else (apply, watch) the NodeConfig's\n"
    "node, else $NODE_NAME, else the host name.\n",
    "inventory apply watch",
    CLI_ALL};

struct agent_args {
    const char *format, *node, *plan, *inventory;
    struct cli_files catf;
    int dry;
    struct agent_watch_opts w;
    const char *db, *keyfile;
    int bad_number;
};

/* --interval-ms and --backoff-max-ms: 1 .. AGENT_INTERVAL_MS_MAX. */
static int millis(struct agent_args *a, const char *arg, int *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg && !*end && v >= 1 && v <= AGENT_INTERVAL_MS_MAX) {
        *out = (int)v;
        return CLI_OK;
    }
    fprintf(stderr, "tessera: agent watch: '%s' is not a number of milliseconds in 1..%d\n", arg,
            AGENT_INTERVAL_MS_MAX);
    a->bad_number = 1;
    return CLI_BAD_INPUT;
}

static int watch_set(struct agent_args *a, int key, const char *arg)
{
    switch (key) {
    case 'C': a->w.node_config = arg; return CLI_OK;
    case 'I': a->w.inventory_out = arg; return CLI_OK;
    case 'P': a->w.pidmap_out = arg; return CLI_OK;
    case 'j': a->w.journal = arg; return CLI_OK;
    case 'l': a->w.listen = arg; return CLI_OK;
    case 'D': a->db = arg; return CLI_OK;
    case 'k': a->keyfile = arg; return CLI_OK;
    case 't': return millis(a, arg, &a->w.interval_ms);
    case 'b': return millis(a, arg, &a->w.backoff_max_ms);
    case 'K': a->w.kubelet_root = arg; return CLI_OK;
    case 'E':
        if (strcmp(arg, "0") == 0) {
            a->w.enforce_interval_ms = 0;
            return CLI_OK;
        }
        return millis(a, arg, &a->w.enforce_interval_ms);
    case 'W': return millis(a, arg, &a->w.sm_window_ms);
    case 'A':
        a->w.kube_api = arg;
        if (strncmp(arg, "https://", 8) == 0 && strlen(arg) < AGENT_KUBE_URL_MAX)
            return CLI_OK;
        fprintf(stderr, "tessera: --kube-api '%s' is not an https:// URL\n", arg);
        return CLI_BAD_INPUT;
    case 'T': a->w.kube_token_file = arg; return CLI_OK;
    case 'R': a->w.kube_ca_file = arg; return CLI_OK;
    case 'L':
        a->w.log_json = strcmp(arg, "json") == 0;
        if (a->w.log_json || strcmp(arg, "text") == 0)
            return CLI_OK;
        fprintf(stderr, "tessera: --log-format must be text or json\n");
        return CLI_BAD_INPUT;
    default: return CLI_BAD_INPUT;
    }
}

static int set(void *ctx, int key, const char *arg)
{
    struct agent_args *a = ctx;
    switch (key) {
    case 'o': a->format = arg; return CLI_OK;
    case 'n': a->node = arg; return CLI_OK;
    case 'p': a->plan = arg; return CLI_OK;
    case 'd': a->dry = 1; return CLI_OK;
    case 'i': a->inventory = arg; return CLI_OK;
    case 'c': return cli_files_add(&a->catf, arg) ? CLI_OK : CLI_BAD_INPUT;
    default: return watch_set(a, key, arg);
    }
}

static const char *default_node(char *buf, size_t n)
{
    const char *env = getenv("NODE_NAME");
    if (env && *env)
        return env;
    if (gethostname(buf, n) != 0)
        return "localhost";
    buf[n - 1] = '\0';
    return buf;
}

static int print_buf(const char *format, struct ts_sbuf *b)
{
    int rc = ts_sbuf_status(b) == TS_OK ? cli_write_as(format, ts_sbuf_str(b), b->len) : CLI_FAIL;
    ts_sbuf_release(b);
    return rc;
}

static int inventory(const char *node, const char *format)
{
    struct ts_error e = {0};
    struct agent_nvml *n = NULL;
    struct inv_node *inv = calloc(1, sizeof *inv);
    struct ts_sbuf out;
    ts_sbuf_init(&out, CLI_DOC_MAX);
    int rc = CLI_OK;
    if (!inv || agent_nvml_open(&n, &e) != TS_OK || agent_inventory_read(n, node, inv, &e) != TS_OK)
        rc = inv ? cli_fail(&e, CLI_DOING) : CLI_FAIL;
    else if (strcmp(cli_format_built(format), "json") == 0)
        inv_json(inv, &out);
    else
        inv_text(inv, &out);
    agent_nvml_close(n);
    free(inv);
    if (rc != CLI_OK) {
        ts_sbuf_release(&out);
        return rc;
    }
    return print_buf(format, &out);
}

/* PLAN.json and the catalog it is checked against; an exit code. */
static int load_plan(const struct agent_args *a, struct reconf_plan *plan, struct cat_catalog **cat)
{
    struct ts_error e = {0};
    struct ts_diag diag = {0};
    char *text = NULL;
    size_t len = 0;
    const char *path = a->plan ? a->plan : a->w.node_config;
    if (ts_file_read(path, CLI_PLAN_FILE_MAX, &text, &len, &e) != TS_OK)
        return cli_fail(&e, CLI_READING);
    ts_status st = reconf_plan_parse(text, len, path, plan, &e);
    free(text);
    if (st != TS_OK)
        return cli_fail(&e, CLI_READING);
    st = cat_load(a->catf.paths, a->catf.n, cat, &diag);
    cli_print_diag(&diag);
    return cli_exit(st, CLI_READING);
}

/* The NodeInventory of --inventory; an exit code. */
static int load_inventory(const struct agent_args *a, struct inv_node **inv)
{
    struct ts_error e = {0};
    if (!a->inventory)
        return CLI_OK;
    *inv = calloc(1, sizeof **inv);
    if (!*inv)
        return CLI_FAIL;
    return inv_load(a->inventory, *inv, &e) == TS_OK ? CLI_OK : cli_fail(&e, CLI_READING);
}

/* --journal (not for a dry run, which changes nothing): first clean up
 * what a crash left of the last change, then journal this one. */
static ts_status recover(const struct agent_args *a, struct agent_nvml *n,
                         struct agent_apply_opts *o, struct ts_sbuf *log, struct ts_error *e)
{
    int found = 0;
    if (!a->w.journal || a->dry)
        return TS_OK;
    ts_status st = agent_journal_recover(n, a->w.journal, &found, log, e);
    if (st == TS_OK && found)
        ts_sbuf_printf(log, "recovered the change a crash cut short (%s)\n", a->w.journal);
    o->journal = a->w.journal;
    return st;
}

static int apply(const struct agent_args *a)
{
    struct reconf_plan plan = {0};
    struct cat_catalog *cat = NULL;
    struct inv_node *inv = NULL;
    int rc = load_plan(a, &plan, &cat);
    if (rc == CLI_OK)
        rc = load_inventory(a, &inv);
    struct agent_nvml *n = NULL;
    struct ts_sbuf log;
    ts_sbuf_init(&log, CLI_DOC_MAX);
    const char *node = a->node ? a->node : inv ? inv->node : plan.node ? plan.node : "";
    struct agent_apply_opts o = {node, a->dry, inv, NULL, NULL};
    struct ts_error e = {0};
    if (rc == CLI_OK &&
        ((!inv && agent_nvml_open(&n, &e) != TS_OK) || recover(a, n, &o, &log, &e) != TS_OK ||
         agent_apply(n, &plan, cat, &o, &log, &e) != TS_OK))
        rc = cli_fail(&e, CLI_DOING);
    fputs(ts_sbuf_str(&log), stdout);
    ts_sbuf_release(&log);
    agent_nvml_close(n);
    free(inv);
    cat_free(cat);
    reconf_plan_release(&plan);
    return rc;
}

/* What is wrong with the arguments of sub, or NULL. */
static const char *problem(unsigned sub, int operands, const struct agent_args *a)
{
    if (operands)
        return "unexpected argument";
    if (sub == INVENTORY && strcmp(a->format, "text") &&
        strcmp(cli_format_built(a->format), "json"))
        return "-o must be text, json or yaml";
    if (sub == APPLY && a->plan && a->w.node_config)
        return "apply takes --plan or --node-config, not both";
    if (sub == APPLY && !a->w.node_config && (!a->plan || (!a->node && !a->inventory)))
        return "apply needs --plan and --node, or --node-config";
    if (sub == APPLY && a->inventory && !a->dry)
        return "--inventory is for --dry-run (a change needs the node's NVML)";
    if (sub == WATCH && !a->w.node_config)
        return "watch needs --node-config";
    if (sub == WATCH && a->keyfile && !a->db)
        return "--hmac-key-file is for --db";
    if (sub == WATCH && a->w.enforce_interval_ms > 0 &&
        a->w.sm_window_ms > (long)AGENT_SM_SLICES * a->w.enforce_interval_ms)
        return "--sm-window-ms holds at most 128 enforcement rounds (--enforce-interval-ms)";
    return NULL;
}

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The catalog, the key and the store watch needs; an exit code. */
static int watch_open(struct agent_args *a, struct cat_catalog **cat, char **key, size_t *klen)
{
    struct ts_diag diag = {0};
    ts_status st = cat_load(a->catf.paths, a->catf.n, cat, &diag);
    cli_print_diag(&diag);
    int rc = cli_exit(st, CLI_READING);
    if (rc == CLI_OK && a->keyfile)
        rc = cli_read_key(a->keyfile, key, klen);
    struct ts_error e = {0};
    if (rc == CLI_OK && a->db && store_open(a->db, &a->w.store, &e) != TS_OK)
        rc = cli_fail(&e, CLI_DOING);
    return rc;
}

static unsigned status(void *ctx, const char *path, struct ts_sbuf *body)
{
    return agent_watch_status(ctx, path, body);
}

static int watch(struct agent_args *a, const char *node)
{
    struct cat_catalog *cat = NULL;
    struct agent_nvml *n = NULL;
    char *key = NULL;
    size_t klen = 0;
    struct ts_error e = {0};
    int rc = watch_open(a, &cat, &key, &klen);
    a->w.node = node;
    a->w.node_from_config = a->node == NULL;
    a->w.cat = cat;
    a->w.key = key;
    a->w.key_len = klen;
    a->w.stop = &stop_requested;
    install_signals();
    struct agent_watch *w = NULL;
    struct serve_status *http = NULL;
    if (rc == CLI_OK &&
        (agent_nvml_open(&n, &e) != TS_OK || agent_watch_new(n, &a->w, &w, &e) != TS_OK ||
         (a->w.listen && serve_status_start(a->w.listen, status, w, &http, &e) != TS_OK) ||
         agent_watch_run(w, &e) != TS_OK))
        rc = cli_fail(&e, CLI_DOING);
    serve_status_stop(http);
    agent_watch_free(w);
    agent_nvml_close(n);
    store_close(a->w.store);
    free(key);
    cat_free(cat);
    return rc;
}

int cmd_agent(int argc, char **argv)
{
    const char *word = argc > 1 ? argv[1] : "";
    unsigned sub = !strcmp(word, "inventory") ? INVENTORY
                   : !strcmp(word, "apply")   ? APPLY
                   : !strcmp(word, "watch")   ? WATCH
                                              : 0;
    if (!strcmp(word, "--help") || !strcmp(word, "-h"))
        return cli_help(&cli_verb_agent, CLI_ALL);
    struct agent_args a = {.format = "text",
                           .w = {.interval_ms = 10000,
                                 .backoff_max_ms = AGENT_BACKOFF_MS_MAX,
                                 .kubelet_root = "/var/lib/kubelet",
                                 .enforce_interval_ms = 1000,
                                 .sm_window_ms = 10000}};
    int rc = sub ? cli_parse(&cli_verb_agent, sub, argc - 1, argv + 1, set, &a) : CLI_OK;
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_agent, sub) : rc;
    const char *why = sub ? problem(sub, optind < argc - 1, &a)
                          : "expected inventory, apply or watch";
    if (why) {
        fprintf(stderr, "tessera: agent: %s\n", why);
        cli_usage(&cli_verb_agent, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    char host[256];
    const char *node = a.node ? a.node : default_node(host, sizeof host);
    if (sub == INVENTORY)
        return inventory(node, a.format);
    return sub == WATCH ? watch(&a, node) : apply(&a);
}
