#!/usr/bin/env bash
# Times lazy against raw git on this machine and prints ratios, then runs
# the gitstore Go benchmarks (including 8 processes x 100 transitions on
# one task). Usage: scripts/bench.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/lazy" .
go build -o "$bin/seed" ./scripts/seed
go build -o "$bin/bench" ./scripts/bench
"$bin/bench" -lazy "$bin/lazy" -seed "$bin/seed" -runs "${1:-40}"
echo
echo "gitstore benchmarks (in-process):"
go test ./gitstore/ -run '^$' -bench 'Create|Transition|List1000$|List10000$' -benchtime 100x | grep -E '^Benchmark'
go test ./gitstore/ -run '^$' -bench 'Contention8x100' -benchtime 1x | grep -E '^Benchmark'
