# Sourced by every test. Provides:
#   wj DIR cmd args...      run cmd with wedjat preloaded (logs in DIR), under timeout
#   plain cmd args...       the same without the preload (for with/without comparisons)
#   bg_start NAME cmd...    start a background process (its PID in $BG_PID), killed at exit
#   wj_bg NAME DIR cmd...   bg_start of a preloaded command ($BG_PID is the command's PID)
#   bg_stop PID [SIG]       stop one background process by PID and wait for it
#   wait_file FILE [SECS]   wait until FILE exists and is non-empty
#   free_port               print a TCP port that was free on 127.0.0.1 a moment ago
#   pylogs <<'EOF' ... EOF  python snippet with lib/logs.py imported (fail()/expect() available)
#   fail MSG / skip MSG     end the test
#   soft_fail MSG; finish   record a failure and go on; finish exits 1 if there was any
set -uo pipefail

: "${WEDJAT_PRELOAD:?run through Tests/Integration/run.sh}" "${TEST_TMP:?}" "${FIXTURES:?}"
WJ_LIB=${WJ_LIB:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
# The runner's variables start with WEDJAT_ but are not wedjat settings: the library would
# list them as unknown in config_warnings. Keep them as shell variables only.
export -n WEDJAT_LIBDIR WEDJAT_PRELOAD WEDJAT_CLI WJ_LIB
unset WEDJAT_DIR WEDJAT_DISABLE WEDJAT_ARGV WEDJAT_FLUSH_MS WEDJAT_MAX_CONNECTIONS WEDJAT_LOG_MAX_MB LD_PRELOAD \
    WEDJAT_HTTP WEDJAT_CAPTURE_BYTES WEDJAT_REDACT WEDJAT_HTTP_RECORDS
export LC_ALL=C
# The real interpreter binary: `python3` may be a pyenv shim (a bash script that runs env,
# bash and pyenv before python), which would add a dozen logs to every watched run.
PYTHON=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
ulimit -c 0
cd "$TEST_TMP" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
SOFT_FAILS=0
soft_fail() { echo "FAIL: $*"; SOFT_FAILS=$((SOFT_FAILS + 1)); }   # record, carry on
finish() { [ "$SOFT_FAILS" = 0 ] || exit 1; echo "ok"; exit 0; }
skip() { echo "SKIP: $*"; exit 77; }
note() { echo "# $*"; }

# timeout and env run without the preload (env sets it just before exec'ing the command),
# so the only logs are the command's and its descendants'.
WJ_TIMEOUT=${WJ_TIMEOUT:-60}
wj() {
    local dir=$1
    shift
    timeout -k 5 "$WJ_TIMEOUT" env WEDJAT_DIR="$dir" LD_PRELOAD="$WEDJAT_PRELOAD" "$@"
}
plain() {
    timeout -k 5 "$WJ_TIMEOUT" env "$@"
}

BG_PIDS=()
bg_start() {
    # bg_start LOGNAME cmd args...   (stdout+stderr to $TEST_TMP/LOGNAME.out)
    local name=$1
    shift
    "$@" >"$TEST_TMP/$name.out" 2>&1 &
    BG_PID=$!
    BG_PIDS+=("$BG_PID")
}

bg_stop() {
    local pid=$1 sig=${2:-TERM} i
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    kill "-$sig" "$pid" 2>/dev/null
    for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

wj_bg() {
    local name=$1 dir=$2
    shift 2
    bg_start "$name" env WEDJAT_DIR="$dir" LD_PRELOAD="$WEDJAT_PRELOAD" "$@"
}

_cleanup_bg() {
    local p
    for p in "${BG_PIDS[@]}"; do
        kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
    done
    return 0
}
trap _cleanup_bg EXIT

wait_file() {
    local f=$1 secs=${2:-10} i
    for i in $(seq 1 $((secs * 20))); do
        [ -s "$f" ] && return 0
        sleep 0.05
    done
    return 1
}

free_port() {
    # Never one this test was given already: the kernel may hand the same free port out twice
    # (test_78 once got nginx's own port for its second listen).
    local p given=$TEST_TMP/.ports_given
    for _ in 1 2 3 4 5 6 7 8; do
        p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        grep -qx "$p" "$given" 2>/dev/null || break
    done
    echo "$p" >> "$given"
    echo "$p"
}

pylogs() {
    PYTHONPATH=$WJ_LIB${PYTHONPATH:+:$PYTHONPATH} python3 -c '
import sys
from logs import *
src = sys.stdin.read()
run_checks(lambda: exec(compile(src, "<test snippet>", "exec"), globals()))
' "$@"
}

# rss_sample PID: prints "VMRSS_KB WJ_STATIC_KB" for a running process: its VmRSS and the
# resident part of libwedjat.so's zero-initialised static data (the anonymous mapping right
# after the library's last file mapping: the event ring and line buffers, whose pages become
# resident as they are first written, up to their fixed size). "gone" if PID has ended.
rss_sample() {
    local pid=$1 rss
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    [ -n "$rss" ] || { echo gone; return 0; }
    awk -v rss="$rss" '
        /^[0-9a-f]+-[0-9a-f]+ / {
            split($1, r, "-")
            bss = (prev_wj && NF == 5 && r[1] == prev_end)
            prev_wj = ($6 ~ /\/libwedjat\.so$/); prev_end = r[2]
            next
        }
        /^Rss:/ { if (bss) static += $2 }
        END { print rss, static + 0 }' "/proc/$pid/smaps" 2>/dev/null || echo gone
}
