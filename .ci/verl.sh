#!/usr/bin/env bash
# The verl adapter's tests against the real verl 0.9.1, in their own virtual environment (.venv-verl): verl and
# OpenRLHF pin incompatible versions, so each trainer gets a venv of its own. CPU only: torch 2.13.0 from the local
# CPU wheel (never an unpinned torch: that pulls gigabytes of CUDA), verl without its GPU extras (no vllm/sglang),
# and only what the modules the tests import need (verl.experimental.agent_loop, verl.utils.dataset,
# verl.experimental.reward_loop), each within verl 0.9.1's own requirement ranges.
#
# Idempotent: the installs run when .venv-verl is missing or this script / pyproject.toml changed since.
# Usage: bash .ci/verl.sh [pytest args]    (VENV_VERL=path puts the venv elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV_VERL:-.venv-verl}
TORCH="torch==2.13.0"
VERL="verl==0.9.1"
VERL_DEPS=(
  "packaging==25.0" "numpy==2.4.6" "ray==2.60.0" "tensordict==0.10.0" "hydra-core==1.3.8" "omegaconf==2.3.1"
  "codetiming==1.4.0" "transformers==5.10.4" "pillow==13.0.0" "datasets==5.2.0" "pyarrow==26.0.1"
  "cachetools==8.0.1" "fastapi==0.165.0" "uvicorn==0.54.0" "aiohttp==3.14.5"
)
STAMP="$VENV/.rlf-verl-installed"
WANT="$(cat "$0" pyproject.toml | sha256sum | cut -d' ' -f1)"

if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "$TORCH"
  "$VENV/bin/pip" install -q --no-deps "$VERL"
  # torch is named again so the resolver keeps the CPU wheel; the project itself with its test extra. pip then
  # lists verl requirements left out on purpose (wandb, tensorboard, torchdata, peft, accelerate, ...): the
  # modules the tests import do not need them.
  "$VENV/bin/pip" install -q "$TORCH" "${VERL_DEPS[@]}" -e ".[test]"
  "$VENV/bin/python" - <<'EOF'
import torch, verl
assert torch.__version__.startswith("2.13.0") and "+cpu" in torch.__version__, torch.__version__
assert verl.__version__ == "0.9.1", verl.__version__
import verl.experimental.agent_loop, verl.experimental.reward_loop  # noqa: E401 - what the tests need
EOF
  echo "$WANT" > "$STAMP"
fi

"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/adapters/verl "$@"
