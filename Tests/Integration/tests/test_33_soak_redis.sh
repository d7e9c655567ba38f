# Soak: redis-server under the preload, loaded by redis-benchmark -n 1000000 -c 50 -t get,set
# (2 million commands over 2 x 50 connections, about 25 s on 2 vCPUs). No crash, clean exit
# on SIGTERM; VmRSS (sampled every 5 s) grows less than 2 MB after the first 10 s (not
# counting wedjat's static event ring pages); no drops; the server records are exactly the
# connections redis counted (INFO total_connections_received), their bytes add up exactly to
# redis's own total_net_input_bytes / total_net_output_bytes, and each benchmark connection
# carries whole SET or GET commands and their replies: 1,000,000 of each.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/redis.sh"
command -v redis-server >/dev/null || skip "redis-server is not installed"
command -v redis-benchmark >/dev/null || skip "redis-benchmark is not installed"
N=${WJ_REDIS_N:-1000000}

redis_start logs 127.0.0.1

bg_start bench timeout -k 5 100 redis-benchmark -h 127.0.0.1 -p "$port" -n "$N" -c 50 -t get,set -q
bench=$BG_PID
: > rss.txt
t0=$(date +%s)
t=0
while kill -0 "$bench" 2>/dev/null; do
    echo "$t $srv $(rss_sample "$srv")" >> rss.txt
    t=$((t + 5))
    while [ $(( $(date +%s) - t0 )) -lt "$t" ] && kill -0 "$bench" 2>/dev/null; do sleep 0.2; done
done
wait "$bench"
brc=$?
secs=$(( $(date +%s) - t0 ))
tr '\r' '\n' < bench.out | grep -E 'requests per second' | sed 's/^/# /'
note "redis-benchmark -n $N took $secs s"
[ $brc = 0 ] || fail "redis-benchmark exited $brc: $(tr '\r' '\n' < bench.out | tail -3)"
kill -0 "$srv" 2>/dev/null || fail "redis-server died during the benchmark: $(tail -5 redis.log)"
echo "$t $srv $(rss_sample "$srv")" >> rss.txt
note "VmRSS/ring kB (time pid): $(awk '{ printf "%s %s %s/%s  ", $1, $2, $3, $4 }' rss.txt)"

# One plain client: INFO stats; prints its local port, bytes sent and received, and the stats.
cat > probe.py <<'PY'
import socket, sys, re
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
cmd = b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n"
s.sendall(cmd)
buf = b""
while b"\r\n" not in buf:
    buf += s.recv(65536)
n = int(buf[1:buf.index(b"\r\n")])
want = buf.index(b"\r\n") + 2 + n + 2
while len(buf) < want:
    buf += s.recv(65536)
local = s.getsockname()[1]
s.close()
st = dict(re.findall(r"^(\w+):(\d+)\r$", buf.decode(), re.M))
print(local, len(cmd), len(buf), *(st[k] for k in ("total_connections_received", "total_commands_processed",
                                                 "total_net_input_bytes", "total_net_output_bytes")))
PY
timeout 20 "$PYTHON" probe.py "$port" > probe.txt 2> probe.err || fail "probe failed: $(cat probe.err)"
note "probe: $(cat probe.txt)  (local port, sent, received, connections, commands, input bytes, output bytes)"
bg_stop "$srv" TERM
grep -q 'ready to exit, bye bye' redis.log || fail "redis did not shut down cleanly: $(tail -3 redis.log)"

pylogs logs "$port" probe.txt rss.txt "$N" <<'PY'
import collections
soft_mode()
d, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[5])
local, sent, recvd, nconn, ncmd, net_in, net_out = map(int, open(sys.argv[3]).read().split())

samples = {}
for line in open(sys.argv[4]):
    f = line.split()
    samples[int(f[0])] = None if f[2] == "gone" else (int(f[2]), int(f[3]))
expect(None not in samples.values(), f"redis-server gone during the benchmark: {samples}")
later = [v for t, v in samples.items() if t >= 10 and v]
if expect(samples.get(10) and later, f"no samples after 10 s (the benchmark ran shorter than 10 s?): {samples}"):
    growth = max(v[0] - v[1] for v in later) - (samples[10][0] - samples[10][1])
    expect(growth < 2048, f"VmRSS without wedjat's static ring grew {growth} kB after the first 10 s: {sorted(samples.items())}")
    print(f"# VmRSS {samples[0][0]} kB at 0 s, {samples[10][0]} kB at 10 s, {max(v[0] for v in later)} kB max later; +{growth} kB after 10 s without the ring pages")

