#!/bin/sh
# Install the official TypeScript MCP SDK (npm @modelcontextprotocol/sdk,
# pinned) into a cache directory, so e2e's TestTypeScriptSDKClient drives
# lazy mcp with the client most MCP hosts use. Prints the directory; the
# test finds it there by default, or through LAZY_MCP_SDK_DIR.
#
#   sh scripts/ci-install-mcp-sdk.sh            # installs, prints the dir
#   LAZY_MCP_SDK_DIR=/some/dir sh scripts/ci-install-mcp-sdk.sh
set -eu
VERSION=1.32.2
DIR=${LAZY_MCP_SDK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lazy/mcp-sdk-$VERSION}
if ! command -v npm >/dev/null 2>&1; then
	echo "ci-install-mcp-sdk: npm is not installed (apt-get install nodejs npm)" >&2
	exit 1
fi
if [ -f "$DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] &&
	grep -q "\"version\": \"$VERSION\"" "$DIR/node_modules/@modelcontextprotocol/sdk/package.json"; then
	echo "$DIR"
	exit 0
fi
mkdir -p "$DIR"
cd "$DIR"
[ -f package.json ] || printf '{"name":"lazy-mcp-sdk-cache","private":true}\n' >package.json
npm install --no-audit --no-fund --silent --save-exact "@modelcontextprotocol/sdk@$VERSION" >&2
echo "$DIR"
