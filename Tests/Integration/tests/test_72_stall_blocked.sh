# Blocked stalls: a python client whose blocking recv waits 600 ms for a server's answer, and
# a blocking connect that takes about 600 ms through a loopback with 300 ms of delay each way
# (netem, in a network namespace of the test's own): one `blocked` stall each, naming the call,
# the fd and the peer, with the caller's stack. A read answered in 100 ms is none.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"

bg_start delay "$PYTHON" "$DELAY_SERVER"
delay=$BG_PID
delay_server_port delay port
wj logs "$PYTHON" - "$port" <<'PY' || fail "client"
import socket, sys
for ms in (600, 100):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /delay/%d HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % ms)
    while s.recv(65536):
        pass
    s.close()
PY
bg_stop "$delay"

pylogs <<PY
stalls = records(load_dir("logs"), "stall")
expect_eq(len(stalls), 1, "blocked stalls from the reads")
s = stalls[0]
expect_eq(s["kind"], "blocked", "kind")
expect(s["call"] in ("recv", "read", "recvfrom"), f"call {s['call']}")
expect_eq(s["peer"], "127.0.0.1:$port", "peer")
expect(590000 <= s["duration_us"] <= 800000, f"duration {s['duration_us']}")
expect(len(s["samples"]) == 1 and len(s["samples"][0]["frames"]) >= 5, f"the caller's stack: {s['samples']}")
PY

# connect through a slow loopback: needs a network namespace and netem.
if unshare -rn true 2>/dev/null && unshare -rn sh -c 'ip link set lo up && tc qdisc add dev lo root netem delay 300ms' 2>/dev/null; then
    cat > slow_connect.sh <<SH
ip link set lo up
tc qdisc add dev lo root netem delay 300ms
"$PYTHON" -c 'import socket; l = socket.create_server(("127.0.0.1", 0)); print(l.getsockname()[1], flush=True); import time; time.sleep(8)' > port.txt &
server=\$!
for i in \$(seq 1 100); do [ -s port.txt ] && break; sleep 0.05; done
env WEDJAT_DIR=clogs LD_PRELOAD="$WEDJAT_PRELOAD" "$PYTHON" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' "\$(cat port.txt)"
rc=\$?
kill \$server
exit \$rc
SH
    timeout 30 unshare -rn sh slow_connect.sh || fail "slow connect"
    pylogs <<'PY'
stalls = records(load_dir("clogs"), "stall")
expect_eq(len(stalls), 1, "blocked stalls from the connect")
s = stalls[0]
expect_eq((s["kind"], s["call"]), ("blocked", "connect"), "kind and call")
expect(s["peer"].startswith("127.0.0.1:"), f"peer {s['peer']}")
expect(550000 <= s["duration_us"] <= 1500000, f"duration {s['duration_us']}")
expect(len(s["samples"][0]["frames"]) >= 5, "the caller's stack")
PY
else
    note "no network namespace with netem here: the connect case is not run"
fi
