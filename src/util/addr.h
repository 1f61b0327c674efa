/*
 * addr.h - parsing a listen address, "ADDR:PORT", "[ADDR6]:PORT" or ":PORT"
 * (all IPv4 interfaces), for every command that serves HTTP.
 */
#ifndef UTIL_ADDR_H
#define UTIL_ADDR_H

#include <sys/socket.h>

/* 1 and *sa (and *v6: an IPv6 address) when text is one, else 0. */
int ts_listen_parse(const char *text, struct sockaddr_storage *sa, int *v6);

#endif
