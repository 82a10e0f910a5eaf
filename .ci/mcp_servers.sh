#!/usr/bin/env bash
# Installs the third-party MCP servers that the integration tests launch over stdio (tests/third_party_servers.py)
# into .third_party/node/ inside the repository, at pinned exact versions. Needs node (>= 18) and npm, and reaches
# only the npm registry. Idempotent: when the pinned version is already installed it does nothing.
# The pin must equal EVERYTHING_PACKAGE/EVERYTHING_VERSION in tests/third_party_servers.py (a test checks this).
set -euo pipefail
cd "$(dirname "$0")/.."

EVERYTHING_PACKAGE="@modelcontextprotocol/server-everything"
EVERYTHING_VERSION="2026.8.31"
PREFIX=".third_party/node"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "mcp_servers.sh: '$tool' is not on PATH; install Node.js (>= 18, with npm) to run the third-party" \
             "MCP server tests (tests/kernel/test_third_party_server.py)" >&2
        exit 1
    fi
done

manifest="$PREFIX/node_modules/$EVERYTHING_PACKAGE/package.json"
installed=""
if [ -f "$manifest" ]; then
    installed=$(node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).version))' "$manifest" 2>/dev/null || true)
fi
if [ "$installed" = "$EVERYTHING_VERSION" ]; then
    echo "mcp_servers.sh: $EVERYTHING_PACKAGE@$EVERYTHING_VERSION is already installed in $PREFIX"
    exit 0
fi

echo "mcp_servers.sh: installing $EVERYTHING_PACKAGE@$EVERYTHING_VERSION into $PREFIX${installed:+ (replacing $installed)}"
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact "$EVERYTHING_PACKAGE@$EVERYTHING_VERSION"
