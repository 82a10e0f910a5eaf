"""The OpenEnv family: ``rlf/OpenEnv-v0``, any running OpenEnv server (openenv-core 0.3's API) played as an rlf env,
so ``rlf rollout``, the property tests and the verl/OpenRLHF adapters work on environments written for OpenEnv."""

from rlfactory_envs.kernel.families import EnvEntry, Family

FAMILY = Family(
    name="openenv",
    environments={
        "rlf/OpenEnv-v0": EnvEntry("rlfactory_envs.openenv.env:OpenEnvEnv", {},
                                   "any running OpenEnv server (base_url=...), the model's text as its action"),
    },
    env_vars={"base_url": "RLF_OPENENV_URL"},
)
