/*
 * cli.h - what the tessera subcommands share: the exit-code rule, the
 * option tables (opts.c), printing located errors, loading a spec with its
 * catalog. The CLI parses flags, calls the modules and prints; it holds no
 * logic of its own.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdio.h>
#include "catalog/catalog.h"
#include "decide/decide.h"
#include "plan/plan.h"
#include "meter/ingest.h"
#include "spec/spec.h"
#include "util/limits.h" /* CLI_* */

/* ---- exit codes (common.c) ------------------------------------------------ */

/* What every verb exits with: 0 ok, 1 the job failed, 2 bad usage or bad input. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_BAD_INPUT = 2 };

/* Where a failing status came from: reading what the user named (specs,
 * catalogs, keys, inventories, plans, recorded scrapes), or doing the job
 * (laying out, writing, the store, the network, a driver). */
enum cli_stage { CLI_READING, CLI_DOING };

/* The one exit-code rule, used by every verb:
 *   0  TS_OK
 *   2  bad usage or bad input: TS_USAGE, TS_SYNTAX, TS_INVALID, TS_TOO_LARGE,
 *      and TS_IO or TS_NOT_FOUND while reading
 *   1  the job failed: TS_INFEASIBLE, TS_NOMEM, TS_INTERNAL, and TS_IO or
 *      TS_NOT_FOUND while doing the job
 * A verb's own verdicts (a broken chain, a FAIL, rejected lines) are 1. */
int cli_exit(ts_status st, enum cli_stage stage);
/* Print e, then return cli_exit(e->code, stage). */
int cli_fail(const struct ts_error *e, enum cli_stage stage);

/* ---- option tables (opts.c) ----------------------------------------------- */

/* What the zsh completion offers for an option's value or an operand. */
enum cli_complete_kind {
    CLI_COMPLETE_END,     /* ends a list of struct cli_complete */
    CLI_COMPLETE_NONE,    /* nothing: free text (a number, a URL) */
    CLI_COMPLETE_WORDS,   /* one of words */
    CLI_COMPLETE_FILES,   /* a file name */
    CLI_COMPLETE_DIRS,    /* a folder name */
    CLI_COMPLETE_MODELS,  /* a GPU model `tessera catalog list` names */
    CLI_COMPLETE_TENANTS, /* a tenant of the specs given (-f, else TESSERA_SPEC) */
};
/* The values of an option for the subcommands in where (CLI_ALL: all). A
 * list of these ends with CLI_COMPLETE_END; the first that applies wins. */
struct cli_complete {
    unsigned where;
    enum cli_complete_kind kind;
    const char *const *words; /* CLI_COMPLETE_WORDS: NULL-ended */
};

/* One option of a verb. One table of these yields the getopt_long list, the
 * option lines of --help, through where, the options each subcommand
 * allows, and the completion scripts. -h/--help is added to every table. */
struct cli_opt {
    int key;          /* what getopt_long returns for it */
    int letter;       /* 1: -key works too (-f as --filename) */
    const char *name; /* the long name, --name */
    const char *arg;  /* its value in --help ("FILE"); NULL: takes none */
    unsigned where;   /* the subcommands it applies to (a bit each); CLI_ALL */
    const char *help; /* --help text ('\n' continues it); NULL: not shown */
    /* what zsh completes its value with; NULL: what arg names (FILE, SPEC,
     * PATH...: files; DIR: folders; else nothing) */
    const struct cli_complete *complete;
};
#define CLI_ALL 0u
/* --name only, and -key too; the table ends with CLI_END. */
#define CLI_LONG(k, long_name, value, subs, text)                                        \
    {                                                                                    \
        .key = (k), .name = (long_name), .arg = (value), .where = (subs), .help = (text) \
    }
#define CLI_SHORT(k, long_name, value, subs, text)                                     \
    {                                                                                  \
        .key = (k), .letter = 1, .name = (long_name), .arg = (value), .where = (subs), \
        .help = (text)                                                                 \
    }
/* The same with the completion of the value (a struct cli_complete list). */
#define CLI_LONG_C(k, long_name, value, subs, values, text)                               \
    {                                                                                     \
        .key = (k), .name = (long_name), .arg = (value), .where = (subs), .help = (text), \
        .complete = (values)                                                              \
    }
