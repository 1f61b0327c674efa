/*
 * spec.c - the document envelope, loading Fleet/Tenant/PriceBook documents
 * against their field tables (fields.c) and the cross-document checks (see
 * spec.h).
 * Most cross-document rules live in model.c; the two about list items the
 * model keeps as bare strings (a namespace owned twice, trusts naming no
 * tenant) run here, where the YAML nodes still give each item's place.
 */
#include "spec/internal.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/file.h"
#include "util/limits.h"

/* ---- the envelope ---- */

/* Objects read so far, with the YAML node of each one's spec: part. */
struct objlist {
    struct spec_object *items;
    const struct spec_node **specs;
    size_t count, cap;
};

static int push_object(struct ts_arena *a, struct objlist *l, const struct spec_object *o,
                       const struct spec_node *spec)
{
    size_t items_cap = l->cap, specs_cap = l->cap; /* the two arrays grow together */
    if (!ts_arena_grow(a, (void **)&l->items, &items_cap, l->count, sizeof(*l->items)) ||
        !ts_arena_grow(a, (void **)&l->specs, &specs_cap, l->count, sizeof(*l->specs)))
        return 0;
    l->cap = items_cap;
    l->specs[l->count] = spec;
    l->items[l->count++] = *o;
    return 1;
}

static const struct spec_kind *find_kind(const struct spec_kind *kinds, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kinds[i].kind, name) == 0)
            return &kinds[i];
    return NULL;
}

/* metadata: read with the schema walker so it gets the same checks. */
struct metadata {
    const char *name;
};
#define ROW struct metadata
static const struct spec_field metadata_fields[] = {
    {.key = "name",
     .type = SPEC_F_NAME,
     .offset = OFF(name),
     .required = 1,
     .help = "the object's name"},
};
static const struct spec_schema metadata_schema = {.name = "metadata",
                                                   .size = sizeof(ROW),
                                                   .loc_offset = SPEC_NO_LOC,
                                                   SPEC_FIELDS(metadata_fields)};
#undef ROW

enum { ENV_API, ENV_KIND, ENV_META, ENV_SPEC, ENV_KEYS };
static const char *const envelope_names[ENV_KEYS] = {"apiVersion", "kind", "metadata", "spec"};

/* The document's top-level keys and values, by ENV_*. */
struct envelope {
    const struct spec_node *key[ENV_KEYS], *value[ENV_KEYS];
    const char *path; /* "documents[N]" */
};

static int envelope_key(struct spec_ctx *ctx, const struct spec_node *k, const struct spec_node *v,
                        struct envelope *env)
{
    if (k->type != SPEC_NODE_SCALAR) {
        spec_report(ctx, k, env->path, "keys must be plain strings");
        return 1;
    }
    for (int i = 0; i < ENV_KEYS; i++) {
        if (strcmp(k->value, envelope_names[i]) != 0)
            continue;
        if (env->key[i]) {
            spec_report(ctx, k, ts_arena_printf(ctx->arena, "%s.%s", env->path, k->value),
                        "duplicate field (first set at line %d)", env->key[i]->line);
            return 1;
        }
        env->key[i] = k;
        env->value[i] = v;
        return 0;
    }
    for (int i = 0; i < ENV_KEYS; i++)
        if (strcasecmp(k->value, envelope_names[i]) == 0) {
            spec_report(ctx, k, env->path, "unknown field '%.60s' (did you mean '%s'?)", k->value,
                        envelope_names[i]);
            return 1;
        }
    spec_report(ctx, k, env->path,
                "unknown field '%.60s' (a document has apiVersion, kind, "
                "metadata and spec)",
                k->value);
    return 1;
}

/* A required top-level string; NULL (after reporting) when absent or wrong. */
static const char *envelope_string(struct spec_ctx *ctx, const struct spec_node *root,
                                   const struct envelope *env, int which, const char *hint)
{
    const struct spec_node *v = env->value[which];
    const char *name = envelope_names[which];
    if (!v) {
        spec_report(ctx, root, env->path, "missing required field '%s'; it must be %s", name, hint);
        return NULL;
    }
    if (v->type != SPEC_NODE_SCALAR || v->len == 0) {
        spec_report(ctx, v, ts_arena_printf(ctx->arena, "%s.%s", env->path, name),
                    "must be %s, got %s", hint,
                    v->type == SPEC_NODE_SCALAR ? "nothing"
                    : v->type == SPEC_NODE_MAP  ? "a mapping"
                                                : "a list");
        return NULL;
    }
    return v->value;
}

