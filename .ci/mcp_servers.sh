#!/usr/bin/env bash
# Installs the third-party MCP programs the integration tests run into .third_party/node/ inside the repository, at
# pinned exact versions: the reference server the toolbox is tested against over stdio (tests/third_party_servers.py),
# and the MCP Inspector, whose CLI mode is the outside client our own servers are checked with
# (tests/tool_servers/test_inspector.py). Needs node (>= 18; the Inspector declares >= 22.19, but its CLI mode runs on
# 20) and npm, and reaches only the npm registry. Without node it says which tests will skip and exits 0 (1 with
# --require, as CI runs it). Idempotent: when the pinned versions are installed it does nothing.
# The pins must equal *_PACKAGE/*_VERSION in tests/third_party_servers.py (tests check this).
set -euo pipefail
cd "$(dirname "$0")/.."

EVERYTHING_PACKAGE="@modelcontextprotocol/server-everything"
EVERYTHING_VERSION="2026.8.31"
INSPECTOR_PACKAGE="@modelcontextprotocol/inspector"
INSPECTOR_VERSION="2.12.0"
PREFIX=".third_party/node"
PINS=("$EVERYTHING_PACKAGE@$EVERYTHING_VERSION" "$INSPECTOR_PACKAGE@$INSPECTOR_VERSION")

REQUIRE=0  # --require (CI): no node is an error; otherwise the tests that need it skip, saying so
if [ "${1:-}" = "--require" ]; then REQUIRE=1; fi

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "mcp_servers.sh: '$tool' is not on PATH, so the third-party MCP tests" \
             "(tests/kernel/test_third_party_server.py, tests/tool_servers/test_inspector.py, ...) will skip;" \
             "install Node.js (>= 18, with npm) and run this again to run them" >&2
        exit "$REQUIRE"
    fi
done

installed_version() {  # the version of package $1 installed in $PREFIX, or nothing
    local manifest="$PREFIX/node_modules/$1/package.json"
    if [ -f "$manifest" ]; then
        node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).version))' "$manifest" 2>/dev/null || true
    fi
}

missing=()
for pin in "${PINS[@]}"; do
    package="${pin%@*}"
    if [ "$(installed_version "$package")" != "${pin##*@}" ]; then
        missing+=("$pin")
    fi
done
if [ "${#missing[@]}" -eq 0 ]; then
    echo "mcp_servers.sh: ${PINS[*]} already installed in $PREFIX"
    exit 0
fi

echo "mcp_servers.sh: installing ${missing[*]} into $PREFIX"
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact "${PINS[@]}"
