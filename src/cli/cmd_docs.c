/*
 * cmd_docs.c - `tessera docs spec|catalog`: print the field reference
 * generated from the loaders' own tables (docs/spec.md embeds it; a test
 * keeps the two in step).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const struct cli_opt OPTS[] = {CLI_END};

static const struct cli_verb VERB = {
    "docs",
    "usage: tessera docs spec|catalog\n\n"
    "Print the Markdown field reference of the tenancy spec or of GpuModel.\n",
    OPTS, NULL};

static int no_option(void *ctx, int key, const char *arg)
{
    (void)ctx, (void)key, (void)arg;
    return CLI_BAD_INPUT;
}

int cmd_docs(int argc, char **argv)
{
    int rc = cli_parse(&VERB, CLI_ALL, argc, argv, no_option, NULL);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&VERB, CLI_ALL) : rc;
    const char *what = optind + 1 == argc ? argv[optind] : "";
    if (strcmp(what, "spec") != 0 && strcmp(what, "catalog") != 0) {
        if (*what)
            fprintf(stderr, "tessera: docs: unknown reference '%s' (spec or catalog)\n", what);
        else
            fprintf(stderr, "tessera: docs: missing reference (spec or catalog)\n");
        cli_usage(&VERB, CLI_ALL, stderr);
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
