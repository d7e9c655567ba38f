# redis-server (epoll, pipelining, helper threads) under the preload, listening on 127.0.0.1
# and ::1; a watched python client talks to it over IPv6 and IPv4 with pipelined commands.
# Both sides' records: addresses ("[::1]:port"), family, exact bytes; SIGTERM shutdown is a
# normal exit.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/redis.sh"
redis_start srvlogs "127.0.0.1 ::1"

cat > client.py <<'PY'
import socket, sys
port = int(sys.argv[1])
def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
for family, host in ((socket.AF_INET6, "::1"), (socket.AF_INET, "127.0.0.1")):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.connect((host, port))
    cmds = [resp("SET", f"k{i}", "v" * (i % 50)) for i in range(300)] + [resp("GET", f"k{i}") for i in range(300)]
    payload = b"".join(cmds)
    s.sendall(payload)
    # replies: 300 "+OK\r\n", then 300 bulk strings "$n\r\n<v*n>\r\n"
    want = 300 * 5 + sum(len(b"$%d\r\n" % (i % 50)) + (i % 50) + 2 for i in range(300))
    got = b""
    while len(got) < want:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    local = s.getsockname()
    s.close()
    print(host, local[1], len(payload), len(got))
PY
wj clilogs "$PYTHON" client.py "$port" > client.out 2> client.err || fail "client failed: $(cat client.err)"
cat client.out
bg_stop "$srv" TERM
wait "$srv" 2>/dev/null

pylogs "$port" <<'PY'
soft_mode()
port = int(sys.argv[1])
rows = [l.split() for l in open("client.out")]
cli = one(load_dir("clilogs"), "client log")
# (/usr/bin/redis-server is a link to redis-check-rdb: exe is the link's target)
srv = one([l for l in load_dir("srvlogs") if "redis-server" in l.start["argv"][0]], "redis-server log")
for host, lport, sent, recvd in rows:
    lport, sent, recvd = int(lport), int(sent), int(recvd)
    v6 = ":" in host
    fmt = (lambda h, p: f"[{h}]:{p}") if v6 else (lambda h, p: f"{h}:{p}")
    c = [r for r in cli.records("connection") if r["local"] == fmt(host, lport)]
    if expect_eq(len(c), 1, f"client record with local {fmt(host, lport)}"):
        c = c[0]
        expect_eq((c["peer"], c["family"], c["role"]), (fmt(host, port), "ipv6" if v6 else "ipv4", "client"), f"{host}: client peer/family/role")
        expect_eq((c["bytes_out"], c["bytes_in"]), (sent, recvd), f"{host}: client bytes")
        expect(isinstance(c["connect_us"], int) and c["connect_us"] >= 0, f"{host}: connect_us of a blocking connect: {c['connect_us']}")
    s = [r for r in srv.records("connection") if r["peer"] == fmt(host, lport)]
    if expect_eq(len(s), 1, f"server record with peer {fmt(host, lport)}"):
        s = s[0]
        expect_eq((s["local"], s["family"], s["role"]), (fmt(host, port), "ipv6" if v6 else "ipv4", "server"), f"{host}: server local/family/role")
        expect_eq((s["bytes_in"], s["bytes_out"]), (sent, recvd), f"{host}: server bytes")
end = srv.end
if expect(end is not None, "redis-server: no process_end after SIGTERM (it exits normally)"):
    expect_eq((end["reason"], end["exit_status"]), ("exit", 0), "redis-server reason, exit_status")
    expect_eq(end["dropped_events"], 0, "redis dropped_events")
print("checked", len(rows), "connections")
PY
