"""``import rlfactory_adapters.verl`` without verl fails with a message that says what to install (runs in every venv)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_importing_the_verl_adapter_without_verl_says_what_to_install():
    code = "import sys; sys.modules['verl'] = None; import rlfactory_adapters.verl"  # None in sys.modules: an ImportError
    completed = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode != 0
    last_line = completed.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ImportError: rlfactory_adapters.verl needs verl 0.9.x")
    assert 'pip install "rlfactory-envs[verl]"' in last_line and ".ci/verl.sh" in last_line


def test_the_core_does_not_import_a_trainer():
    code = ("import sys, rlfactory_envs, rlfactory_adapters.episode_driver, rlfactory_adapters.env_lease, rlfactory_adapters.task_rows; "
            "print(sorted(m for m in ('verl', 'openrlhf', 'ray', 'torch') if m in sys.modules))")
    completed = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"
