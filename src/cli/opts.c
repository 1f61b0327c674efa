/*
 * opts.c - a verb's option table (cli.h) turned into what getopt_long
 * wants, into the option lines of --help, and into the check that an
 * option applies to the subcommand given; the value lists the completion
 * scripts share.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* -h/--help, part of every table. */
static const struct cli_opt help_opt = CLI_SHORT('h', "help", NULL, CLI_ALL, "this text");

static size_t count(const struct cli_opt *t)
{
    size_t n = 0;
    while (t[n].name)
        n++;
    return n;
}

static int applies(const struct cli_opt *o, unsigned sub)
{
    return o->where == CLI_ALL || sub == CLI_ALL || (o->where & sub) != 0;
}

/* ---- --help --------------------------------------------------------------- */

/* "-f, --filename FILE" or "    --catalog FILE" into buf; its length. */
static int left_side(const struct cli_opt *o, char *buf, size_t size)
{
    char flag[8] = "    ";
    if (o->letter)
        snprintf(flag, sizeof(flag), "-%c, ", o->key);
    return snprintf(buf, size, "%s--%s%s%s", flag, o->name, o->arg ? " " : "",
                    o->arg ? o->arg : "");
}

/* The help column: the longest left side, at most 24 (longer ones wrap). */
static int width_of(const struct cli_verb *v, unsigned sub)
{
    char buf[96];
    int w = left_side(&help_opt, buf, sizeof(buf));
    for (const struct cli_opt *o = v->opts; o->name; o++) {
        int n = applies(o, sub) && o->help ? left_side(o, buf, sizeof(buf)) : 0;
        w = n > w && n <= 24 ? n : w;
    }
    return w;
}

static void print_opt(const struct cli_opt *o, int width, FILE *out)
{
    char buf[96];
    int n = left_side(o, buf, sizeof(buf));
    if (n > width) /* on a line of its own, the help below it */
        fprintf(out, "  %s\n  %-*s  ", buf, width, "");
    else
        fprintf(out, "  %-*s  ", width, buf);
    for (const char *h = o->help, *nl; *h; h = nl + 1) {
        nl = strchr(h, '\n');
        if (!nl) {
            fprintf(out, "%s\n", h);
            break;
        }
        fprintf(out, "%.*s\n  %-*s  ", (int)(nl - h), h, width, "");
    }
    if (cli_opt_env(o))
        fprintf(out, "  %-*s  (else $%s)\n", width, "", cli_opt_env(o));
}

void cli_usage(const struct cli_verb *v, unsigned sub, FILE *out)
{
    int width = width_of(v, sub);
    fprintf(out, "%s\n", v->usage);
    for (const struct cli_opt *o = v->opts; o->name; o++)
        if (applies(o, sub) && o->help)
            print_opt(o, width, out);
    print_opt(&help_opt, width, out);
    if (v->notes)
        fprintf(out, "\n%s", v->notes);
}

int cli_help(const struct cli_verb *v, unsigned sub)
{
    cli_usage(v, sub, stdout);
    return CLI_OK;
}

const char *cli_opt_name(const struct cli_verb *v, int key)
{
    for (const struct cli_opt *o = v->opts; o->name; o++)
        if (o->key == key)
            return o->name;
    return "?";
}

/* ---- completion ----------------------------------------------------------- */

const char *const cli_formats[] = {"text", "json", "yaml", NULL};
static const char *const log_formats[] = {"text", "json", NULL};
const struct cli_complete cli_complete_formats[] = {{CLI_ALL, CLI_COMPLETE_WORDS, cli_formats},
                                                    {0}};
const struct cli_complete cli_complete_log_formats[] = {{CLI_ALL, CLI_COMPLETE_WORDS, log_formats},
                                                        {0}};
const struct cli_complete cli_complete_tenants[] = {{CLI_ALL, CLI_COMPLETE_TENANTS, NULL}, {0}};

const struct cli_complete *cli_complete_for(const struct cli_complete *list, unsigned bits)
{
    for (; list && list->kind != CLI_COMPLETE_END; list++)
        if (list->where == CLI_ALL || bits == CLI_ALL || (list->where & bits))
            return list;
    return NULL;
}

/* ---- parsing -------------------------------------------------------------- */

/* getopt_long's list and short options of table t (and --help). */
struct getopt_view {
    struct option *longs;
    char *shorts;
};

static int view_make(const struct cli_opt *t, struct getopt_view *g)
{
    size_t n = count(t), s = 0;
    g->longs = calloc(n + 2, sizeof(*g->longs));
    g->shorts = calloc(3 * n + 4, 1);
    if (!g->longs || !g->shorts)
        return 0;
    g->shorts[s++] = 'h';
    for (size_t i = 0; i <= n; i++) {
        const struct cli_opt *o = i < n ? &t[i] : &help_opt;
        g->longs[i] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
                                      o->key};
        if (o->letter && o != &help_opt) {
            g->shorts[s++] = (char)o->key;
            if (o->arg)
                g->shorts[s++] = ':';
        }
    }
    return 1;
}

