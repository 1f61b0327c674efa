/*
 * gen.c - `tessera completion bash|zsh` and `tessera docs man`: the shell
 * completion scripts (zsh's in gen_zsh.c) and the man page, written from the
 * command table (main.c) and each verb's option table, the same tables --help
 * prints, so neither can name an option --help does not or miss one it does;
 * and the tenants of a spec, which the zsh script asks for.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "spec/spec.h"

/* A subcommand word that runs a verb of its own (`meter scrape`). */
static const struct {
    const char *parent, *word;
    const struct cli_verb *verb;
} nested[] = {{"meter", "scrape", &cli_verb_scrape}, {"meter", "prometheus", &cli_verb_prometheus}};
#define NNESTED (sizeof(nested) / sizeof(nested[0]))

const struct cli_verb *cli_gen_nested(const char *parent, const char *word, size_t len)
{
    for (size_t i = 0; i < NNESTED; i++)
        if (!strcmp(nested[i].parent, parent) && strlen(nested[i].word) == len &&
            !strncmp(nested[i].word, word, len))
            return nested[i].verb;
    return NULL;
}

int cli_gen_shown(const struct cli_verb *v, const struct cli_opt *o, unsigned sub)
{
    unsigned bits = v->only ? v->only : sub;
    return o->help && (o->where == CLI_ALL || bits == CLI_ALL || (o->where & bits));
}

/* ---- bash ------------------------------------------------------------------ */

/* " --name -k" for each option shown (args: only those taking a value). */
static void option_words(const struct cli_verb *v, unsigned sub, int args, FILE *out)
{
    for (const struct cli_opt *o = v->opts; o->name; o++) {
        if (!cli_gen_shown(v, o, sub) || (args && !o->arg))
            continue;
        fprintf(out, " --%s", o->name);
        if (o->letter)
            fprintf(out, " -%c", o->key);
    }
    if (!args)
        fputs(" --help -h", out);
}

/* One case arm: key) words=...; args=...; subs=...;; */
static void bash_arm(const char *key, const struct cli_verb *v, unsigned sub, FILE *out)
{
    fprintf(out, "    \"%s\")\n        words=\"", key);
    option_words(v, sub, 0, out);
    fputs("\"\n        args=\"", out);
    option_words(v, sub, 1, out);
    fputs("\"\n", out);
    if (v->subs && !sub)
        fprintf(out, "        subs=\"%s\"\n", v->subs);
    fputs("        ;;\n", out);
}

/* The arms of command c: itself, then each of its subcommand words. */
static void bash_command(const struct cli_command *c, FILE *out)
{
    char key[96];
    bash_arm(c->name, c->verb, 0, out);
    unsigned bit = 1;
    for (const char *w = c->verb->subs; w && *w; bit <<= 1) {
        size_t len = strcspn(w, " ");
        const struct cli_verb *n = cli_gen_nested(c->name, w, len);
        snprintf(key, sizeof(key), "%s %.*s", c->name, (int)len, w);
        bash_arm(key, n ? n : c->verb, n ? 0 : bit, out);
        w += len + (w[len] == ' ');
    }
}

/* The words that make `VERB SUB` one key. */
static void bash_pairs(FILE *out)
{
    const char *sep = "";
    for (size_t i = 0; i < cli_ncommands; i++)
        for (const char *w = cli_commands[i].verb->subs; w && *w;) {
            size_t len = strcspn(w, " ");
            fprintf(out, "%s\"%s %.*s\"", sep, cli_commands[i].name, (int)len, w);
            sep = "|";
            w += len + (w[len] == ' ');
        }
}

static const char bash_tail[] = "    esac\n"
                                "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
                                "        words=\"$commands --help --version\"\n"
                                "    elif [ -n \"$subs\" ] && [ \"$COMP_CWORD\" -eq 2 ]; then\n"
                                "        words=\"$subs\"\n"
                                "    elif [[ \" $args \" == *\" $prev \"* || $cur != -* ]]; then\n"
                                "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
                                "        return 0\n"
                                "    fi\n"
                                "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
                                "}\n"
                                "complete -o filenames -F _tessera tessera\n";