#define CLI_SHORT_C(k, long_name, value, subs, values, text)                           \
    {                                                                                  \
        .key = (k), .letter = 1, .name = (long_name), .arg = (value), .where = (subs), \
        .help = (text), .complete = (values)                                           \
    }
/* The lists most verbs share (opts.c): -o text|json|yaml, --log-format
 * text|json, a tenant. */
extern const char *const cli_formats[];
extern const struct cli_complete cli_complete_formats[], cli_complete_log_formats[],
    cli_complete_tenants[];
/* A completion list of just words (NULL-ended), for every subcommand. */
#define CLI_WORDS(list) ((const struct cli_complete[]){{CLI_ALL, CLI_COMPLETE_WORDS, (list)}, {0}})
#define CLI_END \
    {           \
        0       \
    }
/* A macro's value as a string, for help texts ("default " CLI_STR(X)). */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

/* A verb (or a family of subcommands sharing one table). */
struct cli_verb {
    const char *name;           /* "plan", "ledger", "meter scrape" */
    const char *usage;          /* the synopsis and what it does, first in --help */
    const struct cli_opt *opts; /* ends with CLI_END */
    const char *notes;          /* after the options in --help; may be NULL */
    const char *subs;           /* its subcommand words, ' '-separated, the i-th
                                   the option bit 1u << i (completion, man); NULL */
    unsigned only;              /* the option bits that are this verb's; CLI_ALL */
};

/* Every verb's table (cmd_*.c), for completion and the man page (gen.c). */
extern const struct cli_verb cli_verb_plan, cli_verb_render, cli_verb_serve, cli_verb_console,
    cli_verb_meter, cli_verb_scrape, cli_verb_usage, cli_verb_ledger, cli_verb_invoice,
    cli_verb_check, cli_verb_catalog, cli_verb_docs, cli_verb_agent, cli_verb_fight,
    cli_verb_completion, cli_verb_prometheus, cli_verb_cert, cli_verb_shim, cli_verb_token;

/* A row of the command table (main.c): `tessera NAME`, or `tessera PARENT NAME`. */
struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const struct cli_verb *verb;
};
extern const struct cli_command cli_commands[];
extern const size_t cli_ncommands;
/* The top-level usage (main.c), which the man page repeats. */
void cli_top_usage(FILE *out);

/* `tessera completion bash|zsh` and `tessera docs man` (gen.c): from the
 * tables above, so they hold exactly what --help says. */
int cli_gen_completion(const char *shell, FILE *out);
void cli_gen_man(FILE *out);
/* What gen.c and gen_zsh.c share: whether o is shown by --help for
 * subcommand bit sub of v (0: any); the verb of a subcommand word that runs
 * one of its own (`meter scrape`), or NULL; the zsh script. */
int cli_gen_shown(const struct cli_verb *v, const struct cli_opt *o, unsigned sub);
const struct cli_verb *cli_gen_nested(const char *parent, const char *word, size_t len);
void cli_gen_zsh(FILE *out);
/* The first of list that applies to subcommand bits, or NULL. */
const struct cli_complete *cli_complete_for(const struct cli_complete *list, unsigned bits);

/* cli_parse's answer to -h/--help (not an exit code: see cli_help). */
#define CLI_HELP (-1)

/* What cli_parse hands each option to: CLI_OK, or an exit code after a
 * message. arg is NULL for an option without a value. */
typedef int (*cli_set_fn)(void *ctx, int key, const char *arg);

/* Parse argv (argv[0]: the verb or subcommand word) with v's table: each
 * option goes to set. sub: the subcommand bit whose options apply (CLI_ALL:
 * all). Returns CLI_OK (optind at the first operand), CLI_HELP, or
 * CLI_BAD_INPUT after a message (an unknown option: with the usage). */
int cli_parse(const struct cli_verb *v, unsigned sub, int argc, char **argv, cli_set_fn set,
              void *ctx);
/* --help: v's usage, its options that apply to sub, its notes. */
void cli_usage(const struct cli_verb *v, unsigned sub, FILE *out);
/* cli_usage on stdout; returns CLI_OK. */
int cli_help(const struct cli_verb *v, unsigned sub);
/* The environment variable that gives o when the command line does not
 * (TESSERA_SPEC for -f, TESSERA_CATALOG for --catalog, TESSERA_DB for --db;
 * the first two ':'-separated lists), or NULL. Flags win. */
