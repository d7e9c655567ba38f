"""Tiny static HTTP/1.0 server for the tests.
   python3 httpserver.py DOCROOT PORTFILE [REQUESTS]
Listens on 127.0.0.1 (an ephemeral port, written to PORTFILE once listening), serves files
from DOCROOT, one connection per request. With REQUESTS it exits normally after handling
that many; otherwise it runs until SIGTERM (then exits normally too)."""
import functools
import http.server
import os
import signal
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main():
    root, portfile = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    handler = functools.partial(Handler, directory=root)
    srv = http.server.HTTPServer(("127.0.0.1", 0), handler)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{srv.server_address[1]}\n")
    os.rename(tmp, portfile)
    try:
        if limit is None:
            srv.serve_forever()
        else:
            for _ in range(limit):
                srv.handle_request()
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
