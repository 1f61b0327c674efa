#!/usr/bin/env python3
"""webhook_edge.py - raw TLS clients at the edges of `tessera serve`'s HTTP, for
tests/cli/webhook_framing.sh. Loopback only; every wait is bounded.

    raw PORT CA REQUEST        send REQUEST (Python escapes: \\r\\n) on one TLS
                               connection, read until the server closes it (at
                               most 10 s); prints the status line of each answer
                               (each read by its Content-Length) with its
                               Connection header, "and N bytes more" when bytes
                               follow that are no answer, then "closed" or "open"
                               (still open at 10 s)
"""
import socket
import ssl
import sys
import time


def context(ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    return ctx


def answers(data):
    """The responses in data as (status line, Connection header), each read
    by its Content-Length, and the count of bytes left after them."""
    out = []
    while b"\r\n\r\n" in data and data.startswith(b"HTTP/1."):
        head, data = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        fields = dict(l.split(": ", 1) for l in lines[1:] if ": " in l)
        data = data[int(fields.get("Content-Length", "0")):]
        out.append((lines[0], fields.get("Connection", "")))
    return out, len(data)


def raw(port, ca, request):
    s = context(ca).wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))
    s.sendall(request.encode().decode("unicode_escape").encode("latin-1"))
    data, state, end = b"", "open", time.time() + 10
    while time.time() < end:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except (OSError, ssl.SSLError):
            chunk = b""
        if not chunk:
            state = "closed"
            break
        data += chunk
    got, rest = answers(data)
    for status, connection in got:
        print(status + (" (Connection: %s)" % connection if connection else ""))
    if rest:
        print("and %d bytes more" % rest)
    print(state)


def main(argv):
    cmd, port, ca = argv[1], int(argv[2]), argv[3]
    if cmd == "raw":
        raw(port, ca, argv[4])
    else:
        sys.exit("usage: webhook_edge.py raw ...")


if __name__ == "__main__":
    main(sys.argv)