srv = one([l for l in load_dir(d) if "redis-server" in l.start["argv"][0]], "redis-server log")
e = srv.end
if e is None:
    fail("redis-server: no process_end after SIGTERM")
expect_eq((e["reason"], e["exit_status"]), ("exit", 0), "redis-server reason, exit_status")
expect_eq((e["dropped_events"], e["dropped_records"], e.get("untracked_connections", 0), e["open_connections"]), (0, 0, 0, 0),
          "dropped_events, dropped_records, untracked_connections, open_connections")
expect_eq(srv.records("drops"), [], "drops records")
conns = sorted(srv.records("connection"), key=lambda c: c["open_ts"])
expect_eq(len(conns), nconn, "server connection records vs INFO total_connections_received")
expect_eq(e["records"].get("connection"), len(conns), "process_end.records.connection")
expect_eq(sum(c["bytes_in"] for c in conns), net_in, "sum of bytes_in vs INFO total_net_input_bytes")
# (the INFO reply is not in total_net_output_bytes yet: it was written after the stats were made)
expect_eq(sum(c["bytes_out"] for c in conns), net_out + recvd, "sum of bytes_out vs INFO total_net_output_bytes + the INFO reply")
for c in conns:
    what = f"connection {c['conn_id']} from {c['peer']}"
    ok = expect_eq((c["role"], c["local"], c["error"], c["open_at_exit"]), ("server", f"127.0.0.1:{port}", None, False), f"{what}: role, local, error, open_at_exit")
    ok = ok and expect(c["bytes_in"] > 0 and c["bytes_out"] > 0, f"{what}: bytes in/out {c['bytes_in']}/{c['bytes_out']}")
    ok = ok and expect(c["close_ts"] >= c["open_ts"] and c["duration_us"] == c["close_ts"] - c["open_ts"], f"{what}: open/close/duration")
    ok = ok and expect(c["open_ts"] <= c["first_byte_in_ts"] <= c["last_byte_ts"] <= c["close_ts"], f"{what}: open <= first byte in <= last byte <= close")
    ok = ok and expect(isinstance(c["tcp_info"], dict) and c["tcp_info"]["retransmits"] == 0, f"{what}: tcp_info {c['tcp_info']}")
    if not ok:
        break
probe = [c for c in conns if c["peer"] == f"127.0.0.1:{local}"][-1:]
if expect_eq(len(probe), 1, "record of the INFO probe connection"):
    expect_eq((probe[0]["bytes_in"], probe[0]["bytes_out"]), (sent, recvd), "INFO probe bytes (in, out)")
# "*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n" -> "+OK\r\n"
# "*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n"              -> "$3\r\nxxx\r\n"
SET, GET = (45, 5), (36, 9)
kind, cmds, other = collections.Counter(), collections.Counter(), []
for c in conns:
    if probe and c is probe[0]:
        continue
    for name, (i, o) in (("SET", SET), ("GET", GET)):
        k, r = divmod(c["bytes_in"], i)
        if r == 0 and k > 0 and c["bytes_out"] == k * o:
            kind[name] += 1
            cmds[name] += k
            break
    else:
        other.append(c)
expect_eq(dict(kind), {"SET": 50, "GET": 50}, "benchmark connections carrying whole SET / GET commands and replies")
expect_eq(dict(cmds), {"SET": n, "GET": n}, "SET / GET commands in the records' bytes")
# the rest: redis-benchmark's own set-up connections (CONFIG GET), each with a request and a reply
expect(1 <= len(other) <= 4, f"{len(other)} other connections (redis-benchmark's CONFIG GET probe): {other[:3]}")
# (CONFIG GET save + CONFIG GET appendonly on one connection; INFO counts itself after the reply)
expect(2 * n + len(other) <= ncmd <= 2 * n + 2 * len(other) + 1, f"INFO total_commands_processed {ncmd} vs 2 x {n} + 1 or 2 per set-up connection")
print(f"# {len(conns)} connections: {dict(kind)}, {len(other)} set-up, 1 probe; {net_in} bytes in, {net_out} out")
PY
