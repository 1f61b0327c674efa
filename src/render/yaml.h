/*
 * yaml.h - writing JSON-shaped values (jansson) as YAML documents.
 *
 * The renderer builds every Kubernetes object as a jansson tree and writes
 * it here, so all output shares one set of rules: keys sorted, two-space
 * block style, strings quoted exactly when a YAML 1.1 reader would take
 * them for something else ("true", "on", "10", "1e3", "~", "", "2026-11-30"), integers
 * and reals written as numbers. The same object always gives the same bytes.
 */
#ifndef RENDER_YAML_H
#define RENDER_YAML_H

#include <jansson.h>
#include "util/sbuf.h"

/* Append v as one YAML document (with a leading "---" when first is 0). */
ts_status render_yaml_doc(const json_t *v, int first, struct ts_sbuf *out);

/* 1 if s must be quoted to stay a string in YAML 1.1 and 1.2. */
int render_yaml_needs_quotes(const char *s);

#endif
