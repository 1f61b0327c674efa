/*
 * jsonread.h - reading fields of a parsed JSON document (jansson) into
 * fixed C types, each error naming the file and the field's JSON path
 * ("gpus[0].gpuInstances[2].placement.start"). Used by every strict JSON
 * reader of documents tessera itself writes (NodeInventory, plan JSON).
 */
#ifndef TS_JSONREAD_H
#define TS_JSONREAD_H

#include <stddef.h>
#include <jansson.h>
#include "util/error.h"

/* Where errors go: the input's file name ("" for none) and the error. */
struct ts_jread {
    const char *file;
    struct ts_error *err;
};

/* Parse text as one JSON document (duplicate keys refused) into *doc (the
 * caller's, json_decref it); a syntax error is TS_SYNTAX at file:line:col. */
ts_status ts_jread_load(const char *text, size_t len, const char *file, json_t **doc,
                        struct ts_error *err);

/* TS_INVALID at path with a printf message. */
ts_status ts_jread_bad(const struct ts_jread *r, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* v must be an object. */
ts_status ts_jread_obj(const struct ts_jread *r, json_t *v, const char *path);
/* o[key] must be an integer in [lo, hi]; path is o's path. */
ts_status ts_jread_ll(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                      long long lo, long long hi, long long *out);
ts_status ts_jread_int(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                       int lo, int hi, int *out);
/* o[key] must be a string shorter than size, without NUL bytes. */
ts_status ts_jread_str(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                       char *dst, size_t size);
/* o[key] must be an array of at most max items (TS_TOO_LARGE beyond); *out
 * is borrowed from o. */
ts_status ts_jread_arr(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                       size_t max, json_t **out);

/* path.key, or path.key[idx] when idx >= 0, into dst (cut to size). */
void ts_json_path(char *dst, size_t size, const char *path, const char *key, long idx);
/* Copy src (NULL: "") into dst of size bytes: cut if too long, always
 * NUL-terminated. */
void ts_copy(char *dst, size_t size, const char *src);

#endif
