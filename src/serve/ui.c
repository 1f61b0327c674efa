/*
 * ui.c - the console under /ui/: the files of src/serve/ui/, compiled in by
 * cmake/embed-ui.cmake, served with their content type and the security
 * headers every console response carries (a CSP that allows only this
 * origin's files, no inline script or style, no framing; nosniff). The
 * pages call /api/v1/ with a bearer token kept in the browser's
 * sessionStorage; nothing here reads an identity (docs/console.md).
 */
#include "serve/internal.h"

#include <string.h>

/* Only this origin's scripts, styles and API; no plugins, no <base>, never
 * inside a frame. */
#define UI_CSP                                                                     \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "    \
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; " \
    "frame-ancestors 'none'"

static const struct {
    const char *name, *value;
} ui_headers[] = {
    {"Content-Security-Policy", UI_CSP},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"Referrer-Policy", "no-referrer"},
    {"Cross-Origin-Opener-Policy", "same-origin"},
    {"Cache-Control", "no-cache"},
};

static const struct {
    const char *ext, *type;
} ui_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".json", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
};

void serve_ui_secure(struct MHD_Response *r)
{
    for (size_t i = 0; i < sizeof(ui_headers) / sizeof(ui_headers[0]); i++)
        MHD_add_response_header(r, ui_headers[i].name, ui_headers[i].value);
}

static const char *ui_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(ui_types) / sizeof(ui_types[0]); i++)
        if (strcmp(dot, ui_types[i].ext) == 0)
            return ui_types[i].type;
    return "application/octet-stream";
}

static const struct serve_asset *ui_find(const char *name)
{
    for (size_t i = 0; i < serve_ui_nassets; i++)
        if (strcmp(serve_ui_assets[i].name, name) == 0)
            return &serve_ui_assets[i];
    return NULL;
}

static enum MHD_Result ui_send(struct MHD_Connection *conn, unsigned status, const char *type,
                               const void *body, size_t len, const char *location)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    if (location)
        MHD_add_response_header(r, "Location", location);
    serve_ui_secure(r);
    return serve_queue(conn, status, r);
}

int serve_ui_path(const char *url)
{
    return strcmp(url, "/ui") == 0 || strncmp(url, "/ui/", 4) == 0;
}

enum MHD_Result serve_ui_get(struct MHD_Connection *conn, const char *url)
{
    static const char moved[] = "see /ui/\n", missing[] = "not found\n";
    if (strcmp(url, "/ui") == 0)
        return ui_send(conn, MHD_HTTP_PERMANENT_REDIRECT, "text/plain; charset=utf-8", moved,
                       sizeof(moved) - 1, "/ui/");
    const char *name = url[4] ? url + 4 : "index.html";
    const struct serve_asset *a = ui_find(name);
    if (!a)
        return ui_send(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", missing,
                       sizeof(missing) - 1, NULL);
    return ui_send(conn, MHD_HTTP_OK, ui_type(a->name), a->data, a->len, NULL);
}
