#!/usr/bin/env bash
# The browser for rlf view's tests (tests/view/): Debian's chromium package, driven by Playwright with the system
# executable (Playwright never downloads a browser). Where it cannot be installed (no apt-get, no root, no network),
# this says why and the browser tests skip, each saying so.
set -uo pipefail
if command -v chromium >/dev/null 2>&1; then
  echo "chromium: $(chromium --version 2>/dev/null || echo present)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: not installed and no apt-get here; the browser tests of rlf view will skip"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium: not installed and not root (apt-get needs it); the browser tests of rlf view will skip"
  exit 0
fi
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; then
  echo "chromium: apt-get could not install it; the browser tests of rlf view will skip"
fi
exit 0
