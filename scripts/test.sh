#!/usr/bin/env bash
# The project's test command: formatting, vet, lint, the race-enabled test
# suite (unit, real-repo and end-to-end tests against the real binary) and a
# short fuzz run of every fuzz target (see below).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

lint=${GOLANGCI_LINT:-$(command -v golangci-lint || echo "$(go env GOPATH)/bin/golangci-lint")}
if [ -x "$lint" ]; then
  echo "== golangci-lint"
  "$lint" run ./...
else
  echo "== golangci-lint not installed; skipped (.ci/run installs it)"
fi

echo "== go test -race"
go test -race -count=1 -timeout "${TEST_TIMEOUT:-40m}" ./...

# Every fuzz target in the repository, found by name (package directory
# and function), FUZZTIME each. Over FUZZ_MAX targets a deterministic
# subset runs, rotating by FUZZ_ROTATION (default: the day number);
# FUZZ_MAX=0 runs them all. `go test` above already ran every seed corpus.
# FUZZMINIMIZETIME (default 0s) bounds the minimizing of each input: go's
# default, 60s per newly interesting input, spends a short run minimizing
# the first one or two (a 2-4 KB pack or index seed costs O(n^2) runs) and
# reports no executions meanwhile; FuzzPackIndex did 11 executions in 10s
# with it, 110k without. A failing input is still reported and written
# to testdata, unminimized; rerun with FUZZMINIMIZETIME=60s to shrink it.
fuzztime=${FUZZTIME:-3s}
minimize=${FUZZMINIMIZETIME:-0s}
mapfile -t targets < <(grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . \
  | grep -v -e '/testdata/' -e '/vendor/' \
  | sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' | sort -u)
max=${FUZZ_MAX:-20}
n=${#targets[@]}
if [ "$max" -gt 0 ] && [ "$n" -gt "$max" ]; then
  rot=$(( ${FUZZ_ROTATION:-$(( $(date +%s) / 86400 ))} % n ))
  chosen=()
  for ((k = 0; k < max; k++)); do chosen+=("${targets[$(( (rot + k) % n ))]}"); done
  echo "== fuzz $max of $n targets (FUZZ_ROTATION=$rot; FUZZ_MAX=0 runs all), $fuzztime each"
else
  chosen=("${targets[@]}")
  echo "== fuzz all $n targets, $fuzztime each"
fi
for t in "${chosen[@]}"; do
  read -r pkg name <<<"$t"
  echo "-- fuzz $pkg $name"
  go test "$pkg/" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize"
done
