# A loopback HTTP server, unwatched, serving one 600-byte file: the short networked process's
# peer (process_cost.sh, process_instructions.sh). Source it, then
#   file_server_start DIR    sets srv (its PID: stop it by that PID) and url (the file's URL)
file_server_start() {
    local dir=$1
    mkdir -p "$dir/www"
    head -c 600 /dev/zero | tr '\0' x > "$dir/www/f.txt"
    python3 - "$dir/www" "$dir/port" <<'PY' &
import http.server, os, socketserver, sys
os.chdir(sys.argv[1])
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), Quiet)
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
    srv=$!
    for _ in $(seq 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
    [ -s "$dir/port" ] || { echo "the loopback server did not start" >&2; return 1; }
    url="http://127.0.0.1:$(cat "$dir/port")/f.txt"
}
