/*
 * cmd_shim.c - `tessera shim install`: put the CUDA shim (libtessera-cuda.so) at
 * the path the webhook's --shim-path names, from the image, in one rename, so a
 * process that has the old library mapped keeps it. The agent DaemonSet's init
 * container runs it (deploy/base/agent.yaml): the image has no shell and no cp.
 */
#include <elf.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "util/file.h"

static const struct cli_opt OPTS[] = {
    CLI_LONG('f', "from", "FILE", CLI_ALL, "the shim to install (an ELF shared object)"),
    CLI_LONG('t', "to", "FILE", CLI_ALL, "where to put it (its folder must exist)"), CLI_END};

const struct cli_verb cli_verb_shim = {
    "shim",
    "usage: tessera shim install --from FILE --to FILE\n\n"
    "install  copy the CUDA shim (libtessera-cuda.so) to FILE, mode 0644, replacing\n"
    "         what is there in one rename (processes that mapped the old one keep\n"
    "         it). FILE is the webhook's --shim-path on the node (docs/install.md).\n",
    OPTS,
    NULL,
    "install",
    CLI_ALL};

struct shim_args {
    const char *from, *to;
};

static int set(void *ctx, int key, const char *arg)
{
    struct shim_args *a = ctx;
    switch (key) {
    case 'f': a->from = arg; return CLI_OK;
    case 't': a->to = arg; return CLI_OK;
    default: return CLI_BAD_INPUT;
    }
}

/* A 64-bit ELF shared object (the shim's kind): ET_DYN without a program
 * interpreter, which a position-independent executable has. */
static int is_shared_object(const char *data, size_t len)
{
    Elf64_Ehdr h;
    if (len < sizeof(h))
        return 0;
    memcpy(&h, data, sizeof(h));
    if (memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 || h.e_ident[EI_CLASS] != ELFCLASS64 ||
        h.e_type != ET_DYN || h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phoff > len ||
        (len - h.e_phoff) / sizeof(Elf64_Phdr) < h.e_phnum)
        return 0;
    for (size_t i = 0; i < h.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, data + h.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type == PT_INTERP)
            return 0;
    }
    return 1;
}

static int install(const struct shim_args *a)
{
    char *data = NULL;
    size_t len = 0;
    struct ts_error e = {0};
    if (ts_file_read(a->from, CLI_SHIM_MAX, &data, &len, &e) != TS_OK)
        return cli_fail(&e, CLI_READING);
    int rc = CLI_OK;
    if (!is_shared_object(data, len)) {
        fprintf(stderr, "tessera: %s: not an ELF shared object\n", a->from);
        rc = CLI_BAD_INPUT;
    } else if (ts_file_write_mode(a->to, data, len, 0644, &e) != TS_OK) {
        rc = cli_fail(&e, CLI_DOING);
    } else {
        printf("installed %s (%zu bytes) at %s\n", a->from, len, a->to);
    }
    free(data);
    return rc;
}

int cmd_shim(int argc, char **argv)
{
    const char *word = argc > 1 ? argv[1] : "";
    if (!strcmp(word, "--help") || !strcmp(word, "-h"))
        return cli_help(&cli_verb_shim, CLI_ALL);
    if (strcmp(word, "install") != 0) {
        fprintf(stderr,
                *word ? "tessera: shim: unknown subcommand '%s'\n"
                      : "tessera: shim: missing subcommand (install)%s\n",
                word);
        cli_usage(&cli_verb_shim, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    struct shim_args a = {0};
    int rc = cli_parse(&cli_verb_shim, 1u, argc - 1, argv + 1, set, &a);
    if (rc != CLI_OK)
        return rc == CLI_HELP ? cli_help(&cli_verb_shim, 1u) : rc;
    if (optind < argc - 1 || !a.from || !a.to) {
        fprintf(stderr, "tessera: shim install: %s\n",
                optind < argc - 1 ? "unexpected argument" : "needs --from FILE and --to FILE");
        cli_usage(&cli_verb_shim, CLI_ALL, stderr);
        return CLI_BAD_INPUT;
    }
    return install(&a);
}
