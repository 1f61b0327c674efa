/*
 * yaml.c - libyaml events -> spec_node tree (see yaml.h).
 *
 * The builder keeps an explicit stack of open collections (bounded by
 * SPEC_YAML_MAX_DEPTH), appends finished nodes to their parent, and records
 * anchors only when their node is complete, so an alias can never point at
 * an ancestor (no cycles). Text with NUL bytes or in UTF-16 is refused
 * before libyaml sees it, and libyaml's errors are reworded and placed
 * where the user must look (an unclosed quote at its opening, a bad byte
 * at the character it breaks).
 */
#include "spec/yaml.h"

#include <string.h>
#include <yaml.h>

struct anchor {
    const char *name;
    struct spec_node *node;
};

struct builder {
    struct ts_arena *arena;
    const char *file;
    const char *text;
    size_t text_len;
    struct spec_node *stack[SPEC_YAML_MAX_DEPTH + 1];
    const char *stack_anchor[SPEC_YAML_MAX_DEPTH + 1];
    size_t cap[SPEC_YAML_MAX_DEPTH + 1];
    int depth;
    struct anchor anchors[SPEC_YAML_MAX_ANCHORS];
    int nanchors;
    size_t total; /* nodes so far, aliases expanded */
    struct spec_doc *docs;
    size_t ndocs, docs_cap;
    struct ts_error *err;
};

static ts_status fail(struct builder *b, int line, int col, ts_status code, const char *msg)
{
    return ts_err_at(b->err, code, b->file, line, col, NULL, "%s", msg);
}

/* Line and column of a byte offset (for libyaml reader errors). */
static void locate_offset(const char *text, size_t len, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

/* Bytes of a UTF-8 byte order mark at the start (libyaml skips it). */
static size_t bom_len(const char *text, size_t len)
{
    return len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

/* Byte offset of a libyaml mark (0-based line, column in characters). */
static size_t mark_offset(const char *text, size_t len, const yaml_mark_t *m)
{
    size_t off = bom_len(text, len);
    for (size_t line = 0; line < m->line && off < len; off++)
        line += text[off] == '\n';
    for (size_t col = 0; col < m->column && off < len; col++) {
        off++;
        while (off < len && ((unsigned char)text[off] & 0xC0) == 0x80)
            off++;
    }
    return off;
}

/* 1 if the mark is at the end of the text (libyaml counts characters). */
static int mark_at_end(const char *text, size_t len, const yaml_mark_t *m)
{
    size_t chars = 0;
    for (size_t i = bom_len(text, len); i < len; i++)
        chars += ((unsigned char)text[i] & 0xC0) != 0x80;
    return m->index >= chars;
}

/* Bad encoding: point at the first byte of the broken character. */
static ts_status reader_error(struct builder *b, yaml_parser_t *p)
{
    const char *problem = p->problem ? p->problem : "reader error";
    const unsigned char *t = (const unsigned char *)b->text;
    size_t off = p->problem_offset;
    int line, col;
    if (strstr(problem, "trailing"))
        while (off > 0 && off <= b->text_len && (t[off - 1] & 0xC0) == 0x80)
            off--;
    if (strstr(problem, "trailing") && off > 0)
        off--;
    locate_offset(b->text, b->text_len, off, &line, &col);
    unsigned byte = off < b->text_len ? t[off] : 0;
    if (strstr(problem, "leading"))
        return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL,
                         "invalid UTF-8: byte "
                         "0x%02X cannot start a character; a spec must be UTF-8 text (is this a "
                         "binary file?)",
                         byte);
    if (strstr(problem, "trailing"))
        return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL,
                         "invalid UTF-8: the "
                         "character starting with byte 0x%02X is broken by byte 0x%02X; save the "
                         "file as UTF-8",
                         byte, (unsigned)p->problem_value & 0xFF);
    if (strstr(problem, "incomplete"))
        return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL,
                         "invalid UTF-8: the file "
                         "ends in the middle of a character");
    if (strstr(problem, "control"))
        return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL,
                         "control character "
                         "0x%02X is not allowed in YAML text",
                         (unsigned)p->problem_value);
    if (strstr(problem, "Unicode"))
        return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL,
                         "invalid UTF-8: it "
                         "encodes U+%04X, which is not a character",
                         (unsigned)p->problem_value);
    return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL,
                     "invalid UTF-8: %s; save the "
                     "file as UTF-8",
                     problem);
}

