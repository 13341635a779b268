#!/usr/bin/env bash
# Agent-turn benchmarks: lazy start -> agent running, supervisor RSS and
# daemon CPU with N concurrent turns of the fake agent. Usage:
# scripts/bench-turns.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/lazy" .
go build -o "$bin/fakeagent" ./internal/fakeagent
go build -o "$bin/turnbench" ./scripts/turnbench
"$bin/turnbench" -lazy "$bin/lazy" -fake "$bin/fakeagent" -n "${1:-20}"
