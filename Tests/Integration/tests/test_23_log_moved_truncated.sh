# The log file is moved away, truncated or deleted while the app runs (fixtures/rel_phases.c:
# 3 phases of 5 connections, the test acts between phase 1 and 2, after phase 1 was flushed).
# No crash; the later records appear: for mv and rm in a new file at the original path, for
# truncate in the same file (no hole, no NUL bytes); every line of every file parses; the moved
# file keeps phase 1 intact; a new file begins with process_start, as every log file must
# (docs/LOG_FORMAT.md).
. "$WJ_LIB/common.sh"

mkfifo ctl || fail "mkfifo"
exec 3<>ctl

wait_line() {  # FILE LINE: up to 10 s
    local i
    for i in $(seq 1 200); do grep -qx "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
    fail "no '$2' in $1: $(cat "$1")"
}

scenario() {  # ACTION: mv | truncate | rm
    local action=$1 d=logs_$1
    env WEDJAT_DIR="$d" LD_PRELOAD="$WEDJAT_PRELOAD" "$FIXTURES/rel_phases" 3 5 <&3 > "$action.out" 2>&1 &
    local pid=$!
    BG_PIDS+=("$pid")
    wait_line "$action.out" "phase 1 done"
    sleep 0.5                          # phase 1 is flushed (every 20 ms while busy)
    local f
    f=$(ls "$d"/*.ndjson 2>/dev/null)
    [ "$(echo "$f" | wc -w)" = 1 ] || fail "$action: want one log after phase 1, got: $f"
    ls -i "$f" | cut -d' ' -f1 > "$action.inode"
    echo "$f" > "$action.path"
    case $action in
    mv) mv "$f" moved.ndjson ;;
    truncate) truncate -s 0 "$f" ;;
    rm) rm "$f" ;;
    esac
    echo go >&3
    wait_line "$action.out" "phase 2 done"
    sleep 0.3
    echo go >&3
    local i
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$pid" 2>/dev/null && { bg_stop "$pid" KILL; fail "$action: rel_phases did not finish"; }
    wait "$pid"; local rc=$?
    [ $rc = 0 ] || soft_fail "$action: rel_phases exited $rc: $(cat "$action.out")"
    grep -qx "phase 3 done" "$action.out" || soft_fail "$action: phase 3 not reached"
}

scenario mv
scenario truncate
scenario rm

pylogs <<'PY'
import os
soft_mode()

def phase_of(c):
    return (c["bytes_out"] or c["bytes_in"]) - 10

def check_later(label, recs, want_start):
    conns = [r for r in recs if r["type"] == "connection"]
    expect_eq(sorted(phase_of(c) for c in conns), [2] * 10 + [3] * 10, f"{label}: phases of the connection records")
    end = recs[-1] if recs else {}
    expect_eq(end.get("type"), "process_end", f"{label}: last record")
    if end.get("type") == "process_end":
        expect_eq((end["reason"], end["exit_status"], end["dropped_records"]), ("exit", 0, 0),
                  f"{label}: process_end (reason, exit_status, dropped_records)")
    if want_start:
        expect_eq(recs[0]["type"] if recs else None, "process_start", f"{label}: first record of the new file")

for action in ("mv", "truncate", "rm"):
    d = f"logs_{action}"
    path = open(f"{action}.path").read().strip()
    names = sorted(os.listdir(d))
    expect_eq(names, [os.path.basename(path)], f"{action}: files in the log directory afterwards")
    if not os.path.exists(path):
        expect(False, f"{action}: nothing at the original path {path}"); continue
    raw = open(path, "rb").read()
    expect(b"\0" not in raw, f"{action}: NUL bytes in {path} (a hole: written at the old offset)")
    recs = load_lines(path)                 # every line whole JSON
    inode = os.stat(path).st_ino
    old_inode = int(open(f"{action}.inode").read())
    if action == "truncate":
        expect_eq(inode, old_inode, "truncate: the log is still the same file")
        check_later("truncate", recs, want_start=False)
    else:
        if action == "mv":  # (after rm the number may be reused)
            expect(inode != old_inode, "mv: the original path is still the moved file")
        check_later(action, recs, want_start=True)
    print(f"{action}: {len(recs)} records at the original path, first {recs[0]['type'] if recs else None}")

moved = load_file("moved.ndjson")           # strict: process_start first, whole lines
conns = moved.records("connection")
expect_eq(sorted(phase_of(c) for c in conns), [1] * 10, "mv: phases of the records in the moved file")
expect_eq(moved.end, None, "mv: process_end in the moved file")
print(f"mv: moved file intact ({len(moved.records_all)} records)")
PY
[ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))
finish
