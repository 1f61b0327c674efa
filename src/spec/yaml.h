/*
 * yaml.h - YAML text to a located node tree, with hard limits.
 *
 * Built on libyaml's event parser. Every node keeps its 1-based line and
 * column so later stages can name the exact place of an error. Aliases are
 * resolved by sharing the anchored node; each use counts the anchored
 * subtree's size against SPEC_YAML_MAX_NODES, so an alias bomb ("billion
 * laughs") fails fast instead of blowing up a later walk. Nesting depth and
 * scalar length are capped too. All nodes live in the caller's arena.
 */
#ifndef SPEC_YAML_H
#define SPEC_YAML_H

#include <stddef.h>
#include "util/arena.h"
#include "util/error.h"
#include "util/limits.h" /* SPEC_YAML_MAX_* */

enum spec_node_type { SPEC_NODE_SCALAR, SPEC_NODE_SEQ, SPEC_NODE_MAP };

struct spec_node {
    enum spec_node_type type;
    int line, column;         /* 1-based position of the node's start */
    const char *value;        /* scalar text, NUL-terminated */
    size_t len;               /* scalar length in bytes */
    int plain;                /* 1 for an unquoted scalar */
    const char *tag;          /* explicit tag, or NULL */
    struct spec_node **items; /* SEQ: elements; MAP: key, value, key, value... */
    size_t count;             /* number of items (twice the pairs for a MAP) */
    size_t weight;            /* nodes in this subtree, aliases expanded */
};

struct spec_doc {
    struct spec_node *root; /* NULL for an empty document */
    int line;               /* where the document starts */
};

/* Parse text (len bytes) named file into docs[] (arena-owned). */
ts_status spec_yaml_parse(const char *text, size_t len, const char *file, struct ts_arena *arena,
                          struct spec_doc **docs, size_t *ndocs, struct ts_error *err);

/* MAP lookup helpers: the value for key, or NULL. */
const struct spec_node *spec_node_get(const struct spec_node *map, const char *key);

#endif
