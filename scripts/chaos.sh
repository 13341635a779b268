#!/usr/bin/env bash
# Runs lazy's chaos test (e2e/chaos_test.go) for longer than the suite
# does, several times, each with a fresh seed unless LAZY_CHAOS_SEED is
# set. A failing run prints its seed; re-run with it to reproduce.
#
#   scripts/chaos.sh                 # 3 runs of 5 minutes
#   RUNS=10 DURATION=2m scripts/chaos.sh
#   LAZY_CHAOS_SEED=123 DURATION=60s scripts/chaos.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
duration=${DURATION:-5m}
for i in $(seq 1 "$runs"); do
  echo "== chaos run $i of $runs ($duration)"
  LAZY_CHAOS_DURATION="$duration" go test -count=1 -timeout 0 -run '^TestChaos$' -v ./e2e/
done
