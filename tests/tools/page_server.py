#!/usr/bin/python3
"""page_server.py - a loopback HTTP server for tests of `meter prometheus`.

  page_server.py PORT pages FILE...   each GET answers the next FILE (a
      recorded exporter page, or a canned answer), then an empty page; the
      number of GETs so far is written to PORT.count beside the first FILE,
      the paths asked for appended to PORT.paths
  page_server.py PORT canned FILE   every GET answers FILE (read anew each
      time) with the HTTP status in FILE.status
"""
import http.server
import os
import sys

port, mode = int(sys.argv[1]), sys.argv[2]
served = 0


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global served
        if mode == "pages":
            files = sys.argv[3:]
            body = open(files[served], "rb").read() if served < len(files) else b""
            status, ctype = 200, "text/plain; version=0.0.4"
            served += 1
            count = os.path.join(os.path.dirname(files[0]), "%d.count" % port)
            with open(count.replace(".count", ".paths"), "a") as f:
                f.write(self.path + "\n")
            with open(count + ".tmp", "w") as f:
                f.write(str(served))
            os.replace(count + ".tmp", count)
        else:
            status = int(open(sys.argv[3] + ".status").read())
            body, ctype = open(sys.argv[3], "rb").read(), "application/json"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


# PAGE_SERVER_ADDRESS: listen there instead of loopback (a test host's address
# in its network namespace, tests/e2e/scenarios/60-metering.sh)
address = os.environ.get("PAGE_SERVER_ADDRESS", "127.0.0.1")
http.server.HTTPServer((address, port), Handler).serve_forever()
