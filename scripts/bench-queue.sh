#!/usr/bin/env bash
# Merge-queue throughput: N ready tasks (default 8) whose check takes a
# while (default 3s), accepted serially with the test run by hand after
# each (no gate), and as one merge queue with lazy.gate.parallel 1, 2 and
# 4, in one run; prints tasks per minute and the ratio to the serial
# baseline. With -fail I the task at index I fails the gate, and it
# compares today's speculative train with a batched one
# (lazy.gate.batch N) at -parallel P: gate runs and time, as ratios.
# Usage: scripts/bench-queue.sh [-n N] [-check DURATION] [-cmd TEST] [-runs R] [-fail I [-parallel P]]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# lazy as README's install line builds it: static, without cgo.
CGO_ENABLED=0 go build -o "$bin/lazy" .
go build -o "$bin/fakeagent" ./internal/testfakes/fakeagent
go build -o "$bin/queuebench" ./scripts/queuebench
"$bin/queuebench" -lazy "$bin/lazy" -fake "$bin/fakeagent" "$@"
