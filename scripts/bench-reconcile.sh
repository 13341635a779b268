#!/usr/bin/env bash
# Times one full reconcile pass (every sweep) in a daemon's steady state:
# 1,000 tasks with 100 running turns, then one repository of 10,000 with 10
# running turns and with 100. 10,000/10 against 10,000/100 shows what an
# active task costs; 1,000/100 against 10,000/100 shows that parked tasks
# (a tenth of them blocked with sessions, which the merged-branch sweep
# looks at) add next to nothing. loads/pass counts full snapshot loads.
# The cases take turns pass after pass and report medians and ratios.
# Seeding 11,000 tasks takes a minute or two.
# Usage: scripts/bench-reconcile.sh [large-size] [passes]
set -euo pipefail
cd "$(dirname "$0")/.."
LAZY_BENCH_TASKS="${1:-10000}" go test ./reconcile/ -run '^$' -bench Sweep -benchtime "${2:-300}x" -timeout 30m | grep -E '^Benchmark'
