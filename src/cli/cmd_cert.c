/*
 * cmd_cert.c - `tessera cert`: make or rotate the webhook's serving certificate
 * in a folder (ca.crt, ca.key, tls.crt, tls.key) and print the manifest that
 * installs it: the TLS Secret and the webhook configuration's caBundle.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "render/yaml.h"
#include "serve/cert.h"
#include "util/file.h"

static const struct cli_opt OPTS[] = {
    CLI_LONG('d', "dir", "DIR", CLI_ALL, "where the CA and the certificate are kept (created)"),
    CLI_LONG('s', "service", "NAME", CLI_ALL, "the webhook's Service (default tessera-webhook)"),
    CLI_LONG('n', "namespace", "NS", CLI_ALL, "its namespace (default tessera-system)"),
    CLI_LONG('D', "cluster-domain", "DOMAIN", CLI_ALL, "the cluster's DNS domain (cluster.local)"),
    CLI_LONG('t', "days", "N", CLI_ALL, "the certificate's validity (default 365)"),
    CLI_LONG('T', "ca-days", "N", CLI_ALL, "a new CA's validity (default 3650)"),
    CLI_LONG_C('k', "key-type", "TYPE", CLI_ALL, CLI_WORDS(serve_key_type_names),
               "ecdsa-p256 (default), rsa-2048 or rsa-3072"),
    CLI_LONG('N', "new-ca", NULL, CLI_ALL,
             "replace the CA too; caBundle then trusts the old and the new one"),
    CLI_END};

const struct cli_verb cli_verb_cert = {
    "cert",
    "usage: tessera cert --dir DIR [--service NAME] [--namespace NS] [--cluster-domain D]\n"
    "                    [--days 365] [--ca-days 3650] [--key-type ecdsa-p256] [--new-ca]\n\n"
    "Make the webhook's serving certificate, signed by a CA kept in DIR (made there\n"
    "the first time): DIR/ca.crt, ca.key, tls.crt, tls.key (keys mode 0600). The\n"
    "certificate names the Service as NAME, NAME.NS, NAME.NS.svc (its CN) and\n"
    "NAME.NS.svc.DOMAIN. Run it again to rotate: a new key and certificate from the\n"
    "same CA, so the caBundle stays. With --new-ca the CA is replaced too (the old one\n"
    "is kept as DIR/ca-previous.crt) and caBundle holds both, so the API server trusts\n"
    "the replicas still serving the old certificate until the kubelet updates them.\n"
    "Prints the manifest to apply: the kubernetes.io/tls Secret tessera-webhook-tls\n"
    "and the caBundle of the ValidatingWebhookConfiguration tessera, for\n"
    "  kubectl apply --server-side --field-manager=tessera-cert -f -\n",
    OPTS,
    NULL,
    NULL,
    CLI_ALL};

struct cert_args {
    const char *dir, *service, *ns, *domain;
    struct serve_cert_opts o;
    int new_ca;
};

static int set_days(const char *name, const char *arg, unsigned *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || v < 1 || v > SERVE_CERT_DAYS_MAX) {
        fprintf(stderr, "tessera: cert: --%s must be 1 to %d days, not '%s'\n", name,
                SERVE_CERT_DAYS_MAX, arg);
        return CLI_BAD_INPUT;
    }
    *out = (unsigned)v;
    return CLI_OK;
}

static int set(void *ctx, int key, const char *arg)
{
    struct cert_args *a = ctx;
    switch (key) {
    case 'd': a->dir = arg; return CLI_OK;
    case 's': a->service = arg; return CLI_OK;
    case 'n': a->ns = arg; return CLI_OK;
    case 'D': a->domain = arg; return CLI_OK;
    case 't': return set_days("days", arg, &a->o.days);
    case 'T': return set_days("ca-days", arg, &a->o.ca_days);
    case 'N': a->new_ca = 1; return CLI_OK;
    case 'k':
        for (int i = 0; serve_key_type_names[i]; i++)
            if (strcmp(arg, serve_key_type_names[i]) == 0) {
                a->o.key = (enum serve_key_type)i;
                return CLI_OK;
            }
        fprintf(stderr, "tessera: cert: --key-type must be ecdsa-p256, rsa-2048 or rsa-3072\n");
        return CLI_BAD_INPUT;
    default: return CLI_BAD_INPUT;
    }
}

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Read DIR/name into *text (NULL when absent); an exit code. Only a regular
 * file is read: a FIFO there would block the command for ever. */
