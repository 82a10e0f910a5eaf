"""The quick development suite (``pytest -m quick``) leaves out only modules that exist, and they run first."""

from tests.conftest import REPO_ROOT, SLOW_MODULES, pytest_collection_modifyitems


def test_every_slow_module_named_exists():
    assert not [module for module in SLOW_MODULES if not (REPO_ROOT / "tests" / module).is_file()]


class Item:
    def __init__(self, module: str):
        self.path = REPO_ROOT / "tests" / module
        self.markers: list[str] = []

    def get_closest_marker(self, name: str) -> None:
        return None

    def add_marker(self, marker) -> None:
        self.markers.append(marker.name)


def test_the_slow_modules_run_first_slowest_first_and_each_module_keeps_its_order():
    items = [Item(module) for module in ("kernel/test_parsers.py", SLOW_MODULES[1], SLOW_MODULES[0], SLOW_MODULES[1])]
    first_quick, first_slow = items[0], items[1]
    pytest_collection_modifyitems(items)
    expected = (SLOW_MODULES[0], SLOW_MODULES[1], SLOW_MODULES[1], "kernel/test_parsers.py")
    assert [item.path for item in items] == [REPO_ROOT / "tests" / module for module in expected]
    assert items[1] is first_slow and first_quick.markers == ["quick"] and first_slow.markers == []