/* "while scanning a quoted scalar" -> "quoted scalar". */
static const char *context_what(const char *context)
{
    const char *a = strstr(context, " a ");
    const char *an = strstr(context, " an ");
    return a ? a + 3 : an ? an + 4 : context;
}

static ts_status parser_error(struct builder *b, yaml_parser_t *p)
{
    if (p->error == YAML_READER_ERROR)
        return reader_error(b, p);
    if (p->error == YAML_MEMORY_ERROR)
        return fail(b, 0, 0, TS_NOMEM, "out of memory");
    const char *problem = p->problem ? p->problem : "error";
    const yaml_mark_t *m = &p->problem_mark;
    size_t off = mark_offset(b->text, b->text_len, m);
    int line = (int)m->line + 1, col = (int)m->column + 1;
    if (off < b->text_len && b->text[off] == '\t')
        return fail(b, line, col, TS_SYNTAX,
                    "yaml syntax: a tab character in indentation; "
                    "YAML indents with spaces only");
    if (!p->context)
        return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL, "yaml syntax: %s", problem);
    const yaml_mark_t *c = &p->context_mark;
    if (mark_at_end(b->text, b->text_len, m) && strstr(p->context, "quoted scalar"))
        return fail(b, (int)c->line + 1, (int)c->column + 1, TS_SYNTAX,
                    "yaml syntax: "
                    "unterminated quoted string: the closing quote is missing");
    if (mark_at_end(b->text, b->text_len, m))
        return ts_err_at(b->err, TS_SYNTAX, b->file, (int)c->line + 1, (int)c->column + 1, NULL,
                         "yaml syntax: the file ends inside this %s (%s)", context_what(p->context),
                         problem);
    if (c->line != m->line)
        return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL,
                         "yaml syntax: %s %s "
                         "that starts at line %d column %d",
                         problem, p->context, (int)c->line + 1, (int)c->column + 1);
    return ts_err_at(b->err, TS_SYNTAX, b->file, line, col, NULL, "yaml syntax: %s %s", problem,
                     p->context);
}

static ts_status count_nodes(struct builder *b, size_t n, int line, int col)
{
    if (n > SPEC_YAML_MAX_NODES || b->total > SPEC_YAML_MAX_NODES - n)
        return ts_err_at(b->err, TS_TOO_LARGE, b->file, line, col, NULL,
                         "document expands to more than %d nodes (alias bomb?)",
                         SPEC_YAML_MAX_NODES);
    b->total += n;
    return TS_OK;
}

static ts_status add_anchor(struct builder *b, const char *name, struct spec_node *n)
{
    if (!name)
        return TS_OK;
    if (b->nanchors == SPEC_YAML_MAX_ANCHORS)
        return ts_err_at(b->err, TS_TOO_LARGE, b->file, n->line, n->column, NULL,
                         "more than %d anchors", SPEC_YAML_MAX_ANCHORS);
    b->anchors[b->nanchors].name = name;
    b->anchors[b->nanchors].node = n;
    b->nanchors++;
    return TS_OK;
}

static struct spec_node *find_anchor(struct builder *b, const char *name)
{
    for (int i = b->nanchors - 1; i >= 0; i--)
        if (strcmp(b->anchors[i].name, name) == 0)
            return b->anchors[i].node;
    return NULL;
}

/* 1 if name anchors a collection that is still open (an ancestor). */
static int is_open_anchor(const struct builder *b, const char *name)
{
    for (int i = 0; i < b->depth; i++)
        if (b->stack_anchor[i] && strcmp(b->stack_anchor[i], name) == 0)
            return 1;
    return 0;
}

