#!/usr/bin/env bash
# The Open Reward Standard door's tests against the real `openreward` client (0.1.167), in a venv of its own
# (.venv-ors): every openreward release pins sse-starlette==2.3.6 and the MCP SDK 2.x needs sse-starlette>=3, so the
# client cannot share the core venv. The server under test runs from the core venv (.venv, or RLF_PYTHON), as a user
# runs `rlf serve env`; only the client, pytest and what tests/conftest.py imports are installed here.
# Idempotent: a second run only re-checks the installs. Usage: bash .ci/ors.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-ors
started=$SECONDS
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "openreward==0.1.167" "pytest>=8" "pytest-asyncio>=0.24" "pytest-timeout>=2.3" \
  "hypothesis>=6.100"
echo "ors venv ready in $((SECONDS - started)) s"
RLF_PYTHON="${RLF_PYTHON:-$PWD/.venv/bin/python}" "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/service/ors "$@"
echo "ors door: setup and tests took $((SECONDS - started)) s"
