/*
 * cli.h - what the tessera subcommands share: exit codes, printing located
 * errors, loading a spec with its catalog. The CLI parses flags, calls the
 * modules and prints; it holds no logic of its own.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include "catalog/catalog.h"
#include "decide/decide.h"
#include "plan/plan.h"
#include "meter/ingest.h"
#include "spec/spec.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_BAD_INPUT = 2 };

#define CLI_MAX_FILES 64

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
/* ... and plan. */
int cli_job_plan(struct cli_job *job, const struct cli_files *spec,
                 const struct cli_files *catalog, const struct plan_options *opt);
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
};
int cli_meter_open(const struct cli_files *spec, const char *db, struct cli_meter *m);
void cli_meter_close(struct cli_meter *m);
/* Print the ingest's custody violations and record them in the ledger. */
int cli_meter_violations(struct cli_meter *m, const struct meter_ingest *in);

/* Write text to path ("-" = stdout) atomically; returns an exit code. */
int cli_write(const char *path, const char *text, size_t len);

int cmd_plan(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_meter(int argc, char **argv);
int cmd_meter_scrape(int argc, char **argv); /* cmd_scrape.c */
int cmd_usage(int argc, char **argv);
int cmd_invoice(int argc, char **argv);
int cmd_catalog(int argc, char **argv);
int cmd_docs(int argc, char **argv);
int cmd_ledger(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_fight(int argc, char **argv);

#endif
