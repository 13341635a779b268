#!/usr/bin/env bash
# The project's test command: formatting, vet, lint, the race-enabled test
# suite (unit, real-repo and end-to-end tests against the real binary) and a
# short fuzz run of the text sanitizer, the output escaper, slugs and the
# MCP server's input (what an agent writes to lazy mcp-proxy).
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

echo "== fuzz the sanitizer (${FUZZTIME:-10s})"
go test ./sanitize/ -run '^$' -fuzz FuzzSanitize -fuzztime "${FUZZTIME:-10s}"

echo "== fuzz the output escaper (${FUZZTIME:-10s})"
go test ./internal/termsafe/ -run '^$' -fuzz FuzzWriter -fuzztime "${FUZZTIME:-10s}"

echo "== fuzz slugs (${FUZZTIME:-10s})"
go test ./gitstore/ -run '^$' -fuzz FuzzSlugify -fuzztime "${FUZZTIME:-10s}"

echo "== fuzz the MCP server's input (${FUZZTIME:-10s})"
go test ./mcp/ -run '^$' -fuzz FuzzServe -fuzztime "${FUZZTIME:-10s}"
