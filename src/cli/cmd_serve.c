/*
 * cmd_serve.c - the two servers, each alone in its process (serve/):
 * `tessera serve`, the validating admission webhook the API server calls,
 * and `tessera console`, the JSON API, the web console and, with --db, the
 * metering store behind its /metrics: everything a tenant can call.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "serve/serve.h"
#include "util/time.h"

#define COMMON_OPTS                                                                              \
    CLI_SHORT('f', "filename", "FILE", CLI_ALL, "tenancy spec (repeat for several files)"),      \
        CLI_LONG('C', "tls-cert", "FILE", CLI_ALL, "PEM certificate (chain) its clients trust"), \
        CLI_LONG('K', "tls-key", "FILE", CLI_ALL, "its PEM private key"),                        \
        CLI_LONG('H', "health-listen", "ADDR:PORT", CLI_ALL,                                     \
                 "serve /healthz, /readyz and /metrics over plain HTTP\n"                        \
                 "here, a thread per connection (the probes, Prometheus)"),                      \
        CLI_LONG('c', "catalog", "FILE", CLI_ALL, "extra GpuModel documents"),                   \
        CLI_LONG('L', "log-format", "FMT", CLI_ALL, "text (key=value, default) or json"),        \
        CLI_LONG('t', "threads", "N", CLI_ALL, "worker threads (default: one per core)"),        \
        CLI_LONG('T', "conn-timeout", "SEC", CLI_ALL,                                            \
                 "close a connection idle this long (default 10)"),                              \
        CLI_LONG('q', "request-timeout", "SEC", CLI_ALL,                                         \
                 "close a connection whose request (headers and body)\n"                         \
                 "takes longer from the end of the TLS handshake\n"                              \
                 "(default 10; the handshake may take 3 times that)"),                           \
        CLI_LONG('p', "max-per-client", "N", CLI_ALL,                                            \
                 "connections one client address may hold (default 128)"),                       \
        CLI_LONG('m', "max-connections", "N", CLI_ALL,                                           \
                 "connections in all on the TLS port (default 1024)")

static const struct cli_opt SERVE_OPTS[] = {
    COMMON_OPTS,
    CLI_LONG('l', "listen", "ADDR:PORT", CLI_ALL, "default 0.0.0.0:8443 ([::]:8443 for IPv6)"),
    CLI_LONG('a', "reserve-for", "CIDR", CLI_ALL,
             "the API server's addresses (repeat): only their connections\n"
             "may use the reserved slots and the reserved 7 MiB of the\n"
             "request bodies' budget; they are not held to one address's\n"
             "share of it or to the minimum body rate (64 KiB/s)"),
    CLI_LONG('e', "reserved", "N", CLI_ALL,
             "slots kept for --reserve-for (default max-connections / 8)"),
    CLI_LONG('r', "runtime-class", "N", CLI_ALL,
             "an allowed runtimeClassName (repeat; default nvidia)"),
    CLI_LONG('s', "shim-path", "PATH", CLI_ALL,
             "the LD_PRELOAD value allowed (tessera's CUDA shim)"),
    CLI_LONG('Z', "admission-client-ca", "FILE", CLI_ALL,
             "PEM CA of the API server's client certificate (its\n"
             "AdmissionConfiguration kubeconfig): only reviews it signs\n"
             "are recorded as a tenant's (denials, per-tenant counts)"),
    CLI_LONG('N', "admission-client", "NAME", CLI_ALL,
             "the CN or DNS name that certificate must carry"),
    CLI_END};

static const struct cli_opt CONSOLE_OPTS[] = {
    COMMON_OPTS,
    CLI_LONG('l', "listen", "ADDR:PORT", CLI_ALL, "default 0.0.0.0:8444 ([::]:8444 for IPv6)"),
    CLI_LONG('k', "tokens", "FILE", CLI_ALL,
             "identities for the JSON API under /api/v1/ (token hashes\n"
             "and certificate names, docs/api.md; see tessera token new)"),
    CLI_LONG('A', "client-ca", "FILE", CLI_ALL,
             "PEM CAs whose client certificates the API accepts\n"
             "(with the clientAuth extended key usage; mapped to\n"
             "identities by the --tokens file)"),
    CLI_LONG('d', "db", "DB", CLI_ALL, "metering store: sqlite:PATH or postgres://..."),
    CLI_LONG('i', "interval", "DUR", CLI_ALL,
             "the scrape interval of the stored samples (default 15s;\n"
             "gaps count at most twice this, as in tessera usage)"),
    CLI_LONG('R', "metering-refresh", "DUR", CLI_ALL,
             "how long /metrics reuses what it read from the store\n"
             "(default 10s)"),
    CLI_LONG('u', "current", "FILE", CLI_ALL,
             "the running layout (a previous 'tessera plan -o json')\n"
             "for /api/v1/replan"),
    CLI_LONG('I', "inventory", "PATH", CLI_ALL,
             "the nodes' NodeInventory files (tessera agent inventory\n"
             "-o json): one file, or a folder of *.json; /api/v1/plan\n"
             "gives each card and MIG instance its UUID from them"),
    CLI_LONG('D', "denials-from", "URL", CLI_ALL,
             "the webhook's recent denials, http://HOST:PORT/denials on\n"
             "its --health-listen port; every address HOST resolves to\n"
             "(each replica) is read"),
    CLI_END};

const struct cli_verb cli_verb_serve = {
    "serve",
    "usage: tessera serve -f SPEC [-f SPEC...] --tls-cert FILE --tls-key FILE\n"
    "                     [--listen ADDR:PORT] [--health-listen ADDR:PORT]\n"
    "                     [--catalog FILE] [--log-format text|json]\n"
    "                     [--threads N] [--conn-timeout SEC] [--request-timeout SEC]\n"
    "                     [--max-connections N] [--max-per-client N]\n"
    "                     [--reserve-for CIDR... [--reserved N]] [--runtime-class NAME...]\n"
    "                     [--shim-path PATH]\n"
    "                     [--admission-client-ca FILE [--admission-client NAME]]\n\n"
    "Serve the validating admission webhook over HTTPS: POST /validate takes an\n"
    "admission.k8s.io/v1 AdmissionReview for Pods, workloads with pod templates,\n"
    "ResourceClaims, ResourceClaimTemplates and the CUDA shim's limit ConfigMaps, and\n"
    "denies what the tenant's plan and contract do not allow; GET /healthz and /readyz.\n"
    "Nothing else: the API and the console are `tessera console`, another process,\n"
    "so nothing a tenant can call shares the admission path's threads. With\n"
    "--health-listen, /metrics (Prometheus) and /denials (the recent denials, for\n"
    "the console) are served there too, for the cluster's own network.\n"
    "With --admission-client-ca, a review is a tenant's (its denial kept, counted per\n"
    "tenant) only when the API server's client certificate came with it; without it,\n"
    "reviews are answered but never recorded as a tenant's.\n"
    "SIGHUP, or a change to the spec, catalog or certificate files, reloads them;\n"
    "a spec that fails to load keeps the old policy serving. SIGTERM stops after the\n"
    "requests in flight.\n",
    SERVE_OPTS,
    NULL,
    NULL,
    CLI_ALL};

const struct cli_verb cli_verb_console = {
    "console",
    "usage: tessera console -f SPEC [-f SPEC...] --tls-cert FILE --tls-key FILE\n"
    "                       --tokens FILE [--client-ca FILE]\n"
    "                       [--listen ADDR:PORT] [--health-listen ADDR:PORT]\n"
    "                       [--catalog FILE] [--log-format text|json]\n"
    "                       [--threads N] [--conn-timeout SEC] [--request-timeout SEC]\n"
    "                       [--max-connections N] [--max-per-client N]\n"
    "                       [--db DB [--interval DUR] [--metering-refresh DUR]]\n"
    "                       [--current PLAN.json] [--inventory PATH]\n"
    "                       [--denials-from URL]\n\n"
    "Serve what tenants and operators call, over HTTPS, in a process of its own:\n"
    "GET /api/v1/... the JSON API (docs/api.md): the plan, tenants, usage, invoices,\n"
    "the custody ledger, violations, the webhook's recent denials (--denials-from)\n"
    "and replanning steps, each caller seeing only what its identity may; /ui/ the\n"
    "web console over that API (docs/console.md); GET /healthz and /readyz.\n"
    "/metrics (Prometheus; for an operator identity only on this port, for anyone\n"
    "on --health-listen): each tenant's allocation in the plan and, with --db, the\n"
    "GPU-hours per tenant from the metering store (as `tessera usage` counts them) and\n"
    "the stored dcgm-exporter series with a tenant label; a store that fails shows\n"
    "tessera_metering_up 0, the rest of the page is still served.\n"
    "SIGHUP, or a change to the spec, catalog or certificate files, reloads them.\n",
    CONSOLE_OPTS,
    NULL,
    NULL,
    CLI_ALL};

struct serve_args {
    struct cli_files spec, catalog;
    struct serve_options o;
    const char *classes[CLI_RUNTIME_CLASSES_MAX + 1];
    size_t nclasses;
    const char *reserve[SERVE_RESERVE_NETS_MAX];
    size_t nreserve;
};

/* A positive duration for --flag; 0 (and a message) when it is not one. */
static int duration(const char *flag, const char *text, int64_t *ms)
{
    if (ts_duration_parse(text, ms) && *ms > 0)
        return CLI_OK;
    fprintf(stderr, "tessera: --%s: bad duration '%s' (like 15s, 500ms, 2m)\n", flag, text);
    return CLI_BAD_INPUT;
}

