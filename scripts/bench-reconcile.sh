#!/usr/bin/env bash
# Times one full reconcile pass (every sweep) in a daemon's steady state,
# in three repositories: 1,000 tasks with 100 running turns, 10,000 with
# 100, and a copy of the same 10,000 with 10. Each is passed two ways:
# "sweep" is Sweep over the list, which walks every task (the pass as it
# was), and "pass" is Pass, which keeps its listing while no task ref
# moves and visits only the tasks that can change without a human.
# 10,000/100 against 10,000/10 shows what an active task costs (x...-
# active-100/10, ~10 when a pass costs in proportion to active tasks);
# 1,000/100 against 10,000/100 shows what parked tasks (a tenth of them
# blocked with sessions, which the merged-branch sweep looks at) add
# (x...-tasks-large/1000, ~1 when flat). loads/pass counts full snapshot
# loads, lists/pass the listings Pass made in the steady state (0).
# The cases take turns pass after pass and report medians and ratios.
# Seeding 11,000 tasks takes a minute or two.
# Usage: scripts/bench-reconcile.sh [large-size] [passes]
set -euo pipefail
cd "$(dirname "$0")/.."
LAZY_BENCH_TASKS="${1:-10000}" go test ./reconcile/ -run '^$' -bench Sweep -benchtime "${2:-300}x" -timeout 30m | grep -E '^Benchmark'
