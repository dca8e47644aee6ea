#!/usr/bin/env bash
# A private Redis for cluster solves (Debian's redis-server, installed here if missing), bound to
# 127.0.0.1 only, with its data in DIR and the append-only file on, so a restart keeps the queues.
#   scripts/redis.sh run   DIR PORT [PASSWORD]   in the foreground (the tests stop it themselves)
#   scripts/redis.sh start DIR PORT [PASSWORD]   in the background (DIR/redis.pid, DIR/redis.log)
#   scripts/redis.sh stop  DIR PORT [PASSWORD]   saves and stops it
# REDIS_BIND=ADDRESS binds another address instead (only where the workers are on other machines).
set -euo pipefail
cmd="${1:-}"; dir="${2:-}"; port="${3:-}"; password="${4:-}"
if [[ -z "$cmd" || -z "$dir" || -z "$port" ]]; then
  echo "usage: scripts/redis.sh run|start|stop DIR PORT [PASSWORD]" >&2; exit 2
fi
if ! command -v redis-server >/dev/null; then
  echo "redis.sh: apt-get install redis-server" >&2
  as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null ||
    { as_root apt-get update -qq >/dev/null && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; } ||
    { echo "redis.sh: redis-server is not installed and could not be (apt-get install redis-server)" >&2; exit 2; }
fi
bind="${REDIS_BIND:-127.0.0.1}"
host="${bind%% *}"; [[ "$host" == "0.0.0.0" || "$host" == "*" ]] && host=127.0.0.1
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
auth=(); [[ -n "$password" ]] && auth=(--requirepass "$password")
options=(--bind "$bind" --port "$port" --dir "$dir" --appendonly yes --appendfsync everysec
  --save "" --protected-mode yes "${auth[@]}")
case "$cmd" in
  run) exec redis-server "${options[@]}" ;;
  start)
    redis-server "${options[@]}" --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    for _ in $(seq 50); do
      REDISCLI_AUTH="$password" redis-cli -h "$host" -p "$port" ping 2>/dev/null | grep -q PONG && exit 0
      sleep 0.1
    done
    echo "redis.sh: Redis did not answer on $host:$port (see $dir/redis.log)" >&2; exit 1 ;;
  stop) REDISCLI_AUTH="$password" redis-cli -h "$host" -p "$port" shutdown >/dev/null 2>&1 || true ;;
  *) echo "usage: scripts/redis.sh run|start|stop DIR PORT [PASSWORD]" >&2; exit 2 ;;
esac