static int read_opt(const char *dir, const char *name, char **text)
{
    char *p = path_in(dir, name);
    size_t len;
    struct ts_error e = {0};
    struct stat st;
    *text = NULL;
    int rc = p ? CLI_OK : CLI_FAIL;
    if (p && stat(p, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "tessera: cert: %s: not a regular file\n", p);
        rc = CLI_BAD_INPUT;
    } else if (p && access(p, F_OK) == 0 &&
               ts_file_read(p, SERVE_TLS_FILE_MAX, text, &len, &e) != TS_OK) {
        rc = cli_fail(&e, CLI_READING);
    }
    free(p);
    return rc;
}

/* DIR/name.new, where DIR/name is staged. */
static char *staged_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 6;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s.new", dir, name);
    return p;
}

/* Stage DIR/name as DIR/name.new (mode set, nothing followed); refuse a folder
 * at DIR/name, which the rename after it would fail on. */
static int stage(const char *dir, const char *name, const char *text, mode_t mode)
{
    char *p = path_in(dir, name), *n = staged_in(dir, name);
    struct ts_error e = {0};
    struct stat st;
    int rc = p && n ? CLI_OK : CLI_FAIL;
    if (rc == CLI_OK && lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tessera: cert: %s: is a folder, not a file\n", p);
        rc = CLI_FAIL;
    } else if (rc == CLI_OK && ts_file_write_mode(n, text, strlen(text), mode, &e) != TS_OK) {
        rc = cli_fail(&e, CLI_DOING);
    }
    free(p);
    free(n);
    return rc;
}

/* Rename DIR/name.new to DIR/name (commit), or remove it (!commit). */
static int settle(const char *dir, const char *name, int commit)
{
    char *p = path_in(dir, name), *n = staged_in(dir, name);
    int rc = p && n ? CLI_OK : CLI_FAIL;
    if (rc == CLI_OK && commit && rename(n, p) != 0) {
        fprintf(stderr, "tessera: cert: %s: %s\n", p, strerror(errno));
        rc = CLI_FAIL;
    } else if (rc == CLI_OK && !commit) {
        unlink(n);
    }
    free(p);
    free(n);
    return rc;
}

/* Write the four files (and ca-previous.crt on --new-ca): all staged first, so
 * a failure leaves the folder as it was (a new key never beside an old
 * certificate, a kept CA never without its key); then renamed, keys first. */
static int write_all(const struct cert_args *a, const struct serve_cert *c, const char *old_ca)
{
    const char *name[] = {"ca.key", "tls.key", "ca-previous.crt", "ca.crt", "tls.crt"};
    const char *text[] = {c->ca_key, c->key, old_ca, c->ca_cert, c->cert};
    const mode_t mode[] = {0600, 0600, 0644, 0644, 0644};
    int rc = CLI_OK, n = 0;
    for (; rc == CLI_OK && n < 5; n++)
        if (text[n])
            rc = stage(a->dir, name[n], text[n], mode[n]);
    int commit = rc == CLI_OK;
    for (int i = 0; i < n; i++)
        if (text[i] && settle(a->dir, name[i], commit) != CLI_OK)
            rc = CLI_FAIL;
    return rc;
}

/* The kept CA (unless --new-ca); *old: the CA --new-ca replaces. */
static int load_ca(struct cert_args *a, char **cert, char **key, char **old)
{
    int rc = read_opt(a->dir, "ca.crt", cert);
    rc = rc ? rc : read_opt(a->dir, "ca.key", key);
    if (rc == CLI_OK && !*cert != !*key) {
        fprintf(stderr, "tessera: cert: %s holds %s without %s: restore it, or use --new-ca\n",
                a->dir, *cert ? "ca.crt" : "ca.key", *cert ? "ca.key" : "ca.crt");
        rc = a->new_ca ? CLI_OK : CLI_BAD_INPUT;
    }
    if (a->new_ca) {
        *old = *cert;
        *cert = NULL;
        free(*key);
        *key = NULL;
    }
    a->o.ca_cert = *cert;
    a->o.ca_key = *key;
    return rc;
}

