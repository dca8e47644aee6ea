#!/usr/bin/env bash
# Sets up a fresh machine (Debian, Node 20) for ccheckers: system packages, pnpm, dependencies,
# the native addon and the TypeScript build. Idempotent; safe to run again.
#   scripts/setup.sh              what running ccheckers needs
#   scripts/setup.sh --test-tools what the whole test suite uses besides: qemu and an arm64
#                                 cross-compiler (the run-time kernel choice on CPUs without BMI2
#                                 and on arm64), Debian's chromium (the explorer's browser test) and
#                                 redis-server (the cluster tests; scripts/redis.sh installs it too)
set -euo pipefail
cd "$(dirname "$0")/.."

PNPM_VERSION=10.34.9
want_test_tools=false
[[ "${1:-}" == "--test-tools" ]] && want_test_tools=true

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
# Waits up to 5 minutes for dpkg's lock (a new machine's own apt jobs may hold it at first).
apt_install() {
  echo "setup: apt-get install $*" >&2
  local get=(as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
  "${get[@]}" install -y -qq "$@" >/dev/null || { "${get[@]}" update -qq >/dev/null && "${get[@]}" install -y -qq "$@" >/dev/null; }
}

# The addon's compiler toolchain (node-gyp needs make, g++ and Python 3).
missing=()
for tool in g++:g++ make:make python3:python3; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
if ((${#missing[@]})); then
  apt_install "${missing[@]}" || echo "setup: could not install ${missing[*]}; the pure-TypeScript backend will be used" >&2
fi
# The test tools in one apt-get, in the background while pnpm installs and builds (on a new
# machine of this kind they are about a minute of downloads and unpacking); waited for at the end.
test_tools=()
test_tools_job=
if $want_test_tools; then
  command -v qemu-x86_64-static >/dev/null && command -v qemu-aarch64-static >/dev/null || test_tools+=(qemu-user-static)
  command -v aarch64-linux-gnu-g++ >/dev/null || test_tools+=(g++-aarch64-linux-gnu)
  [[ -x /usr/bin/chromium ]] || test_tools+=(chromium)
  command -v redis-server >/dev/null || test_tools+=(redis-server)
  if ((${#test_tools[@]})); then
    apt_install "${test_tools[@]}" &
    test_tools_job=$!
    # Should pnpm fail, the apt-get is still waited for (a new run would wait on dpkg's lock).
    trap 'wait "$test_tools_job" 2>/dev/null || true' EXIT
  fi
fi

# pnpm, pinned (newer majors need Node 22).
if [[ "$(pnpm --version 2>/dev/null || true)" != "$PNPM_VERSION" ]]; then
  echo "setup: npm install -g pnpm@$PNPM_VERSION" >&2
  npm install -g --silent "pnpm@$PNPM_VERSION" >/dev/null 2>&1 || as_root npm install -g --silent "pnpm@$PNPM_VERSION" >/dev/null
fi

export TURBO_TELEMETRY_DISABLED=1
# node-gyp finds the Node headers of this install through nodedir (no download offline).
export npm_config_nodedir="${npm_config_nodedir:-$(dirname "$(dirname "$(command -v node)")")}"
CI=true pnpm install --frozen-lockfile
pnpm turbo run build --output-logs=errors-only

if [[ -n "$test_tools_job" ]] && ! wait "$test_tools_job"; then
  # One package missing fails the whole apt-get: each on its own, and say what the tests will skip.
  for package in "${test_tools[@]}"; do
    apt_install "$package" && continue
    case "$package" in
      qemu-user-static | g++-aarch64-linux-gnu) echo "setup: $package unavailable; the emulated-CPU and arm64 tests will be skipped" >&2 ;;
      chromium) echo "setup: chromium unavailable; the explorer's browser test will be skipped" >&2 ;;
      redis-server) echo "setup: redis-server unavailable; the cluster tests will be skipped" >&2 ;;
    esac
  done
fi
