"""A feature whose extra is not installed says which extra to install, in one line."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT

HIDE = """
import sys
class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Hidden())
"""


def python_without(modules: set[str], code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", HIDE.format(hidden=modules) + code], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_the_testing_library_names_its_extra():
    result = python_without({"hypothesis"}, "import rlfactory_envs.testing")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "rlfactory_envs.kernel.errors.MissingExtra: rlfactory_envs.testing needs hypothesis, which is not installed: "
        "pip install 'rlfactory-envs[testing]'")


def test_prepare_data_with_a_tokenizer_names_the_adapters_extra(tmp_path):
    argv = ["--trainer", "openrlhf", "--env", "rlf/Search-NQ-v0", "--out", str(tmp_path / "x.jsonl"), "--limit", "1",
            "--tokenizer", "Qwen/Qwen3-4B"]
    result = python_without({"transformers"}, f"from rlfactory_adapters.prepare_data import main; "
                                              f"raise SystemExit(main({argv!r}))")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "python -m rlfactory_adapters.prepare_data: error: --tokenizer needs transformers, which is not installed: "
        "pip install 'rlfactory-envs[adapters]' (--debug shows the traceback)"]
