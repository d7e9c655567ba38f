#!/usr/bin/env bash
# Builds wedjat (release) and installs
#   PREFIX/lib/libwedjat.so        preload this into the programs to watch
#   PREFIX/lib/libwedjat-agent.so  loaded by libwedjat.so when needed (keep it beside it)
#   PREFIX/bin/wedjat              the CLI; finds ../lib/libwedjat.so relative to itself
# Usage: scripts/install.sh [--prefix DIR]   (default: $HOME/.local)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix="${HOME:-/root}/.local"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$prefix/lib" "$prefix/bin"
prefix=$(cd "$prefix" && pwd)
"$root/scripts/build-lib.sh" "$prefix/lib"
cd "$root"
swift build -c release --product wedjat-cli
install -m 0755 "$(swift build -c release --show-bin-path)/wedjat-cli" "$prefix/bin/wedjat"
echo "installed $prefix/bin/wedjat and $prefix/lib/libwedjat.so"
