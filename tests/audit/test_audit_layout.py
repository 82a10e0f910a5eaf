"""Where the audit sits: above the kernel and beside the families. Nothing below it imports it (a family offers its
hacks through the kernel's contract), and it imports no family (it reaches them through ``ToolEnv`` hooks)."""

from __future__ import annotations

from tests.test_layout import FAMILIES, importers


def test_no_family_or_kernel_module_imports_the_audit():
    for layer in ("rlfactory_envs.kernel", *(f"rlfactory_envs.{family}" for family in FAMILIES)):
        wrong = {name: found for name, found in importers(layer).items()
                 if any(i.startswith("rlfactory_envs.audit") for i in found)}
        assert not wrong


def test_the_audit_imports_no_family():
    families = tuple(f"rlfactory_envs.{family}" for family in FAMILIES)
    wrong = {name: sorted(i for i in found if i.startswith(families))
             for name, found in importers("rlfactory_envs.audit").items()}
    assert not {name: found for name, found in wrong.items() if found}
