#!/usr/bin/env bash
# Generates the export list of libwedjat.so from the hook table (CShims/interposer/hooks.def).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: gen-version-script.sh OUTPUT}
cpp -P -undef -I "$root/CShims/interposer" "$root/CShims/interposer/wedjat.map.in" > "$out"
