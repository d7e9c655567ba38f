# wedjat under hostile limits never changes how the program ends:
# (a) the log directory is on a tiny tmpfs filled to the last byte: a watched program making
#     50 connections exits 0 as without wedjat (no SIGPIPE, no crash); a watched program
#     writing into a pipe whose reader has gone dies of SIGPIPE exactly as without wedjat;
#     whatever log files exist hold only whole lines. (Skipped if tmpfs cannot be mounted.)
# (b) `ulimit -f 1`: 50 connections, exit status unchanged (no SIGXFSZ death), the log lines
#     that exist parse, and the records that did not fit are counted as dropped.
# (c) `ulimit -n 32`: a program that opens fds until EMFILE gets at most 2 fewer with wedjat
#     (its log fd), and an exec'd child sees exactly the same fds (/proc/self/fd).
. "$WJ_LIB/common.sh"

same_but_port() {  # A B: outputs equal once the "port N" line is dropped
    cmp -s <(grep -v '^port ' "$1") <(grep -v '^port ' "$2")
}
check_lines() {  # DIR LABEL [MIN_DROPPED]: every file empty or whole valid lines
    pylogs "$@" <<'PY'
d, label = sys.argv[1], sys.argv[2]
min_dropped = int(sys.argv[3]) if len(sys.argv) > 3 else None
files = load_dir_lines(d)   # raises on a half line or a line that is not a record
empty = [p for p, r in files.items() if not r]
full = {p: r for p, r in files.items() if r}
for p, recs in full.items():
    expect_eq(recs[0]["type"], "process_start", f"{label}: first record of {p}")
    ends = [r for r in recs if r["type"] == "process_end"]
    if ends and min_dropped is not None:
        expect(ends[-1]["dropped_records"] >= min_dropped,
               f"{label}: dropped_records {ends[-1]['dropped_records']} < {min_dropped} in {p}")
print(f"{label}: {len(files)} log files ({len(empty)} empty), all lines whole")
PY
}

# ---- (a) full file system
mkdir -p full
if mount -t tmpfs -o size=16k,mode=0755 tmpfs full 2>mount.err; then
    trap 'umount "$TEST_TMP/full" 2>/dev/null; _cleanup_bg' EXIT
    dd if=/dev/zero of=full/filler bs=1k 2>/dev/null
    avail=$(df -k --output=avail full | tail -n 1 | tr -d ' ')
    [ "$avail" = 0 ] || note "the tmpfs still has $avail KiB free"
    echo x > full/probe 2>/dev/null && fail "the tmpfs is not full: a 2-byte file could be written"
    plain "$FIXTURES/rel_netclient" 50 > a.plain 2> a.plain.err; rp=$?
    wj full/logs "$FIXTURES/rel_netclient" 50 > a.watched 2> a.watched.err; rw=$?
    [ $rp = 0 ] || fail "rel_netclient 50 without wedjat exited $rp"
    [ $rw = $rp ] || soft_fail "full fs: rel_netclient exited $rw (without wedjat: $rp): $(head -3 a.watched.err)"
    same_but_port a.plain a.watched || soft_fail "full fs: output differs: $(cat a.watched)"
    cmp -s a.plain.err a.watched.err || soft_fail "full fs: stderr differs: $(head -c 300 a.watched.err)"
    # SIGPIPE: the program's own, and only when the program itself writes to a dead pipe
    plain "$FIXTURES/rel_netclient" 3 flood 2>/dev/null | head -c 100 > /dev/null; pp=${PIPESTATUS[0]}
    wj full/logs "$FIXTURES/rel_netclient" 3 flood 2>/dev/null | head -c 100 > /dev/null; pw=${PIPESTATUS[0]}
    [ "$pp" = 141 ] || note "without wedjat the flood writer ended with $pp (SIGPIPE = 141 expected)"
    [ "$pw" = "$pp" ] || soft_fail "full fs: the pipe writer ended with $pw, without wedjat $pp"
    echo "full fs: rel_netclient exit $rw, pipe writer $pw (without wedjat $pp)"
    check_lines full/logs "full fs" || SOFT_FAILS=$((SOFT_FAILS + 1))
    ls -la full/logs | sed 's/^/  /'
    umount full || fail "cannot unmount the test tmpfs"
