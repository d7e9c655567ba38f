#!/usr/bin/env bash
# C unit tests of the interposer's pure parts: the lifecycle's transition function, argv
# redaction, the ring's abandon/discard, the HTTP/1 framer's stash across two threads, a connection closed during a call, which
# sockets take direct system calls, the C records' string quoting, the agent's ceil. Built with AddressSanitizer and UBSan.
#   Tests/CUnit/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/.build-cunit"
mkdir -p "$out"
${CC:-cc} -std=gnu11 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -Wall -Wextra \
  -Wno-unused-parameter -D_GNU_SOURCE -fno-builtin-ceil \
  -I "$root/CShims/common/include" -I "$root/CShims/common" -I "$root/CShims/interposer" -I "$root/Tests/CUnit" \
  "$root"/Tests/CUnit/*.c "$root/CShims/interposer/lifecycle_table.c" \
  "$root/CShims/common/redact.c" "$root/CShims/common/ring.c" "$root/CShims/common/http1.c" \
  "$root/CShims/interposer/conns.c" "$root/CShims/common/sys.c" "$root/CShims/common/json.c" -lpthread -lm -o "$out/cunit"
"$out/cunit"
