# More ways to end (fixtures/rel_exit2.c), each after a connection: quick_exit (the
# at_quick_exit handler still runs), exit() and _exit() from a second thread while main is
# blocked in read(), _exit() from a SIGALRM handler, main calling pthread_exit() (the process
# ends when its last thread returns), and SIGTERM (default action) / SIGKILL. Exit status and
# output as without wedjat; every line of every log parses; process_end has the right reason
# and status; SIGTERM at its default action writes process_end reason "signal" before the
# signal ends the process (test 80); SIGKILL leaves none (documented), where the connection
# closed before is still flushed.
. "$WJ_LIB/common.sh"

run_mode() {  # MODE WANT_RC REASON STATUS
    local mode=$1 want=$2
    plain "$FIXTURES/rel_exit2" "$mode" > "$mode.plain" 2> "$mode.plain.err"; local rp=$?
    WJ_TIMEOUT=10 wj "logs_$mode" "$FIXTURES/rel_exit2" "$mode" > "$mode.out" 2> "$mode.err"; local rw=$?
    [ $rp = "$want" ] || fail "$mode without wedjat exited $rp, want $want: $(head -3 "$mode.plain.err")"
    if [ $rw = 124 ] || [ $rw = 137 ]; then
        soft_fail "$mode: the watched process did not end within 10 s (killed by timeout; threads left: see log)"
        return
    fi
    [ $rw = "$want" ] || soft_fail "$mode with wedjat exited $rw, want $want: $(head -3 "$mode.err")"
    # the pid differs between the runs: compare the rest
    sed 1d "$mode.plain" > "$mode.plain.rest"; sed 1d "$mode.out" > "$mode.out.rest"
    cmp -s "$mode.plain.rest" "$mode.out.rest" || soft_fail "$mode: output differs: without $(paste -sd'|' "$mode.plain.rest"), with $(paste -sd'|' "$mode.out.rest")"
}
run_mode quick_exit 6
grep -qx 'at_quick_exit ran' quick_exit.out || soft_fail "quick_exit: the at_quick_exit handler did not run with wedjat"
run_mode thread_exit 7
grep -qx 'atexit ran' thread_exit.out || soft_fail "thread_exit: the atexit handler did not run with wedjat"
run_mode thread__exit 8
run_mode handler_exit 9

# main calls pthread_exit(): the process must end when the app's last thread returns
plain "$FIXTURES/rel_exit2" main_pthread_exit > mpe.plain 2>&1; rp=$?
[ $rp = 0 ] || fail "main_pthread_exit without wedjat exited $rp"
wj_bg mpe logs_main_pthread_exit "$FIXTURES/rel_exit2" main_pthread_exit
pid=$BG_PID
for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$pid" 2>/dev/null; then
    left=$(cat /proc/"$pid"/task/*/comm 2>/dev/null | paste -sd,)
    bg_stop "$pid" KILL
    soft_fail "main_pthread_exit: still running 5 s after the app's last thread returned (threads left: ${left:-?})"
else
    wait "$pid"; rw=$?
    [ $rw = 0 ] || soft_fail "main_pthread_exit with wedjat exited $rw"
    grep -qx 'atexit ran' mpe.out || soft_fail "main_pthread_exit: the atexit handler did not run with wedjat"
fi

# killed by signals after the connection: whole lines; process_end for SIGTERM only
for sig in TERM KILL; do
    wj_bg "wait_$sig" "logs_$sig" "$FIXTURES/rel_exit2" wait
    pid=$BG_PID
    for i in $(seq 1 100); do grep -q '^ready' "wait_$sig.out" 2>/dev/null && break; sleep 0.05; done
    grep -q '^ready' "wait_$sig.out" || fail "wait mode did not get ready: $(cat "wait_$sig.out")"
    sleep 0.6   # > WEDJAT_FLUSH_MS (200 ms): the closed connection has been flushed
    kill "-$sig" "$pid"
    wait "$pid"; rc=$?
    case $sig in TERM) want=143 ;; KILL) want=137 ;; esac
    [ $rc = $want ] || soft_fail "SIG$sig: exit status $rc, want $want"
done

pylogs <<'PY'
soft_mode()
def the_log(mode):
    logs = load_dir(f"logs_{mode}")   # strict: every line JSON, whole, process_start first
    return one(by_exe(logs, "rel_exit2"), f"{mode}: rel_exit2 log")

for mode, reason, status, conns in [("quick_exit", "quick_exit", 6, 2), ("thread_exit", "exit", 7, 2),
                                    ("thread__exit", "_exit", 8, 2), ("main_pthread_exit", "exit", 0, 2)]:
    try:
        log = the_log(mode)
    except (LogError, CheckFailed) as e:
        expect(False, str(e)); continue
    end = log.end
    if not expect(end is not None, f"{mode}: no process_end"):
        continue
    expect_eq((end["reason"], end["exit_status"]), (reason, status), f"{mode}: process_end (reason, exit_status)")
    c = log.records("connection")
    expect_eq(len(c), conns, f"{mode}: connection records (client + server)")
    expect(all(x["bytes_out"] + x["bytes_in"] == 3 and not x["open_at_exit"] for x in c), f"{mode}: connection bytes {c}")
    if mode.startswith("thread_"):
        # the connection was made by the second thread, and it ended the process
        expect(all(x["tid"] != log.pid for x in c), f"{mode}: connection tids {[x['tid'] for x in c]} include main's")
        expect(end["tid"] != log.pid, f"{mode}: process_end.tid {end['tid']} is main's, not the exiting thread's")
    expect_eq(end["records"].get("connection"), conns, f"{mode}: process_end.records.connection")
    print(f"{mode}: ok ({reason} {status})")

log = the_log("handler_exit")
end = log.end
if expect(end is not None, "handler_exit: no process_end"):
    expect_eq((end["reason"], end["exit_status"]), ("_exit", 9), "handler_exit: (reason, exit_status)")
    n = len(log.records("connection"))
    expect(n + end["dropped_events"] > 0, "handler_exit: no connection recorded or counted")
    expect_eq(end["records"].get("connection", 0), n, "handler_exit: process_end.records.connection vs lines")
    print(f"handler_exit: ok, {n} connection records, {end['dropped_events']} dropped events")

for sig in ("TERM", "KILL"):
    log = the_log(sig)
    if sig == "TERM":
        end = log.end or {}
        expect_eq((end.get("reason"), end.get("signal"), end.get("exit_status")), ("signal", "SIGTERM", None),
                  "SIGTERM: process_end written before the signal ended the process")
    else:
        expect_eq(log.end, None, f"SIG{sig}: process_end of a killed process")
    expect_eq(len(log.records("connection")), 2, f"SIG{sig}: connection records flushed before the signal")
    print(f"SIG{sig}: ok, {len(log.records_all)} records")
PY
[ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))
finish
