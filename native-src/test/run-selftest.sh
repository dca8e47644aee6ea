#!/usr/bin/env bash
# Builds and runs the C++ self-test of the kernels (no Node needed).
#   native-src/test/run-selftest.sh            native build, both kernels where the CPU has BMI2
#   native-src/test/run-selftest.sh aarch64    cross-build for arm64 and run it under qemu
#                                              (installs g++-aarch64-linux-gnu and qemu-user-static)
#   native-src/test/run-selftest.sh sanitize   native build with AddressSanitizer and UBSan: any
#                                              report (leaks, overruns, undefined behaviour) fails it
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
flags=(-std=c++17 -O2 -Wall -Wextra -I"$here/include" -pthread)
if [[ "${1:-}" == "aarch64" ]]; then
  if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
    sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq g++-aarch64-linux-gnu qemu-user-static >/dev/null
  fi
  aarch64-linux-gnu-g++ "${flags[@]}" "$here"/src/*.cpp "$here/test/selftest.cpp" -o "$out/selftest"
  file "$out/selftest" | sed 's/^[^:]*: /binary: /'
  qemu-aarch64-static -L /usr/aarch64-linux-gnu "$out/selftest"
elif [[ "${1:-}" == "sanitize" ]]; then
  g++ "${flags[@]}" -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
    "$here"/src/*.cpp "$here/test/selftest.cpp" -o "$out/selftest"
  echo "sanitizers: address, undefined"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$out/selftest"
else
  g++ "${flags[@]}" "$here"/src/*.cpp "$here/test/selftest.cpp" -o "$out/selftest"
  "$out/selftest"
fi