static void bash_script(FILE *out)
{
    fputs("# bash completion for tessera, written by `tessera completion bash` from the\n"
          "# option tables --help prints. Load it with: source <(tessera completion bash)\n"
          "_tessera() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "    local key=${COMP_WORDS[1]} words=\"\" args=\"\" subs=\"\" commands=\"",
          out);
    for (size_t i = 0; i < cli_ncommands; i++)
        fprintf(out, "%s%s", i ? " " : "", cli_commands[i].name);
    fputs("\"\n    if [ \"$COMP_CWORD\" -gt 2 ]; then\n        case \"$key ${COMP_WORDS[2]}\" in\n"
          "        ",
          out);
    bash_pairs(out);
    fputs(") key=\"$key ${COMP_WORDS[2]}\" ;;\n        esac\n    fi\n    case \"$key\" in\n", out);
    for (size_t i = 0; i < cli_ncommands; i++)
        bash_command(&cli_commands[i], out);
    fputs(bash_tail, out);
}

int cli_gen_completion(const char *shell, FILE *out)
{
    if (!strcmp(shell, "zsh"))
        cli_gen_zsh(out);
    else if (!strcmp(shell, "bash"))
        bash_script(out);
    else
        return 0;
    return 1;
}

/* ---- the man page -------------------------------------------------------- */

/* text in roff: '-' and '\' escaped, a line that starts with '.' or '\''
 * guarded; with nf, each line as it is (no filling). */
static void roff(const char *text, FILE *out)
{
    int bol = 1;
    for (const char *p = text; *p; p++) {
        if (bol && (*p == '.' || *p == '\''))
            fputs("\\&", out);
        if (*p == '-')
            fputs("\\-", out);
        else if (*p == '\\')
            fputs("\\e", out);
        else
            fputc(*p, out);
        bol = *p == '\n';
    }
}

static void man_option(const struct cli_opt *o, FILE *out)
{
    fputs(".TP\n.B ", out);
    if (o->letter)
        fprintf(out, "\\-%c, ", o->key);
    fputs("\\-\\-", out);
    roff(o->name, out);
    if (o->arg) {
        fputs(" \" \"\n.I ", out);
        roff(o->arg, out);
    }
    fputs("\n", out);
    roff(o->help, out);
    const char *env = cli_opt_env(o);
    if (env)
        fprintf(out, "\n(else $%s)", env);
    fputs("\n", out);
}

static void man_verb(const char *title, const char *summary, const struct cli_verb *v, FILE *out)
{
    fprintf(out, ".SS \"tessera %s\"\n", title);
    roff(summary, out);
    fputs("\n.PP\n.nf\n", out);
    roff(v->usage, out);
    fputs(".fi\n", out);
    for (const struct cli_opt *o = v->opts; o->name; o++)
        if (cli_gen_shown(v, o, 0))
            man_option(o, out);
    fputs(".TP\n.B \\-h, \\-\\-help\nthis text\n", out);
    if (v->notes) {
        fputs(".PP\n.nf\n", out);
        roff(v->notes, out);
        fputs(".fi\n", out);
    }
}

static const char man_tail[] =
    ".SH ENVIRONMENT\n"
    ".TP\n.B TESSERA_SPEC\nstands in for \\-f (a ':'\\-separated list) when the command line "
    "gives none\n"
    ".TP\n.B TESSERA_CATALOG\nstands in for \\-\\-catalog (a ':'\\-separated list)\n"
    ".TP\n.B TESSERA_DB\nstands in for \\-\\-db\n"
    ".PP\nA flag always wins over the environment.\n"
    ".SH EXIT STATUS\n"
    ".TP\n.B 0\nok\n"
    ".TP\n.B 1\nthe job failed (the fleet cannot hold the spec, a FAIL verdict, a broken "
    "ledger, a store or driver error)\n"
    ".TP\n.B 2\nbad usage or bad input (an unknown option, a bad value, a file that cannot be "
    "read, parsed or is invalid)\n"
    ".SH SEE ALSO\n"
    "README.md and docs/ in the source tree; \\fBtessera docs spec\\fR for the spec fields.\n";