/* apiVersion and kind; the kind, or NULL after reporting. */
static const struct spec_kind *envelope_kind(struct spec_ctx *ctx, const struct spec_node *root,
                                             const struct envelope *env,
                                             const struct spec_kind *kinds, size_t nkinds)
{
    const char *api = envelope_string(ctx, root, env, ENV_API, TS_API_VERSION);
    if (!api)
        return NULL;
    if (strcmp(api, TS_API_VERSION) != 0) {
        spec_report(ctx, env->value[ENV_API],
                    ts_arena_printf(ctx->arena, "%s.apiVersion", env->path),
                    "must be %s, got '%.60s'", TS_API_VERSION, api);
        return NULL;
    }
    char list[200] = "";
    for (size_t i = 0; i < nkinds; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", kinds[i].kind);
    }
    const char *hint = ts_arena_printf(ctx->arena, "one of %s", list);
    const char *kind = envelope_string(ctx, root, env, ENV_KIND, hint);
    if (!kind)
        return NULL;
    const struct spec_kind *k = find_kind(kinds, nkinds, kind);
    if (!k)
        spec_report(ctx, env->value[ENV_KIND], ts_arena_printf(ctx->arena, "%s.kind", env->path),
                    "must be %s; got '%.40s'", hint, kind);
    return k;
}

/* metadata.name, or NULL after reporting; *at gets the name's node. */
static const char *envelope_name(struct spec_ctx *ctx, const struct spec_node *root,
                                 const struct envelope *env, const struct spec_node **at)
{
    const struct spec_node *v = env->value[ENV_META];
    if (!v) {
        spec_report(ctx, root, env->path, "missing required field 'metadata' (with a name)");
        return NULL;
    }
    struct metadata md = {0};
    const char *path = ts_arena_printf(ctx->arena, "%s.metadata", env->path);
    if (spec_schema_read(ctx, v, &metadata_schema, &md, path) != 0)
        return NULL;
    *at = spec_node_get(v, "name");
    return md.name;
}

static void read_document(struct spec_ctx *ctx, const struct spec_doc *doc,
                          const struct spec_kind *kinds, size_t nkinds, size_t index,
                          struct objlist *out)
{
    const struct spec_node *root = doc->root;
    if (!root)
        return; /* an empty document, e.g. a trailing '---' */
    struct envelope env = {{0}, {0}, ts_arena_printf(ctx->arena, "documents[%zu]", index)};
    if (root->type != SPEC_NODE_MAP) {
        spec_report(ctx, root, env.path,
                    "a document must be a mapping with apiVersion, kind, "
                    "metadata and spec");
        return;
    }
    int bad = 0;
    for (size_t i = 0; i + 1 < root->count; i += 2)
        bad += envelope_key(ctx, root->items[i], root->items[i + 1], &env);
    const struct spec_kind *k = envelope_kind(ctx, root, &env, kinds, nkinds);
    if (!k)
        return;
    const struct spec_node *name_node = NULL;
    const char *name = envelope_name(ctx, root, &env, &name_node);
    const struct spec_node *spec = env.value[ENV_SPEC];
    if (!spec) {
        spec_report(ctx, root, env.path, "missing required field 'spec'");
        return;
    }
    /* a bad envelope or name does not hide the errors of the spec under it:
     * it is read all the same (its paths then name the document), not kept */
    const char *label = name ? ts_arena_printf(ctx->arena, "%s/%s", k->kind, name) : env.path;
    struct spec_object o = {k, ts_arena_alloc(ctx->arena, k->schema->size), name, {0}};
    if (!o.obj || !label)
        return;
    const char *path = ts_arena_printf(ctx->arena, "%s.spec", label);
    if (name) {
        o.loc = (struct spec_loc){ctx->file, name_node->line, name_node->column,
                                  ts_arena_printf(ctx->arena, "%s.metadata.name", label)};
        *(const char **)((char *)o.obj + k->name_off) = name;
    }
    if (spec_schema_read(ctx, spec, k->schema, o.obj, path) == 0 && !bad && name)
        push_object(ctx->arena, out, &o, spec);
}

