#!/bin/sh
# Install pinned releases of the real agent CLIs (Claude Code and Codex)
# from npm into a cache directory, so the e2e suite that drives them
# against a local mock of the Anthropic and OpenAI APIs runs instead of
# skipping. Prints the directory that holds the `claude` and `codex`
# links; put it on PATH or export LAZY_AGENT_CLIS_DIR to it.
#
#   dir=$(sh scripts/ci-install-agent-clis.sh) && export LAZY_AGENT_CLIS_DIR="$dir"
#
# Versions are pinned because the tests assert on the CLIs' event shapes
# and error texts; bump them together with docs/agent-clis.md.
set -eu
CLAUDE_VERSION=${LAZY_CLAUDE_VERSION:-2.1.332}
CODEX_VERSION=${LAZY_CODEX_VERSION:-0.171.0}
root=${LAZY_AGENT_CLIS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lazy-agent-clis}
prefix="$root/claude-$CLAUDE_VERSION-codex-$CODEX_VERSION"
if [ ! -x "$prefix/node_modules/.bin/claude" ] || [ ! -x "$prefix/node_modules/.bin/codex" ]; then
	command -v npm >/dev/null 2>&1 || { echo "npm is required to install the agent CLIs (apt-get install npm)" >&2; exit 1; }
	mkdir -p "$prefix"
	npm install --prefix "$prefix" --no-fund --no-audit --loglevel=error \
		"@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" >&2
fi
mkdir -p "$root/bin"
ln -sf "$prefix/node_modules/.bin/claude" "$root/bin/claude"
ln -sf "$prefix/node_modules/.bin/codex" "$root/bin/codex"
echo "$root/bin"
