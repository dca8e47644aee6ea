#!/usr/bin/env bash
# Stops a random cluster worker of this machine for 0.1-1 s (SIGSTOP, then SIGCONT), again and
# again, for SECONDS: workers that stall now and then, as on a loaded machine, beside a cluster
# solve (docs/sharding.md, "A part that falls behind"):
#   bench/stop-workers.sh 580 & node bench/cluster-solve.mjs 7 3 4 2 1 '' shared
# Every worker it stopped is continued when it ends, killed or not.
set -u
seconds=${1:?usage: bench/stop-workers.sh SECONDS [pgrep pattern, default " worker --redis"]}
pattern=${2:- worker --redis}
stopped=
trap '[[ -n $stopped ]] && kill -CONT "$stopped" 2>/dev/null; exit' EXIT INT TERM
end=$((SECONDS + seconds))
while ((SECONDS < end)); do
  mapfile -t pids < <(pgrep -f -- "$pattern" | grep -vx "$$") # not this script (a pattern given is on its command line)
  if ((${#pids[@]} > 0)); then
    stopped=${pids[RANDOM % ${#pids[@]}]}
    kill -STOP "$stopped" 2>/dev/null
    sleep "0.$((RANDOM % 9 + 1))$((RANDOM % 10))"
    kill -CONT "$stopped" 2>/dev/null
    stopped=
  fi
  sleep "0.$((RANDOM % 5))"
done
