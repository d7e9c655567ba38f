# A burst of 400 connections (800 records with the accepted side) right at start-up, before
# wedjat's first flush: the file must still begin with process_start, and hold all 800.
. "$WJ_LIB/common.sh"

WJ_TIMEOUT=30 wj logs "$PYTHON" -c '
import socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1024)
for i in range(400):
    c = socket.create_connection(l.getsockname()); a, _ = l.accept()
    c.sendall(b"x" * (i % 7)); c.close(); a.recv(16); a.close()
' || fail "python burst failed"
pylogs logs <<'PY'
import os
soft_mode()
d = sys.argv[1]
f = one(os.listdir(d), "log file")
with open(os.path.join(d, f)) as fh:
    first = json.loads(fh.readline())
expect_eq(first["type"], "process_start", "type of the first line")
log = one(load_dir(d), "log")
conns = log.records("connection")
expect_eq(len(conns), 800, "connection records")
expect_eq(sorted(c["bytes_out"] for c in conns if c["role"] == "client"), sorted(i % 7 for i in range(400)), "client bytes_out values")
expect_eq(log.end["records"].get("connection"), 800, "process_end.records.connection")
expect_eq(log.end["dropped_events"], 0, "dropped_events")
PY
[ $? = 0 ] || exit 1
echo ok
