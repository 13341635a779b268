#!/usr/bin/env bash
# Times one full reconcile pass (every sweep) over 1,000 and 10,000 tasks
# with 100 active ones, and over 10,000 with 10 active, to show that a pass
# costs in proportion to active tasks. Seeding 21,000 tasks takes a minute
# or two. Usage: scripts/bench-reconcile.sh [large-size]
set -euo pipefail
cd "$(dirname "$0")/.."
LAZY_BENCH_TASKS="${1:-10000}" go test ./reconcile/ -run '^$' -bench Sweep -benchtime 20x -timeout 30m | grep -E '^Benchmark'
