"""The layering the project promises, read from the installed packages' own imports: the kernel imports only
downward, plugins depend on the kernel and never the reverse, families never on each other, tool servers on no env,
and nothing installed imports the folders' collision-prone names or reads ../shared."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
AREAS = {"rlfactory_envs": REPO_ROOT, "rlfactory_tool_servers": REPO_ROOT / "tool_servers",
         "rlfactory_reward_models": REPO_ROOT / "reward_models", "rlfactory_adapters": REPO_ROOT / "adapters"}
"""Each installed package and the area folder it lies in: its import path is its path under that folder."""
PACKAGES = tuple(AREAS)
FOLDER_NAMES = {"adapters", "tool_servers", "reward_models"}
FAMILIES = sorted(p.parent.name for p in (REPO_ROOT / "rlfactory_envs").glob("*/family.py"))


def modules() -> dict[str, Path]:
    """Every installed module, by its import name: its path under its area folder, dots for slashes."""
    found = {}
    for package, area in AREAS.items():
        for path in (area / package).rglob("*.py"):
            parts = path.relative_to(area).with_suffix("").parts
            found[".".join(parts).removesuffix(".__init__")] = path
    return found


MODULES = modules()


def imports(path: Path) -> set[str]:
    """The absolute module names ``path`` imports (at any depth, lazy imports included); ``from package import
    module`` counts as the module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & set(MODULES)
            names |= submodules or {node.module}
    return names


def importers(prefix: str) -> dict[str, set[str]]:
    """For each installed module under ``prefix`` (``"rlfactory"``: all of them), the project modules it imports."""
    ours = PACKAGES
    return {name: {i for i in imports(path) if i.startswith(ours)} for name, path in MODULES.items()
            if name == prefix or name.startswith(prefix + ".") or prefix == "rlfactory"}


def test_there_are_families():
    assert {"search", "sql", "generic"} <= set(FAMILIES)


@pytest.mark.parametrize(("layer", "may_import"), [
    ("rlfactory_envs.kernel.mcp", ("rlfactory_envs.kernel.mcp", "rlfactory_envs.kernel.tool_call",
                                   "rlfactory_envs.kernel.errors", "rlfactory_reward_models.errors",
                                   "rlfactory_tool_servers.connection_errors", "rlfactory_tool_servers.wire",
                                   "rlfactory_tool_servers.direct_lane")),
    ("rlfactory_envs.kernel", ("rlfactory_envs.kernel", "rlfactory_reward_models",
                               "rlfactory_tool_servers.connection_errors", "rlfactory_tool_servers.functions",
                               "rlfactory_tool_servers.wire", "rlfactory_tool_servers.direct_lane")),
    ("rlfactory_tool_servers", ("rlfactory_tool_servers",)),
    ("rlfactory_reward_models", ("rlfactory_reward_models", "rlfactory_tool_servers.sql.sandbox",
                                 "rlfactory_tool_servers.travel.store", "rlfactory_tool_servers.travel.names",
                                 "rlfactory_tool_servers.connection_errors",
                                 "rlfactory_tool_servers.functions.callable_ref")),
])
def test_layers_import_only_downward(layer, may_import):
    wrong = {name: sorted(i for i in found if not i.startswith(may_import))
             for name, found in importers(layer).items()}
    assert not {name: found for name, found in wrong.items() if found}


AREA_ORDER = ("rlfactory_tool_servers", "rlfactory_reward_models", "rlfactory_envs", "rlfactory_adapters")
"""The areas from the bottom up: each imports only the ones below it (and itself), so a drawing of the folders
has no arrow running back up and no circle."""


@pytest.mark.parametrize("area", AREA_ORDER)
def test_areas_import_only_the_areas_below(area):
    above = AREA_ORDER[AREA_ORDER.index(area) + 1:]
    wrong = {name: sorted(i for i in found if i.startswith(above)) for name, found in importers(area).items()}
    assert not {name: found for name, found in wrong.items() if found}


def family_prefixes(family: str) -> tuple[str, ...]:
    """The import paths of a family's folders, one per area that has one."""
    return tuple(f"{package}.{family}" for package, area in AREAS.items() if (area / package / family).is_dir())


def is_in(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_imports_no_other_family(family):
    others = tuple(prefix for other in FAMILIES if other != family for prefix in family_prefixes(other))
    for prefix in family_prefixes(family):
        wrong = {name: sorted(i for i in found if is_in(i, others)) for name, found in importers(prefix).items()}
        assert not {name: found for name, found in wrong.items() if found}


@pytest.mark.parametrize("family", FAMILIES)
def test_nothing_outside_a_familys_folders_imports_them(family):
    """Adding a family edits nothing outside its folders: the registry, the CLI, the audit, the benchmarks and the
    adapters find it through its declaration (``family.py``), never by importing it."""
    own = family_prefixes(family)
    wrong = {name: sorted(i for i in found if is_in(i, own)) for name, found in importers("rlfactory").items()
             if not is_in(name, own)}
    assert not {name: found for name, found in wrong.items() if found}


def test_nothing_below_the_adapters_imports_them_or_a_trainer():
    for name, path in modules().items():
        if name.startswith("rlfactory_adapters"):
            continue
        found = imports(path)
        assert not {i for i in found if i.startswith(("rlfactory_adapters", "verl", "openrlhf", "vllm"))}, name


def test_no_installed_module_uses_the_folder_names_or_reads_shared_data():
    for name, path in modules().items():
        assert not {i.split(".")[0] for i in imports(path)} & FOLDER_NAMES, name
        text = path.read_text(encoding="utf-8")
        assert '"shared"' not in text and "../shared" not in text, name


def defined_functions(path: Path) -> set[str]:
    """The names of the functions ``path`` defines (at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_benchmarks_are_not_installed_and_every_family_measurement_lives_in_its_family():
    """``benchmarks/`` (the runner and the measurements of no family) is not installed; each measurement a family
    declares (``Family.benches``) is a function of an installed module of that family, and ``benchmarks/`` holds
    none of them, nor a module named after a family."""
    from rlfactory_envs.registry import FAMILIES

    installed, benchmarks = modules(), sorted((REPO_ROOT / "benchmarks").glob("*.py"))
    assert not any(path.is_relative_to(REPO_ROOT / "benchmarks") for path in installed.values())
    assert not [path.name for path in benchmarks if path.stem.split("_")[0] in FAMILIES]
    in_benchmarks = set().union(*map(defined_functions, benchmarks))
    for family in FAMILIES:
        for name, entry in family.benches.items():
            module, _, function = entry.function.partition(":")
            assert module.startswith(f"rlfactory_envs.{family.name}.") and module in installed, name
            assert function in defined_functions(installed[module]) and function not in in_benchmarks, name


def test_the_install_maps_no_folder_to_another_name():
    """Every package is found under its area folder by its own name: the build config has no renaming map."""
    config = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "package-dir" not in config and "package_dir" not in config
    assert not (REPO_ROOT / "setup.py").exists()
    for package, area in AREAS.items():
        assert (area / package / "__init__.py").is_file(), package