const char *cli_opt_env(const struct cli_opt *o);
/* The long name of key in v, without "--" (for messages); "?" when none. */
const char *cli_opt_name(const struct cli_verb *v, int key);

/* ---- files, errors, jobs (common.c) --------------------------------------- */

/* Files named by repeated -f / --catalog flags. */
struct cli_files {
    const char *paths[CLI_MAX_FILES];
    size_t n;
};

/* Add path; 0 (and a message) when there are too many. */
int cli_files_add(struct cli_files *f, const char *path);

/* Print every error of diag to stderr as "tessera: file:line:col: path: msg". */
void cli_print_diag(const struct ts_diag *diag);
void cli_print_error(const struct ts_error *e);

/* Everything a plan needs, loaded and decided. */
struct cli_job {
    struct cat_catalog *cat;
    struct spec_model *model;
    struct decide_result *decisions;
    struct plan *plan;
};

/* Load catalog + spec and decide; returns CLI_OK or an exit code (errors printed). */
int cli_job_decide(struct cli_job *job, const struct cli_files *spec,
                   const struct cli_files *catalog);
/* ... with the PriceBook's cost as the objective of the card models
 * (plan_decide) under opt (NULL: the defaults). */
int cli_job_decide_opt(struct cli_job *job, const struct cli_files *spec,
                       const struct cli_files *catalog, const struct plan_options *opt);
/* ... and plan. */
int cli_job_plan(struct cli_job *job, const struct cli_files *spec, const struct cli_files *catalog,
                 const struct plan_options *opt);
void cli_job_free(struct cli_job *job);

/* The key of --hmac-key-file (one trailing newline dropped); *key NULL when
 * path is NULL. Returns an exit code (errors printed). */
int cli_read_key(const char *path, char **key, size_t *len);

/* What metering commands open: the planned spec, the store, the
 * attribution context (plan + custody ledger), the ledger's HMAC key. */
struct cli_meter {
    struct cli_job job;
    struct store *st;
    struct meter_ctx ctx;
    char *key;
    size_t key_len;
    struct meter_violation_log recorded; /* each violation recorded once a run */
};
/* The spec laid out as `tessera plan` does, with the extra GpuModel
 * documents of catalog (--catalog, TESSERA_CATALOG), and the store. */
int cli_meter_open(const struct cli_files *spec, const struct cli_files *catalog, const char *db,
                   struct cli_meter *m);
void cli_meter_close(struct cli_meter *m);
/* Print the ingest's custody violations and record them in the ledger,
 * those this run has not recorded yet. */
int cli_meter_violations(struct cli_meter *m, const struct meter_ingest *in);
/* The end of an import's summary line: the warnings an ingest counted
 * (", N ..." for each that is not 0; "" when none). */
struct meter_ingest_counts;
void cli_meter_warnings(const struct meter_ingest_counts *c, char *buf, size_t size);

/* Write text to path ("-" = stdout) atomically; returns an exit code. */
int cli_write(const char *path, const char *text, size_t len);
/* -o yaml is -o json's document written as YAML: the format a verb builds
 * for format ("json" for "yaml", else format itself). */
const char *cli_format_built(const char *format);
/* Write the text a verb built for cli_format_built(format) to stdout: as
 * is, or (yaml) its JSON as YAML. An exit code. */
int cli_write_as(const char *format, const char *text, size_t len);

int cmd_plan(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_console(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_meter(int argc, char **argv);
int cmd_meter_scrape(int argc, char **argv);     /* cmd_scrape.c */
int cmd_meter_prometheus(int argc, char **argv); /* cmd_prom.c */
int cmd_usage(int argc, char **argv);
int cmd_invoice(int argc, char **argv);
int cmd_catalog(int argc, char **argv);
int cmd_docs(int argc, char **argv);
int cmd_ledger(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_fight(int argc, char **argv);
int cmd_completion(int argc, char **argv);
int cmd_cert(int argc, char **argv);
int cmd_shim(int argc, char **argv);

#endif
