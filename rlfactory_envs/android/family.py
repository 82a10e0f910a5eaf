"""The Android family: AndroidWorld's action space on simulated phones that run thousands to a process (the
``android`` tool server), tasks from parameterised templates, success checked on the phone's final state."""

from rlfactory_envs.kernel.families import BenchEntry, EnvEntry, Family

FAMILY = Family(
    name="android",
    environments={
        "rlf/Android-v0": EnvEntry("rlfactory_envs.android.env:AndroidEnv", {},
                                   "phone control: AndroidWorld's actions on a simulated phone, 46 task templates"),
    },
    semantics="rlfactory_envs.android.semantics:semantics_options",
    tooling="rlfactory_envs.android.tooling:AndroidTooling",
    benches={"android": BenchEntry("rlfactory_envs.android.bench:bench_android")},
)
"""The Android family (``rlf/Android-v0``)."""
