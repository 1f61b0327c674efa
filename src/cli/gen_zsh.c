/*
 * gen_zsh.c - `tessera completion zsh`: a native zsh completion script
 * (#compdef, _arguments), written from the command table and each verb's
 * option table as the bash script and --help are: every option with its
 * --help text as the description, the values its row lists (-o formats,
 * --solver...), tenants (read by `tessera completion --tenants` from the
 * specs given with -f, else TESSERA_SPEC) and GPU models (`tessera catalog
 * list`) where one is wanted, files and folders where the value's
 * placeholder names one.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

/* What _arguments reads as syntax inside a description, a message, a word
 * list: each gets a backslash. */
#define ZSH_DESC "\\[]:"
#define ZSH_WORD "\\[]:() \"'`$"

/* text inside a single-quoted zsh word, with a backslash before each
 * character of specials; a quote closes and reopens the word, a newline
 * (a --help continuation) is a space. */
static void zsh_text(const char *text, const char *specials, FILE *out)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", out);
        else if (*p == '\n')
            fputc(' ', out);
        else
            fprintf(out, "%s%c", strchr(specials, *p) ? "\\" : "", *p);
    }
}

/* The value's placeholder when the row lists no completion: what it names. */
static const struct {
    const char *arg;
    enum cli_complete_kind kind;
} placeholders[] = {
    {"FILE", CLI_COMPLETE_FILES}, {"SPEC", CLI_COMPLETE_FILES},      {"F", CLI_COMPLETE_FILES},
    {"PATH", CLI_COMPLETE_FILES}, {"PLAN.json", CLI_COMPLETE_FILES}, {"LIB", CLI_COMPLETE_FILES},
    {"DIR", CLI_COMPLETE_DIRS},
};

static enum cli_complete_kind placeholder_kind(const char *arg)
{
    for (size_t i = 0; i < sizeof(placeholders) / sizeof(placeholders[0]); i++)
        if (!strcmp(arg, placeholders[i].arg))
            return placeholders[i].kind;
    return CLI_COMPLETE_NONE;
}

/* The _arguments action of each kind (words: written from the list). */
static const char *const actions[] = {
    [CLI_COMPLETE_NONE] = " ",
    [CLI_COMPLETE_FILES] = "_files",
    [CLI_COMPLETE_DIRS] = "_files -/",
    [CLI_COMPLETE_MODELS] = "_tessera_models",
    [CLI_COMPLETE_TENANTS] = "_tessera_tenants",
};

static void action(const struct cli_complete *c, enum cli_complete_kind kind, FILE *out)
{
    if (kind != CLI_COMPLETE_WORDS) {
        fputs(actions[kind], out);
        return;
    }
    fputc('(', out);
    for (const char *const *w = c->words; *w; w++) {
        fputs(w == c->words ? "" : " ", out);
        zsh_text(*w, ZSH_WORD, out);
    }
    fputc(')', out);
}

/* "[help (else $VAR)]" */
static void description(const char *help, const char *env, FILE *out)
{
    fputc('[', out);
    zsh_text(help, ZSH_DESC, out);
    if (env)
        fprintf(out, " (else $%s)", env);
    fputc(']', out);
}

/* One _arguments spec: '*'{-o+,--output=}'[help]:FORMAT:(text json yaml)'.
 * An option with a value may come again (-f, --catalog); one without, once. */
static void option_spec(const struct cli_opt *o, unsigned bits, FILE *out)
{
    const char *v = o->arg ? "=" : "";
    if (o->arg)
        fputs("        '*'", out);
    else if (o->letter)
        fprintf(out, "        '(-%c --%s)'", o->key, o->name);
    else
        fputs("        ''", out);
    if (o->letter)
        fprintf(out, "{-%c%s,--%s%s}'", o->key, o->arg ? "+" : "", o->name, v);
    else
        fprintf(out, "--%s%s'", o->name, v);
    description(o->help, cli_opt_env(o), out);
    if (o->arg) {
        const struct cli_complete *c = cli_complete_for(o->complete, bits);
        fputc(':', out);
        zsh_text(o->arg, ZSH_DESC, out);
        fputc(':', out);
        action(c, c ? c->kind : placeholder_kind(o->arg), out);
    }
    fputs("' \\\n", out);
}

