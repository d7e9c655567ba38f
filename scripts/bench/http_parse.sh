#!/usr/bin/env bash
# Cost of WedjatCore's incremental HTTP/1.x parser (Sources/WedjatCore/HTTP1*.swift) per
# message, i.e. one request (~300 header bytes) and its response (~250 header bytes + 64-byte
# body) on a keep-alive connection, in release mode:
#   - fed in realistic segments (one per message, and 128-byte segments),
#   - fed one byte at a time (the worst case),
# next to a baseline measured in the same run by the same binary: one round trip of a 300-byte
# message (write + read each way) over an AF_UNIX socketpair and over TCP 127.0.0.1 to an echo
# child process, and the ratio parse / round trip.
#   scripts/bench/http_parse.sh [MESSAGES] [ROUNDS]
# Target: <= 1000 ns per message with realistic segments (exit 1 above it).
set -euo pipefail
cd "$(dirname "$0")/../.."
messages=${1:-200000} rounds=${2:-5}
swift build -c release --scratch-path .build-http --product wedjat-http-bench >&2
bin=$(swift build -c release --scratch-path .build-http --show-bin-path)/wedjat-http-bench
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) CPUs, $(uname -r)"
"$bin" --messages "$messages" --rounds "$rounds" --max-ns 1000