/* Attach a finished node to the open collection, or make it the doc root. */
static ts_status attach(struct builder *b, struct spec_node *n)
{
    if (b->depth == 0) {
        b->docs[b->ndocs - 1].root = n;
        return TS_OK;
    }
    struct spec_node *parent = b->stack[b->depth - 1];
    size_t *cap = &b->cap[b->depth - 1];
    if (!ts_arena_grow(b->arena, (void **)&parent->items, cap, parent->count,
                       sizeof(*parent->items)))
        return fail(b, n->line, n->column, TS_NOMEM, "out of memory");
    parent->items[parent->count++] = n;
    parent->weight += n->weight;
    return TS_OK;
}

static struct spec_node *new_node(struct builder *b, enum spec_node_type t, const yaml_mark_t *m,
                                  const yaml_char_t *tag)
{
    struct spec_node *n = ts_arena_alloc(b->arena, sizeof(*n));
    if (!n)
        return NULL;
    n->type = t;
    n->line = (int)m->line + 1;
    n->column = (int)m->column + 1;
    n->weight = 1;
    n->value = "";
    if (tag)
        n->tag = ts_arena_strdup(b->arena, (const char *)tag);
    return n;
}

static ts_status on_scalar(struct builder *b, const yaml_event_t *e)
{
    int line = (int)e->start_mark.line + 1, col = (int)e->start_mark.column + 1;
    if (e->data.scalar.length > SPEC_YAML_MAX_SCALAR)
        return ts_err_at(b->err, TS_TOO_LARGE, b->file, line, col, NULL,
                         "scalar longer than %d bytes", SPEC_YAML_MAX_SCALAR);
    ts_status st = count_nodes(b, 1, line, col);
    if (st)
        return st;
    struct spec_node *n = new_node(b, SPEC_NODE_SCALAR, &e->start_mark, e->data.scalar.tag);
    if (!n)
        return fail(b, line, col, TS_NOMEM, "out of memory");
    n->value = ts_arena_strndup(b->arena, (const char *)e->data.scalar.value,
                                e->data.scalar.length);
    if (!n->value)
        return fail(b, line, col, TS_NOMEM, "out of memory");
    n->len = e->data.scalar.length;
    n->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    const char *anchor = (const char *)e->data.scalar.anchor;
    if (anchor && (st = add_anchor(b, ts_arena_strdup(b->arena, anchor), n)))
        return st;
    return attach(b, n);
}

static ts_status on_alias(struct builder *b, const yaml_event_t *e)
{
    int line = (int)e->start_mark.line + 1, col = (int)e->start_mark.column + 1;
    const char *name = (const char *)e->data.alias.anchor;
    struct spec_node *n = find_anchor(b, name);
    if (!n && is_open_anchor(b, name))
        return ts_err_at(b->err, TS_INVALID, b->file, line, col, NULL,
                         "alias '*%s' is inside "
                         "the node it names (a cycle)",
                         name);
    if (!n)
        return ts_err_at(b->err, TS_INVALID, b->file, line, col, NULL,
                         "alias '*%s' names no "
                         "anchor defined before it in this document",
                         name);
    ts_status st = count_nodes(b, n->weight, line, col);
    return st ? st : attach(b, n);
}

static ts_status on_open(struct builder *b, const yaml_event_t *e, enum spec_node_type t)
{
    int line = (int)e->start_mark.line + 1, col = (int)e->start_mark.column + 1;
    if (b->depth == SPEC_YAML_MAX_DEPTH)
        return ts_err_at(b->err, TS_TOO_LARGE, b->file, line, col, NULL,
                         "nesting deeper than %d levels", SPEC_YAML_MAX_DEPTH);
    ts_status st = count_nodes(b, 1, line, col);
    if (st)
        return st;
    const yaml_char_t *tag = t == SPEC_NODE_MAP ? e->data.mapping_start.tag
                                                : e->data.sequence_start.tag;
    const yaml_char_t *anchor = t == SPEC_NODE_MAP ? e->data.mapping_start.anchor
                                                   : e->data.sequence_start.anchor;
    struct spec_node *n = new_node(b, t, &e->start_mark, tag);
    if (!n)
        return fail(b, line, col, TS_NOMEM, "out of memory");
    b->stack[b->depth] = n;
    b->stack_anchor[b->depth] = anchor ? ts_arena_strdup(b->arena, (const char *)anchor) : NULL;
    b->cap[b->depth] = 0;
    b->depth++;
    return TS_OK;
}

