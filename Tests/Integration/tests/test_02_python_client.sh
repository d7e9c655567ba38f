# A python client and a python server, both watched: the client's connection has the bytes
# it counted itself; the server's connection mirrors it (server in == client out).
. "$WJ_LIB/common.sh"

mkdir -p www
head -c 54321 /dev/urandom > www/data.bin
# The server handles exactly two requests (socket client, then urllib) and exits normally.
wj_bg server srvlogs "$PYTHON" "$WJ_LIB/httpserver.py" www port 2
srv=$BG_PID
wait_file port || fail "server did not start: $(cat server.out)"
port=$(cat port)

cat > client.py <<'PY'
import socket, sys, urllib.request
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
req = f"GET /data.bin HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: wedjat-test\r\n\r\n".encode()
s.sendall(req)
got = 0
while True:
    b = s.recv(7000)
    if not b:
        break
    got += len(b)
local = s.getsockname()
s.close()
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/data.bin", timeout=10).read()
print(len(req), got, local[1], len(body))
PY
out=$(wj clilogs "$PYTHON" client.py "$port") || fail "client failed: $out"
read -r sent received lport ubody <<<"$out"
note "client: sent=$sent received=$received local_port=$lport urllib_body=$ubody"
[ "$ubody" = 54321 ] || fail "urllib body $ubody bytes, want 54321"
for i in $(seq 1 100); do kill -0 "$srv" 2>/dev/null || break; sleep 0.05; done
kill -0 "$srv" 2>/dev/null && fail "server did not exit after 2 requests"
wait "$srv"; rc=$?
[ $rc = 0 ] || fail "server exited $rc: $(cat server.out)"

pylogs clilogs srvlogs "$port" "$sent" "$received" "$lport" <<'PY'
cd, sd, port, sent, received, lport = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
clogs, slogs = load_dir(cd), load_dir(sd)
expect_eq(len(clogs), 1, "client log files")
expect_eq(len(slogs), 1, "server log files")
cli, srv = clogs[0], slogs[0]
expect(cli.exe.startswith("python3"), f"client exe {cli.exe}")
cc = cli.records("connection")
expect_eq(len(cc), 2, "client connection records")
raw = one([c for c in cc if c["local"] == f"127.0.0.1:{lport}"], "socket-client connection")
expect_eq(raw["role"], "client", "role")
expect_eq(raw["peer"], f"127.0.0.1:{port}", "peer")
expect_eq(raw["bytes_out"], sent, "client bytes_out")
expect_eq(raw["bytes_in"], received, "client bytes_in")
expect(received > 54321, "response smaller than the file")
expect_eq(raw["error"], None, "error")
expect(isinstance(raw["connect_us"], int) and 0 <= raw["connect_us"] < 5_000_000, f"connect_us of a blocking connect: {raw['connect_us']}")
expect(raw["open_ts"] <= raw["close_ts"], "open_ts <= close_ts")
ul = one([c for c in cc if c is not raw], "urllib connection")
expect_eq(ul["peer"], f"127.0.0.1:{port}", "urllib peer")
expect(ul["bytes_in"] > 54321, f"urllib bytes_in {ul['bytes_in']}")
expect_eq(cli.end["exit_status"], 0, "client exit_status")

sc = srv.records("connection")
expect_eq(len(sc), 2, "server connection records")
for s in sc:
    expect_eq(s["role"], "server", "server role")
    expect_eq(s["local"], f"127.0.0.1:{port}", "server local")
    expect_eq(s["connect_us"], None, "server connect_us")
by_peer = {s["peer"]: s for s in sc}
for c in cc:
    s = by_peer.get(c["local"])
    expect(s is not None, f"no server record with peer {c['local']}: {sorted(by_peer)}")
    expect_eq(s["bytes_in"], c["bytes_out"], f"server bytes_in vs client bytes_out ({c['local']})")
    expect_eq(s["bytes_out"], c["bytes_in"], f"server bytes_out vs client bytes_in ({c['local']})")
expect_eq(srv.end["reason"], "exit", "server process_end.reason")
expect_eq(srv.end["exit_status"], 0, "server exit_status")
expect_eq(srv.end["dropped_events"], 0, "server dropped_events")
print("ok", raw["bytes_out"], raw["bytes_in"], ul["bytes_out"], ul["bytes_in"])
PY
