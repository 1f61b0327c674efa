/*
 * jsonwrite.h - a JSON document as text into a string builder: the one way
 * tessera writes its JSON documents (plan, NodeInventory, invoice).
 */
#ifndef TS_JSONWRITE_H
#define TS_JSONWRITE_H

#include <jansson.h>
#include "util/sbuf.h"

/* Append doc as json_dumps(doc, flags) text and a newline to out. doc is
 * not taken (NULL allowed: a document that could not be built). TS_NOMEM,
 * with out marked failed, when there is no text; else ts_sbuf_status. */
ts_status ts_json_write(const json_t *doc, size_t flags, struct ts_sbuf *out);

#endif
