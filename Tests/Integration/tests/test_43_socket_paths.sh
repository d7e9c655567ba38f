# Every socket path of the network issue in one C fixture (fixtures/net_paths.c), checked
# against what the fixture itself did: a connection duplicated with dup, fcntl(F_DUPFD_CLOEXEC)
# and dup2 is one record with the bytes written through every copy, ending at the last close;
# UDP sockets (tracked from socket()), unix stream client and server with the socket path,
# socketpair ends; a non-blocking connect whose completion poll, epoll_wait or select saw
# has connect_end_ts at that wait (50 ms before its first byte), not at the first byte;
# shutdown() is timed; a reset peer gives error ECONNRESET in phase io.
. "$WJ_LIB/common.sh"

wj logs "$FIXTURES/net_paths" "$TEST_TMP" > out.txt 2> err.txt || fail "net_paths exited $?: $(head -3 err.txt)"
pylogs logs out.txt <<'PY'
soft_mode()
d, outfile = sys.argv[1], sys.argv[2]
cases = {}
for line in open(outfile):
    name, *kv = line.split()
    cases[name] = dict(x.split("=", 1) for x in kv)
log = one(load_dir(d), "net_paths log")
conns = log.records("connection")
tcp = [c for c in conns if c["transport"] == "tcp"]
def client_to(port):
    return [c for c in tcp if c["role"] == "client" and port_of(c["peer"]) == port]

# dup: one client record with all 14 bytes, ending after the last copy was closed
port = int(cases["dup"]["port"])
cl = client_to(port)
if expect_eq(len(cl), 1, "dup: client records for the duplicated socket"):
    c = cl[0]
    expect_eq((c["bytes_out"], c["error"]), (14, None), "dup: bytes written through all copies, error")
    expect(c["close_ts"] - c["first_byte_out_ts"] >= 30000,
           f"dup: the record ends at the last copy's close (30 ms after the first write): {c['close_ts'] - c['first_byte_out_ts']} us")
sv = [c for c in tcp if c["role"] == "server" and port_of(c["local"]) == port]
expect_eq([c["bytes_in"] for c in sv], [14], "dup: the server side's bytes_in")

# udp: both sockets, roles by who sent first, bound local ports, exact datagram bytes
udp = {c["role"]: c for c in conns if c["transport"] == "udp"}
expect_eq(sorted(udp), ["client", "server"], "udp: roles")
if len(udp) == 2:
    expect_eq((port_of(udp["client"]["local"]), udp["client"]["bytes_out"], udp["client"]["bytes_in"]),
              (int(cases["udp"]["sender_port"]), 5, 3), "udp client: local port, bytes out, in")
    expect_eq((port_of(udp["server"]["local"]), udp["server"]["bytes_in"], udp["server"]["bytes_out"]),
              (int(cases["udp"]["receiver_port"]), 5, 3), "udp server: local port, bytes in, out")
    expect_eq(udp["client"]["tcp_info"], None, "udp: no tcp_info")

# unix: the client's peer and the server's local address are the path
path = cases["unix"]["path"]
ux = [c for c in conns if c["transport"] == "unix" and c["role"] in ("client", "server")]
expect_eq(sorted((c["role"], c["peer"] if c["role"] == "client" else c["local"], c["bytes_in"], c["bytes_out"]) for c in ux),
          [("client", path, 7, 7), ("server", path, 7, 7)], "unix: role, path, bytes in, out")
pairs = [c for c in conns if c["role"] == "pair"]
expect_eq(sorted((c["bytes_in"], c["bytes_out"]) for c in pairs), [(0, 3), (3, 0)], "socketpair ends: bytes")

# non-blocking connects completed in a wait call
for how in ("poll", "epoll", "select"):
    cl = client_to(int(cases[how]["port"]))
    if not expect_eq(len(cl), 1, f"{how}: client records"):
        continue
    c, seen = cl[0], int(cases[how]["seen_us"])
    expect(c["connect_end_ts"] is not None and c["connect_end_ts"] <= seen,
           f"{how}: connect_end_ts {c['connect_end_ts']} at or before the wait returned ({seen})")
    expect(c["first_byte_out_ts"] - c["connect_end_ts"] >= 45000,
           f"{how}: connect end is the wait's, 50 ms before the first byte: {c['first_byte_out_ts'] - c['connect_end_ts']} us")
    expect_eq(port_of(c["local"]), int(cases[how]["local"]), f"{how}: local port")

cl = client_to(int(cases["shutdown"]["port"]))
if expect_eq(len(cl), 1, "shutdown: client records"):
    c = cl[0]
    expect(c["shutdown_ts"] is not None and c["first_byte_out_ts"] <= c["shutdown_ts"] <= c["close_ts"],
           f"shutdown_ts between the write and the close: {c['first_byte_out_ts']} {c['shutdown_ts']} {c['close_ts']}")

expect_eq(cases["reset"]["errno"], "ECONNRESET", "reset: what the fixture's read got")
cl = client_to(int(cases["reset"]["port"]))
expect_eq([(c["error"], c["error_phase"]) for c in cl], [("ECONNRESET", "io")], "reset: error, phase")
end = log.end
expect_eq((end["dropped_events"], end["capture_dropped"]), (0, 0), "process_end drops")
print(f"ok: {len(conns)} connection records checked")
PY