/* The manifest that installs c on stdout: the TLS Secret and the webhook
 * configuration's caBundle, through the YAML writer render uses. */
static int write_manifest(const struct serve_cert *c, const char *bundle, const char *ns)
{
    json_t *objs = serve_cert_objects(c, bundle, "tessera-webhook-tls", ns, "tessera",
                                      "validate.tessera.dev");
    struct ts_sbuf out;
    ts_sbuf_init(&out, 4 * (size_t)SERVE_TLS_FILE_MAX);
    ts_sbuf_puts(&out, "# made by tessera cert; apply with\n"
                       "#   kubectl apply --server-side --field-manager=tessera-cert -f FILE\n");
    ts_status st = objs ? TS_OK : TS_NOMEM;
    for (size_t i = 0; st == TS_OK && i < json_array_size(objs); i++)
        st = render_yaml_doc(json_array_get(objs, i), i == 0, &out);
    json_decref(objs);
    int rc = st == TS_OK ? cli_write("-", out.data, out.len) : CLI_FAIL;
    ts_sbuf_release(&out);
    return rc;
}

static int run(struct cert_args *a, const struct serve_cert_names *names)
{
    char *cert = NULL, *key = NULL, *old = NULL;
    struct serve_cert c = {0};
    struct ts_error e = {0};
    int rc = load_ca(a, &cert, &key, &old);
    a->o.dns = names->list;
    a->o.ndns = SERVE_CERT_NAMES;
    a->o.now = time(NULL);
    if (rc == CLI_OK && serve_cert_make(&a->o, &c, &e) != TS_OK) {
        if (e.code == TS_INVALID)
            snprintf(e.file, sizeof(e.file), "%s", a->dir);
        rc = cli_fail(&e, CLI_READING);
    }
    rc = rc ? rc : write_all(a, &c, old);
    if (rc == CLI_OK) {
        size_t n = strlen(c.ca_cert) + (old ? strlen(old) : 0) + 1;
        char *bundle = malloc(n);
        if (bundle)
            snprintf(bundle, n, "%s%s", c.ca_cert, old ? old : "");
        rc = bundle ? write_manifest(&c, bundle, a->ns) : CLI_FAIL;
        free(bundle);
    }
    serve_cert_free(&c);
    free(cert);
    free(key);
    free(old);
    return rc;
}

int cmd_cert(int argc, char **argv)
{
    struct cert_args a = {.service = "tessera-webhook",
                          .ns = "tessera-system",
                          .domain = "cluster.local",
                          .o = {.days = 365, .ca_days = 3650, .key = SERVE_KEY_ECDSA_P256}};
    int rc = cli_parse(&cli_verb_cert, CLI_ALL, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_cert, CLI_ALL) : rc;
    if (optind < argc || !a.dir || !*a.dir) {
        fprintf(stderr, "tessera: cert: %s\n",
                optind < argc ? "unexpected argument" : "no --dir DIR");
        cli_usage(&cli_verb_cert, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    struct serve_cert_names names;
    struct ts_error e = {0};
    if (serve_cert_names(a.service, a.ns, a.domain, &names, &e) != TS_OK) {
        fprintf(stderr, "tessera: cert: --%s %s\n", e.path, e.msg);
        return CLI_BAD_INPUT;
    }
    if (a.o.ca_days < a.o.days) {
        fprintf(stderr, "tessera: cert: --ca-days %u is shorter than --days %u\n", a.o.ca_days,
                a.o.days);
        return CLI_BAD_INPUT;
    }
    if (mkdir(a.dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "tessera: cert: %s: %s\n", a.dir, strerror(errno));
        return CLI_FAIL;
    }
    umask(077);
    return run(&a, &names);
}
