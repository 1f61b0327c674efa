/*
 * addr.c - the listen addresses of the HTTP servers (serve's --listen and
 * --health-listen, agent watch's --listen): addr.h.
 */
#include "util/addr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ts_listen_parse(const char *text, struct sockaddr_storage *sa, int *v6)
{
    char host[128] = "0.0.0.0";
    const char *colon = strrchr(text, ':');
    if (!colon || colon - text >= (long)sizeof(host))
        return 0;
    if (colon > text) {
        const char *h = text, *e = colon;
        if (*h == '[' && e[-1] == ']') {
            h++;
            e--;
        }
        snprintf(host, sizeof(host), "%.*s", (int)(e - h), h);
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535)
        return 0;
    memset(sa, 0, sizeof(*sa));
    struct sockaddr_in *a4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)sa;
    *v6 = strchr(host, ':') != NULL;
    if (*v6) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        return inet_pton(AF_INET6, host, &a6->sin6_addr) == 1;
    }
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &a4->sin_addr) == 1;
}
