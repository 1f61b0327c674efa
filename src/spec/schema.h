/*
 * schema.h - declarative field tables that turn YAML mappings into C structs.
 *
 * Each kind of mapping (a Tenant's spec, a workload, a GPU profile...) is
 * described once by a table of spec_field rows: key, type, where the value
 * goes (offsetof), whether it is required, its range and, for nested lists
 * and objects, the schema of the elements. One walker reads any mapping
 * with any table, so every field gets the same strict checks and the same
 * located messages: unknown keys (with a "did you mean"), wrong types,
 * out-of-range numbers, duplicate keys, missing required fields. The same
 * tables generate the field reference in docs/spec.md (spec_schema_doc).
 * The walker never stops at the first error: it records each problem in a
 * ts_diag and carries on, so one run reports everything.
 */
#ifndef SPEC_SCHEMA_H
#define SPEC_SCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include "spec/yaml.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/sbuf.h"

enum spec_ftype {
    SPEC_F_STR,   /* const char *: any non-empty string */
    SPEC_F_NAME,  /* const char *: DNS-1123 label (lowercase, digits, '-', <= 63) */
    SPEC_F_DNS,   /* const char *: DNS-1123 subdomain (labels joined by '.') */
    SPEC_F_NUM,   /* double: finite, within [min, max] */
    SPEC_F_INT,   /* int: within [min, max] */
    SPEC_F_BOOL,  /* int: true or false */
    SPEC_F_ENUM,  /* int: index into enums[] */
    SPEC_F_MONEY, /* int64_t: decimal with up to 6 places, stored in micro-units */
    SPEC_F_NAMES, /* const char **: list of DNS-1123 labels, count at count_offset */
    SPEC_F_STRS,  /* const char **: list of strings, count at count_offset */
    SPEC_F_LIST,  /* void *: array of sub-structs, count at count_offset */
    SPEC_F_OBJ,   /* embedded sub-struct at offset */
};

/* Where something was written: for errors raised after loading. */
struct spec_loc {
    const char *file;
    int line, column;
    const char *path; /* e.g. "Tenant/client-a.spec.workloads[0]" */
};

struct spec_schema;

/* Tables write rows as designated initializers and leave out what is 0 or
 * NULL: a row without .required is optional; a number must lie in
 * [.min, .max], so its row sets .max; a list without .max takes up to the
 * walker's cap of items; an optional value without .default_value gets 0
 * (false, the first enum name). */
struct spec_field {
    const char *key;
    enum spec_ftype type;
    size_t offset;       /* offset of the value */
    size_t count_offset; /* lists: offset of the size_t count */
    int required;
    double min, max;               /* numbers: range; lists: item count range */
    double default_value;          /* default for optional numbers, ints, bools, enums */
    const char *const *enums;      /* SPEC_F_ENUM: NULL-terminated names */
    const struct spec_schema *sub; /* SPEC_F_LIST / SPEC_F_OBJ */
    const char *help;              /* one line for docs/spec.md */
};

struct spec_schema {
    const char *name;  /* for docs */
    size_t size;       /* sizeof the target struct */
    size_t loc_offset; /* offset of a struct spec_loc, or SPEC_NO_LOC */
    const struct spec_field *fields;
    size_t nfields;
};

#define SPEC_NO_LOC ((size_t)-1)
/* .fields and .nfields of a spec_schema from one array of rows. */
#define SPEC_FIELDS(arr) .fields = (arr), .nfields = sizeof(arr) / sizeof((arr)[0])

/* State shared by one load: where errors go and what memory to use. */
struct spec_ctx {
    struct ts_arena *arena;
    const char *file;
    struct ts_diag *diag;
};

/* Read map (a MAP node) into out (schema->size bytes, zeroed by caller)
 * using schema; path names map in messages. Returns the number of errors
 * added to ctx->diag (0 = clean). */
int spec_schema_read(struct spec_ctx *ctx, const struct spec_node *map,
                     const struct spec_schema *schema, void *out, const char *path);

/* Record one located error about node (path may be NULL). */
void spec_report(struct spec_ctx *ctx, const struct spec_node *node, const char *path,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Same, at a stored location. */
void spec_report_loc(struct ts_diag *diag, const struct spec_loc *loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Validators shared with other modules. */
int spec_is_dns_label(const char *s);
/* Parse a decimal like "2.50" into micro-units; 0 on failure. */
int spec_parse_money(const char *s, int64_t *micro);

/* Append a Markdown table documenting schema (and its sub-schemas). */
void spec_schema_doc(struct ts_sbuf *out, const struct spec_schema *schema);

#endif
