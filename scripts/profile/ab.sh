#!/usr/bin/env bash
# Alternates two builds of corral-bench on the same benchmark, PAIRS times each, and prints each
# run's phases (wall s / CPU s), so that a change is judged by pairs run in the same minutes:
#   scripts/profile/ab.sh TAG BASE_BIN NEW_BIN PAIRS BENCH_ARGS...
#   scripts/profile/ab.sh r3k /tmp/base /tmp/new 3 rollout --replicas 3000 --quiet
# Each run's whole report is kept in /tmp/ab-TAG-{base,new}-N.txt.
set -uo pipefail
tag=$1 base=$2 new=$3 pairs=$4
shift 4
for i in $(seq 1 "$pairs"); do
  for which in base new; do
    bin=$base
    [ "$which" = new ] && bin=$new
    out=/tmp/ab-$tag-$which-$i.txt
    "$bin" "$@" >"$out" 2>&1
    phases=$(grep -E '^\| (scale-up|rollout|create|delete|idle)' "$out" |
      awk -F'|' '{gsub(/ +$/, "", $2); printf "%s: %s s / %s CPU s; ", $2, $3, $4}')
    echo "$which $i load=$(cut -d' ' -f1 /proc/loadavg) $phases"
  done
done
