#!/usr/bin/env bash
# Builds the two in-process libraries into OUTDIR (default .build-lib/out):
#   libwedjat.so        the C interposer, preloaded into every watched process
#   libwedjat-agent.so  the Swift aggregator it loads when there are events to aggregate
#                       (Embedded Swift: needs only libc, only its entry point exported)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.build-lib/out}
config=${WEDJAT_BUILD_CONFIG:-release}
mkdir -p "$out" "$root/.build-lib"
cd "$root"

# --- libwedjat.so (C only: tiny, cheap to load in every process)
# Layout matters to a short process (docs/PERFORMANCE.md, "Per-process costs"): every page it
# writes is a page fault. Arrays are marked WJ_BIG or WJ_COLD, so that the link
# (--sort-section=name) puts them after the small state (CShims/common/include/wedjat_common.h);
# scripts/check-layout.sh keeps it so.
"$root/scripts/gen-version-script.sh" "$root/.build-lib/wedjat.map"
cflags=(-std=gnu11 -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter -Wno-format-truncation
        -D_GNU_SOURCE -I CShims/common/include -I CShims/common -I CShims/interposer)
objdir="$root/.build-lib/obj"
rm -rf "$objdir"
mkdir -p "$objdir"
pids=()
for src in CShims/common/*.c CShims/interposer/*.c; do
  ${CC:-cc} "${cflags[@]}" -c "$src" -o "$objdir/$(basename "$src" .c).o" & pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
${CC:-cc} "${cflags[@]}" -shared "$objdir"/*.o CShims/interposer/*_x86_64.S \
  -Wl,--version-script="$root/.build-lib/wedjat.map" -Wl,-z,relro -Wl,-z,noseparate-code -Wl,--no-undefined \
  -Wl,--sort-section=name \
  -ldl -lpthread -o "$out/libwedjat.so.tmp"
mv "$out/libwedjat.so.tmp" "$out/libwedjat.so"

# --- libwedjat-agent.so: WedjatCore + WedjatAgent compiled as Embedded Swift, with the C they
# call (CShims/common, CWedjatNghttp2) and the one libm function the stdlib needs (CShims/agent),
# into one library that needs only libc.
# Embedded Swift has no runtime metadata and compiles the parts of the stdlib the agent uses
# into it: the library is 0.7 MB with about 900 relocations, where the static stdlib made it
# 6.3 MB with 16,000 (an empty Swift library with the static stdlib is 5.7 MB and 14,800:
# loading it, every process paid for relocating and registering all of the stdlib). A
# one-request curl: wedjat's thread 687,000 -> 206,000 instructions, +1.49 -> +0.82 ms
# (docs/PERFORMANCE.md, scripts/bench/process_instructions.sh).
# The agent's sources must stay embedded-compatible (no existentials of Error, no dynamic
# casts, no reflection); this build is what checks it. Dynamic exclusivity checks are off: a
# violation would trap inside the watched program (the unit tests' debug builds keep them).
emb="$root/.build-lib/embedded"
embedded_lib=$(dirname "$(dirname "$(command -v swiftc)")")/lib/swift/embedded/$(uname -m)-unknown-linux-gnu
[ -f "$embedded_lib/libswiftUnicodeDataTables.a" ] ||
  { echo "build-lib.sh: this Swift toolchain has no Embedded Swift stdlib for $(uname -m) Linux ($embedded_lib): the agent needs one (swift.org's 6.3 toolchains have it)" >&2; exit 1; }
rm -rf "$emb"
mkdir -p "$emb/modules" "$emb/obj"
printf '{\n  global: wedjat_agent_init;\n  local: *;\n};\n' > "$emb/agent.map"
# The embedded stdlib has no Glibc module: the agent's `import Glibc` gets the C library's
# headers it uses; CWedjatCommon and CWedjatNghttp2 as SwiftPM maps them.
cat > "$emb/modules/libc.h" <<'H'
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
H
cat > "$emb/modules/module.modulemap" <<M
module Glibc { header "libc.h" export * }
module CWedjatCommon { header "$root/CShims/common/include/CWedjatCommon.h" export * }
module CWedjatNghttp2 { header "$root/Sources/CWedjatNghttp2/include/CWedjatNghttp2.h" export * }
M
swift_opt=(-O)
[ "$config" = debug ] && swift_opt=(-Onone -g)
swiftflags=(-target "$(uname -m)-unknown-linux-gnu" -enable-experimental-feature Embedded -wmo -parse-as-library
            "${swift_opt[@]}" -enforce-exclusivity=unchecked -I "$emb/modules"
            -Xfrontend -disable-implicit-concurrency-module-import
            -Xfrontend -disable-implicit-string-processing-module-import)
swiftc "${swiftflags[@]}" -module-name WedjatCore -emit-module -emit-module-path "$emb/modules/WedjatCore.swiftmodule" \
  -c -o "$emb/obj/WedjatCore.o" Sources/WedjatCore/*.swift
swiftc "${swiftflags[@]}" -module-name WedjatAgent -c -o "$emb/obj/WedjatAgent.o" Sources/WedjatAgent/*.swift
# CShims/common's objects are libwedjat.so's, above; the agent's own C is compiled here.
common_objs=()
for src in CShims/common/*.c; do common_objs+=("$objdir/$(basename "$src" .c).o"); done
for src in CShims/agent/*.c Sources/CWedjatNghttp2/*.c; do
  ${CC:-cc} "${cflags[@]}" -I Sources/CWedjatNghttp2/include -c "$src" -o "$emb/obj/c_$(basename "$src" .c).o"
done
# The Unicode tables for String's case mapping and comparison, from the toolchain's embedded stdlib.
${CC:-cc} -shared -fPIC -o "$emb/libwedjat-agent.so" "$emb"/obj/*.o "${common_objs[@]}" "$embedded_lib/libswiftUnicodeDataTables.a" \
  -Wl,--version-script="$emb/agent.map" -Wl,--no-undefined -Wl,-z,relro -Wl,--gc-sections -Wl,-z,pack-relative-relocs
strip --strip-unneeded -o "$out/libwedjat-agent.so.tmp" "$emb/libwedjat-agent.so"
mv "$out/libwedjat-agent.so.tmp" "$out/libwedjat-agent.so"
echo "built $out/libwedjat.so and $out/libwedjat-agent.so"
