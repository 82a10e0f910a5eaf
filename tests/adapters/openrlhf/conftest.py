"""Fixtures of the OpenRLHF adapter tests (trainer-free, so the core venv can collect and skip them)."""

from __future__ import annotations

import pytest

from rlfactory_adapters.task_rows import task_rows


@pytest.fixture(scope="module")
def search_rows():
    """The first tasks of rlf/Search-NQ-v0 as ``python -m rlfactory_adapters.prepare_data`` writes them."""
    return list(task_rows("rlf/Search-NQ-v0", limit=4))


@pytest.fixture(scope="module")
def search_r1_rows():
    """The first tasks of rlf/Search-NQ-SearchR1-v0 (Search-R1's tags, stop strings instead of an EOS)."""
    return list(task_rows("rlf/Search-NQ-SearchR1-v0", limit=2))
