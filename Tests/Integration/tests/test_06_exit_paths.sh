# Every way a process can end: the log is whole lines, process_start first, process_end with
# the right reason and exit status, the connection recorded; exec links the next image's log.
. "$WJ_LIB/common.sh"

run_mode() {
    local mode=$1 want_rc=$2
    wj "logs_$mode" "$FIXTURES/exit_paths" "$mode" > "$mode.out" 2> "$mode.err"
    local rc=$?
    [ "$rc" = "$want_rc" ] || fail "mode $mode exited $rc, want $want_rc: $(cat "$mode.err")"
    grep -q "^mode $mode pid" "$mode.out" || fail "mode $mode: no output"
}
run_mode return 3
run_mode exit 4
run_mode _exit 5
run_mode abort 134
run_mode exec 0
run_mode quick 0

# SIGKILL in the middle of a run: whatever was flushed is whole lines.
wj_bg killed logs_sigkill "$FIXTURES/exit_paths" sleep
victim=$BG_PID
sleep 0.5
kill -KILL "$victim"
wait "$victim"; rc=$?
[ $rc = 137 ] || fail "SIGKILLed fixture exited $rc, want 137"

# An exec'd image killed before its first flush (SIGKILL here; `ls | head`'s SIGPIPE alike)
# leaves no exec hint behind: the image removes it when it starts. One stale hint would cost
# every later watched process of this user a lookup in the hint directory.
wj logs_exec_killed bash -c 'exec sh -c "echo \$\$; kill -KILL \$\$"' > exec_killed.out 2>&1
victim=$(head -n 1 exec_killed.out)
case $victim in ''|*[!0-9]*) fail "exec then SIGKILL: no pid printed: $(cat exec_killed.out)" ;; esac
for hint in "/dev/shm/wedjat-$(id -u)/exec.$victim" "logs_exec_killed/.exec.$victim"; do
    [ ! -e "$hint" ] || fail "exec'd image killed before its first flush left its hint: $hint"
done
grep -q '"reason":"exec"' logs_exec_killed/bash.*.ndjson || fail "exec then SIGKILL: no pre-exec log ending in exec"

pylogs <<'PY'
def single(mode):
    logs = load_dir(f"logs_{mode}")
    return one(logs, f"log of mode {mode}"), logs

def check_conn(log, mode, open_at_exit):
    c = one(log.records("connection"), f"connection record ({mode})")
    expect_eq(c["bytes_out"], 3, f"{mode}: bytes_out")
    expect_eq(c["role"], "client", f"{mode}: role")
    expect_eq(c["open_at_exit"], open_at_exit, f"{mode}: open_at_exit")
    expect(c["ts"] <= log.end["ts"], f"{mode}: connection after process_end")

for mode, reason, status, still_open in [("return", "exit", 3, False), ("exit", "exit", 4, False),
                                        ("_exit", "_exit", 5, True), ("abort", "abort", None, True),
                                        ("quick", "exit", 0, False)]:
    log, _ = single(mode)
    expect(log.exe == "exit_paths", f"{mode}: exe {log.exe}")
    end = log.end
    expect(end is not None, f"{mode}: no process_end")
    expect_eq(end["reason"], reason, f"{mode}: process_end.reason")
    expect_eq(end["exit_status"], status, f"{mode}: process_end.exit_status")
    # the connections still open when the image ended (each also a record with open_at_exit)
    expect_eq(end["open_connections"], 1 if still_open else 0, f"{mode}: open_connections")
    check_conn(log, mode, still_open)
    expect(end["duration_us"] >= 0, f"{mode}: duration_us")
    print(f"{mode}: ok ({end['reason']}, {end['exit_status']}, {end['duration_us']} us)")

# exec: two logs, same pid; the first ends with reason exec, the second names it in exec_from.
logs = load_dir("logs_exec")
expect_eq(len(logs), 2, "logs of the exec chain")
first = one(by_exe(logs, "exit_paths"), "pre-exec log")
second = one(by_exe(logs, "true"), "post-exec log (/bin/true)")
expect_eq(first.end["reason"], "exec", "pre-exec reason")
expect_eq(first.end["exit_status"], None, "pre-exec exit_status")
check_conn(first, "exec", True)
expect_eq(second.pid, first.pid, "pid across exec")
expect_eq(second.start["exec_from"], first.path, "exec_from")
expect_eq(second.start["proc_start_ticks"], first.start["proc_start_ticks"], "proc_start_ticks across exec")
expect(second.start["ts"] >= first.end["ts"], "second image starts before the first ended")
expect_eq(second.end["reason"], "exit", "post-exec reason")
expect_eq(second.end["exit_status"], 0, "post-exec exit_status")
print("exec: ok")

# SIGKILL: load_dir already checked whole lines; there must be a log and no process_end.
log, _ = single("sigkill")
expect_eq(log.end, None, "process_end of a SIGKILLed process")
# its connection closed ~0.5 s before the kill: flushed within WEDJAT_FLUSH_MS (200 ms)
expect_eq(len(log.records("connection")), 1, "connection records flushed before the SIGKILL")
print("sigkill: ok,", len(log.records_all), "records flushed before the kill")
PY
