# nginx (master + 1 worker) under the preload serves 200 requests, one connection each:
# the worker's log has exactly 200 server connections on the listening port, with the exact
# bytes curl saw, and nothing was dropped.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/nginx.sh"
nginx_start 20000 256
nginx_curl_requests 200 60
nginx_stop

pylogs logs "$port" curl.txt <<'PY'
d, port = sys.argv[1], int(sys.argv[2])
reqs = [list(map(int, l.split()[:4])) for l in open(sys.argv[3])]
logs = load_dir(d)
ngx = by_exe(logs, "nginx")
expect_eq(len(ngx), len(logs), "all logs are nginx's")
workers = [l for l in ngx if l.records("connection", transport="tcp")]
worker = one(workers, "nginx log with connections (the worker)")
master = [l for l in ngx if l is not worker]
expect(worker.start["parent_log"] is not None and by_path(logs, worker.start["parent_log"]) is not None,
       "worker's parent_log is the master's log")
conns = worker.records("connection", transport="tcp")
expect_eq(len(conns), 200, "server connections in the worker")
for c in conns:
    expect_eq((c["role"], c["local"]), ("server", f"127.0.0.1:{port}"), "role, local")
    expect_eq(c["error"], None, "error")
    expect_eq(c["open_at_exit"], False, "open_at_exit")
expect_eq(len({c["peer"] for c in conns}), 200, "distinct client addresses")
# bytes the worker read = curl's request, bytes sent (sendfile) = response
last = conns
want = sorted((r[1], r[2] + r[3]) for r in reqs)
got = sorted((c["bytes_in"], c["bytes_out"]) for c in last)
expect_eq(got, want, "(bytes_in, bytes_out) per connection vs curl's (size_request, size_header+size_download)")
expect(all(c["bytes_out"] > 20000 for c in last), "responses smaller than the file")
end = worker.end
expect(end is not None, "worker has no process_end")
expect_eq(end["reason"], "exit", "worker reason")
expect_eq(end["dropped_events"], 0, "worker dropped_events")
expect_eq(end["dropped_records"], 0, "worker dropped_records")
expect_eq(worker.records("drops"), [], "drops records")
for m in master:
    expect_eq(m.records("connection", transport="tcp"), [], "TCP connections in the master")
print(f"ok: worker pid {worker.pid}, {len(conns)} connections, masters {[m.pid for m in master]}")
PY
