#!/usr/bin/env bash
# Agent-turn benchmarks: lazy start -> agent running, supervisor RSS and
# daemon CPU with N concurrent turns of the fake agent, without and (when
# bubblewrap is installed) with the sandbox, in the same run. Usage:
# scripts/bench-turns.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/lazy" .
go build -o "$bin/fakeagent" ./internal/testfakes/fakeagent
go build -o "$bin/turnbench" ./scripts/turnbench
"$bin/turnbench" -lazy "$bin/lazy" -fake "$bin/fakeagent" -n "${1:-20}"
if command -v bwrap >/dev/null 2>&1; then
  "$bin/turnbench" -lazy "$bin/lazy" -fake "$bin/fakeagent" -n "${1:-20}" -sandbox
else
  echo "bwrap not installed: the sandboxed run is skipped"
fi
