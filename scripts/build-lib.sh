#!/usr/bin/env bash
# Builds the two in-process libraries into OUTDIR (default .build-lib/out):
#   libwedjat.so        the C interposer, preloaded into every watched process
#   libwedjat-agent.so  the Swift aggregator it loads when there are events to aggregate
#                       (Swift stdlib and libstdc++ linked statically, only its entry point exported)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.build-lib/out}
config=${WEDJAT_BUILD_CONFIG:-release}
mkdir -p "$out" "$root/.build-lib/static-libs"
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

# --- libwedjat-agent.so (Swift). Dynamic exclusivity checks are off in it: a violation would
# trap inside the watched program (the debug builds of the unit tests keep them), and they
# cost the aggregator's per-message path about 5%. libgcc is linked statically (its unwinder,
# hidden like everything but the entry point): libgcc_s.so.1 was one library more to map,
# relocate and initialise (its constructor runs CPUID) in every process that loads the agent.
# libm stays a shared library: glibc's libm.a is not position-independent.
# Concrete generic types' metadata is reached through accessor functions, not mangled names:
# a mangled name is demangled, its generic requirements checked and its conformances looked up
# in every conformance record of the static stdlib the first time it is used, in every process
# that loads the agent (a one-request curl: 698,000 -> 531,000 instructions on wedjat's thread).
printf '{\n  global: wedjat_agent_init;\n  local: *;\n};\n' > "$root/.build-lib/agent.map"
ln -sf "$(gcc -print-file-name=libstdc++.a)" "$root/.build-lib/static-libs/libstdc++.a"
# SwiftPM does not relink when only linker flags change: remove the old product first.
rm -f "$root/.build-lib/$config/libwedjat-agent.so"
swift build -c "$config" --scratch-path "$root/.build-lib" --product wedjat-agent --disable-local-rpath \
  -Xswiftc -static-stdlib \
  -Xswiftc -enforce-exclusivity=unchecked \
  -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
  -Xswiftc -Xclang-linker -Xswiftc -static-libgcc \
  -Xswiftc -use-ld=lld \
  -Xlinker --version-script="$root/.build-lib/agent.map" \
  -Xlinker -L"$root/.build-lib/static-libs" \
  -Xlinker --gc-sections \
  -Xlinker -z -Xlinker pack-relative-relocs
cp "$root/.build-lib/$config/libwedjat-agent.so" "$out/libwedjat-agent.so.tmp"
strip --strip-unneeded "$out/libwedjat-agent.so.tmp"
mv "$out/libwedjat-agent.so.tmp" "$out/libwedjat-agent.so"
echo "built $out/libwedjat.so and $out/libwedjat-agent.so"
