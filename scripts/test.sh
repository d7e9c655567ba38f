#!/usr/bin/env bash
# Runs every test: the Swift unit tests, then the integration suite (real programs under
# the preloaded library, on loopback). Installs missing Debian packages first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/deps.sh"

echo "== C unit tests (the runtime's lifecycle, argv redaction, the ring, the HTTP/1 framer's stash on two threads, a connection closed during a call, the C records' JSON strings)"
"$root/Tests/CUnit/run.sh"

echo "== unit tests (swift test)"
swift build --build-tests
swift test --skip-build

echo "== building the libraries and the CLI for the integration suite"
prefix="$root/.build-test"
rm -rf "$prefix"
mkdir -p "$prefix/bin" "$prefix/lib"
"$root/scripts/build-lib.sh" "$prefix/lib"
"$root/scripts/check-layout.sh" "$prefix/lib/libwedjat.so"
# The CLI finds its library as ../lib/libwedjat.so next to its own (real) path: copy it.
cp "$(swift build --show-bin-path)/wedjat-cli" "$prefix/bin/wedjat"

echo "== fuzzing, short run (scripts/fuzz.sh 600 for a long one)"
"$root/scripts/fuzz.sh" 5

echo "== integration tests"
"$root/Tests/Integration/run.sh" "$prefix/lib" "$prefix/bin/wedjat"
