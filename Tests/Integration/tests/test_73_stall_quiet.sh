# No false positives, no side effects: 200 threads each in its own poll loop (50 ms timeouts)
# for 3 s, none stalling: zero stalls and no EINTR; an idle sleep and a loop that waits 3 s in
# one select: zero stalls; every poll thread is a loop in the samples.
. "$WJ_LIB/common.sh"

wj_bg server logs "$FIXTURES/stall_server" 200 poll
server=$BG_PID
wait_file "$TEST_TMP/server.out" 10 || fail "server did not start"
port=$(head -1 "$TEST_TMP/server.out")
for i in 1 2 3 4 5 6; do
    python3 "$WJ_LIB/stall_client.py" "$port" ok "spin 50" || fail "client"
    sleep 0.5
done
python3 "$WJ_LIB/stall_client.py" "$port" quit || fail "client"
wait "$server"; status=$?
[ "$status" = 0 ] || fail "server exit status $status"
grep -q "^eintr 0$" "$TEST_TMP/server.out" || fail "the server saw EINTR: $(tail -1 "$TEST_TMP/server.out")"

wj idle sleep 1.5 || fail "sleep"
wj idle "$PYTHON" -c 'import select; select.select([], [], [], 3)' || fail "select"

pylogs <<'PY'
expect_eq(len(records(load_dir("logs"), "stall")), 0, "stalls of 200 quiet poll loops")
expect_eq(len(records(load_dir("idle"), "stall")), 0, "stalls of idle programs")
samples = records(load_dir("logs"), "sample")
expect(any(len(s.get("loops", [])) == 16 for s in samples), "16 busiest loops listed per sample")
for s in samples:
    for l in s.get("loops", []):
        expect(l["max_busy_us"] < 250000, f"no busy time near the threshold: {l}")
PY
