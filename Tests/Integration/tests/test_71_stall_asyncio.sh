# A python3 asyncio server whose handler calls time.sleep(0.5): exactly one loop stall of
# 500 ms ± 10%, off-CPU, with a stack (taken when the sleep returns: no signal is sent to a
# sleeping thread) that symbolizes into the interpreter.
. "$WJ_LIB/common.sh"

wj_bg server logs "$PYTHON" "$WJ_LIB/../fixtures/asyncio_stall_server.py"
server=$BG_PID
wait_file "$TEST_TMP/server.out" 20 || fail "server did not start"
port=$(head -1 "$TEST_TMP/server.out")
python3 "$WJ_LIB/stall_client.py" "$port" ok ok "sleep 500" ok quit || fail "client"
wait "$server"; status=$?
[ "$status" = 0 ] || { cat "$TEST_TMP/server.out"; fail "server exit status $status"; }
"$WEDJAT_CLI" export --folded stalls.folded logs 2>export.err || { cat export.err; fail "export --folded"; }

pylogs <<'PY'
logs = load_dir("logs")
stalls = records(logs, "stall")
expect_eq(len(stalls), 1, "stall records")
s = stalls[0]
expect_eq(s["kind"], "loop", "kind")
expect(s["after"].startswith("epoll"), f"after {s['after']}")
expect(450000 <= s["duration_us"] <= 550000, f"a 500 ms stall lasted {s['duration_us']} us")
expect(s["cpu_us"] is not None and s["cpu_us"] < 0.2 * s["duration_us"], f"off-CPU: {s['cpu_us']}")
expect(len(s["samples"]) >= 1 and all(len(x["frames"]) >= 5 for x in s["samples"]), f"stacks: {s['samples']}")
folded = open("stalls.folded").read()
expect("python" in folded and "sleep" in folded.lower(), f"the interpreter's sleep in the stack:\n{folded}")
PY
[ $? = 0 ] || fail "the asyncio server's stall"

wj logs-exit "$PYTHON" "$WJ_LIB/../fixtures/stall_then_exit.py" || fail "stall_then_exit.py exited $?"
pylogs <<'PY'
stalls = records(load_dir("logs-exit"), "stall")
expect_eq(len(stalls), 1, "stall records of the process that ended right after its stall")
s = stalls[0]
expect(not s.get("ongoing"), f"written as still going on: {s}")
expect(380000 <= s["duration_us"] <= 440000, f"a 400 ms stall lasted {s['duration_us']} us")
expect(s["cpu_us"] is not None and s["cpu_us"] < 0.2 * s["duration_us"], f"off-CPU: {s['cpu_us']}")
expect(len(s["samples"]) >= 1 and all(len(x["frames"]) >= 5 for x in s["samples"]), f"its stack: {s['samples']}")
PY
[ $? = 0 ] || fail "the stall of a process that ended right after it"
finish
