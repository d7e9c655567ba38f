# Fidelity matrix, a request written on one thread and its response read on another (issue
# 15): fixtures/fid_py_reader.py makes 200 connections, one GET each, sending on the main
# thread while a reader thread waits in recv, with two more threads spinning; the server is the
# asyncio fid_py_server, both watched. Against the programs' own counts:
#   every one of the client's 200 connections has its exchange (http_requests 1, no http_none),
#   exchanges == 200 with the client's statuses, durations within max(1 ms, 5%) of the client's
#   timer (the send's return on one thread to the last recv's on the other, read in C as each
#   call returns: fixtures/fid_timed_io_so.c);
#   the server's exchanges == what it says it answered.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/fidelity.sh"
N=${WJ_FID_READER_N:-200}
fid_server srv logs/server "$PYTHON" "$WJ_LIB/../fixtures/fid_py_server.py" asyncio
wj logs/client "$PYTHON" "$WJ_LIB/../fixtures/fid_py_reader.py" "$FIXTURES/fid_timed_io.so" "$port" "$N" /status/200 /status/404 /delay/10 \
    > client.txt 2> client.err || fail "client exited $?: $(tail -3 client.err)"
fid_stop "$srv"

pylogs "$port" "$N" <<'PY'
import collections
from fidelity import *
soft_mode()
port, n = int(sys.argv[1]), int(sys.argv[2])
cl = client_lines("client.txt")
expect_eq(len(cl), n, "requests the client reports")
counted = server_counts("srv.out")
expect(counted is not None, "the server printed its counts")
want = collections.Counter(str(r["status"]) for r in cl)
clogs, slogs = load_dir("logs/client"), load_dir("logs/server")
conns = [c for c in records(clogs, "connection") if c["peer"] == f"127.0.0.1:{port}"]
expect_eq(len(conns), n, "client connections to the server")
lost = [c for c in conns if c.get("http_requests") != 1]
expect(not lost, f"{len(lost)} of {len(conns)} client connections without their one exchange; http_none: "
       f"{dict(collections.Counter(c.get('http_none') for c in lost))}, e.g. "
       f"{[(c['local'], c.get('http_requests'), c.get('http_none'), c['bytes_in'], c['bytes_out']) for c in lost[:3]]}")
ch = check_exchanges("reader-thread client", clogs, "client", want, peer_port=port)
by_port = {}
for h in ch:
    c = next((c for c in conns if c["conn_id"] == h["conn_id"] and c["pid"] == h["pid"]), None)
    if c:
        by_port[port_of(c["local"])] = h
pairs = [(f"#{r['i']} {r['path']}", by_port[r["lport"]]["duration_us"], r["io_us"]) for r in cl if r["lport"] in by_port]
expect(len(pairs) >= n // 2, f"only {len(pairs)} of {n} requests have an http record to time")
if pairs:
    check_timers("reader-thread client: exchange durations vs the client's timer", pairs)
    expect_eq([by_port[r["lport"]]["status"] for r in cl if r["lport"] in by_port],
              [r["status"] for r in cl if r["lport"] in by_port], "statuses per connection")
if counted:
    check_exchanges("asyncio server", slogs, "server", collections.Counter(counted["statuses"]))
PY
