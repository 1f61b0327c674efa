/*
 * cmd_token.c - `tessera token new`: mint a bearer token for the JSON API
 * (docs/api.md): the token once on stdout, then the line for the
 * identities file (`console --tokens`), which holds only its SHA-256.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include "api/api.h"
#include "cli/cli.h"

static const struct cli_opt OPTS[] = {
    CLI_LONG('o', "operator", NULL, CLI_ALL, "a token that sees everything"),
    CLI_LONG_C('t', "tenant", "NAME", CLI_ALL, cli_complete_tenants,
               "a token that sees only tenant NAME's data"),
    CLI_END};

const struct cli_verb cli_verb_token = {
    "token",
    "usage: tessera token new --operator | --tenant NAME\n\n"
    "Mint a bearer token for the JSON API of 'tessera console --tokens FILE'. Prints\n"
    "two lines: the token (shown once, never stored), and the line to add to FILE,\n"
    "which holds only the token's SHA-256 and the role.\n",
    OPTS,
    NULL,
    "new",
    CLI_ALL};

struct token_args {
    int operator_;
    const char *tenant;
};

static int set(void *ctx, int key, const char *arg)
{
    struct token_args *a = ctx;
    if (key == 'o')
        a->operator_ = 1;
    else if (key == 't')
        a->tenant = arg;
    else
        return CLI_BAD_INPUT;
    return CLI_OK;
}

/* A tenant name the identities file can hold: one word. */
static int name_ok(const char *s)
{
    return *s && strlen(s) < API_NAME_MAX && !strpbrk(s, " \t\r\n#");
}

static int check_args(int argc, char **argv, const struct token_args *a)
{
    const char *what = optind < argc ? argv[optind] : "";
    if (strcmp(what, "new") != 0 || optind + 1 != argc) {
        fprintf(stderr, "tessera: token: %s\n",
                *what ? "the subcommand is 'new'" : "missing subcommand (new)");
        cli_usage(&cli_verb_token, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    if (a->operator_ == !!a->tenant) {
        fprintf(stderr, "tessera: token new takes one of --operator and --tenant NAME\n");
        return CLI_BAD_INPUT;
    }
    if (a->tenant && !name_ok(a->tenant)) {
        fprintf(stderr, "tessera: --tenant: '%s' is not a tenant name\n", a->tenant);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

int cmd_token(int argc, char **argv)
{
    struct token_args a = {0};
    int rc = cli_parse(&cli_verb_token, CLI_ALL, argc, argv, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_token, CLI_ALL) : rc;
    if ((rc = check_args(argc, argv, &a)) != CLI_OK)
        return rc;
    unsigned char rnd[32];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        fprintf(stderr, "tessera: token: no random bytes from the kernel\n");
        return CLI_FAIL;
    }
    char token[API_TOKEN_LEN + 1];
    struct ts_sbuf line;
    ts_sbuf_init(&line, 1024);
    api_token_new(rnd, a.tenant, token, &line);
    printf("%s\n%s", token, ts_sbuf_str(&line));
    ts_sbuf_release(&line);
    return CLI_OK;
}
