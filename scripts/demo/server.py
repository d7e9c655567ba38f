"""Loopback HTTP server for the demo: serves a directory, prints its port on stdout, and
exits cleanly on SIGTERM (so a watched server gets its process_end)."""
import http.server
import os
import signal
import sys
import time


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        # /slow?ms=N: hold the response N ms, like a busy backend.
        if self.path.startswith("/slow"):
            ms = int(self.path.split("ms=")[1]) if "ms=" in self.path else 300
            time.sleep(ms / 1000)
            body = b"slow\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, *args):
        pass


def main():
    os.chdir(sys.argv[1])
    # A background job of a script starts with SIGINT ignored: stop on SIGTERM instead.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    server.server_close()


if __name__ == "__main__":
    main()
