#!/usr/bin/env python3
"""webhook_clients.py - hostile and heavy TLS clients for tests/cli/webhook_robust.sh.

    slow PORT CA SECONDS ADDR...   slow-header and slow-body clients (200 threads, spread
                                   over the source ADDRs) that reconnect when cut; prints
                                   "peak N cut N refused N" (peak: connections held at once)
    bodies PORT CA N LENGTH        N connections that declare a LENGTH-byte review and hold
                                   it unsent, then one more; prints the extra one's status
                                   line, and after sending every body in full, their codes
    many PORT CA N STOPFILE BODY ADDR...
                                   N keep-alive connections (spread over the ADDRs), each
                                   POSTing BODY about every 2 s until STOPFILE exists (at
                                   most 120 s); prints "ready" once all N are connected,
                                   then "connected N answered N failed N"
    fat PORT CA N STOPFILE HEADERKB ADDR...
                                   N connections that each send a request line and
                                   HEADERKB KiB of headers, then a header line every 2 s
                                   until STOPFILE exists (at most 120 s): what slow-header
                                   clients make the server hold; prints "ready" once all
                                   N have sent their headers, then "held N cut N failed N"
Loopback only; every socket has a timeout.
"""
import asyncio
import os
import random
import select
import socket
import ssl
import sys
import threading
import time


def context(ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    return ctx


def slow(port, ca, seconds, addrs):
    ctx = context(ca)
    lock = threading.Lock()
    st = {"held": 0, "peak": 0, "cut": 0, "refused": 0}
    end = time.time() + seconds

    def once(addr, body):
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=3,
                                           source_address=(addr, 0))
            s = ctx.wrap_socket(raw)
        except (OSError, ssl.SSLError):
            with lock:
                st["refused"] += 1
            time.sleep(0.05)
            return
        with lock:
            st["held"] += 1
            st["peak"] = max(st["peak"], st["held"])
        try:
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\n")
            if body:
                s.sendall(b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
            while time.time() < end:
                s.sendall(b"a" if body else b"X-Slow: 1\r\n")
                if select.select([s], [], [], 1)[0] and not s.recv(1):
                    raise ConnectionResetError  # cut: reconnect at once
        except (OSError, ssl.SSLError):
            with lock:
                st["cut"] += 1
        finally:
            with lock:
                st["held"] -= 1
            s.close()

    def client(i):
        while time.time() < end:
            once(addrs[i % len(addrs)], i % 5 == 4)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("peak", st["peak"], "cut", st["cut"], "refused", st["refused"], flush=True)


def status_line(s):
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n")[0].decode(errors="replace")


def bodies(port, ca, n, length):
    ctx = context(ca)
    head = ("POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % length).encode()
    held = []
    for i in range(n + 1):
        if i == n:  # the n are in the server's budget before the extra one asks
            time.sleep(1.0)
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))
        s.sendall(head)
        held.append(s)
    time.sleep(0.3)
    print("extra", status_line(held[-1]), flush=True)
    prefix = b'{"kind": "x", "pad": "'
    body = prefix + b"x" * (length - len(prefix) - 2) + b'"}'
    codes = []
    for s in held[:-1]:
        s.sendall(body)
    for s in held[:-1]:
        codes.append((status_line(s).split(" ") + ["none", "none"])[1])
        s.close()
    held[-1].close()
    print("held", " ".join(codes), flush=True)


def running(stop, end):
    return time.time() < end and not os.path.exists(stop)


async def keepalive(port, ctx, addr, body, stop, end, st, ready):
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(
            "127.0.0.1", port, ssl=ctx, local_addr=(addr, 0)), 20)
    except (OSError, ssl.SSLError, asyncio.TimeoutError):
        st["failed"] += 1
        ready()
        return
    st["connected"] += 1
    ready()
    req = ("POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: %d\r\n\r\n" % len(body)).encode() + body
    try:
        while running(stop, end):
            w.write(req)
            line = await asyncio.wait_for(r.readline(), 10)
            length = 0
            while True:
                h = await asyncio.wait_for(r.readline(), 10)
                if h in (b"\r\n", b""):
                    break
                if h.lower().startswith(b"content-length:"):
                    length = int(h.split(b":")[1])
            await asyncio.wait_for(r.readexactly(length), 10)
            if line.split(b" ")[1:2] == [b"200"]:
                st["answered"] += 1
            else:
                st["failed"] += 1
            for _ in range(int(10 + 10 * random.random())):  # 1-2 s, or stop
                if not running(stop, end):
                    break
                await asyncio.sleep(0.1)
    except (OSError, ssl.SSLError, asyncio.TimeoutError, asyncio.IncompleteReadError):
        st["failed"] += 1
    w.close()


async def crowd(n, addrs, one):
    """Run one(addr, ready) for n clients spread over addrs, started 50 at a
    time (a steady stream of handshakes, not one burst); prints "ready" once
    every client has called ready()."""
    left = [n]

    def ready():
        left[0] -= 1
        if left[0] == 0:
            print("ready", flush=True)

    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(one(addrs[i % len(addrs)], ready)))
        if i % 50 == 49:
            await asyncio.sleep(0.25)
    await asyncio.gather(*tasks)


async def many(port, ca, n, stop, body, addrs):
    ctx = context(ca)
    st = {"connected": 0, "answered": 0, "failed": 0}
    end = time.time() + 120
    await crowd(n, addrs, lambda addr, ready:
                keepalive(port, ctx, addr, body, stop, end, st, ready))
    print("connected", st["connected"], "answered", st["answered"], "failed", st["failed"],
          flush=True)


async def fat_one(port, ctx, addr, kb, stop, end, st, ready):
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(
            "127.0.0.1", port, ssl=ctx, local_addr=(addr, 0)), 20)
        w.write(b"POST /validate HTTP/1.1\r\nHost: x\r\n" +
                b"".join(b"X-Fat-%d: %s\r\n" % (i, b"a" * 1000) for i in range(kb)))
        await asyncio.wait_for(w.drain(), 20)
    except (OSError, ssl.SSLError, asyncio.TimeoutError):
        st["failed"] += 1
        ready()
        return
    st["held"] += 1
    ready()
    try:
        i = 0
        while running(stop, end):
            await asyncio.sleep(2)
            w.write(b"X-Slow-%d: 1\r\n" % i)
            i += 1
            await asyncio.wait_for(w.drain(), 10)
            if r.at_eof():
                raise OSError("closed")
    except (OSError, ssl.SSLError, asyncio.TimeoutError):
        st["cut"] += 1
    w.close()


async def fat(port, ca, n, stop, kb, addrs):
    ctx = context(ca)
    st = {"held": 0, "cut": 0, "failed": 0}
    end = time.time() + 120
    await crowd(n, addrs, lambda addr, ready: fat_one(port, ctx, addr, kb, stop, end, st, ready))
    print("held", st["held"], "cut", st["cut"], "failed", st["failed"], flush=True)


def main(argv):
    cmd, port, ca = argv[1], int(argv[2]), argv[3]
    if cmd == "slow":
        slow(port, ca, float(argv[4]), argv[5:])
    elif cmd == "bodies":
        bodies(port, ca, int(argv[4]), int(argv[5]))
    elif cmd == "many":
        body = open(argv[6], "rb").read()
        asyncio.run(many(port, ca, int(argv[4]), argv[5], body, argv[7:]))
    elif cmd == "fat":
        asyncio.run(fat(port, ca, int(argv[4]), argv[5], int(argv[6]), argv[7:]))
    else:
        sys.exit("usage: webhook_clients.py slow|bodies|many|fat ...")


if __name__ == "__main__":
    main(sys.argv)
