#!/usr/bin/env bash
# Fuzzes the C parsers (WEDJAT_* configuration, argv redaction, JSON writer, the HTTP/1
# framer and the HTTP/2 frame walk that read the app's bytes in its own process), the Swift
# HTTP/1 parser and the Swift HTTP/2 decoder (frames, HPACK through libnghttp2, streams):
# arbitrary bytes, arbitrary segmentation, both directions, with the capture's skips; with
# libFuzzer (clang and swiftc from the Swift toolchain).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]  (default 10)
# Exit status is non-zero if any target crashes; the crashing input is kept in .build-fuzz/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-10}
out="$root/.build-fuzz"
mkdir -p "$out"
clang=${CLANG:-clang}
total_runs=0
common="$root/CShims/common"
for target in config json framers; do
  src="$root/Tests/Fuzz/fuzz_$target.c"
  bin="$out/fuzz_$target"
  case $target in
    framers) objs=("$common/http1.c" "$common/http2_walk.c") ;;
    *) objs=("$common/config.c" "$common/json.c" "$common/redact.c") ;;
  esac
  # (ld.gold's "Cannot export local symbol" warnings about ASan internals are noise.)
  if ! "$clang" -g -O1 -msse2 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
    -I "$common/include" "$src" "${objs[@]}" -o "$bin" \
    >"$out/build_$target.log" 2>&1; then
    grep -v "Cannot export local symbol" "$out/build_$target.log" >&2
    exit 1
  fi
  mkdir -p "$out/corpus_$target"
  if [ "$target" = framers ]; then   # seeds: an HTTP/1 exchange and an h2 SETTINGS + HEADERS
    printf '\001\077GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\277HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' > "$out/corpus_$target/h1"
    printf '\003\021\000\000\000\004\000\000\000\000\000\000\000\003\001\005\000\000\000\001\202\204\206' > "$out/corpus_$target/h2"
  fi
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
# The HTTP/1 parser: its two source files compiled with the target (no package build needed).
bin="$out/fuzz_http"
if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name fuzzhttp "$root/Tests/Fuzz/fuzz_http.swift" \
    "$root/Sources/WedjatCore/HTTP1.swift" "$root/Sources/WedjatCore/HTTP1Parser.swift" \
    "$root/Sources/WedjatCore/HTTP2Details.swift" -o "$bin" >"$out/build_http.log" 2>&1; then
  grep -v "Cannot export local symbol" "$out/build_http.log" >&2
  exit 1
fi
mkdir -p "$out/corpus_http"
printf '\000\020\077GET /a?b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\277HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' > "$out/corpus_http/seed"
log="$out/fuzz_http.log"
if ! (cd "$out" && "$bin" -max_total_time="$seconds" -max_len=4096 "$out/corpus_http" >"$log" 2>&1); then
  grep -m1 -B2 -A20 "Fatal error\|ERROR: AddressSanitizer\|ERROR: libFuzzer" "$log" | head -40
  echo "fuzz: http crashed (input saved in $out)" >&2
  exit 1
fi
runs=$(grep -oE 'Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' || echo 0)
total_runs=$((total_runs + runs))
echo "fuzz: http: $runs runs in ${seconds}s, 0 crashes"
# The HTTP/2 decoder: its Swift files and the libnghttp2 loader (HPACK through the system's
# libnghttp2, not instrumented: the decoder's use of it is what is fuzzed).
bin="$out/fuzz_http2"
h2_sources=(Copying.swift HTTP1.swift HTTP1Parser.swift HTTP2Details.swift HTTP2.swift HTTP2Decoder.swift HTTP2Record.swift HPACK.swift JSONLine.swift)
if ! { clang -g -O1 -fsanitize=fuzzer-no-link,address -c "$root/Sources/CWedjatNghttp2/loader.c" \
         -I "$root/Sources/CWedjatNghttp2/include" -o "$out/nghttp2_loader.o" &&
       swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name fuzzhttp2 "$root/Tests/Fuzz/fuzz_http2.swift" \
         "${h2_sources[@]/#/$root/Sources/WedjatCore/}" -I "$root/Sources/CWedjatNghttp2/include" \
         "$out/nghttp2_loader.o" -o "$bin"; } >"$out/build_http2.log" 2>&1; then
  grep -v "Cannot export local symbol" "$out/build_http2.log" >&2
  exit 1
fi
mkdir -p "$out/corpus_http2"
python3 "$root/Tests/Fuzz/http2_seeds.py" "$out/corpus_http2"
log="$out/fuzz_http2.log"
if ! (cd "$out" && SWIFT_BACKTRACE=enable=no "$bin" -max_total_time="$seconds" -max_len=4096 "$out/corpus_http2" >"$log" 2>&1); then
  grep -m1 -B2 -A20 "Fatal error\|ERROR: AddressSanitizer\|ERROR: libFuzzer" "$log" | head -40
  echo "fuzz: http2 crashed (input saved in $out)" >&2
  exit 1
fi
runs=$(grep -oE 'Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' || echo 0)
total_runs=$((total_runs + runs))
echo "fuzz: http2: $runs runs in ${seconds}s, 0 crashes"
echo "fuzz: $total_runs runs, 0 crashes"
