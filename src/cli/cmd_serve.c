/*
 * cmd_serve.c - `tessera serve`: the validating admission webhook (serve/),
 * and with --db the metering store behind its /metrics.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "serve/serve.h"
#include "util/time.h"

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: tessera serve -f SPEC [-f SPEC...] --tls-cert FILE --tls-key FILE\n"
            "                     [--listen ADDR:PORT] [--catalog FILE] [--log-format text|json]\n"
            "                     [--threads N] [--conn-timeout SEC] [--runtime-class NAME...]\n"
            "                     [--shim-path PATH] [--db DB [--interval DUR]\n"
            "                     [--metering-refresh DUR]]\n\n"
            "Serve the validating admission webhook over HTTPS: POST /validate takes an\n"
            "admission.k8s.io/v1 AdmissionReview for Pods, workloads with pod templates,\n"
            "ResourceClaims and ResourceClaimTemplates, and denies what the tenant's plan and\n"
            "contract do not allow; GET /healthz, /readyz and /metrics (Prometheus).\n"
            "SIGHUP, or a change to the spec, catalog or certificate files, reloads them;\n"
            "a spec that fails to load keeps the old policy serving. SIGTERM stops after the\n"
            "requests in flight.\n"
            "/metrics also shows each tenant's allocation in the plan and, with --db, the\n"
            "GPU-hours per tenant from the metering store (as `tessera usage` counts them) and\n"
            "the stored dcgm-exporter series with a tenant label; a store that fails shows\n"
            "tessera_metering_up 0, the rest of the page is still served.\n\n"
            "  -f, --filename FILE     tenancy spec (repeat for several files)\n"
            "      --tls-cert FILE     PEM certificate (chain) the API server trusts\n"
            "      --tls-key FILE      its PEM private key\n"
            "      --listen ADDR:PORT  default 0.0.0.0:8443 ([::]:8443 for IPv6)\n"
            "      --catalog FILE      extra GpuModel documents\n"
            "      --log-format FMT    text (key=value, default) or json\n"
            "      --threads N         worker threads (default: one per core)\n"
            "      --conn-timeout SEC  close a connection idle this long (default 10)\n"
            "      --runtime-class N   an allowed runtimeClassName (repeat; default nvidia)\n"
            "      --shim-path PATH    the LD_PRELOAD value allowed (tessera's CUDA shim)\n"
            "      --db DB             metering store: sqlite:PATH or postgres://...\n"
            "      --interval DUR      the scrape interval of the stored samples (default 15s;\n"
            "                          gaps count at most twice this, as in tessera usage)\n"
            "      --metering-refresh DUR\n"
            "                          how long /metrics reuses what it read from the store\n"
            "                          (default 10s)\n");
}

#define MAX_RUNTIME_CLASSES 16

/* A positive duration for --flag; 0 (and a message) when it is not one. */
static int duration(const char *flag, const char *text, int64_t *ms)
{
    if (ts_duration_parse(text, ms) && *ms > 0)
        return 1;
    fprintf(stderr, "tessera: --%s: bad duration '%s' (like 15s, 500ms, 2m)\n", flag, text);
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'},   {"tls-cert", required_argument, NULL, 'C'},
        {"tls-key", required_argument, NULL, 'K'},    {"listen", required_argument, NULL, 'l'},
        {"catalog", required_argument, NULL, 'c'},    {"log-format", required_argument, NULL, 'L'},
        {"threads", required_argument, NULL, 't'},    {"runtime-class", required_argument, NULL, 'r'},
        {"shim-path", required_argument, NULL, 's'},  {"conn-timeout", required_argument, NULL, 'T'},
        {"db", required_argument, NULL, 'd'},         {"interval", required_argument, NULL, 'i'},
        {"metering-refresh", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct cli_files spec = {0}, catalog = {0};
    struct serve_options o = {0};
    const char *classes[MAX_RUNTIME_CLASSES + 1] = {0};
    size_t nclasses = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'f': if (!cli_files_add(&spec, optarg)) return CLI_BAD_INPUT; break;
        case 'c': if (!cli_files_add(&catalog, optarg)) return CLI_BAD_INPUT; break;
        case 'C': o.cert_file = optarg; break;
        case 'K': o.key_file = optarg; break;
        case 'l': o.listen = optarg; break;
        case 's': o.admit.shim_path = optarg; break;
        case 'd': o.db_url = optarg; break;
        case 'i':
            if (!duration("interval", optarg, &o.meter_interval_ms))
                return CLI_BAD_INPUT;
            break;
        case 'R':
            if (!duration("metering-refresh", optarg, &o.meter_refresh_ms))
                return CLI_BAD_INPUT;
            break;
        case 'L':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                fprintf(stderr, "tessera: --log-format must be text or json\n");
                return CLI_BAD_INPUT;
            }
            o.log_json = strcmp(optarg, "json") == 0;
            break;
        case 't':
            o.threads = (unsigned)strtoul(optarg, &end, 10);
            if (*end || o.threads < 1 || o.threads > 256) {
                fprintf(stderr, "tessera: --threads must be 1 to 256\n");
                return CLI_BAD_INPUT;
            }
            break;
        case 'T':
            o.timeout_s = (unsigned)strtoul(optarg, &end, 10);
            if (*end || o.timeout_s < 1 || o.timeout_s > 600) {
                fprintf(stderr, "tessera: --conn-timeout must be 1 to 600 seconds\n");
                return CLI_BAD_INPUT;
            }
            break;
        case 'r':
            if (nclasses == MAX_RUNTIME_CLASSES) {
                fprintf(stderr, "tessera: at most %d --runtime-class\n", MAX_RUNTIME_CLASSES);
                return CLI_BAD_INPUT;
            }
            classes[nclasses++] = optarg;
            break;
        case 'h': serve_usage(stdout); return CLI_OK;
        default: serve_usage(stderr); return CLI_BAD_INPUT;
        }
    }
    if (optind < argc || !spec.n || !o.cert_file || !o.key_file) {
        fprintf(stderr, "tessera: serve needs -f SPEC, --tls-cert and --tls-key\n");
        serve_usage(stderr);
        return CLI_BAD_INPUT;
    }
    if (!o.db_url && (o.meter_interval_ms || o.meter_refresh_ms)) {
        fprintf(stderr, "tessera: --interval and --metering-refresh need --db\n");
        return CLI_BAD_INPUT;
    }
    o.spec_files = spec.paths;
    o.nspec = spec.n;
    o.catalog_files = catalog.paths;
    o.ncatalog = catalog.n;
    o.admit.runtime_classes = nclasses ? classes : NULL;
    struct ts_error e = {0};
    if (serve_run(&o, &e) != TS_OK) {
        cli_print_error(&e);
        return e.code == TS_USAGE || e.code == TS_INVALID ? CLI_BAD_INPUT : CLI_FAIL;
    }
    return CLI_OK;
}