else
    note "(a) skipped: cannot mount a tmpfs here: $(cat mount.err)"
fi

# ---- (b) RLIMIT_FSIZE of one block
(
    ulimit -f 1 || exit 99
    plain "$FIXTURES/rel_netclient" 50 > b.plain 2> b.plain.err; echo $? > b.plain.rc
    wj logs_fsize "$FIXTURES/rel_netclient" 50 > b.watched 2> b.watched.err; echo $? > b.watched.rc
)
[ $? = 99 ] && fail "ulimit -f 1 refused"
rp=$(cat b.plain.rc) rw=$(cat b.watched.rc)
[ "$rp" = 0 ] || fail "rel_netclient 50 under ulimit -f 1 without wedjat exited $rp"
[ "$rw" = "$rp" ] || soft_fail "ulimit -f 1: rel_netclient exited $rw with wedjat ($([ "$rw" = 153 ] && echo SIGXFSZ)), $rp without"
same_but_port b.plain b.watched || soft_fail "ulimit -f 1: output differs: $(cat b.watched)"
[ -d logs_fsize ] || soft_fail "ulimit -f 1: no log directory at all"
check_lines logs_fsize "ulimit -f 1" 1 || SOFT_FAILS=$((SOFT_FAILS + 1))
for f in logs_fsize/*; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 1024 ] || soft_fail "ulimit -f 1: $f is larger than the limit"
done

# ---- (c) RLIMIT_NOFILE of 32
(
    ulimit -n 32 || exit 99
    plain "$FIXTURES/rel_fdfill" > c.plain 2> c.plain.err; echo $? > c.plain.rc
    wj logs_nofile "$FIXTURES/rel_fdfill" > c.watched 2> c.watched.err; echo $? > c.watched.rc
)
[ $? = 99 ] && fail "ulimit -n 32 refused"
rp=$(cat c.plain.rc) rw=$(cat c.watched.rc)
[ "$rp" = 0 ] || fail "rel_fdfill under ulimit -n 32 without wedjat exited $rp: $(cat c.plain.err)"
[ "$rw" = 0 ] || soft_fail "rel_fdfill under ulimit -n 32 with wedjat exited $rw: $(cat c.watched.err)"
np=$(sed -n 's/^opened \([0-9]*\) .*/\1/p' c.plain)
nw=$(sed -n 's/^opened \([0-9]*\) .*/\1/p' c.watched)
echo "ulimit -n 32: the program opened $np fds without wedjat, $nw with"
[ -n "$np" ] && [ -n "$nw" ] || fail "no 'opened N' line: $(cat c.plain c.watched)"
[ $((np - nw)) -le 2 ] || soft_fail "with wedjat the program could open only $nw fds, without $np (more than 2 fewer)"
[ "$nw" -le "$np" ] || note "with wedjat more fds than without?"
grep -qx 'after: ok' c.watched || soft_fail "ulimit -n 32: connections after EMFILE failed with wedjat: $(cat c.watched.err)"
sed '1,/^after: ok$/d' c.plain | sort -n > c.plain.fds
sed '1,/^after: ok$/d' c.watched | sort -n > c.watched.fds
[ -s c.plain.fds ] || fail "the exec'd ls listed nothing"
cmp -s c.plain.fds c.watched.fds || soft_fail "the exec'd child's fds differ: without $(paste -sd, c.plain.fds), with $(paste -sd, c.watched.fds)"
pylogs logs_nofile <<'PY'
logs = load_dir(sys.argv[1])
log = one(by_exe(logs, "rel_fdfill"), "rel_fdfill log")
expect_eq(len(log.records("connection")), 12, "connection records (3 before and 3 after EMFILE, both sides)")
expect_eq(log.end["reason"], "exec", "process_end.reason")
one(by_exe(logs, "ls"), "log of the exec'd ls")
PY
[ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))
finish
