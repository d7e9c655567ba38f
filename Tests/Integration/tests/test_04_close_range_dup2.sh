# An app that close_range()s, closefrom()s and dup2()s over every fd number, including the
# number wedjat's log has in its own thread's table (hooked and raw-syscall paths): the log is
# never in the app's fd table, no wedjat byte lands in the app's pipes/files, every app fd
# stays what the app made it, and the log goes on through every phase.
. "$WJ_LIB/common.sh"

mkdir -p app
wj logs "$FIXTURES/fdchaos" "$TEST_TMP/app" > out.txt 2> err.txt
rc=$?
cat out.txt err.txt
[ $rc = 0 ] || fail "fdchaos exited $rc: $(tr '\n' ' ' < err.txt)"
grep -q '^phase 1: wedjat log fd [0-9]* (in wedjat' out.txt || fail "the log fd was never seen open in wedjat's table in phase 1"
if grep -l '"type"' app/* 2>/dev/null; then fail "wedjat JSON found in the app's files"; fi

pylogs logs <<'PY'
logs = load_dir(sys.argv[1])
log = one(logs, "log file")
conns = log.records("connection")
expect_eq(sorted(c["bytes_out"] for c in conns), [1, 2, 3, 4, 5], "bytes_out of the 5 phases' connections")
for c in conns:
    expect_eq(c["role"], "client", "role")
    expect_eq(c["error"], None, "error")
    expect_eq(c["open_at_exit"], False, "open_at_exit")
expect_eq([r["type"] for r in log.records_all].count("drops"), 0, "drops records")
end = log.end
expect(end is not None, "no process_end: logging did not resume at the end")
expect_eq(end["reason"], "exit", "reason")
expect_eq(end["exit_status"], 0, "exit_status")
expect_eq(end["dropped_events"], 0, "dropped_events")
expect_eq(end["dropped_records"], 0, "dropped_records")
expect_eq(end["records"].get("connection"), 5, "process_end.records.connection")
print("ok")
PY
