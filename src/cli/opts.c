/*
 * opts.c - a verb's option table (cli.h) turned into what getopt_long
 * wants, into the option lines of --help, and into the check that an
 * option applies to the subcommand given.
 */
#include "cli/cli.h"

#include <getopt.h>
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

int cli_parse(const struct cli_verb *v, unsigned sub, int argc, char **argv, cli_set_fn set,
              void *ctx)
{
    static char prog[64];
    struct getopt_view g;
    int rc = view_make(v->opts, &g) ? CLI_OK : CLI_FAIL, c;
    argv[0] = (char *)who(v, argv[0], prog, sizeof(prog));
    optind = 1;
    opterr = 1;
    while (rc == CLI_OK && (c = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1)
        rc = one(v, sub, c, prog, set, ctx);
    view_free(&g);
    return rc;
}