void cli_gen_man(FILE *out)
{
    fprintf(out, ".TH TESSERA 1 \"\" \"tessera %s\" \"User Commands\"\n", TESSERA_VERSION);
    fputs(".SH NAME\ntessera \\- GPU tenancy for Kubernetes\n"
          ".SH SYNOPSIS\n.B tessera\n.I command\n[options]\n.br\n.B tessera \\-\\-version\n"
          ".br\n.B tessera \\-\\-help\n"
          ".SH DESCRIPTION\n.nf\n",
          out);
    char *top = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&top, &len);
    if (m) {
        cli_top_usage(m);
        fclose(m);
        roff(top, out);
    }
    free(top);
    fputs(".fi\n.PP\n\\fBtessera \\-\\-version\\fR (or \\fBtessera version\\fR) prints the "
          "version.\n.SH COMMANDS\n",
          out);
    for (size_t i = 0; i < cli_ncommands; i++)
        man_verb(cli_commands[i].name, cli_commands[i].summary, cli_commands[i].verb, out);
    for (size_t i = 0; i < NNESTED; i++) {
        char title[64];
        snprintf(title, sizeof(title), "%s %s", nested[i].parent, nested[i].word);
        man_verb(title, "", nested[i].verb, out);
    }
    fputs(man_tail, out);
}

/* ---- tessera completion ---------------------------------------------------- */

/* --tenants and -f are the zsh script's, not the user's: not in --help. */
static const struct cli_opt OPTS[] = {CLI_LONG('T', "tenants", NULL, CLI_ALL, NULL),
                                      CLI_SHORT('f', "filename", "SPEC", CLI_ALL, NULL), CLI_END};

const struct cli_verb cli_verb_completion = {
    "completion",
    "usage: tessera completion bash|zsh\n\n"
    "Print the shell completion script for tessera's commands, subcommands and\n"
    "options. Load it in the current shell with 'source <(tessera completion bash)';\n"
    "for every shell, write it to /etc/bash_completion.d/tessera (bash) or to a\n"
    "file _tessera on $fpath (zsh). In zsh, compinit must run first (it does in\n"
    "most set-ups): 'autoload -Uz compinit && compinit'. zsh's script also shows\n"
    "each option's help and completes values: -o's formats, --solver's words, the\n"
    "tenants of the -f spec (else $TESSERA_SPEC), the GPU models of catalog show.\n",
    OPTS,
    NULL,
    "bash zsh",
    CLI_ALL};

struct completion_args {
    int tenants;
    struct cli_files spec;
};

static int set_option(void *ctx, int key, const char *arg)
{
    struct completion_args *a = ctx;
    if (key == 'T')
        a->tenants = 1;
    else if (!cli_files_add(&a->spec, arg))
        return CLI_BAD_INPUT;
    return CLI_OK;
}

/* `tessera completion --tenants [-f SPEC...]`: the names of the tenants of
 * the spec (-f, else TESSERA_SPEC), one a line, for the zsh script. */
static int print_tenants(const struct cli_files *spec)
{
    struct spec_model *m = NULL;
    struct ts_diag diag = {0};
    ts_status st = spec->n ? spec_load(spec->paths, spec->n, &m, &diag) : TS_USAGE;
    if (st != TS_OK) {
        cli_print_diag(&diag);
        if (!spec->n)
            fprintf(stderr,
                    "tessera: completion: no spec given: use -f FILE (or set TESSERA_SPEC)\n");
        return cli_exit(st, CLI_READING);
    }
    for (size_t i = 0; i < m->ntenants; i++)
        printf("%s\n", m->tenants[i].name);
    spec_model_free(m);
    return CLI_OK;
}

int cmd_completion(int argc, char **argv)
{
    struct completion_args a = {0};
    int rc = cli_parse(&cli_verb_completion, CLI_ALL, argc, argv, set_option, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_completion, CLI_ALL) : rc;
    if (a.tenants && optind == argc)
        return print_tenants(&a.spec);
    if (a.tenants) {
        fprintf(stderr, "tessera: completion: --tenants takes no operand\n");
        return CLI_BAD_INPUT;
    }
    const char *shell = optind + 1 == argc ? argv[optind] : "";
    if (cli_gen_completion(shell, stdout))
        return CLI_OK;
    fprintf(stderr, "tessera: completion: %s shell%s%s%s (bash or zsh)\n",
            *shell ? "unknown" : "missing", *shell ? " '" : "", shell, *shell ? "'" : "");
    cli_usage(&cli_verb_completion, CLI_ALL, stderr);
    return CLI_BAD_INPUT;
}
