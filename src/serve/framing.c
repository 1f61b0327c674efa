/*
 * framing.c - a request must say one way where its body ends (RFC 9112
 * section 6.3). libmicrohttpd reads the first Content-Length and lets
 * Transfer-Encoding win over it; a parser in front of the webhook (or the
 * client) may read another, and what one side takes for the body's end the
 * other takes for the start of a second request (request smuggling). So a
 * request with both, with Content-Length headers that differ, with a
 * transfer coding other than chunked, or with a header name that is not a
 * token (a space before the colon, a folded line libmicrohttpd glues to the
 * name) is refused: server.c answers 400 and closes the connection. A
 * Content-Length that is not plain digits (a list "5, 6", "+5") is
 * libmicrohttpd's own 400, with the connection closed, before this sees it.
 */
#include "serve/internal.h"

#include <string.h>
#include <strings.h>

struct framing {
    const char *length;   /* the first Content-Length */
    const char *encoding; /* the last Transfer-Encoding */
    int lengths_differ, encodings, bad_name;
};

/* RFC 9110's token: the characters a header name may have. */
static int is_token(const char *s, size_t n)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~0123456789"
                                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    return n > 0 && strlen(s) == n && strspn(s, tchar) == n;
}

static enum MHD_Result one_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)value_size;
    struct framing *f = cls;
    const char *v = value ? value : "";
    if (!is_token(key, key_size)) {
        f->bad_name = 1;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        f->lengths_differ |= f->length && strcmp(f->length, v) != 0;
        if (!f->length)
            f->length = v;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->encodings++;
        f->encoding = v;
    }
    return MHD_YES;
}

const char *serve_framing_fault(struct MHD_Connection *conn, const char *version)
{
    struct framing f = {NULL, NULL, 0, 0, 0};
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, one_header, &f);
    if (f.bad_name)
        return "a header name that is not a token";
    if (f.lengths_differ)
        return "Content-Length headers that differ";
    if (f.encodings && f.length)
        return "both Content-Length and Transfer-Encoding";
    if (f.encodings > 1 || (f.encodings && strcasecmp(f.encoding, "chunked") != 0))
        return "a Transfer-Encoding other than chunked";
    if (f.encodings && strcmp(version, MHD_HTTP_VERSION_1_0) == 0)
        return "Transfer-Encoding in an HTTP/1.0 request";
    return NULL;
}
