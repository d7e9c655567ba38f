#!/usr/bin/env bash
# wedjat integration tests: real programs under LD_PRELOAD, assertions on the NDJSON logs.
#   Tests/Integration/run.sh LIBDIR [CLI_PATH]
# LIBDIR holds libwedjat.so and libwedjat-agent.so (scripts/build-lib.sh LIBDIR).
# CLI_PATH is the wedjat executable; without it the tests that need it are skipped.
# Each tests/test_NN_name.sh runs under `timeout 120` with WEDJAT_LIBDIR, WEDJAT_PRELOAD,
# WEDJAT_CLI, FIXTURES and a fresh TEST_TMP. Exit 0 = pass, 77 = skip, anything else = fail;
# the first "SKIP: ..." / "FAIL: ..." line a test prints is its reason.
# Environment: WJ_TESTS="01 05" runs only those numbers; WJ_KEEP=1 keeps the temp dir.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 LIBDIR [CLI_PATH]" >&2
    exit 2
fi
libdir=$(cd "$1" 2>/dev/null && pwd) || { echo "run.sh: no such directory: $1" >&2; exit 2; }
cli=${2:-}
if [ -n "$cli" ]; then
    case $cli in /*) ;; *) cli=$(pwd)/$cli ;; esac
    [ -x "$cli" ] || { echo "run.sh: CLI not executable: $cli" >&2; exit 2; }
fi
for f in libwedjat.so libwedjat-agent.so; do
    [ -f "$libdir/$f" ] || { echo "run.sh: missing $libdir/$f (build it with scripts/build-lib.sh $1)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/wedjat-integration.XXXXXX)
cleanup() { if [ "${WJ_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
ulimit -c 0

# ---- fixtures: every fixtures/*.c; names ending in _static.c are linked with -static, names
# ending in _so.c are shared objects (fid_timed_io_so.c -> fid_timed_io.so)
fixtures=$work/fixtures
mkdir -p "$fixtures"
for src in "$here"/fixtures/*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    extra=()
    out=$fixtures/$name
    case $name in
    *_static) extra=(-static) ;;
    *_so) extra=(-shared -fPIC); out=$fixtures/${name%_so}.so ;;
    esac
    if ! gcc -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -pthread "${extra[@]}" \
            -I "$here/../../CShims/common/include" -o "$out" "$src" -ldl 2>"$work/gcc-$name.log"; then
        echo "FAIL build fixture $name:"
        sed 's/^/    /' "$work/gcc-$name.log"
        echo "integration: 0 passed, 1 failed, 0 skipped"
        exit 1
    fi
done

passed=0 failed=0 skipped=0
start=$(date +%s)
for t in "$here"/tests/test_[0-9][0-9]_*.sh; do
    name=$(basename "$t" .sh)
    num=${name#test_}; num=${num%%_*}
    if [ -n "${WJ_TESTS:-}" ] && [[ " $WJ_TESTS " != *" $num "* ]]; then continue; fi
    tmp=$work/$name
    mkdir -p "$tmp"
    out=$work/$name.out
    t0=${EPOCHREALTIME/[.,]/}
    WEDJAT_LIBDIR=$libdir WEDJAT_PRELOAD=$libdir/libwedjat.so WEDJAT_CLI=$cli \
    FIXTURES=$fixtures TEST_TMP=$tmp WJ_LIB=$here/lib \
        timeout -k 5 120 bash "$t" >"$out" 2>&1 </dev/null
    rc=$?
    t1=${EPOCHREALTIME/[.,]/}
    secs=$(( (t1 - t0) / 1000000 )).$(( (t1 - t0) / 100000 % 10 ))
    reason=$(grep -E '^(FAIL|SKIP): ' "$out" | head -n 1 | sed -E 's/^(FAIL|SKIP): //')
    more=$(( $(grep -cE '^FAIL: ' "$out") - 1 ))
    [ $more -gt 0 ] && reason="$reason (+$more more)"
    case $rc in
    0)
        passed=$((passed + 1))
        printf 'PASS %s (%ss)\n' "$name" "$secs" ;;
    77)
        skipped=$((skipped + 1))
        printf 'SKIP %s: %s\n' "$name" "${reason:-no reason given}" ;;
    *)
        failed=$((failed + 1))
        [ $rc = 124 ] || [ $rc = 137 ] && reason="timed out after 120 s${reason:+; last: $reason}"
        printf 'FAIL %s (%ss): %s\n' "$name" "$secs" "${reason:-exit status $rc}"
        tail -n 25 "$out" | sed 's/^/    | /'
        if [ "${WJ_KEEP:-0}" != 1 ]; then
            # keep the evidence of a failure
            keep=/tmp/wedjat-failed-$name.$$
            rm -rf "$keep"; cp -r "$tmp" "$keep" 2>/dev/null; cp "$out" "$keep/output.txt" 2>/dev/null
            echo "    (test dir and output kept in $keep)"
        fi ;;
    esac
done
echo "total time: $(( $(date +%s) - start )) s"
echo "integration: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
