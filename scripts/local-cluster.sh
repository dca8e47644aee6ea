#!/usr/bin/env bash
# A cluster on this machine: a loopback-only Redis (persistence on) and W workers for one store.
#   scripts/local-cluster.sh W --store DIR [--port P] [--threads N]   start (W workers)
#   scripts/local-cluster.sh stop                                    stop the workers and Redis
# Then: pnpm ccheckers solve --board 7 --pieces 3 --store DIR --shards 16 --workers W --redis redis://127.0.0.1:P
# State (pids, logs, Redis data) goes to .cluster/ in the repository.
set -euo pipefail
caller="$(pwd)"
cd "$(dirname "$0")/.."
state=.cluster
if [[ "${1:-}" == "stop" ]]; then
  if [[ -f "$state/workers.pid" ]]; then
    while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done < "$state/workers.pid"
    while read -r pid; do while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done; done < "$state/workers.pid"
    rm -f "$state/workers.pid"
  fi
  [[ -f "$state/port" ]] && scripts/redis.sh stop "$state/redis" "$(cat "$state/port")"
  rm -f "$state/port"
  echo "local cluster stopped"; exit 0
fi
usage() { echo "usage: scripts/local-cluster.sh W --store DIR [--port P] [--threads N] | stop" >&2; exit 2; }
workers="${1:-}"; shift || true
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || usage
store=""; port=6390; threads=1
# An option's value: there, and not the next option.
value() { if (($# < 2)) || [[ "$2" == -* ]]; then echo "local-cluster.sh: $1 needs a value" >&2; usage; fi; }
while (($#)); do
  case "$1" in
    --store) value "$@"; store="$2"; [[ "$store" == /* ]] || store="$caller/$store"; shift 2 ;;
    --port) value "$@"; port="$2"; shift 2 ;;
    --threads) value "$@"; threads="$2"; shift 2 ;;
    *) echo "local-cluster.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -n "$store" ]] || usage
[[ -f packages/cli/dist/bin.js ]] || { echo "local-cluster.sh: run scripts/setup.sh first (no build)" >&2; exit 2; }
if [[ -f "$state/workers.pid" ]]; then echo "local-cluster.sh: a local cluster is running; scripts/local-cluster.sh stop first" >&2; exit 2; fi
mkdir -p "$state"
scripts/redis.sh start "$state/redis" "$port"
echo "$port" > "$state/port"
: > "$state/workers.pid"
for i in $(seq "$workers"); do
  nohup node packages/cli/dist/bin.js worker --redis "redis://127.0.0.1:$port" --store "$store" --threads "$threads" \
    > "$state/worker-$i.log" 2>&1 &
  echo $! >> "$state/workers.pid"
done
echo "Redis on 127.0.0.1:$port ($state/redis), $workers worker(s) for $store (logs: $state/worker-N.log)"
echo "solve with: pnpm ccheckers solve --store $(printf %q "$store") --redis redis://127.0.0.1:$port ..."
