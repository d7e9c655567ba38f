# exit() from a SIGTERM handler while the main thread may be inside fork() (runtime core): with
# wedjat's thread the process is multi-threaded, and glibc's fork takes locks that exit() needs.
# 100 runs, SIGTERM at a random moment: every one ends with the handler's status 3.
. "$WJ_LIB/common.sh"
runs=${CORE_FORK_RUNS:-100}
for i in $(seq "$runs"); do
    wj_bg "f$i" "logs_$i" "$FIXTURES/core_fork_exit"
    pid=$BG_PID
    for _ in $(seq 100); do grep -q ready "$TEST_TMP/f$i.out" 2>/dev/null && break; sleep 0.01; done
    sleep "0.0$((RANDOM % 10))"
    kill -TERM "$pid"
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid"
        fail "run $i: still running 2 s after SIGTERM (hung)"
    fi
    wait "$pid"; rc=$?
    [ $rc = 3 ] || fail "run $i: exit status $rc, want 3"
done
pylogs logs_1 <<'PY'
logs = by_exe(load_dir(sys.argv[1]), "core_fork_exit")
log = one([l for l in logs if not l.start["parent_log"]], "the forking process's log")
children = [l for l in logs if l.start["parent_log"] == log.path]
expect(len(children) > 50, f"its children's logs: {len(children)}")
expect(log.end is not None and log.end["exit_status"] == 3, f"process_end: {log.end}")
expect(len(log.records("fork")) > 50, "fork records")
print("fork + exit from a handler: ok")
PY
[ $? = 0 ] || fail "log check"
finish
