#!/usr/bin/env bash
# Before/after on one machine in one run: alternates `meta bench … --embedded` between two
# built checkouts (e.g. a `git worktree add --detach ../base <rev>` with `npm run build`, and
# this one), ROUNDS times per scenario, and prints msg/s, p99 (ms) and CPU per message
# (client/broker µs) with the load average. Ratios from the same run hold on a noisy VM;
# absolute figures do not.
#   bench/compare-builds.sh ../base .        ROUNDS=3 by default
set -u
BASE=${1:?usage: bench/compare-builds.sh BASE_DIR NEW_DIR}
NEW=${2:?usage: bench/compare-builds.sh BASE_DIR NEW_DIR}
ROUNDS=${ROUNDS:-3}
run() {
  local dir=$1; shift
  node "$dir/bin/run.js" "$@" --json 2>/dev/null | node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>{try{const j=JSON.parse(s);console.log(j.msgsPerSec, "p99=" + (j.latency?.p99 ?? "-"), "cpu=" + j.cpu?.clientUsPerMsg + "/" + j.cpu?.brokerUsPerMsg)}catch{console.log("failed:", s.slice(0, 200))}})'
}
SCENARIOS=(
  "bench produce --embedded --size 100 --duration 6s"
  "bench produce --embedded --size 100 --plain-put --max-in-flight 1000 -n 400000"
  "bench consume --embedded --size 100 --duration 6s"
  "bench e2e --embedded --size 100 --rate 10000 --duration 6s"
)
for s in "${SCENARIOS[@]}"; do
  for round in $(seq 1 "$ROUNDS"); do
    b=$(run "$BASE" $s)
    n=$(run "$NEW" $s)
    echo "$s | round $round | base $b | new $n | load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
