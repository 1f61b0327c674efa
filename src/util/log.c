/*
 * log.c - structured log lines to stderr (log.h): `ts=... level=... msg=...
 * k=v` with values quoted when they hold spaces or quotes, or one JSON
 * object a line (--log-format json). Each line goes out in one write(2), so
 * lines from different threads never interleave.
 */
#include "util/log.h"
#include "util/sbuf.h"

#include <jansson.h>
#include "util/jsonfree.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void timestamp(char *buf, size_t size)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%03ldZ", (long)(tv.tv_usec / 1000));
}

static void text_value(struct ts_sbuf *b, const char *v)
{
    if (*v && !strpbrk(v, " \"=\n\t\\")) {
        ts_sbuf_puts(b, v);
        return;
    }
    ts_sbuf_puts(b, "\"");
    for (; *v; v++) {
        if (*v == '"' || *v == '\\')
            ts_sbuf_add(b, "\\", 1);
        if (*v == '\n')
            ts_sbuf_puts(b, "\\n");
        else
            ts_sbuf_add(b, v, 1);
    }
    ts_sbuf_puts(b, "\"");
}

void ts_log(int json, const char *level, const char *msg, const struct ts_log_kv *kv, size_t n)
{
    char ts[64];
    timestamp(ts, sizeof(ts));
    struct ts_sbuf b;
    ts_sbuf_init(&b, 64 * 1024);
    if (json) {
        json_t *o = json_pack("{s:s, s:s, s:s}", "ts", ts, "level", level, "msg", msg);
        for (size_t i = 0; o && i < n; i++)
            json_object_set_new(o, kv[i].key, json_string(kv[i].value ? kv[i].value : ""));
        char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (text)
            ts_sbuf_puts(&b, text);
        json_free_text(text);
        json_decref(o);
    } else {
        ts_sbuf_printf(&b, "ts=%s level=%s msg=", ts, level);
        text_value(&b, msg);
        for (size_t i = 0; i < n; i++) {
            ts_sbuf_printf(&b, " %s=", kv[i].key);
            text_value(&b, kv[i].value ? kv[i].value : "");
        }
    }
    ts_sbuf_puts(&b, "\n");
    if (ts_sbuf_status(&b) == TS_OK && write(2, b.data, b.len) < 0)
        b.failed = 1; /* nowhere left to report it */
    ts_sbuf_release(&b);
}
