# Loop stalls in a C epoll server: a handler that burns the CPU for 400 ms in a named function
# is exactly one on-CPU `loop` stall of 400 ms ± 10% whose symbolized stack (wedjat export
# --folded) holds that function; one that usleep()s 400 ms is an off-CPU stall; a 100 ms burst
# is none. The program sees no EINTR and exits 0. The `modules` record maps the fixture with
# its real build-id. Each loop's iterations, busy share and longest busy time are in samples.
# The unwinder (libunwind) is loaded half a threshold after a process's first loop wait: a
# 60 ms loop process never maps it, a 400 ms one does, and neither sees a stall.
. "$WJ_LIB/common.sh"

wj_bg server logs "$FIXTURES/stall_server"
server=$BG_PID
wait_file "$TEST_TMP/server.out" 10 || fail "server did not start"
port=$(head -1 "$TEST_TMP/server.out")
python3 "$WJ_LIB/stall_client.py" "$port" ok "spin 400" ok "sleep 400" "spin 100" ok quit || fail "client"
wait "$server"; status=$?
[ "$status" = 0 ] || fail "server exit status $status"
# Its last line goes to stderr: missing, the app's fds were touched (libunwind's address-check
# pipe once closed the app's stdout and stderr when a thread walked its own stack).
grep -q "^eintr " "$TEST_TMP/server.out" || fail "the server's stderr lost its last line (its fds were touched): $(od -c "$TEST_TMP/server.out" | head -3)"
grep -q "^eintr 0$" "$TEST_TMP/server.out" || fail "the server saw EINTR: $(grep '^eintr' "$TEST_TMP/server.out")"

"$WEDJAT_CLI" export --folded stalls.folded logs 2>export.err || { cat export.err; fail "export --folded"; }
build_id=$(readelf -n "$FIXTURES/stall_server" | awk '/Build ID/ { print $3 }')

pylogs <<PY
logs = load_dir("logs")
stalls = records(logs, "stall")
expect_eq(len(stalls), 2, "stall records")
spin, nap = stalls
for s in stalls:
    expect_eq(s["kind"], "loop", "kind")
    expect_eq(s["after"], "epoll_wait", "the wait before")
    expect(360000 <= s["duration_us"] <= 440000, f"a 400 ms stall lasted {s['duration_us']} us")
    expect(abs(s["end_ts"] - s["start_ts"] - s["duration_us"]) <= 1, "start/end/duration agree")
    expect(len(s["samples"]) >= 1 and len(s["samples"][0]["frames"]) >= 3, f"a stack: {s['samples']}")
    lag = s["samples"][0]["ts"] - s["start_ts"] - s["threshold_us"]
    expect(0 <= lag < 50000 or s is nap, f"first sample {lag} us after the crossing")
    expect_eq(s["samples_lost"], 0, "samples lost")
expect(spin["cpu_us"] is not None and spin["cpu_us"] > 0.25 * spin["duration_us"], f"on-CPU: {spin['cpu_us']}")
expect(nap["cpu_us"] is not None and nap["cpu_us"] < 0.1 * nap["duration_us"], f"off-CPU: {nap['cpu_us']}")
mods = records(logs, "modules")
expect(len(mods) >= 1, "a modules record")
fixture = [m for m in mods[0]["modules"] if m["path"].endswith("/stall_server")]
expect_eq(len(fixture), 1, "the fixture in the module map")
expect_eq(fixture[0]["build_id"], "$build_id", "its build-id")
loops = [l for s in records(logs, "sample") for l in s.get("loops", [])]
expect(loops, "loops in the samples")
expect(max(l["max_busy_us"] for l in loops) >= 360000, f"longest busy time: {loops}")
expect(sum(l["iterations"] for l in loops) >= 8, f"iterations: {loops}")
folded = open("stalls.folded").read()
expect("busy_spin_in_handler" in folded, f"busy_spin_in_handler in the folded stacks:\n{folded}")
expect("sleep_in_handler" in folded, f"sleep_in_handler in the folded stacks:\n{folded}")
PY

# A poll loop on a socketpair for MS milliseconds; prints whether libunwind is mapped at the end.
loop_maps() {
    wj "unwind-$1" "$PYTHON" -c '
import select, socket, sys, time
a, b = socket.socketpair()
b.send(b"x")
end = time.monotonic() + int(sys.argv[1]) / 1000
while time.monotonic() < end:
    select.select([a], [], [], 0.005)
print("libunwind" in open("/proc/self/maps").read())' "$1"
}
short=$(loop_maps 60) || fail "60 ms loop"
long=$(loop_maps 400) || fail "400 ms loop"
[ "$short" = False ] || fail "a 60 ms loop process loaded the unwinder (it needs it at 125 ms at the earliest)"
[ "$long" = True ] || fail "a 400 ms loop process did not load the unwinder by its end"
pylogs <<'PY'
for d in ("unwind-60", "unwind-400"):
    expect_eq(len(records(load_dir(d), "stall")), 0, f"stalls in {d}")
PY
