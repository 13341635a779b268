#!/usr/bin/env bash
# The project's full suite: formatting, vet, lint, the race-enabled test
# suite (unit, real-repo and end-to-end tests against the real binary and
# the real clients) and a short fuzz run of every fuzz target (see below).
# The fast lane a developer runs on every change is `go test -short ./...`.
#
# Every tool below is required: a missing one fails the run before any
# test does, rather than its suite skipping unseen. LAZY_ALLOW_MISSING
# names the ones this run may do without (comma-separated, or "all"):
#   LAZY_ALLOW_MISSING=chromium,tmux ./scripts/test.sh
# glab is optional (the Go module proxy .ci/run uses may not serve it).
# A tool that is present is required of the tests too (LAZY_REQUIRE_*),
# so its suite runs and cannot skip. The end prints which suites ran.
set -euo pipefail
cd "$(dirname "$0")/.."

allow=",${LAZY_ALLOW_MISSING:-},glab,"
ran=() skipped=() missing=()

# tool NAME ENVVAR WHAT HINT FOUND: FOUND (a shell test) says whether NAME is
# here; if so ENVVAR=1 makes its tests fail rather than skip.
tool() {
  local name=$1 env=$2 what=$3 hint=$4 found=$5
  if eval "$found"; then
    [ -z "$env" ] || export "$env=1"
    ran+=("$name ($what)")
  elif [[ $allow == *,all,* || $allow == *",$name,"* ]]; then
    skipped+=("$name ($what)")
  else
    missing+=("$name ($what): $hint")
  fi
}
any() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 && return 0; done; return 1; }
lint=${GOLANGCI_LINT:-$(command -v golangci-lint || echo "$(go env GOPATH)/bin/golangci-lint")}
mcp_sdk=${LAZY_MCP_SDK_DIR:-$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/lazy/mcp-sdk-* 2>/dev/null | tail -n 1 || true)}
agent_cli() {
  local d
  for d in "${LAZY_AGENT_CLIS_DIR:-}" "$HOME/.cache/lazy-agent-clis/bin"; do
    [ -n "$d" ] && [ -x "$d/$1" ] && return 0
  done
  command -v "$1" >/dev/null 2>&1
}

tool golangci-lint "" "lint" "go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint (.ci/run pins the version)" '[ -x "$lint" ]'
tool chromium LAZY_REQUIRE_CHROMIUM "the web view in headless Chromium" "apt-get install chromium" 'any chromium chromium-browser google-chrome'
tool bwrap LAZY_REQUIRE_BWRAP "sandboxed agents" "apt-get install bubblewrap, with unprivileged user namespaces allowed" \
  'any bwrap && bwrap --ro-bind / / --dev /dev --proc /proc --unshare-net -- true >/dev/null 2>&1'
tool tmux LAZY_REQUIRE_TMUX "lazy watch's TUI in tmux" "apt-get install tmux" 'any tmux'
tool shellcheck LAZY_REQUIRE_SHELLCHECK "the deployment recipes' scripts" "apt-get install shellcheck" 'any shellcheck'
tool gh LAZY_REQUIRE_GH "every gh argv against the real gh" "sh scripts/ci-install-gh.sh" 'any gh'
tool glab LAZY_REQUIRE_GLAB "every glab argv against the real glab" "sh scripts/ci-install-glab.sh" 'any glab'
tool mcp-sdk LAZY_REQUIRE_MCP_SDK "lazy mcp under the TypeScript MCP SDK client" "apt-get install nodejs npm; sh scripts/ci-install-mcp-sdk.sh" \
  'any node && [ -n "$mcp_sdk" ] && [ -f "$mcp_sdk/node_modules/@modelcontextprotocol/sdk/package.json" ]'
tool agent-clis LAZY_REQUIRE_AGENT_CLIS "real Claude Code and Codex against a mock API" \
  'export LAZY_AGENT_CLIS_DIR=$(sh scripts/ci-install-agent-clis.sh)' 'agent_cli claude && agent_cli codex'

summary() {
  echo "== real-client suites"
  local s
  for s in "${ran[@]}"; do echo "ran:     $s"; done
  for s in "${skipped[@]}"; do echo "skipped: $s (missing; allowed by LAZY_ALLOW_MISSING)"; done
}
if [ ${#missing[@]} -gt 0 ]; then
  echo "scripts/test.sh: the full suite needs tools this machine lacks; install them (.ci/run installs all) or name them in LAZY_ALLOW_MISSING (a list, or all):" >&2
  for s in "${missing[@]}"; do echo "  missing: $s" >&2; done
  exit 1
fi
trap summary EXIT

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

if [ -x "$lint" ]; then
  echo "== golangci-lint"
  "$lint" run ./...
fi

# The fast lane once more as a stranger's machine runs it: an empty HOME
# (no global git config, no identity, no caches but Go's), no system git
# config, no LAZY_* settings, and GIT_AUTHOR_*/GIT_COMMITTER_* naming
# someone else. Tests make their own identity, and lazy's own commits
# carry lazy's whatever the environment says (README "Whose name is on a
# commit").
echo "== go test -short in a stranger's environment"
(
  stranger=$(mktemp -d)
  trap 'rm -rf "$stranger"' EXIT
  gocache=$(go env GOCACHE) gomodcache=$(go env GOMODCACHE) gopath=$(go env GOPATH)
  for v in "${!LAZY_@}" XDG_CONFIG_HOME GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM; do unset "$v"; done
  export HOME=$stranger GIT_CONFIG_NOSYSTEM=1 GOCACHE=$gocache GOMODCACHE=$gomodcache GOPATH=$gopath \
    GIT_AUTHOR_NAME="A Stranger" GIT_AUTHOR_EMAIL=author@stranger.invalid \
    GIT_COMMITTER_NAME="Another Stranger" GIT_COMMITTER_EMAIL=committer@stranger.invalid
  go test -short -count=1 ./...
)

echo "== go test -race"
go test -race -count=1 -timeout "${TEST_TIMEOUT:-60m}" ./...

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
# fuzz runs one target. Go's fuzzing engine can end a run as "context
# deadline exceeded" when -fuzztime runs out while a worker is inside a
# slow input (a target that runs git, like FuzzPulledRecord), with no
# failing input found or written: such a run is tried once more. A run
# that found a failing input always fails the suite.
fuzz() {
  local pkg=$1 name=$2 out
  out=$(mktemp)
  for attempt in 1 2; do
    if go test "$pkg/" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" 2>&1 | tee "$out"; then
      rm -f "$out"
      return 0
    fi
    if [ "$attempt" = 1 ] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
      echo "-- fuzz $pkg $name: the engine's deadline cut a slow input short (no failing input); once more"
      continue
    fi
    rm -f "$out"
    return 1
  done
}
for t in "${chosen[@]}"; do
  read -r pkg name <<<"$t"
  echo "-- fuzz $pkg $name"
  fuzz "$pkg" "$name"
done
