"""Without OpenRLHF, ``import rlfactory_adapters.openrlhf`` fails with a message that says what to install (runs in the core
venv, where OpenRLHF is absent, and in .venv-openrlhf with OpenRLHF hidden)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest


def test_importing_the_adapter_without_openrlhf_says_what_to_install(monkeypatch):
    for name in [n for n in sys.modules if n == "openrlhf" or n.startswith(("openrlhf.", "rlfactory_adapters.openrlhf"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "openrlhf", None)  # makes `import openrlhf...` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'rlfactory-envs\[openrlhf\]'"):
        importlib.import_module("rlfactory_adapters.openrlhf")


def test_the_core_adapters_import_no_trainer():
    """The shared adapter modules (data prep, env leases, token bookkeeping) load without any trainer."""
    code = ("import pkgutil, importlib, sys, rlfactory_adapters\n"
            "names = [m.name for m in pkgutil.iter_modules(rlfactory_adapters.__path__) if not m.ispkg]\n"
            "[importlib.import_module('rlfactory_adapters.' + n) for n in names]\n"
            "print(len(names), sorted({m.split('.')[0] for m in sys.modules} & {'openrlhf', 'verl', 'vllm', 'ray'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr
    count, trainers = done.stdout.split(" ", 1)
    assert int(count) >= 5 and trainers.strip() == "[]"