/* An unsigned number from lo to hi, else what (a message) and 0. */
static int number(const char *text, unsigned lo, unsigned hi, unsigned *out, const char *what)
{
    char *end = NULL;
    unsigned long v = strtoul(text, &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "tessera: %s\n", what);
        return CLI_BAD_INPUT;
    }
    *out = (unsigned)v;
    return CLI_OK;
}

static int log_format(struct serve_options *o, const char *arg)
{
    if (strcmp(arg, "json") != 0 && strcmp(arg, "text") != 0) {
        fprintf(stderr, "tessera: --log-format must be text or json\n");
        return CLI_BAD_INPUT;
    }
    o->log_json = strcmp(arg, "json") == 0;
    return CLI_OK;
}

static int runtime_class(struct serve_args *a, const char *arg)
{
    if (a->nclasses == CLI_RUNTIME_CLASSES_MAX) {
        fprintf(stderr, "tessera: at most %d --runtime-class\n", CLI_RUNTIME_CLASSES_MAX);
        return CLI_BAD_INPUT;
    }
    a->classes[a->nclasses++] = arg;
    return CLI_OK;
}

static int reserve_for(struct serve_args *a, const char *arg)
{
    if (a->nreserve == SERVE_RESERVE_NETS_MAX) {
        fprintf(stderr, "tessera: at most %d --reserve-for\n", SERVE_RESERVE_NETS_MAX);
        return CLI_BAD_INPUT;
    }
    a->reserve[a->nreserve++] = arg;
    return CLI_OK;
}

