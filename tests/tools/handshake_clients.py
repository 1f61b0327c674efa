#!/usr/bin/env python3
"""handshake_clients.py - clients that are slow around the TLS handshake,
for tests/cli/webhook_handshake.sh. Loopback only, bounded in time.

  late PORT CA WAIT N   TCP connect, wait WAIT s, then handshake and send
                        GET /healthz slowly (N header lines, one a
                        second); prints the HTTP status line, or "cut"
                        when the server closed it
  trickle PORT LIMIT    start a TLS record and send one byte a second of it
                        (never a whole ClientHello); prints the seconds until
                        the server closed it (or LIMIT+ when it did not)
"""
import socket
import ssl
import sys
import time


def late(port, ca, wait, lines):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    time.sleep(wait)
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    try:
        tls = ctx.wrap_socket(sock, server_hostname="localhost")
        tls.sendall(b"GET /healthz HTTP/1.1\r\n")
        for i in range(lines):
            time.sleep(1.0)
            tls.sendall(b"X-Slow-%d: 1\r\n" % i)
        tls.sendall(b"Host: 127.0.0.1\r\nConnection: close\r\n")
        tls.sendall(b"\r\n")
        data = tls.recv(4096)
    except (OSError, ssl.SSLError):
        data = b""
    print(data.split(b"\r\n")[0].decode() if data else "cut")


def trickle(port, limit):
    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
    start = time.monotonic()
    sock.sendall(b"\x16\x03\x01\x02\x00")  # a handshake record of 512 bytes...
    while time.monotonic() - start < limit:
        try:
            sock.sendall(b"\x01")  # ...that never ends
            sock.settimeout(1.0)
            if sock.recv(1) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    took = time.monotonic() - start
    print(f"{took:.1f}" if took < limit else f"{limit}+")


if __name__ == "__main__":
    if sys.argv[1] == "late":
        late(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
    else:
        trickle(int(sys.argv[2]), float(sys.argv[3]))