static void load_text(const char *text, size_t len, const char *name, const struct spec_kind *kinds,
                      size_t nkinds, struct ts_arena *arena, struct objlist *out,
                      struct ts_diag *diag)
{
    struct spec_doc *docs = NULL;
    size_t ndocs = 0;
    struct ts_error e;
    const char *fname = ts_arena_strdup(arena, name);
    if (spec_yaml_parse(text, len, fname, arena, &docs, &ndocs, &e) != TS_OK) {
        ts_diag_add(diag, &e);
        return;
    }
    size_t used = 0;
    for (size_t i = 0; i < ndocs; i++)
        used += docs[i].root != NULL;
    if (used == 0) {
        ts_diag_addf(diag, TS_SEV_ERROR, TS_INVALID, fname, 0, 0, NULL,
                     "the file holds no YAML "
                     "documents (it is empty or only comments)");
        return;
    }
    struct spec_ctx ctx = {arena, fname, diag};
    for (size_t i = 0; i < ndocs; i++)
        read_document(&ctx, &docs[i], kinds, nkinds, i, out);
}

static void load_files(const char *const *paths, size_t npaths, const struct spec_kind *kinds,
                       size_t nkinds, struct ts_arena *arena, struct objlist *l,
                       struct ts_diag *diag)
{
    for (size_t i = 0; i < npaths; i++) {
        char *text = NULL;
        size_t len = 0;
        struct ts_error e;
        if (ts_file_read(paths[i], SPEC_FILE_MAX, &text, &len, &e) != TS_OK) {
            ts_diag_add(diag, &e);
            continue;
        }
        const char *name = strcmp(paths[i], "-") == 0 ? "<stdin>" : paths[i];
        load_text(text, len, name, kinds, nkinds, arena, l, diag);
        free(text);
    }
}

static ts_status loaded(const struct objlist *l, struct spec_object **objs, size_t *nobjs,
                        const struct ts_diag *diag)
{
    *objs = l->items;
    *nobjs = l->count;
    return diag->count || diag->dropped ? TS_INVALID : TS_OK;
}

ts_status spec_load_objects_text(const char *text, size_t len, const char *name,
                                 const struct spec_kind *kinds, size_t nkinds,
                                 struct ts_arena *arena, struct spec_object **objs, size_t *nobjs,
                                 struct ts_diag *diag)
{
    struct objlist l = {0};
    load_text(text, len, name, kinds, nkinds, arena, &l, diag);
    return loaded(&l, objs, nobjs, diag);
}

ts_status spec_load_objects(const char *const *paths, size_t npaths, const struct spec_kind *kinds,
                            size_t nkinds, struct ts_arena *arena, struct spec_object **objs,
                            size_t *nobjs, struct ts_diag *diag)
{
    struct objlist l = {0};
    load_files(paths, npaths, kinds, nkinds, arena, &l, diag);
    return loaded(&l, objs, nobjs, diag);
}

/* ---- list items the model keeps as plain strings ----
 * A tenant's namespaces and trusts are bare strings in the model, so the
 * rules about them run here, on the YAML nodes, and point at the item. */

static int is_tenant(const struct objlist *l, size_t i)
{
    return strcmp(l->items[i].kind->kind, "Tenant") == 0;
}

static const struct spec_node *tenant_item(const struct objlist *l, size_t i, const char *key,
                                           size_t j)
{
    const struct spec_node *list = spec_node_get(l->specs[i], key);
    return list && j < list->count ? list->items[j] : NULL;
}

static void report_item(struct ts_arena *a, struct ts_diag *diag, const struct objlist *l, size_t i,
                        const char *key, size_t j, const char *msg)
{
    const struct spec_node *n = tenant_item(l, i, key, j);
    const struct spec_tenant *t = l->items[i].obj;
    struct spec_loc loc = {t->loc.file, n->line, n->column,
                           ts_arena_printf(a, "%s.%s[%zu]", t->loc.path, key, j)};
    spec_report_loc(diag, &loc, "%s", msg);
}

/* A namespace listed by an earlier tenant: reported at the later one, naming
 * the first tenant that lists it (a tenant listing one twice is not this
 * rule's). */
static void check_namespace_owners(struct ts_arena *a, const struct objlist *l,
                                   struct ts_diag *diag)
{
    size_t n = 0;
    for (size_t i = 0; i < l->count; i++)
        n += is_tenant(l, i) ? ((const struct spec_tenant *)l->items[i].obj)->nnamespaces : 0;
    const char **names = ts_arena_array(a, n ? n : 1, sizeof(*names));
    size_t *of = ts_arena_array(a, n ? n : 1, sizeof(*of)); /* the tenant of names[k] */
    for (size_t i = 0, k = 0; names && of && i < l->count; i++) {
        const struct spec_tenant *t = l->items[i].obj;
        for (size_t j = 0; is_tenant(l, i) && j < t->nnamespaces; j++, k++) {
            names[k] = t->namespaces[j];
            of[k] = i;
        }
    }
    size_t *first = spec__first_same(a, of ? names : NULL, n, diag);
    if (!first)
        return;
    for (size_t i = 0, k = 0; i < l->count; i++) {
        const struct spec_tenant *t = l->items[i].obj;
        for (size_t j = 0; is_tenant(l, i) && j < t->nnamespaces; j++, k++) {
            if (of[first[k]] == i)
                continue;
            const struct spec_object *owner = &l->items[of[first[k]]];
            report_item(a, diag, l, i, "namespaces", j,
                        ts_arena_printf(a,
                                        "'%s' already "
                                        "belongs to tenant '%s' (%s:%d); a namespace has one owner",
                                        t->namespaces[j], owner->name, owner->loc.file,
                                        owner->loc.line));
        }
    }
}

