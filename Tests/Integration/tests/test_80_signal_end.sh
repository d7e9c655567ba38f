# A server stopped by SIGTERM at its default action (python's http.server has no handler: the
# way `kill` and systemd stop it) loses nothing (README, Limits): wedjat writes the log's end
# first (process_end reason "signal", signal SIGTERM, every exchange), then the signal ends the
# process as it would have: the same exit status (143) as unwatched. The dispositions the app
# sees are unchanged: signal.getsignal and the sigaction entry (handler, mask, flags, restorer)
# of SIGTERM, SIGINT and SIGHUP are those of the unwatched run, and a handler the app installs and then
# resets to SIG_DFL gives wedjat the signal back. `wedjat report` says "killed by SIGTERM".
. "$WJ_LIB/common.sh"
command -v curl >/dev/null || skip "curl is not installed"
N=30

cat > srv.py <<'PY'
import ctypes, http.server, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
def raw(sig):
    # struct sigaction on x86-64 glibc: handler, the mask (the kernel's 8 bytes of it; glibc
    # leaves the rest of the 128 as it finds it), flags, restorer.
    buf = ctypes.create_string_buffer(152)
    assert libc.sigaction(sig, None, buf) == 0
    b = buf.raw
    restorer = "restorer" if any(b[144:152]) else "no-restorer"   # an address: ASLR moves it
    return " ".join([x.hex() for x in (b[0:8], b[8:16], b[136:140])] + [restorer])
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    print("disp", int(s), signal.getsignal(s), raw(s), flush=True)
# A handler installed, then the default back: the end is still written.
signal.signal(signal.SIGHUP, lambda *a: None)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
print("hup-again", raw(signal.SIGHUP), flush=True)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        sys.stderr.write("served\n")
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print("port", s.server_address[1], flush=True)
s.serve_forever()
PY

run_server() {  # NAME DIR|-: start, N requests, SIGTERM, the exit status in NAME.status
    if [ "$2" = - ]; then bg_start "$1" "$PYTHON" srv.py; else wj_bg "$1" "$2" "$PYTHON" srv.py; fi
    local pid=$BG_PID i port
    for i in $(seq 1 200); do grep -q '^port ' "$1.out" 2>/dev/null && break; sleep 0.05; done
    port=$(awk '/^port /{ print $2; exit }' "$1.out")
    [ -n "$port" ] || fail "$1 did not start: $(tail -3 "$1.out")"
    for i in $(seq 1 $N); do curl -s -o /dev/null "http://127.0.0.1:$port/r$i" || fail "curl $i"; done
    kill -TERM "$pid"
    wait "$pid"
    echo $? > "$1.status"
}
run_server plain -
run_server watched logs

[ "$(cat plain.status)" = 143 ] || fail "unwatched exit status $(cat plain.status), expected 143 (SIGTERM)"
[ "$(cat watched.status)" = "$(cat plain.status)" ] || fail "exit status watched $(cat watched.status), unwatched $(cat plain.status)"
diff <(grep -E '^(disp|hup-again) ' plain.out) <(grep -E '^(disp|hup-again) ' watched.out) > disp.diff ||
    fail "dispositions differ with wedjat: $(cat disp.diff)"
[ "$(grep -c '^served' watched.out)" = $N ] || fail "the server answered $(grep -c '^served' watched.out) requests"

"$WEDJAT_CLI" report --format json logs > report.json 2> report.err || fail "report: $(tail -3 report.err)"
pylogs "$N" <<'PY'
n = int(sys.argv[1])
logs = [l for l in load_dir("logs") if l.records("process_start") and "srv.py" in " ".join(l.records("process_start")[0].get("argv") or [])]
expect_eq(len(logs), 1, "the server's log")
log = logs[0]
http = log.records("http", role="server")
summed = sum(r["count"] for r in log.records("http_summary"))
expect_eq(len(http) + summed, n, "the server's exchanges")
expect_eq(sorted({h.get("status") for h in http}), [200], "statuses")
ends = log.records("process_end")
expect_eq([(e.get("reason"), e.get("signal"), e.get("exit_status")) for e in ends], [("signal", "SIGTERM", None)], "process_end")
report = json.load(open("report.json"))
rows = [p for p in report["processes"] if p["pid"] == log.records("process_start")[0]["pid"]]
expect_eq([(p["status"], p["killed"]) for p in rows], [("killed by SIGTERM", True)], "the report's process row")
expect(not [w for w in report.get("warnings", []) if w.get("kind") == "no_end" and w.get("pid") == rows[0]["pid"]],
       "no 'no process_end' warning for a log that has its end")
print("ok")
PY
