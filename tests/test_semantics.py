"""The env-semantics properties (``rlfactory_envs.testing``) on every registered id, one test per id and property,
with the options each family declares (``Family.semantics``: its own actions, its reward rules). A new family is
checked here without a test of its own."""

from __future__ import annotations

import pytest

from rlfactory_envs.registry import FAMILIES
from rlfactory_envs.testing import PROPERTIES, EnvSemantics

CASES = [(env_id, family) for family in FAMILIES for env_id in family.environments]


@pytest.fixture(scope="module", params=CASES, ids=[env_id for env_id, _ in CASES])
def semantics(request) -> EnvSemantics:
    env_id, family = request.param
    return EnvSemantics(env_id, **family.semantics_options(env_id))


@pytest.mark.parametrize("prop", list(PROPERTIES))
def test_every_registered_env_keeps_the_semantics(semantics, prop):
    semantics.check(prop)


def test_every_family_is_checked():
    assert {family.name for _, family in CASES} >= {"search", "sql", "travel", "android", "generic"}
    assert len(CASES) == sum(len(family.environments) for family in FAMILIES)
