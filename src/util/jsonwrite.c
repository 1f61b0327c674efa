/*
 * jsonwrite.c - see jsonwrite.h.
 */
#include "util/jsonwrite.h"

#include "util/jsonfree.h"

ts_status ts_json_write(const json_t *doc, size_t flags, struct ts_sbuf *out)
{
    char *text = doc ? json_dumps(doc, flags) : NULL;
    if (!text) {
        out->failed = TS_NOMEM;
        return TS_NOMEM;
    }
    ts_sbuf_puts(out, text);
    ts_sbuf_puts(out, "\n");
    json_free_text(text);
    return ts_sbuf_status(out);
}
