/*
 * log.h - the structured log every long-running command shares (serve,
 * meter scrape, agent watch): one line per event on stderr, either
 * `ts=... level=... msg=... k=v` (values quoted when they hold spaces,
 * quotes or '=') or one JSON object a line (--log-format json). The one
 * place outside src/cli that writes to stderr.
 */
#ifndef UTIL_LOG_H
#define UTIL_LOG_H

#include <stddef.h>

struct ts_log_kv {
    const char *key, *value; /* value NULL counts as "" */
};

/* One line, written with one write(2) so threads never interleave. */
void ts_log(int json, const char *level, const char *msg, const struct ts_log_kv *kv, size_t n);

#endif
