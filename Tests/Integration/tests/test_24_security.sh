# Security of what wedjat writes and opens:
# - a new nested WEDJAT_DIR is created 0700 at every level and logs are 0600, even with umask 000;
# - WEDJAT_DIR that is a symlink to a directory owned by someone else is refused: nothing
#   written there, the program unaffected; as an unprivileged user (setpriv, uid 65534), a
#   world-writable non-sticky directory is refused and a sticky one (like /tmp) accepted;
# - something planted at the exact future log path is never followed or taken over: the path is
#   predictable here because libfaketime freezes CLOCK_REALTIME (the <start_us> of the name)
#   and the pid is that of a subshell that execs the program: a symlink to a victim file, a
#   dangling symlink, another user's file, a FIFO (must not block the agent, nor the app's exit
#   or its next fork()); skipped without libfaketime;
# - wedjat opens no socket of its own: a watched python http.server has exactly its own
#   listening socket (ss -p) and no other socket after serving requests.
. "$WJ_LIB/common.sh"

# ---- modes, umask 000, nested new directory
( umask 000; wj "$TEST_TMP/new/a/b" "$FIXTURES/rel_netclient" 2 > modes.out 2>&1 ) || fail "rel_netclient failed: $(cat modes.out)"
for d in new new/a new/a/b; do
    m=$(stat -c %a "$d")
    [ "$m" = 700 ] || soft_fail "created directory $d has mode $m, want 700 (umask 000)"
done
n=0
for f in new/a/b/*.ndjson; do
    n=$((n + 1))
    m=$(stat -c %a "$f")
    [ "$m" = 600 ] || soft_fail "log $f has mode $m, want 600 (umask 000)"
done
[ $n = 1 ] || soft_fail "want 1 log in new/a/b, got $n"

# ---- WEDJAT_DIR is a link to another user's directory
mkdir foreign && chown 65534:65534 foreign && ln -s "$TEST_TMP/foreign" link
plain "$FIXTURES/rel_netclient" 2 > link.plain 2>&1
wj "$TEST_TMP/link" "$FIXTURES/rel_netclient" 2 > link.out 2>&1; rc=$?
[ $rc = 0 ] || soft_fail "with WEDJAT_DIR a link to another user's directory, the program exited $rc"
[ "$(grep -v '^port' link.out)" = "$(grep -v '^port' link.plain)" ] || soft_fail "output changed: $(cat link.out)"
[ -z "$(ls -A foreign)" ] || soft_fail "wedjat wrote into another user's directory through a link: $(ls -A foreign)"
[ -L link ] || soft_fail "the link was replaced"

# ---- as an unprivileged user: world-writable non-sticky refused, sticky accepted
pub=$(mktemp -d /tmp/wedjat-t24.XXXXXX) || fail "mktemp"
trap 'rm -rf "$pub"; _cleanup_bg' EXIT
chmod 755 "$pub"
cp "$FIXTURES/rel_netclient" "$WEDJAT_LIBDIR/libwedjat.so" "$WEDJAT_LIBDIR/libwedjat-agent.so" "$pub/"
chmod 755 "$pub"/*
mkdir "$pub/ww" "$pub/st" && chmod 777 "$pub/ww" && chmod 1777 "$pub/st"
if command -v setpriv > /dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    for d in ww st; do
        (cd "$pub" && timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
            env WEDJAT_DIR="$pub/$d" LD_PRELOAD="$pub/libwedjat.so" "$pub/rel_netclient" 2) > "as_nobody_$d.out" 2>&1
        rc=$?
        [ $rc = 0 ] || soft_fail "as uid 65534 with WEDJAT_DIR=$d: exit $rc: $(cat "as_nobody_$d.out")"
    done
    [ -z "$(ls -A "$pub/ww")" ] || soft_fail "a world-writable, non-sticky WEDJAT_DIR was used: $(ls -A "$pub/ww")"
    st=$(ls "$pub/st" | wc -l)
    [ "$st" = 1 ] || soft_fail "sticky world-writable WEDJAT_DIR (like /tmp): want 1 log, got $st"
    for f in "$pub"/st/*.ndjson; do
        [ "$(stat -c '%a %u' "$f")" = "600 65534" ] || soft_fail "log in the sticky dir: mode/owner $(stat -c '%a %u' "$f")"
    done
else
    note "setpriv cannot switch users here: unprivileged-user checks not run"
fi

# ---- things planted at the exact future log path
faketime=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
if [ -f "$faketime" ]; then
    mkdir -m 700 planted
    mkfifo go.fifo
    echo "victim data" > victim
    frozen() {  # MODE: the program under a frozen clock, started when go.fifo is written
        ( read -r _ < go.fifo
          exec env WEDJAT_DIR="$TEST_TMP/planted" LD_PRELOAD="$faketime $WEDJAT_PRELOAD" \
              FAKETIME="2020-01-01 00:00:00" FAKETIME_DONT_FAKE_MONOTONIC=1 "$FIXTURES/rel_exit2" "$1" ) > "frozen.$1.$2.out" 2>&1 &
        FROZEN_PID=$!
        BG_PIDS+=("$FROZEN_PID")
    }
    # a control run tells the name: rel_exit2.<pid>.<frozen start_us>.ndjson
    frozen fork_late control
    echo > go.fifo
    wait "$FROZEN_PID" || fail "control run under libfaketime failed: $(cat frozen.fork_late.control.out)"
    ctl=$(ls planted)
    stamp=$(echo "$ctl" | sed -n "s/^rel_exit2\.$FROZEN_PID\.\([0-9]*\)\.ndjson\$/\1/p")
    [ -n "$stamp" ] || fail "control run: unexpected log name(s): $ctl"
    grep -qx 'child exited 5' frozen.fork_late.control.out || fail "control run output: $(cat frozen.fork_late.control.out)"
    python3 "$WJ_LIB/logs.py" check planted --count 2 > /dev/null || fail "control run logs invalid"
    rm -f planted/*
    for kind in symlink dangling foreign fifo; do
        frozen fork_late "$kind"
        pid=$FROZEN_PID
        name=planted/rel_exit2.$pid.$stamp.ndjson
        case $kind in
        symlink) ln -s "$TEST_TMP/victim" "$name" ;;
        dangling) ln -s "$TEST_TMP/planted/created-through-link" "$name" ;;
        foreign) echo "someone else's" > "$name"; chown 65534:65534 "$name" ;;
        fifo) mkfifo "$name" ;;
        esac
        t0=${EPOCHREALTIME/[.,]/}
        echo > go.fifo
        for i in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        ms=$(( (${EPOCHREALTIME/[.,]/} - t0) / 1000 ))
        if kill -0 "$pid" 2>/dev/null; then
            state=$(cat /proc/"$pid"/task/*/comm 2>/dev/null | paste -sd,)
            bg_stop "$pid" KILL
            soft_fail "planted $kind: the program hangs (still running after 10 s, threads: $state; output: $(paste -sd'|' "frozen.fork_late.$kind.out"))"
            continue
        fi
        wait "$pid"; rc=$?
        [ $rc = 0 ] || soft_fail "planted $kind: exit status $rc"
        grep -qx 'child exited 5' "frozen.fork_late.$kind.out" || soft_fail "planted $kind: output $(cat "frozen.fork_late.$kind.out")"
        [ $ms -lt 2000 ] || soft_fail "planted $kind: the program took $ms ms to run (about 300 ms without the plant)"
        echo "planted $kind: program ran in $ms ms, exit $rc"
    done
    [ "$(cat victim)" = "victim data" ] || soft_fail "the victim file behind the planted symlink changed: $(head -c 200 victim)"
    [ ! -e planted/created-through-link ] || soft_fail "a file was created through the planted dangling symlink"
    for f in planted/rel_exit2.*; do
        if [ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %u "$f")" = 65534 ]; then
            [ "$(cat "$f")" = "someone else's" ] || soft_fail "wedjat wrote into another user's file at its log path"
        fi
    done
