#!/usr/bin/env bash
# What watching one short networked process costs, counted in instructions instead of timed:
# one curl GET to a loopback server under valgrind's callgrind (--separate-threads=yes), plain
# and watched. Prints curl's own thread (plain, watched, added: loading libwedjat.so, its
# constructor, the hooks, and the lookups every preloaded library adds to each of curl's
# symbol bindings) and wedjat's thread (the agent: loading libwedjat-agent.so, the records,
# the log). The counts do not move with the neighbours' load (process_cost.sh times the same
# process). Under valgrind curl runs about 50 times slower, so timers that a real run never
# reaches would fire: WEDJAT_STALL_MS=60000 keeps the unwinder unloaded, as in a real one-request
# curl (it is loaded half a threshold after the first loop wait).
#   scripts/bench/process_instructions.sh LIBDIR [--top K]
# --top K: also wedjat's thread's K costliest functions (exclusive), the agent's named from
# .build-lib/embedded/libwedjat-agent.so (lib/callgrind_symbols.py; the build id is checked).
# Talks only to 127.0.0.1; the server it starts is stopped by its PID.
set -euo pipefail
usage() { echo "usage: $0 LIBDIR [--top K]" >&2; exit 2; }
[ $# -ge 1 ] || usage
root=$(cd "$(dirname "$0")/../.." && pwd)
libdir=$(cd "$1" && pwd)
shift
top=0
while [ $# -gt 0 ]; do
    case $1 in
        --top) top=$2; shift ;;
        *) usage ;;
    esac
    shift
done
for t in valgrind curl python3 readelf; do command -v "$t" >/dev/null || { echo "needs $t (scripts/deps.sh)" >&2; exit 2; }; done
work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-bench-pinstr.XXXXXX")
srv=
cleanup() { [ -n "$srv" ] && { kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; }; rm -rf "$work"; }
trap cleanup EXIT

# shellcheck source=lib/file_server.sh
. "$root/scripts/bench/lib/file_server.sh"
file_server_start "$work"

# total FILE: the instructions callgrind counted in one thread's file
total() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }
run() {   # run NAME env...: one curl under callgrind
    local name=$1
    shift
    env "$@" valgrind --tool=callgrind --separate-threads=yes --dump-instr=yes \
        --callgrind-out-file="$work/cg.$name" curl -s -o /dev/null "$url" 2>"$work/$name.err" ||
        { echo "curl under valgrind failed: $(tail -3 "$work/$name.err")" >&2; exit 1; }
}
run plain WEDJAT_UNUSED=1
run watched WEDJAT_DIR="$work/logs" WEDJAT_STALL_MS=60000 LD_PRELOAD="$libdir/libwedjat.so"
grep -q '"type":"http"' "$work"/logs/*.ndjson 2>/dev/null || { echo "the watched curl logged no http record" >&2; exit 1; }
plain=$(total "$work/cg.plain-01")
watched=$(total "$work/cg.watched-01")
agent=$(total "$work/cg.watched-02")
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(valgrind --version); one curl GET of 600 bytes from a loopback server; instructions:"
printf "  curl's thread    plain %10d  watched %10d  added %+10d\n" "$plain" "$watched" $((watched - plain))
printf "  wedjat's thread                          %10d\n" "$agent"
printf "  added in all                             %10d\n" $((watched - plain + agent))
if [ "$top" -gt 0 ]; then
    agent_syms=$root/.build-lib/embedded/libwedjat-agent.so
    build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID/ { print $3 }'; }
    if [ "$(build_id "$agent_syms")" != "$(build_id "$libdir/libwedjat-agent.so")" ]; then
        echo "(no function names: $libdir/libwedjat-agent.so is not the build of $agent_syms)" >&2
    else
        init_offset=$(nm -D --defined-only "$agent_syms" | awk '$3 == "wedjat_agent_init" { print $1 }')
        python3 "$root/scripts/bench/lib/callgrind_symbols.py" 1 "$agent_syms" "$init_offset" "$top" "$work/cg.watched-02"
    fi
fi