static ts_status on_close(struct builder *b)
{
    b->depth--;
    struct spec_node *n = b->stack[b->depth];
    ts_status st = add_anchor(b, b->stack_anchor[b->depth], n);
    return st ? st : attach(b, n);
}

static ts_status on_doc_start(struct builder *b, const yaml_event_t *e)
{
    if (b->ndocs == SPEC_YAML_MAX_DOCS)
        return ts_err_at(b->err, TS_TOO_LARGE, b->file, (int)e->start_mark.line + 1, 1, NULL,
                         "more than %d documents", SPEC_YAML_MAX_DOCS);
    if (!ts_arena_grow(b->arena, (void **)&b->docs, &b->docs_cap, b->ndocs, sizeof(*b->docs)))
        return fail(b, 0, 0, TS_NOMEM, "out of memory");
    b->docs[b->ndocs].root = NULL;
    b->docs[b->ndocs].line = (int)e->start_mark.line + 1;
    b->ndocs++;
    b->nanchors = 0; /* anchors are scoped to their document */
    return TS_OK;
}

static ts_status on_event(struct builder *b, const yaml_event_t *e)
{
    switch (e->type) {
    case YAML_DOCUMENT_START_EVENT: return on_doc_start(b, e);
    case YAML_SCALAR_EVENT: return on_scalar(b, e);
    case YAML_ALIAS_EVENT: return on_alias(b, e);
    case YAML_SEQUENCE_START_EVENT: return on_open(b, e, SPEC_NODE_SEQ);
    case YAML_MAPPING_START_EVENT: return on_open(b, e, SPEC_NODE_MAP);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: return on_close(b);
    default: return TS_OK;
    }
}

/* Text libyaml would misread or stop at: UTF-16 and NUL bytes. */
static ts_status check_text(struct builder *b)
{
    const unsigned char *t = (const unsigned char *)b->text;
    if (b->text_len >= 2 && ((t[0] == 0xFF && t[1] == 0xFE) || (t[0] == 0xFE && t[1] == 0xFF)))
        return fail(b, 1, 1, TS_SYNTAX,
                    "the file is UTF-16 (it starts with a UTF-16 byte "
                    "order mark); save it as UTF-8");
    const char *nul = memchr(b->text, '\0', b->text_len);
    if (!nul)
        return TS_OK;
    int line, col;
    locate_offset(b->text, b->text_len, (size_t)(nul - b->text), &line, &col);
    return fail(b, line, col, TS_SYNTAX,
                "a NUL byte; a spec must be UTF-8 text (is this a "
                "binary file?)");
}

ts_status spec_yaml_parse(const char *text, size_t len, const char *file, struct ts_arena *arena,
                          struct spec_doc **docs, size_t *ndocs, struct ts_error *err)
{
    struct builder *b = ts_arena_alloc(arena, sizeof(*b));
    if (!b)
        return ts_err(err, TS_NOMEM, "out of memory");
    b->arena = arena;
    b->file = file;
    b->text = text;
    b->text_len = len;
    b->err = err;
    ts_status st = check_text(b);
    if (st)
        return st;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return ts_err(err, TS_NOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    for (int done = 0; !done && st == TS_OK;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            st = parser_error(b, &p);
            break;
        }
        st = on_event(b, &e);
        done = e.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&p);
    if (st == TS_OK) {
        *docs = b->docs;
        *ndocs = b->ndocs;
    }
    return st;
}

const struct spec_node *spec_node_get(const struct spec_node *map, const char *key)
{
    if (!map || map->type != SPEC_NODE_MAP)
        return NULL;
    for (size_t i = 0; i + 1 < map->count; i += 2) {
        const struct spec_node *k = map->items[i];
        if (k->type == SPEC_NODE_SCALAR && strcmp(k->value, key) == 0)
            return map->items[i + 1];
    }
    return NULL;
}