/* The operands a subcommand's usage names (the others take none). */
static const struct {
    const char *command, *sub, *what;
    int many; /* FILE...: any number */
    enum cli_complete_kind kind;
} operands[] = {
    {"catalog", "show", "GPU model", 0, CLI_COMPLETE_MODELS},
    {"catalog", "import", "nvidia-smi output", 1, CLI_COMPLETE_FILES},
    {"meter", "import", "exposition file", 1, CLI_COMPLETE_FILES},
};

/* The _arguments spec of the operands of `command sub` ('1:GPU model:...'). */
static void operand_spec(const char *command, const char *sub, size_t len, FILE *out)
{
    for (size_t i = 0; i < sizeof(operands) / sizeof(operands[0]); i++)
        if (!strcmp(operands[i].command, command) && strlen(operands[i].sub) == len &&
            !strncmp(operands[i].sub, sub, len))
            fprintf(out, " \\\n        '%s:%s:%s'", operands[i].many ? "*" : "1", operands[i].what,
                    actions[operands[i].kind]);
}

/* fname(): the options of v that --help shows for subcommand bit sub, then
 * the operands of `command word`. */
static void verb_function(const char *fname, const struct cli_verb *v, unsigned sub,
                          const char *command, const char *word, size_t len, FILE *out)
{
    fprintf(out, "\n%s() {\n    _arguments -s -S \\\n", fname);
    for (const struct cli_opt *o = v->opts; o->name; o++)
        if (cli_gen_shown(v, o, sub))
            option_spec(o, v->only ? v->only : sub, out);
    fputs("        '(- *)'{-h,--help}'[this text]'", out);
    operand_spec(command, word, len, out);
    fputs("\n}\n", out);
}

/* _tessera_VERB(): its subcommand word, then _tessera_VERB_WORD(). */
static void dispatch_function(const struct cli_command *c, FILE *out)
{
    fprintf(out,
            "\n_tessera_%s() {\n"
            "    local curcontext=$curcontext state state_descr line ret=1\n"
            "    typeset -A opt_args\n"
            "    _arguments -C '(- *)'{-h,--help}'[this text]' '1:subcommand:(%s)' \\\n"
            "        '*::arg:->sub' && ret=0\n"
            "    [[ $state == sub ]] && (( $+functions[_tessera_%s_$words[1]] )) &&\n"
            "        _tessera_%s_$words[1] && ret=0\n"
            "    return ret\n"
            "}\n",
            c->name, c->verb->subs, c->name, c->name);
}

/* The functions of command c: one, or the dispatcher and one a subcommand. */
static void command_functions(const struct cli_command *c, FILE *out)
{
    char fname[96];
    snprintf(fname, sizeof(fname), "_tessera_%s", c->name);
    if (!c->verb->subs) {
        verb_function(fname, c->verb, 0, c->name, "", 0, out);
        return;
    }
    dispatch_function(c, out);
    unsigned bit = 1;
    for (const char *w = c->verb->subs; *w; bit <<= 1) {
        size_t len = strcspn(w, " ");
        const struct cli_verb *n = cli_gen_nested(c->name, w, len);
        snprintf(fname, sizeof(fname), "_tessera_%s_%.*s", c->name, (int)len, w);
        verb_function(fname, n ? n : c->verb, n ? 0 : bit, c->name, w, len, out);
        w += len + (w[len] == ' ');
    }
}

