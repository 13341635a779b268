#!/usr/bin/env bash
# Runner-pool benchmarks on one machine (a bare remote and a clone per
# runner): a claim's remote round trips and latency, claim pushes per claim
# won with 8 runners racing, throughput with 1, 2, 4 and 8 runners on 1 s
# turns, and the ref updates the pool lands on the remote against the rate
# plain leased pushes saturate it at. Usage:
# scripts/bench-pool.sh [-quick] [-turn D] [-per N] [-poll D] [-lease D] [-keep]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/lazy" .
go build -o "$bin/poolbench" ./scripts/poolbench
"$bin/poolbench" -lazy "$bin/lazy" "$@"
