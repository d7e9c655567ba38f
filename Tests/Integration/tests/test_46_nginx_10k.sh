# 10,000 connections from a load generator (one unwatched curl, Connection: close, one request
# each) to nginx under the preload: exactly 10,000 server connection records on the port, 0
# drops, each with the bytes curl counted for its request; every request is an http record
# (GET, 200, the path) or counted in an http_summary (past the record budget).
. "$WJ_LIB/common.sh"
command -v nginx >/dev/null || skip "nginx is not installed"

port=$(free_port)
mkdir -p www tmp
head -c 100 /dev/urandom > www/f.bin
user_line=""
[ "$(id -u)" = 0 ] && user_line="user root root;"   # workers must be able to write the log dir
cat > nginx.conf <<CONF
$user_line
worker_processes 1;
daemon off;
master_process on;
pid $TEST_TMP/nginx.pid;
error_log $TEST_TMP/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $TEST_TMP/tmp/body;
    proxy_temp_path $TEST_TMP/tmp/proxy;
    fastcgi_temp_path $TEST_TMP/tmp/fastcgi;
    uwsgi_temp_path $TEST_TMP/tmp/uwsgi;
    scgi_temp_path $TEST_TMP/tmp/scgi;
    keepalive_timeout 0;
    sendfile on;
    server {
        listen 127.0.0.1:$port;
        root $TEST_TMP/www;
    }
}
CONF
wj_bg nginx logs nginx -p "$TEST_TMP" -e "$TEST_TMP/error.log" -c "$TEST_TMP/nginx.conf"
master=$BG_PID
# nginx writes its pid file after it has opened the listening socket: no probe connection.
for i in $(seq 1 200); do
    [ -s nginx.pid ] && break
    kill -0 "$master" 2>/dev/null || fail "nginx exited: $(cat nginx.out error.log 2>/dev/null | tail -5)"
    sleep 0.05
done
[ -s nginx.pid ] || fail "nginx did not start in 10 s"
[ "$(cat nginx.pid)" = "$master" ] || fail "nginx.pid $(cat nginx.pid) is not the process started ($master)"
# 10,000 requests, one connection each, by a plain (unwatched) curl.
timeout 120 curl -s -H 'Connection: close' -o /dev/null -w '%{num_connects} %{size_request} %{size_header} %{size_download} %{http_code}\n' \
    "http://127.0.0.1:$port/f.bin?[1-10000]" > curl.txt || fail "curl failed"
[ "$(wc -l < curl.txt)" = 10000 ] || fail "curl made $(wc -l < curl.txt) requests"
awk '$1 != 1 || $5 != 200 { bad = 1 } END { exit bad }' curl.txt || fail "not 10000 separate connections with status 200"
bg_stop "$master" QUIT
[ -s nginx.pid ] && fail "nginx did not remove its pid file (not a clean shutdown)"

pylogs logs "$port" curl.txt <<'PY'
soft_mode()
d, port = sys.argv[1], int(sys.argv[2])
reqs = [tuple(map(int, l.split()[1:4])) for l in open(sys.argv[3])]
logs = by_exe(load_dir(d), "nginx")
conns = records(logs, "connection", transport="tcp")
expect_eq(len(conns), 10000, "server connection records")
expect_eq(sum(1 for c in conns if c["role"] == "server" and port_of(c["local"]) == port and c["error"] is None), 10000,
          "closed server connections on the port without error")
# curl: size_request is what nginx read, size_header + size_download what it wrote
want = sorted((r[0], r[1] + r[2]) for r in reqs)
expect_eq(sorted((c["bytes_in"], c["bytes_out"]) for c in conns) == want, True, "per-connection (bytes_in, bytes_out) match curl's")
for l in logs:
    e = l.end
    if expect(e is not None, f"{l}: process_end"):
        expect_eq((e["dropped_events"], e["dropped_records"], e.get("capture_dropped"), e.get("untracked_connections")),
                  (0, 0, 0, 0), f"{l}: drops")
http = records(logs, "http", role="server")
summ = records(logs, "http_summary", role="server")
expect_eq(len(http) + sum(s["count"] for s in summ), 10000, "requests in http records + http_summary counts")
expect(all((h["method"], h["path"], h["status"], h["complete"]) == ("GET", "/f.bin?REDACTED", 200, True) for h in http),
       "http records: GET /f.bin?REDACTED 200, complete")
expect(all((s["method"], s["status"], s["errors"]) == ("GET", 200, 0) for s in summ), "summaries: GET 200 without errors")
expect_eq(sum(c["http_requests"] for c in conns), 10000, "http_requests over the connections")
print(f"ok: {len(conns)} connections, {len(http)} http records, {sum(s['count'] for s in summ)} in {len(summ)} summaries")
PY
