#!/usr/bin/env bash
# Builds and runs the C++ self-test of the kernels (no Node needed).
#   native-src/test/run-selftest.sh            native build, both kernels where the CPU has BMI2
#   native-src/test/run-selftest.sh aarch64    cross-build for arm64 and run it under qemu
#                                              (installs g++-aarch64-linux-gnu and qemu-user-static)
#   native-src/test/run-selftest.sh sanitize   native build with AddressSanitizer and UBSan: any
#                                              report (leaks, overruns, undefined behaviour) fails it
# A second argument --build-only builds the binary and does not run it (.ci/run builds both test
# binaries in its setup). `aarch64 --adopt-objects DIR` keeps the object files of the kernel's
# sources (src/*.cpp) found in DIR, compiled by the arm64 prebuild (packages/native/scripts/
# prebuild.mjs --selftest-objects), under the hash of the compiler and the sources: an aarch64
# build then compiles only selftest.cpp and links them (the kernel compiled once a run, and the
# self-test runs the code that ships). Each binary is kept in SELFTEST_CACHE (default
# .cache/selftest at the top of the repository, git-ignored; not in native-src/, whose files
# scripts/arm64.sh compares with the prebuilds) under the SHA-256 of its compiler, flags and every
# source file (and the objects it links), and built again only when one of these changes. The translation units compile
# SELFTEST_JOBS at a time (default: the CPUs).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-native}"
build_only=false
adopt=""
case "${2:-}" in
  --build-only) build_only=true ;;
  --adopt-objects) adopt="${3:?run-selftest.sh: --adopt-objects needs a folder}" ;;
  "") ;;
  *) echo "run-selftest.sh: unknown argument $2 (--build-only, or aarch64 --adopt-objects DIR)" >&2; exit 2 ;;
esac
flags=(-std=c++17 -O2 -Wall -Wextra -I"$here/include" -pthread)
cxx=g++
case "$mode" in
  aarch64)
    # (An adoption needs only the cross-compiler, which made the objects: nothing is installed.)
    if [[ -z "$adopt" ]] && { ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64-static >/dev/null; }; then
      sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
      $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq g++-aarch64-linux-gnu qemu-user-static >/dev/null
    fi
    cxx=aarch64-linux-gnu-g++ ;;
  sanitize)
    # -g1: line tables, all a report needs to name the line.
    flags+=(-O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all) ;;
  native | "") mode=native ;;
  *) echo "run-selftest.sh: unknown mode $mode (native, aarch64 or sanitize)" >&2; exit 2 ;;
esac
sources=("$here"/src/*.cpp "$here/test/selftest.cpp")

cache="${SELFTEST_CACHE:-$here/../.cache/selftest}"
# The hash of the compiler and the files under `$@` (paths relative to native-src/), 16 hex digits.
hash_of() { { "$cxx" --version | head -1; printf '%s\n' "$mode"; find "$@" -type f -print0 | sort -z | xargs -0 sha256sum | sed "s|$here/||"; } | sha256sum | cut -c1-16; }
# Objects adopted from the arm64 prebuild, by the kernel's sources they were compiled from.
kernel_objects="$cache/$mode-objects-$(hash_of "$here/src" "$here/include")"
if [[ -n "$adopt" ]]; then
  [[ "$mode" == aarch64 ]] || { echo "run-selftest.sh: --adopt-objects is for aarch64" >&2; exit 2; }
  mkdir -p "$cache"
  work="$(mktemp -d "$cache/adopt-$mode.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  for src in "$here"/src/*.cpp; do
    object="$adopt/$(basename "$src" .cpp).o"
    [[ -f "$object" ]] || { echo "run-selftest.sh: $object is missing" >&2; exit 1; }
    cp "$object" "$work/"
  done
  # Whole or not at all, and never replaced: objects already kept under this key were compiled
  # from the same sources (a build may be linking them now).
  mv -T "$work" "$kernel_objects" 2>/dev/null || rm -rf "$work"
  echo "selftest objects: $kernel_objects"
  exit 0
fi
hashed=("$here/src" "$here/include" "$here/test/selftest.cpp")
linked=()
suffix=""
if [[ "$mode" == aarch64 && -d "$kernel_objects" ]]; then
  linked=("$kernel_objects"/*.o)
  sources=("$here/test/selftest.cpp")
  hashed+=("$kernel_objects")
  suffix="-objects"
fi
key="$( { printf '%s\n' "${flags[@]}"; hash_of "${hashed[@]}"; } | sha256sum | cut -c1-16)$suffix"
binary="$cache/$mode-$key"
if [[ ! -x "$binary" ]]; then
  mkdir -p "$cache"
  work="$(mktemp -d "$cache/build-$mode.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  printf '%s\n' "${sources[@]}" | xargs -P "${SELFTEST_JOBS:-$(nproc)}" -I{} \
    sh -c 'src="$0" out="$1" && shift && "$@" -c "$src" -o "$out/$(basename "$src" .cpp).o" || exit 255' {} "$work" "$cxx" "${flags[@]}"
  "$cxx" "${flags[@]}" "$work"/*.o "${linked[@]}" -o "$work/selftest"
  mv "$work/selftest" "$binary" # whole or not at all: another build of the same key gives the same file
fi
echo "selftest binary: $binary${linked[0]:+ (kernel objects of the arm64 prebuild)}"
$build_only && exit 0

case "$mode" in
  aarch64)
    file "$binary" | sed 's/^[^:]*: /binary: /'
    qemu-aarch64-static -L /usr/aarch64-linux-gnu "$binary" ;;
  sanitize)
    echo "sanitizers: address, undefined"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$binary" ;;
  *) "$binary" ;;
esac
