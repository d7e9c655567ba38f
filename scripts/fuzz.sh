#!/usr/bin/env bash
# Fuzzes the C parsers (WEDJAT_* configuration, argv redaction, JSON writer) with libFuzzer
# (clang from the Swift toolchain). Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]  (default 10)
# Exit status is non-zero if any target crashes; the crashing input is kept in .build-fuzz/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-10}
out="$root/.build-fuzz"
mkdir -p "$out"
clang=${CLANG:-clang}
total_runs=0
for target in config json; do
  src="$root/Tests/Fuzz/fuzz_$target.c"
  bin="$out/fuzz_$target"
  # (ld.gold's "Cannot export local symbol" warnings about ASan internals are noise.)
  if ! "$clang" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
    -I "$root/CShims/common/include" "$src" "$root"/CShims/common/{config,json}.c -o "$bin" \
    >"$out/build_$target.log" 2>&1; then
    grep -v "Cannot export local symbol" "$out/build_$target.log" >&2
    exit 1
  fi
  mkdir -p "$out/corpus_$target"
  log="$out/fuzz_$target.log"
  if ! (cd "$out" && "$bin" -max_total_time="$seconds" -max_len=2048 "$out/corpus_$target" >"$log" 2>&1); then
    tail -30 "$log"
    echo "fuzz: $target crashed (input saved in $out)" >&2
    exit 1
  fi
  runs=$(grep -oE 'Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' || echo 0)
  total_runs=$((total_runs + runs))
  echo "fuzz: $target: $runs runs in ${seconds}s, 0 crashes"
done
echo "fuzz: $total_runs runs, 0 crashes"
