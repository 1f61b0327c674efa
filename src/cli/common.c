/*
 * common.c - helpers every subcommand uses (see cli.h): the exit-code rule,
 * files named by flags, printing errors, loading and planning a spec,
 * writing output (and a JSON document as YAML), reading an HMAC key.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "render/yaml.h"
#include "util/file.h"

int cli_files_add(struct cli_files *f, const char *path)
{
    if (f->n == CLI_MAX_FILES) {
        fprintf(stderr, "tessera: at most %d files\n", CLI_MAX_FILES);
        return 0;
    }
    f->paths[f->n++] = path;
    return 1;
}

void cli_print_error(const struct ts_error *e)
{
    char buf[TS_MSG_MAX + 2 * TS_PATH_MAX + 64];
    ts_error_format(e, buf, sizeof(buf));
    fprintf(stderr, "tessera: %s\n", buf);
}

void cli_print_diag(const struct ts_diag *diag)
{
    for (int i = 0; i < diag->count; i++)
        cli_print_error(&diag->items[i]);
    if (diag->dropped)
        fprintf(stderr, "tessera: ... and %d more errors\n", diag->dropped);
}

int cli_exit(ts_status st, enum cli_stage stage)
{
    switch (st) {
    case TS_OK: return CLI_OK;
    case TS_USAGE:
    case TS_SYNTAX:
    case TS_INVALID:
    case TS_TOO_LARGE: return CLI_BAD_INPUT;
    case TS_IO:
    case TS_NOT_FOUND: return stage == CLI_READING ? CLI_BAD_INPUT : CLI_FAIL;
    default: return CLI_FAIL; /* TS_INFEASIBLE, TS_NOMEM, TS_INTERNAL */
    }
}

int cli_fail(const struct ts_error *e, enum cli_stage stage)
{
    cli_print_error(e);
    return cli_exit(e->code, stage);
}

int cli_job_decide(struct cli_job *job, const struct cli_files *spec,
                   const struct cli_files *catalog)
{
    return cli_job_decide_opt(job, spec, catalog, NULL);
}

int cli_job_decide_opt(struct cli_job *job, const struct cli_files *spec,
                       const struct cli_files *catalog, const struct plan_options *opt)
{
    struct ts_diag diag = {0};
    memset(job, 0, sizeof(*job));
    if (spec->n == 0) {
        fprintf(stderr, "tessera: no spec given: use -f FILE (or set TESSERA_SPEC)\n");
        return CLI_BAD_INPUT;
    }
    ts_status st = cat_load(catalog->paths, catalog->n, &job->cat, &diag);
    if (st == TS_OK)
        st = spec_load_for_report(spec->paths, spec->n, &job->model, &diag);
    if (st == TS_INVALID && job->model) {
        decide_report_rest(job->model, job->cat, &diag);
        spec_model_free(job->model);
        job->model = NULL;
    }
    if (st == TS_OK)
        st = plan_decide(job->model, job->cat, opt, &job->decisions, &diag);
    if (st != TS_OK) {
        cli_print_diag(&diag);
        if (diag.count == 0)
            fprintf(stderr, "tessera: %s\n", ts_status_str(st));
        return cli_exit(st, CLI_READING);
    }
    return CLI_OK;
}

int cli_job_plan(struct cli_job *job, const struct cli_files *spec, const struct cli_files *catalog,
                 const struct plan_options *opt)
{
    int rc = cli_job_decide_opt(job, spec, catalog, opt);
    if (rc != CLI_OK)
        return rc;
    struct ts_diag diag = {0};
    ts_status st = plan_build(job->model, job->cat, job->decisions, opt, &job->plan, &diag);
    if (st != TS_OK) {
        cli_print_diag(&diag);
        if (diag.count == 0)
            fprintf(stderr, "tessera: plan: %s\n", ts_status_str(st));
        return cli_exit(st, CLI_DOING);
    }
    struct ts_error e;
    if (plan_verify(job->plan, &e) != TS_OK) {
        fprintf(stderr, "tessera: internal error: the plan breaks a rule: %s\n", e.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

void cli_job_free(struct cli_job *job)
{
    plan_free(job->plan);
    decide_free(job->decisions);
    spec_model_free(job->model);
    cat_free(job->cat);
    memset(job, 0, sizeof(*job));
}

int cli_write(const char *path, const char *text, size_t len)
{
    if (strcmp(path, "-") == 0) {
        if (fwrite(text, 1, len, stdout) != len) {
            fprintf(stderr, "tessera: cannot write to standard output\n");
            return CLI_FAIL;
        }
        return CLI_OK;
    }
    struct ts_error e;
    if (ts_file_write(path, text, len, &e) != TS_OK)
        return cli_fail(&e, CLI_DOING);
    return CLI_OK;
}

const char *cli_format_built(const char *format)
{
    return strcmp(format, "yaml") == 0 ? "json" : format;
}

/* The JSON document text as YAML on stdout: the same tree, one writer. */
static int write_yaml(const char *text, size_t len)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
    if (!doc) {
        fprintf(stderr, "tessera: internal: the document is not JSON: %s\n", jerr.text);
        return CLI_FAIL;
    }
    struct ts_sbuf out;
    ts_sbuf_init(&out, CLI_REPORT_MAX);
    ts_status st = render_yaml_doc(doc, 1, &out);
    json_decref(doc);
    int rc = st == TS_OK ? cli_write("-", out.data, out.len) : CLI_FAIL;
    ts_sbuf_release(&out);
    return rc;
}

int cli_write_as(const char *format, const char *text, size_t len)
{
    if (strcmp(format, "yaml") == 0)
        return write_yaml(text, len);
    return cli_write("-", text, len);
}

int cli_read_key(const char *path, char **key, size_t *len)
{
    struct ts_error e = {0};
    *key = NULL;
    *len = 0;
    if (!path)
        return CLI_OK;
    if (ts_file_read(path, CLI_KEY_FILE_MAX, key, len, &e) != TS_OK)
        return cli_fail(&e, CLI_READING);
    while (*len && ((*key)[*len - 1] == '\n' || (*key)[*len - 1] == '\r'))
        (*key)[--*len] = '\0';
    if (*len == 0) {
        fprintf(stderr, "tessera: %s: the hmac key is empty\n", path);
        free(*key);
        *key = NULL;
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}
