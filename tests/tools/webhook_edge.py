#!/usr/bin/env python3
"""webhook_edge.py - raw TLS clients at the edges of `tessera serve`'s HTTP, for
tests/cli/webhook_framing.sh and webhook_bodies.sh. Loopback only; every wait
is bounded.

    raw PORT CA REQUEST        send REQUEST (Python escapes: \\r\\n) on one TLS
                               connection, read until the server closes it (at
                               most 10 s); prints the status line of each answer
                               (each read by its Content-Length) with its
                               Connection header, "and N bytes more" when bytes
                               follow that are no answer, then "closed" or "open"
                               (still open at 10 s)
    hog PORT CA LENGTH RATE SECONDS STOPFILE ADDR...
                               one connection from each ADDR (in order) declaring
                               a LENGTH-byte POST /validate, then (half a second
                               after its headers: a 429 comes before that, and
                               nothing sent after one can reset it unread) sending
                               its body at RATE bytes a second from its headers on
                               (1: a byte a second) until
                               SECONDS pass or STOPFILE exists; prints
                               "refused N held N cut N answered N first_cut S"
                               (refused: answered 429 at once; cut: closed by the
                               server before its body was sent, first_cut the
                               soonest such close in seconds after its headers,
                               "none" if none was)
"""
import os
import select
import socket
import ssl
import sys
import time

GRACE = 0.5  # seconds before a hog sends its first body byte


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


class Hog:
    def __init__(self, port, ctx, addr, length):
        raw_sock = socket.create_connection(("127.0.0.1", port), timeout=10,
                                            source_address=(addr, 0))
        self.s = ctx.wrap_socket(raw_sock)
        self.s.sendall(("POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                        "\r\nContent-Length: %d\r\n\r\n" % length).encode())
        self.start, self.sent, self.length = time.time(), 0, length
        self.state, self.when = "held", None

    def feed(self, rate, now):
        """Send what RATE owes by now, counted from the headers, after GRACE."""
        if now - self.start < GRACE:
            return
        due = min(self.length, int(rate * (now - self.start)))
        if due > self.sent:
            self.s.sendall(b"x" * (due - self.sent))
            self.sent = due

    def poll(self, now):
        """Note an answer (429 or other) or a close by the server."""
        if not select.select([self.s], [], [], 0)[0]:
            return
        try:
            data = self.s.recv(4096)
        except (OSError, ssl.SSLError):
            data = b""
        if data.startswith(b"HTTP/1.1 429"):
            self.state = "refused"
        elif data:
            self.state = "answered"
        else:
            self.state, self.when = "cut", now - self.start


def hog(port, ca, length, rate, seconds, stop, addrs):
    ctx = context(ca)
    hogs = [Hog(port, ctx, a, length) for a in addrs]
    end = time.time() + seconds
    while time.time() < end and not os.path.exists(stop):
        live = [h for h in hogs if h.state == "held"]
        if not live:
            break
        now = time.time()
        for h in live:
            h.poll(now)
            try:
                if h.state == "held":
                    h.feed(rate, now)
            except (OSError, ssl.SSLError):
                h.state, h.when = "cut", now - h.start
        time.sleep(0.1)
    count = {k: sum(h.state == k for h in hogs) for k in ("refused", "held", "cut", "answered")}
    cuts = [h.when for h in hogs if h.when is not None]
    print("refused %(refused)d held %(held)d cut %(cut)d answered %(answered)d" % count,
          "first_cut", "%.1f" % min(cuts) if cuts else "none", flush=True)
    for h in hogs:
        h.s.close()


def main(argv):
    cmd, port, ca = argv[1], int(argv[2]), argv[3]
    if cmd == "raw":
        raw(port, ca, argv[4])
    elif cmd == "hog":
        hog(port, ca, int(argv[4]), float(argv[5]), float(argv[6]), argv[7], argv[8:])
    else:
        sys.exit("usage: webhook_edge.py raw|hog ...")


if __name__ == "__main__":
    main(sys.argv)
