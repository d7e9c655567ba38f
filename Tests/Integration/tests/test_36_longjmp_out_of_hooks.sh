# siglongjmp out of a hook (runtime core): alarm + siglongjmp out of a blocking connect (the
# classic connect time-out), three times; then ordinary exchanges. wedjat's per-thread state
# stays consistent: the later connections are recorded like any.
. "$WJ_LIB/common.sh"
bg_start echo "$PYTHON" "$WJ_LIB/../fixtures/core_echo_server.py"
srv=$BG_PID
. "$WJ_LIB/delay_server.sh"
delay_server_port echo port

want=$(plain "$FIXTURES/core_longjmp" "$port") || fail "without wedjat: $want"
got=$(WJ_TIMEOUT=30 wj logs "$FIXTURES/core_longjmp" "$port") || fail "with wedjat: $got"
[ "$got" = "$want" ] || fail "output '$got', without wedjat '$want'"
pylogs logs "$port" <<'PY'
log = one(load_dir(sys.argv[1]), "log")
port = int(sys.argv[2])
echo = [c for c in log.records("connection", role="client") if c["peer"] == f"127.0.0.1:{port}"]
expect_eq(len(echo), 5, "exchanges after the time-outs, recorded")
expect(all((c["bytes_out"], c["bytes_in"]) == (5, 5) for c in echo), "their bytes")
# (The three connects left by siglongjmp never returned into wedjat's hook: they are not
# connections in the log. docs/RUNTIME.md says so.)
expect(log.end is not None and log.end["exit_status"] == 0, f"process_end: {log.end}")
print("longjmp: ok")
PY
[ $? = 0 ] || fail "log check"
bg_stop "$srv"
finish
