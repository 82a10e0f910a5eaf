"""The quick development suite (``pytest -m quick``) leaves out only modules that exist."""

from tests.conftest import REPO_ROOT, SLOW_MODULES


def test_every_slow_module_named_exists():
    assert not [module for module in SLOW_MODULES if not (REPO_ROOT / "tests" / module).is_file()]
