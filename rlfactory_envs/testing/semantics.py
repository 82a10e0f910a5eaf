"""``EnvSemantics``: the properties run on the env its options name, behind ``check_env_semantics`` and
``semantics_test_class``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlfactory_envs.testing.env_ref import EnvRef
from rlfactory_envs.testing.options import SemanticsOptions
from rlfactory_envs.testing.properties import PROPERTIES


@dataclass(frozen=True)
class EnvSemantics(SemanticsOptions):
    """The env-semantics properties, configured for one env (the fields are ``SemanticsOptions``')."""

    def check(self, name: str) -> None:
        """Run the property ``name`` (a key of ``PROPERTIES``); ``AssertionError`` when the env breaks it."""
        try:
            prop = PROPERTIES[name]
        except KeyError:
            raise ValueError(f"unknown property {name!r}; the properties are {', '.join(PROPERTIES)}") from None
        prop(self)

    def check_all(self) -> None:
        """Run every property in turn; the first that fails raises its ``AssertionError``."""
        for name in PROPERTIES:
            self.check(name)

    def test_class(self, name: str = "TestEnvSemantics") -> type:
        """A pytest class named ``name`` with one ``test_<property>`` method per property."""
        namespace: dict[str, Any] = {
            "__doc__": f"The env-semantics properties of {self.name}.",
            "semantics": self,
        }
        for prop_name, prop in PROPERTIES.items():
            namespace[f"test_{prop_name}"] = _test_method(prop_name, prop)
        return type(name, (), namespace)


def _test_method(prop_name: str, prop: Callable[[SemanticsOptions], None]) -> Callable[[Any], None]:
    def test(self: Any) -> None:
        prop(self.semantics)

    test.__name__ = test.__qualname__ = f"test_{prop_name}"
    test.__doc__ = prop.__doc__
    return test


def check_env_semantics(env: EnvRef, **options: Any) -> None:
    """Check every env-semantics property of ``env``; ``options`` are ``EnvSemantics``' other fields.
    ``AssertionError`` (with hypothesis' falsifying example) names the first property the env breaks. Call it from
    synchronous code: the batch property runs event loops of its own (``asyncio.run``)."""
    EnvSemantics(env, **options).check_all()


def semantics_test_class(env: EnvRef, *, name: str = "TestEnvSemantics", **options: Any) -> type:
    """A pytest class whose ``test_*`` methods are the env-semantics properties of ``env``, one each, so failures
    are reported apart; ``options`` are ``EnvSemantics``' other fields. Assign it to a name starting with
    ``Test`` in a test module."""
    return EnvSemantics(env, **options).test_class(name)
