# 10,000 connections from a load generator (one unwatched curl, Connection: close, one request
# each) to nginx under the preload: exactly 10,000 server connection records on the port, 0
# drops, each with the bytes curl counted for its request; every request is an http record
# (GET, 200, the path) or counted in an http_summary (past the record budget).
. "$WJ_LIB/common.sh"
. "$WJ_LIB/nginx.sh"
nginx_start 100 1024
nginx_curl_requests 10000 120
nginx_stop

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