static const char zsh_head[] =
    "#compdef tessera\n"
    "# zsh completion for tessera, written by `tessera completion zsh` from the option\n"
    "# tables --help prints. Load it after compinit with: source <(tessera completion zsh),\n"
    "# or save it as the file _tessera in a folder on $fpath.\n"
    "\n"
    "# The values the command line gives the options named ($@: -f --filename), one a\n"
    "# line, unquoted.\n"
    "_tessera_given() {\n"
    "    local i w o v\n"
    "    for (( i = 2; i <= $#_tessera_words; i++ )); do\n"
    "        w=$_tessera_words[i]\n"
    "        [[ $w == -- ]] && break\n"
    "        (( i == _tessera_current )) && continue\n"
    "        for o in \"$@\"; do\n"
    "            v=\n"
    "            case $w in\n"
    "            ($o) (( i + 1 != _tessera_current )) && v=$_tessera_words[i+1] ;;\n"
    "            ($o=*) v=${w#*=} ;;\n"
    "            ($o?*) [[ $o == --* ]] || v=${w#$o} ;;\n"
    "            esac\n"
    "            v=${(Q)v}\n"
    "            [[ -n $v ]] && print -r -- \"${v/#\\~\\//$HOME/}\"\n"
    "        done\n"
    "    done\n"
    "}\n"
    "\n"
    "# The tenants of the specs given with -f (else $TESSERA_SPEC), as tessera reads them.\n"
    "_tessera_tenants() {\n"
    "    local -a specs tenants expl\n"
    "    local f\n"
    "    for f in \"${(@f)$(_tessera_given -f --filename)}\"; do\n"
    "        [[ -n $f ]] && specs+=(-f \"$f\")\n"
    "    done\n"
    "    tenants=(${(f)\"$(\"$_tessera_cmd\" completion --tenants \"${specs[@]}\" "
    "2>/dev/null)\"})\n"
    "    _wanted tenants expl tenant compadd -a tenants\n"
    "}\n"
    "\n"
    "# The GPU models of `tessera catalog list` (with the --catalog files given), each\n"
    "# with its display name.\n"
    "_tessera_models() {\n"
    "    setopt localoptions extendedglob\n"
    "    local -a cats models\n"
    "    local f line name\n"
    "    for f in \"${(@f)$(_tessera_given --catalog)}\"; do\n"
    "        [[ -n $f ]] && cats+=(--catalog \"$f\")\n"
    "    done\n"
    "    for line in \"${(@)${(@f)$(\"$_tessera_cmd\" catalog list \"${cats[@]}\" "
    "2>/dev/null)}[2,-1]}\"; do\n"
    "        name=${line%% *}\n"
    "        [[ -n $name ]] || continue\n"
    "        line=${${line#$name}##[[:space:]]##}\n"
    "        models+=(\"$name:${line%%  *}\")\n"
    "    done\n"
    "    _describe -t models 'GPU model' models\n"
    "}\n";

/* _tessera(): the command word (with each command's summary), then its function. */
static void main_function(FILE *out)
{
    fputs("\n_tessera() {\n"
          "    local _tessera_cmd=${(Q)words[1]} _tessera_current=$CURRENT\n"
          "    local -a _tessera_words\n"
          "    _tessera_words=(\"${words[@]}\")\n"
          "    _tessera_cmd=${_tessera_cmd/#\\~\\//$HOME/}\n"
          "    local curcontext=$curcontext state state_descr line ret=1\n"
          "    typeset -A opt_args\n"
          "    _arguments -C '(- *)--version[print the version]' \\\n"
          "        '(- *)'{-h,--help}'[the commands and the exit codes]' \\\n"
          "        '1:command:->command' '*::arg:->arg' && ret=0\n"
          "    case $state in\n"
          "    (command)\n"
          "        local -a commands\n"
          "        commands=(\n",
          out);
    for (size_t i = 0; i < cli_ncommands; i++) {
        fprintf(out, "            '%s:", cli_commands[i].name);
        zsh_text(cli_commands[i].summary, "", out);
        fputs("'\n", out);
    }
    fputs("        )\n"
          "        _describe -t commands command commands && ret=0\n"
          "        ;;\n"
          "    (arg)\n"
          "        (( $+functions[_tessera_$words[1]] )) && _tessera_$words[1] && ret=0\n"
          "        ;;\n"
          "    esac\n"
          "    return ret\n"
          "}\n",
          out);
}

void cli_gen_zsh(FILE *out)
{
    fputs(zsh_head, out);
    for (size_t i = 0; i < cli_ncommands; i++)
        command_functions(&cli_commands[i], out);
    main_function(out);
    fputs("\n# Autoloaded from $fpath, this file is _tessera's body and runs at the first\n"
          "# Tab: answer that Tab too. Sourced, it registers _tessera.\n"
          "if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then\n"
          "    _tessera \"$@\"\n"
          "else\n"
          "    compdef _tessera tessera\n"
          "fi\n",
          out);
}
