# Everyday commands behave exactly the same with the preload: stdout, stderr, exit status.
. "$WJ_LIB/common.sh"

seq 1 5000 | awk '{ print ($1 * 7919) % 10007, "line", $1 }' > input.txt
printf 'b\na\n' > small.txt

n=0
compare() {
    # compare LABEL FILTER cmd args...   (FILTER: a sed expression applied to both stdouts, or "")
    local label=$1 filter=$2
    shift 2
    n=$((n + 1))
    plain "$@" > "p$n.out" 2> "p$n.err" < input.txt; local rp=$?
    wj "logs$n" "$@" > "w$n.out" 2> "w$n.err" < input.txt; local rw=$?
    if [ -n "$filter" ]; then
        sed -i -e "$filter" "p$n.out" "w$n.out"
    fi
    [ $rp = $rw ] || fail "$label: exit status $rp without, $rw with the preload"
    cmp -s "p$n.out" "w$n.out" || { diff "p$n.out" "w$n.out" | head; fail "$label: stdout differs"; }
    cmp -s "p$n.err" "w$n.err" || { diff "p$n.err" "w$n.err" | head; fail "$label: stderr differs"; }
    # (a process killed by a signal before wedjat's first flush leaves no log: by design)
    [ -d "logs$n" ] || [ "${NOLOG_OK:-0}" = 1 ] || fail "$label: no log directory (was the preload active?)"
    echo "same: $label (exit $rp, $(wc -c < "p$n.out") bytes out, $(ls "logs$n" 2>/dev/null | wc -l) logs)"
    LAST_STATUS=$rp
}

compare "ls -la /usr/bin | head" "" bash -c 'ls -la /usr/bin | head -n 30'
compare "sort" "" sort
compare "sort -n -k1,1" "" sort -n -k1,1
compare "wc" "" wc
compare "cat" "" cat input.txt small.txt
compare "cat missing file" "" cat /nonexistent/file
[ "$LAST_STATUS" = 1 ] || fail "cat of a missing file exited $LAST_STATUS, want 1"
compare "sha256sum" "" sha256sum input.txt /usr/bin/ls
compare "tr|uniq pipeline" "" sh -c 'tr a-z A-Z < input.txt | cut -c1-3 | sort | uniq -c | sort -rn | head'
compare "env (without LD_PRELOAD/WEDJAT_)" "/^LD_PRELOAD=/d; /^WEDJAT_/d" sh -c 'env | sort'
compare "bash loop, exit 3" "" bash -c 'for i in 1 2 3; do echo $i; done; echo err >&2; exit 3'
[ "$LAST_STATUS" = 3 ] || fail "bash exit 3 gave $LAST_STATUS"
compare "false" "" false
[ "$LAST_STATUS" = 1 ] || fail "false gave $LAST_STATUS"
NOLOG_OK=1 compare "sh kills itself with TERM" "" sh -c 'kill -TERM $$'
[ "$LAST_STATUS" = 143 ] || fail "sh -c 'kill -TERM \$\$' gave $LAST_STATUS, want 143"
compare "find" "" find /usr/share/doc/bash -maxdepth 1 -name '*.gz'
compare "xargs" "" sh -c 'seq 1 50 | xargs -n 7 echo'
compare "dd" "" dd if=input.txt bs=1000 count=3 status=none
compare "grep no match" "" grep -c zzzz input.txt
[ "$LAST_STATUS" = 1 ] || fail "grep with no match gave $LAST_STATUS"

# fds: a watched process that has written nothing yet has no extra fd; and after its first
# network event wedjat's log fd must not take a low number (the app's lowest-free numbering).
compare "ls /proc/self/fd" "" ls /proc/self/fd
compare "readlink fds" 's#/proc/[0-9]*/#/proc/PID/#; s#[pw][0-9]*[.]\(out\|err\)$#X.\1#; s#pipe:\[[0-9]*\]#pipe#' sh -c 'for f in /proc/$$/fd/*; do echo "$f -> $(readlink $f)"; done'
cat > lowfd.py <<'PY'
import os, socket, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept(); c.close(); a.close(); l.close()
time.sleep(0.3)                     # the agent flushes: the log file is open now
fd = os.open("/dev/null", os.O_RDONLY)
print("first free fd after network activity:", fd)
PY
plain "$PYTHON" lowfd.py > p_low.out; wj logs_low "$PYTHON" lowfd.py > w_low.out
cmp -s p_low.out w_low.out || fail "lowest free fd differs: '$(cat p_low.out)' vs '$(cat w_low.out)'"
cat w_low.out
pylogs logs_low <<'PY'
log = one(load_dir(sys.argv[1]), "log")
expect_eq(len(log.records("connection")), 2, "connection records")
PY
[ $? = 0 ] || exit 1

# Every log written above is valid, and the watched exits were recorded as such.
for d in logs*/; do
    python3 "$WJ_LIB/logs.py" check "$d" > /dev/null || fail "$(python3 "$WJ_LIB/logs.py" check "$d")"
done
echo ok
