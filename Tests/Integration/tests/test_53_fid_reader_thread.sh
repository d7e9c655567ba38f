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
import collections, itertools
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
# Client and wedjat connections matched by local port, and by order where the kernel gave
# one port to several connections (the server closes first: no TIME_WAIT on the client's
# side, so its ephemeral ports come round again within the run).
exchange_of = {(h["pid"], h["conn_id"]): h for h in ch}
wj_by_port = collections.defaultdict(list)
for c in sorted(conns, key=lambda c: c["open_ts"]):
    wj_by_port[port_of(c["local"])].append(exchange_of.get((c["pid"], c["conn_id"])))
matched = []   # (client line, its exchange)
for lport, rows in itertools.groupby(sorted(cl, key=lambda r: (r["lport"], r["i"])), key=lambda r: r["lport"]):
    rows = list(rows)
    if len(rows) == len(wj_by_port.get(lport, [])):
        matched += [(r, h) for r, h in zip(rows, wj_by_port[lport]) if h]
matched.sort(key=lambda m: m[0]["i"])
pairs = [(f"#{r['i']} {r['path']}", h["duration_us"], r["io_us"]) for r, h in matched]
expect(len(pairs) >= n // 2, f"only {len(pairs)} of {n} requests have an http record to time")
if pairs:
    check_timers("reader-thread client: exchange durations vs the client's timer", pairs)
    expect_eq([h["status"] for r, h in matched], [r["status"] for r, h in matched], "statuses per connection")
if counted:
    check_exchanges("asyncio server", slogs, "server", collections.Counter(counted["statuses"]))
PY
