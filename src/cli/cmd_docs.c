/*
 * cmd_docs.c - `tessera docs spec|catalog|man`: print the field reference
 * generated from the loaders' own tables (docs/spec.md embeds it; a test
 * keeps the two in step), or the man page made from the option tables.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const struct cli_opt OPTS[] = {CLI_END};

const struct cli_verb cli_verb_docs = {
    "docs",
    "usage: tessera docs spec|catalog|man\n\n"
    "Print the Markdown field reference of the tenancy spec or of GpuModel, or\n"
    "tessera(1), the man page (roff: 'tessera docs man | man -l -').\n",
    OPTS,
    NULL,
    "spec catalog man",
    CLI_ALL};

static int no_option(void *ctx, int key, const char *arg)
{
    (void)ctx, (void)key, (void)arg;
    return CLI_BAD_INPUT;
}

int cmd_docs(int argc, char **argv)
{
    int rc = cli_parse(&cli_verb_docs, CLI_ALL, argc, argv, no_option, NULL);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_docs, CLI_ALL) : rc;
    const char *what = optind + 1 == argc ? argv[optind] : "";
    if (strcmp(what, "man") == 0) {
        cli_gen_man(stdout);
        return CLI_OK;
    }
    if (strcmp(what, "spec") != 0 && strcmp(what, "catalog") != 0) {
        if (*what)
            fprintf(stderr, "tessera: docs: unknown reference '%s' (spec, catalog or man)\n", what);
        else
            fprintf(stderr, "tessera: docs: missing reference (spec, catalog or man)\n");
        cli_usage(&cli_verb_docs, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    struct ts_sbuf out;
    ts_sbuf_init(&out, CLI_ENTRY_MAX);
    if (strcmp(what, "spec") == 0)
        spec_doc_reference(&out);
    else
        cat_doc_reference(&out);
    rc = ts_sbuf_status(&out) ? CLI_FAIL : cli_write("-", out.data, out.len);
    ts_sbuf_release(&out);
    return rc;
}