else
    note "libfaketime not installed: planted-path checks not run"
fi

# ---- no socket of wedjat's own in a watched server
mkdir -p www && echo hello > www/hello.txt
wj_bg server logs_server "$PYTHON" "$WJ_LIB/httpserver.py" www port
srv=$BG_PID
wait_file port || fail "server did not start: $(cat server.out)"
port=$(cat port)
for i in 1 2 3; do curl -sS "http://127.0.0.1:$port/hello.txt" > /dev/null || fail "curl failed"; done
sleep 0.5
listen=$(ss -Hlnptuwx 2>/dev/null | grep "pid=$srv,")
echo "listening sockets of the watched server:"; echo "$listen" | sed 's/^/  /'
[ "$(echo "$listen" | grep -c .)" = 1 ] || soft_fail "the watched server has $(echo "$listen" | grep -c .) listening sockets, want 1 (its own)"
echo "$listen" | grep -q "127.0.0.1:$port " || soft_fail "its only listening socket is not 127.0.0.1:$port"
all=$(ss -Hanptuwx 2>/dev/null | grep "pid=$srv,")
[ "$(echo "$all" | grep -c .)" = 1 ] || soft_fail "the watched server holds other sockets: $(echo "$all" | paste -sd';')"
nsock=$(ls -l /proc/"$srv"/fd 2>/dev/null | grep -c 'socket:')
[ "$nsock" = 1 ] || soft_fail "the watched server has $nsock socket fds, want 1"
bg_stop "$srv"
python3 "$WJ_LIB/logs.py" check logs_server --exe "$(basename "$PYTHON")" --count 1 > server.check || soft_fail "server log: $(cat server.check)"
finish
