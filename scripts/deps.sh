#!/usr/bin/env bash
# Installs the Debian packages wedjat's build, demo and tests use, if any are missing.
# Needs root (or sudo) only when something is missing.
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null 2>&1; }
have gcc || need+=(gcc)
have cpp || need+=(cpp)
have curl || need+=(curl)
have python3 || need+=(python3)
have perl || need+=(perl)
have git || need+=(git)
have jq || need+=(jq)
have openssl || need+=(openssl)
have strace || need+=(strace)
have nginx || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
have redis-server || need+=(redis-server)
have wrk || need+=(wrk)
have faketime || need+=(faketime)
have valgrind || need+=(valgrind)
# `wedjat ship` gzips with zlib; `wedjat top`'s test drives it in tmux.
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
have tmux || need+=(tmux)
have unshare || need+=(util-linux)
[ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ] || need+=(libjemalloc2)
gcc -print-file-name=libtsan.so | grep -q / || need+=(libtsan2)
[ -e "$(gcc -print-file-name=libc.a)" ] || need+=(libc6-dev)
have g++ || need+=(g++)
# Stacks: libunwind is dlopen'ed by libwedjat.so; the CLI symbolizes with libelf/libdw.
[ -e /usr/lib/x86_64-linux-gnu/libunwind.so.8 ] || need+=(libunwind8)
[ -e /usr/include/libunwind.h ] || need+=(libunwind-dev)
[ -e /usr/include/elfutils/libdwfl.h ] || need+=(libdw-dev)
[ -e /usr/include/libelf.h ] || need+=(libelf-dev)
# HTTP/2 (issue 16): libnghttp2.so.14 is dlopen'ed by the agent's decoder (libnghttp2-14 comes
# with curl); nghttpd, h2load and nghttp drive the HTTP/2 tests and benchmark; the headers are
# for comparing the decoder's declarations with the library's.
[ -e /usr/lib/x86_64-linux-gnu/libnghttp2.so.14 ] || need+=(libnghttp2-14)
have nghttpd || [ -x /usr/sbin/nghttpd ] || need+=(nghttp2-server)
have h2load || need+=(nghttp2-client)
[ -e /usr/include/nghttp2/nghttp2.h ] || need+=(libnghttp2-dev)
# The fidelity matrix (tests 52-59) runs each runtime as client and server.
have node || need+=(nodejs)
have javac || need+=(default-jdk-headless)
# The report's benchmark (scripts/bench/report.sh) measures simdjson's parser against wedjat's own.
[ -e /usr/include/simdjson.h ] || need+=(libsimdjson-dev)
# The HTML report is rendered in headless Chromium by its test.
have chromium || need+=(chromium)
# Real consumers of the exports: OTLP protobuf classes, Perfetto's trace processor, JSON Schema.
pyneed=()
python3 -c "import opentelemetry.proto" 2>/dev/null || pyneed+=(opentelemetry-proto)
python3 -c "import perfetto.trace_processor" 2>/dev/null || pyneed+=(perfetto)
python3 -c "import jsonschema" 2>/dev/null || pyneed+=(jsonschema)
# Python HTTP clients and servers of the fidelity matrix.
python3 -c "import requests" 2>/dev/null || pyneed+=(requests)
python3 -c "import aiohttp" 2>/dev/null || pyneed+=(aiohttp)
# What a data-minded user would reach for instead of `wedjat report` (scripts/bench/report.sh compares).
python3 -c "import duckdb" 2>/dev/null || pyneed+=(duckdb)
# A gRPC client and server for the HTTP/2 test 79.
python3 -c "import grpc" 2>/dev/null || pyneed+=(grpcio)
if [ ${#pyneed[@]} -gt 0 ]; then
    echo "deps: pip installing ${pyneed[*]}" >&2
    python3 -m pip install -q --disable-pip-version-check "${pyneed[@]}" 2>&1 | grep -v "Running pip as the 'root' user" >&2 || true
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "deps: installing ${need[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