static int tenant_exists(const struct objlist *l, const char *name)
{
    for (size_t i = 0; i < l->count; i++)
        if (is_tenant(l, i) && strcmp(l->items[i].name, name) == 0)
            return 1;
    return 0;
}

/* all: every tenant loaded, so one that is not there does not exist (when
 * some documents had errors, only a tenant trusting itself is reported). */
static void check_trusts(struct ts_arena *a, const struct objlist *l, int all, struct ts_diag *diag)
{
    for (size_t i = 0; i < l->count; i++) {
        const struct spec_tenant *t = l->items[i].obj;
        for (size_t j = 0; is_tenant(l, i) && j < t->ntrusts; j++) {
            if (strcmp(t->trusts[j], t->name) == 0)
                report_item(a, diag, l, i, "trusts", j, "a tenant need not list itself");
            else if (all && !tenant_exists(l, t->trusts[j]))
                report_item(a, diag, l, i, "trusts", j,
                            ts_arena_printf(a, "no tenant named '%s'", t->trusts[j]));
        }
    }
}

/* ---- the tenancy spec ---- */

/* The cross-document rules on the objects that read cleanly, so one run
 * reports every error of the files; when all did, the model is assembled. */
static ts_status finish_load(struct spec_model *m, const struct objlist *l, struct spec_model **out,
                             struct ts_diag *diag, int keep)
{
    int clean = diag->count == 0 && diag->dropped == 0;
    if (clean)
        spec_model_assemble(m, l->items, l->count, diag);
    check_namespace_owners(&m->arena, l, diag);
    check_trusts(&m->arena, l, clean, diag);
    if (diag->count || diag->dropped) {
        if (keep && clean)
            *out = m;
        else
            spec_model_free(m);
        return TS_INVALID;
    }
    *out = m;
    return TS_OK;
}

static struct spec_model *new_model(void)
{
    struct spec_model *m = calloc(1, sizeof(*m));
    if (m)
        ts_arena_init(&m->arena);
    return m;
}

static ts_status no_memory(struct ts_diag *diag)
{
    struct ts_error e;
    ts_err(&e, TS_NOMEM, "out of memory");
    ts_diag_add(diag, &e);
    return TS_NOMEM;
}

static ts_status load_paths(const char *const *paths, size_t npaths, struct spec_model **out,
                            struct ts_diag *diag, int keep)
{
    struct spec_model *m = new_model();
    if (!m)
        return no_memory(diag);
    struct objlist l = {0};
    load_files(paths, npaths, spec__kinds, spec__nkinds, &m->arena, &l, diag);
    return finish_load(m, &l, out, diag, keep);
}

ts_status spec_load(const char *const *paths, size_t npaths, struct spec_model **out,
                    struct ts_diag *diag)
{
    return load_paths(paths, npaths, out, diag, 0);
}

ts_status spec_load_for_report(const char *const *paths, size_t npaths, struct spec_model **out,
                               struct ts_diag *diag)
{
    *out = NULL;
    return load_paths(paths, npaths, out, diag, 1);
}

ts_status spec_load_text(const char *text, size_t len, const char *name, struct spec_model **out,
                         struct ts_diag *diag)
{
    struct spec_model *m = new_model();
    if (!m)
        return no_memory(diag);
    struct objlist l = {0};
    load_text(text, len, name, spec__kinds, spec__nkinds, &m->arena, &l, diag);
    return finish_load(m, &l, out, diag, 0);
}

void spec_model_free(struct spec_model *m)
{
    if (!m)
        return;
    ts_arena_free(&m->arena);
    free(m);
}

void spec_doc_reference(struct ts_sbuf *out)
{
    for (size_t i = 0; i < spec__nkinds; i++)
        spec_schema_doc(out, spec__kinds[i].schema);
}
