# Threads busily connecting while the main thread vforks+execs and posix_spawns /bin/true
# 200 times each: no deadlock, every child runs, every log is valid and complete.
. "$WJ_LIB/common.sh"

WJ_TIMEOUT=90 wj logs "$FIXTURES/spawn_storm" 3 200 200 > out.txt 2> err.txt
rc=$?
[ $rc = 124 ] && fail "spawn_storm did not finish within 90 s (deadlock?)"
[ $rc = 0 ] || fail "spawn_storm exited $rc: $(cat err.txt)"
cat out.txt
read -r _ conns _ children < out.txt
[ "$children" = 400 ] || fail "children run: $children, want 400"

pylogs logs "$conns" <<'PY'
soft_mode()  # report every problem, not only the first
d, conns = sys.argv[1], int(sys.argv[2])
logs = load_dir(d)
storm = one(by_exe(logs, "spawn_storm"), "spawn_storm log")
trues = by_exe(logs, "true")
expect_eq(len(logs), 401, "log files (spawn_storm + 400 /bin/true)")
expect_eq(len(trues), 400, "/bin/true logs")
for t in trues:
    if not expect(t.end is not None, f"{t.path}: no process_end"):
        continue
    expect_eq(t.end["reason"], "exit", f"{t.path}: reason")
    expect_eq(t.end["exit_status"], 0, f"{t.path}: exit_status")
    expect_eq(t.start["exec_from"], None, f"{t.path}: exec_from (the spawner's image did not end)")
    expect_eq(t.start["ppid"], storm.pid, f"{t.path}: ppid")
end = storm.end
if end is None:
    fail("spawn_storm: no process_end")
expect_eq(end["reason"], "exit", "spawn_storm reason")
expect_eq(end["exit_status"], 0, "spawn_storm exit_status")
expect_eq(end["dropped_events"], 0, "dropped_events")
expect_eq(end["dropped_records"], 0, "dropped_records")
expect_eq(storm.records("fork"), [], "fork records (vfork and posix_spawn are not fork)")
expect_eq(storm.records("exec_failed"), [], "exec_failed records")
cl = storm.records("connection", role="client")
sv = storm.records("connection", role="server")
expect_eq(len(cl), conns, "client connection records vs connections made")
expect_eq(len(sv), conns, "server connection records vs connections made")
expect(all(c["bytes_out"] == 4 for c in cl), "client bytes_out")
expect(all(s["bytes_in"] == 4 for s in sv), "server bytes_in")
closed = [c for c in cl if not c["open_at_exit"]]
expect_eq(len({c["tid"] for c in closed}), 3, "distinct client thread ids")
expect_eq(sorted({c["bytes_out"] for c in cl}), [4], "distinct client bytes_out values")
expect_eq([c for c in cl if c["open_at_exit"]][:3], [], "client connections reported open at exit (all were closed)")
ids = [c["conn_id"] for c in cl + sv]
expect_eq(len(ids), len(set(ids)), "distinct conn_ids")
expect(all(c["tid"] != storm.pid for c in closed), "client records attributed to the main thread")
print(f"{conns} connections made, {len(cl)} client + {len(sv)} server records, {len(trues)} children")
PY
