# connection.host names a host only when it is plausibly the name the app connected by
# (docs/LOG_FORMAT.md, `connection.host`): python resolves `localhost` and connects to the
# answer (named, with its DNS phase); then it resolves `localhost` for another port without
# using it and, 1.2 s later, connects to the literal 127.0.0.1 on a second listener: that
# connection has no host (it used to be labelled `localhost`). A reconnect to the destination
# it reached by name keeps the name (rule c).
. "$WJ_LIB/common.sh"

cat > client.py <<'PY'
import socket, time
def pair(listener, addr):
    c = socket.create_connection(addr)
    c.send(b"x")
    s, _ = listener.accept()
    s.recv(1)
    s.close()
    c.close()
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(8)
port = srv.getsockname()[1]
addr = socket.getaddrinfo("localhost", port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
pair(srv, addr)                                   # 1. by name
socket.getaddrinfo("localhost", port + 1, socket.AF_INET, socket.SOCK_STREAM)
time.sleep(1.2)
srv2 = socket.socket(); srv2.bind(("127.0.0.1", 0)); srv2.listen(8)
port2 = srv2.getsockname()[1]
pair(srv2, ("127.0.0.1", port2))                  # 2. the literal address, another port
pair(srv, ("127.0.0.1", port))                    # 3. the destination of 1 again
print(port, port2)
PY
out=$(wj logs "$PYTHON" client.py) || fail "client failed: $out"
set -- $out
port=$1 port2=$2

pylogs logs "$port" "$port2" <<'PY'
d, port, port2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
log = one(load_dir(d), "client log")
lookups = [r for r in log.records("dns") if r["name"] == "localhost"]
expect_eq(len(lookups), 2, "lookups of localhost")
conns = sorted(log.records("connection", role="client"), key=lambda c: c["open_ts"])
expect_eq([c["peer"] for c in conns], [f"127.0.0.1:{port}", f"127.0.0.1:{port2}", f"127.0.0.1:{port}"], "peers")
expect_eq(conns[0]["host"], "localhost", "host of the connection made by name")
expect_eq(conns[0]["dns_us"], lookups[0]["duration_us"], "its DNS phase")
expect_eq(conns[1]["host"], None, "host of the connection to the literal address")
expect_eq(conns[1]["dns_us"], None, "DNS phase of the connection to the literal address")
expect_eq(conns[2]["host"], "localhost", "host of a reconnect to the destination reached by name")
expect_eq(conns[2]["dns_us"], None, "DNS phase of the reconnect")
print("ok")
PY
