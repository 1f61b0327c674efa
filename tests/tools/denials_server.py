#!/usr/bin/python3
"""denials_server.py - a stand-in for the webhook's GET /denials (its probes'
port) that answers what tests/cli/split.sh asks for, good or hostile, to test
what `tessera console --denials-from` takes.

usage: denials_server.py PORT DIR

Every request reads DIR/mode (one word) and answers:
  good       one well-formed denial of client-c (uid hostile-good), dropped 2
  types      "dropped" a string
  item       a denial whose timeMs is a string and uid a number
  object     "denials" an object, not a list
  negative   "dropped" -1
  many       2,000 well-formed denials (the webhook keeps at most 1,024)
  big        a well-formed document padded to 5 MiB (the console reads at most 4 MiB)
  longmsg    one denial whose message is 2,000 bytes (a denial's message holds 1,023)
  mixed      one well-formed denial, then one without its rule
  html       an HTML page, not JSON
  status500  a well-formed document with HTTP 500
  slow       the good answer after 5 s (the console waits 2 s)
and adds one to DIR/count.
"""
import http.server
import json
import os
import sys
import time

PORT, DIR = int(sys.argv[1]), sys.argv[2]


def denial(i, **over):
    d = {"timeMs": 1793620800000 + i, "uid": "hostile-%d" % i, "kind": "Pod",
         "namespace": "client-c-prod", "tenant": "client-c", "rule": "privileged",
         "message": "container \"x\" is privileged"}
    d.update(over)
    return d


def body(mode):
    """(status, content type, bytes) for mode."""
    good = {"dropped": 2, "denials": [denial(0, uid="hostile-good")]}
    docs = {
        "good": good,
        "slow": good,
        "types": {"dropped": "0", "denials": []},
        "item": {"dropped": 0, "denials": [denial(0, timeMs="1793620800000", uid=7)]},
        "object": {"dropped": 0, "denials": {"0": denial(0)}},
        "negative": {"dropped": -1, "denials": [denial(0)]},
        "many": {"dropped": 0, "denials": [denial(i) for i in range(2000)]},
        "longmsg": {"dropped": 0, "denials": [denial(0, message="m" * 2000)]},
        "mixed": {"dropped": 0, "denials": [denial(0), {k: v for k, v in denial(1).items()
                                                        if k != "rule"}]},
        "status500": good,
    }
    if mode == "big":
        doc = dict(good, padding="x" * (5 << 20))
        return 200, "application/json", json.dumps(doc).encode()
    if mode == "html":
        return 200, "text/html", b"<html><body>not the webhook</body></html>"
    return (500 if mode == "status500" else 200), "application/json", json.dumps(docs[mode]).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(os.path.join(DIR, "mode")) as f:
            mode = f.read().strip()
        count = os.path.join(DIR, "count")
        n = int(open(count).read()) if os.path.exists(count) else 0
        with open(count + ".tmp", "w") as f:
            f.write(str(n + 1))
        os.replace(count + ".tmp", count)
        if mode == "slow":
            time.sleep(5)
        status, ctype, data = body(mode)
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the console gave up (slow, big): nothing to answer
            pass

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