static int set(void *ctx, int key, const char *arg)
{
    struct serve_args *a = ctx;
    struct serve_options *o = &a->o;
    switch (key) {
    case 'f': return cli_files_add(&a->spec, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'c': return cli_files_add(&a->catalog, arg) ? CLI_OK : CLI_BAD_INPUT;
    case 'C': o->cert_file = arg; return CLI_OK;
    case 'K': o->key_file = arg; return CLI_OK;
    case 'l': o->listen = arg; return CLI_OK;
    case 'H': o->health_listen = arg; return CLI_OK;
    case 's': o->admit.shim_path = arg; return CLI_OK;
    case 'd': o->db_url = arg; return CLI_OK;
    case 'k': o->tokens_file = arg; return CLI_OK;
    case 'A': o->client_ca_file = arg; return CLI_OK;
    case 'u': o->current_file = arg; return CLI_OK;
    case 'I': o->inventory_path = arg; return CLI_OK;
    case 'Z': o->client_ca_file = arg; return CLI_OK;
    case 'N': o->admission_client = arg; return CLI_OK;
    case 'D': o->denials_from = arg; return CLI_OK;
    case 'i': return duration("interval", arg, &o->meter_interval_ms);
    case 'R': return duration("metering-refresh", arg, &o->meter_refresh_ms);
    case 'L': return log_format(o, arg);
    case 't': return number(arg, 1, 256, &o->threads, "--threads must be 1 to 256");
    case 'T': return number(arg, 1, 600, &o->timeout_s, "--conn-timeout must be 1 to 600 seconds");
    case 'q':
        return number(arg, 1, 600, &o->request_s, "--request-timeout must be 1 to 600 seconds");
    case 'p': return number(arg, 1, 1024, &o->per_client, "--max-per-client must be 1 to 1024");
    case 'm':
        return number(arg, 2, 16384, &o->max_connections, "--max-connections must be 2 to 16384");
    case 'a': return reserve_for(a, arg);
    case 'e': return number(arg, 1, 16383, &o->reserved, "--reserved must be 1 to 16383");
    case 'r': return runtime_class(a, arg);
    default: return CLI_BAD_INPUT;
    }
}

static int check_args(int argc, const struct serve_args *a, const struct cli_verb *v)
{
    const struct serve_options *o = &a->o;
    if (optind < argc || !a->spec.n || !o->cert_file || !o->key_file ||
        (o->role == SERVE_ROLE_CONSOLE && !o->tokens_file)) {
        fprintf(stderr, "tessera: %s needs -f SPEC, --tls-cert and --tls-key%s\n", v->name,
                o->role == SERVE_ROLE_CONSOLE ? " and --tokens" : "");
        cli_usage(v, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    if (o->admission_client && !o->client_ca_file) {
        fprintf(stderr, "tessera: --admission-client needs --admission-client-ca\n");
        return CLI_BAD_INPUT;
    }
    if (o->denials_from && strncmp(o->denials_from, "http://", 7) != 0) {
        fprintf(stderr,
                "tessera: --denials-from: '%s' is not an http:// URL (the webhook's "
                "--health-listen port)\n",
                o->denials_from);
        return CLI_BAD_INPUT;
    }
    if (!o->db_url && (o->meter_interval_ms || o->meter_refresh_ms)) {
        fprintf(stderr, "tessera: --interval and --metering-refresh need --db\n");
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

static int run(const struct cli_verb *v, int role, int argc, char **argv)
{
    struct serve_args a = {0};
    a.o.role = role;
    int rc = cli_parse(v, CLI_ALL, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(v, CLI_ALL) : rc;
    if ((rc = check_args(argc, &a, v)) != CLI_OK)
        return rc;
    a.o.spec_files = a.spec.paths;
    a.o.nspec = a.spec.n;
    a.o.catalog_files = a.catalog.paths;
    a.o.ncatalog = a.catalog.n;
    a.o.admit.runtime_classes = a.nclasses ? a.classes : NULL;
    a.o.reserve_for = a.reserve;
    a.o.nreserve_for = a.nreserve;
    struct ts_error e = {0};
    struct serve_state *s = NULL;
    if (serve_open(&a.o, &s, &e) != TS_OK)
        return cli_fail(&e, CLI_READING);
    if (serve_run(s, &e) != TS_OK)
        return cli_fail(&e, CLI_DOING);
    return CLI_OK;
}

int cmd_serve(int argc, char **argv)
{
    return run(&cli_verb_serve, SERVE_ROLE_WEBHOOK, argc, argv);
}

int cmd_console(int argc, char **argv)
{
    return run(&cli_verb_console, SERVE_ROLE_CONSOLE, argc, argv);
}
