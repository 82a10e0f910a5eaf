#!/usr/bin/env bash
# The OpenRLHF adapter's tests, in a venv of their own (.venv-openrlhf): OpenRLHF 0.11.2 pins versions the verl
# adapter cannot share. Only what the imported OpenRLHF modules (openrlhf.utils.agent) need is installed: CPU torch
# 2.13.0 (never an unpinned torch: that pulls the CUDA wheels), transformers 5.15.0 (OpenRLHF's pin), pylatexenc
# (openrlhf/utils/__init__ imports math_utils), aiohttp; OpenRLHF itself with --no-deps (its full requirements are
# deepspeed, ray, flash-attn and vllm, for GPU nodes). Idempotent: a second run only re-checks the installs.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-openrlhf
started=$SECONDS
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "torch==2.13.0" "transformers==5.15.0" pylatexenc aiohttp -e ".[test]"
"$VENV/bin/pip" install -q --no-deps "openrlhf==0.11.2"
"$VENV/bin/python" -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
echo "openrlhf venv ready in $((SECONDS - started)) s"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/adapters/openrlhf "$@"
echo "openrlhf adapter: setup and tests took $((SECONDS - started)) s"
