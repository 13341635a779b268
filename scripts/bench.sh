#!/usr/bin/env bash
# Times lazy against the git floor on this machine and prints ratios, each
# measured in one interleaved run (medians): cold and warm list --json at
# 10,000 packed tasks against for-each-ref | cat-file --batch, lazy cost
# against the same floor and, over 10,000 tasks that all spent, against a
# warm list of them, show against
# rev-parse + cat-file + log, create and a transition against the raw
# 4-process git op and against lazy in an empty repository, show at 1x and
# 10x the objects, and the peak RSS of a cold list. Then the gitstore Go
# benchmarks (8 processes x 100 transitions on one task among them).
#
# Usage: scripts/bench.sh [-quick] [-n TASKS] [-runs N] [-peers] [-list] [-base LAZY] [-dir DIR]
#   -quick   1,000 tasks and 7 runs, no Go benchmarks: a smoke run
#   -list    only the list rows; -base LAZY adds a second lazy binary to
#            them (before/after in one run); -dir DIR keeps and reuses the
#            seeded repositories
#   -peers   git-bug and bd (beads), each when on PATH, doing create,
#            close/reopen, list and show at 1,000 and 10,000 items
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# lazy as README's install line builds it: static, without cgo.
CGO_ENABLED=0 go build -o "$bin/lazy" .
go build -o "$bin/seed" ./scripts/seed
go build -o "$bin/bench" ./scripts/bench
"$bin/bench" -lazy "$bin/lazy" -seed "$bin/seed" "$@"
case " $* " in
*" -quick "* | *" -peers "* | *" -list "* | *" --quick "* | *" --peers "* | *" --list "*) exit 0 ;;
esac
echo
echo "gitstore benchmarks (in-process):"
go test ./gitstore/ -run '^$' -bench 'Create|Transition|List1000$|List10000$' -benchtime 100x | grep -E '^Benchmark'
go test ./gitstore/ -run '^$' -bench 'Contention8x100' -benchtime 1x | grep -E '^Benchmark'
