"""Every registered id is a Gymnasium env as made with no settings (its embedded sample), and the registry is the
families' own declarations."""

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rlfactory_envs
from rlfactory_envs.env_spec import env_class
from rlfactory_envs.registry import FAMILIES


@pytest.mark.parametrize("env_id", list(rlfactory_envs.ENVIRONMENTS))
def test_every_registered_id_passes_check_env(env_id):
    env = gym.make(env_id)
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_the_ids_are_the_families_declarations():
    declared = [env_id for family in FAMILIES for env_id in family.environments]
    assert declared == list(rlfactory_envs.ENVIRONMENTS) and len(set(declared)) == len(declared)
    assert {family.name for family in FAMILIES} >= {"search", "sql", "generic"}
    assert all(env_id in gym.registry for env_id in declared)


@pytest.mark.parametrize("env_id", list(rlfactory_envs.ENVIRONMENTS))
def test_every_setting_name_is_declared_once(env_id):
    """A flat name in two places (a family field and a group, or two groups) would leave one of them unreachable."""
    settings_model = env_class(env_id).settings_model
    places = [settings_model.own_fields()] + [list(settings_model.group_model(group).model_fields)
                                               for group in settings_model.GROUPS]
    names = [name for place in places for name in place]
    assert sorted(name for name in set(names) if names.count(name) > 1) == []
