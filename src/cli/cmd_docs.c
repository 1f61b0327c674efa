/*
 * cmd_docs.c - `tessera docs spec|catalog`: print the field reference
 * generated from the loaders' own tables (docs/spec.md embeds it; a test
 * keeps the two in step).
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

int cmd_docs(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "spec") != 0 && strcmp(argv[1], "catalog") != 0)) {
        FILE *out = argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr;
        fprintf(out, "usage: tessera docs spec|catalog\n\n"
                     "Print the Markdown field reference of the tenancy spec or of GpuModel.\n");
        return out == stdout ? CLI_OK : CLI_BAD_INPUT;
    }
    struct ts_sbuf out;
    ts_sbuf_init(&out, 1u << 20);
    if (strcmp(argv[1], "spec") == 0)
        spec_doc_reference(&out);
    else
        cat_doc_reference(&out);
    int rc = ts_sbuf_status(&out) ? CLI_FAIL : cli_write("-", out.data, out.len);
    ts_sbuf_release(&out);
    return rc;
}