static void view_free(struct getopt_view *g)
{
    free(g->longs);
    free(g->shorts);
}

static const struct cli_opt *find(const struct cli_opt *t, int key)
{
    for (; t->name; t++)
        if (t->key == key)
            return t;
    return NULL;
}

/* "tessera plan", "tessera ledger record": getopt's messages name the subcommand. */
static const char *who(const struct cli_verb *v, const char *word, char *buf, size_t size)
{
    if (!word || strcmp(word, v->name) == 0)
        snprintf(buf, size, "tessera %s", v->name);
    else
        snprintf(buf, size, "tessera %s %s", v->name, word);
    return buf;
}

/* One option getopt returned: CLI_OK, CLI_HELP or an exit code. */
static int one(const struct cli_verb *v, unsigned sub, int c, const char *prog, cli_set_fn set,
               void *ctx)
{
    if (c == 'h')
        return CLI_HELP;
    const struct cli_opt *o = c == '?' || c == ':' ? NULL : find(v->opts, c);
    if (!o) {
        cli_usage(v, sub, stderr);
        return CLI_BAD_INPUT;
    }
    if (!applies(o, sub)) {
        fprintf(stderr, "tessera: %s: option '--%s' does not apply\n", prog + strlen("tessera "),
                o->name);
        return CLI_BAD_INPUT;
    }
    return set(ctx, c, optarg);
}

/* ---- the environment ----------------------------------------------------- */

/* Options the environment may give when the command line does not, so the
 * metering verbs need not repeat -f SPEC --db DB; a list variable holds
 * several values separated by ':' (as KUBECONFIG does). */
static const struct {
    const char *option, *variable;
    int list;
} env_defaults[] = {
    {"filename", "TESSERA_SPEC", 1},
    {"catalog", "TESSERA_CATALOG", 1},
    {"db", "TESSERA_DB", 0},
};
#define NENV (sizeof(env_defaults) / sizeof(env_defaults[0]))

const char *cli_opt_env(const struct cli_opt *o)
{
    for (size_t i = 0; i < NENV; i++)
        if (strcmp(o->name, env_defaults[i].option) == 0)
            return env_defaults[i].variable;
    return NULL;
}

/* Each value of variable i (several when it is a list) to set as key. The
 * values live in a copy of the variable kept for the process, as optarg
 * lives in argv: set may keep the pointer. */
static int env_values(size_t i, int key, cli_set_fn set, void *ctx)
{
    static char *copies[NENV];
    const char *text = getenv(env_defaults[i].variable);
    if (!text || !*text)
        return CLI_OK;
    if (!copies[i] && !(copies[i] = strdup(text)))
        return CLI_FAIL;
    int rc = CLI_OK;
    for (char *p = copies[i], *end; rc == CLI_OK && p; p = end) {
        end = env_defaults[i].list ? strchr(p, ':') : NULL;
        if (end)
            *end++ = '\0';
        if (strlen(p) >= PATH_MAX) {
            fprintf(stderr, "tessera: %s: a value longer than %d bytes\n", env_defaults[i].variable,
                    PATH_MAX - 1);
            return CLI_BAD_INPUT;
        }
        if (*p)
            rc = set(ctx, key, p);
    }
    return rc;
}

/* The environment's values for the options of v (that apply to sub) that
 * the command line did not give: flags win. */
static int env_fill(const struct cli_verb *v, unsigned sub, const unsigned char *seen,
                    cli_set_fn set, void *ctx)
{
    int rc = CLI_OK;
    for (const struct cli_opt *o = v->opts; rc == CLI_OK && o->name; o++)
        for (size_t i = 0; i < NENV; i++)
            if (strcmp(o->name, env_defaults[i].option) == 0 && applies(o, sub) &&
                !seen[o - v->opts])
                rc = env_values(i, o->key, set, ctx);
    return rc;
}

int cli_parse(const struct cli_verb *v, unsigned sub, int argc, char **argv, cli_set_fn set,
              void *ctx)
{
    static char prog[64];
    struct getopt_view g = {0};
    unsigned char *seen = calloc(count(v->opts) + 1, 1);
    int rc = seen && view_make(v->opts, &g) ? CLI_OK : CLI_FAIL, c;
    argv[0] = (char *)who(v, argv[0], prog, sizeof(prog));
    optind = 1;
    opterr = 1;
    while (rc == CLI_OK && (c = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        const struct cli_opt *o = find(v->opts, c);
        if (o)
            seen[o - v->opts] = 1;
        rc = one(v, sub, c, prog, set, ctx);
    }
    if (rc == CLI_OK)
        rc = env_fill(v, sub, seen, set, ctx);
    view_free(&g);
    free(seen);
    return rc;
}
