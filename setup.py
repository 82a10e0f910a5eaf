"""Install the user's top-level folders under import names that cannot collide with other PyPI packages
(``adapters`` is AdapterHub's): each folder maps to an ``rlfactory_*`` package, subpackages found on their own, so
a new family or tool server folder needs no edit here. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

FOLDERS = {
    "rlfactory_envs": "rlfactory_envs",
    "rlfactory_tool_servers": "tool_servers",
    "rlfactory_reward_models": "reward_models",
    "rlfactory_adapters": "adapters",
}

packages = [f"{name}.{sub}" if sub else name
            for name, folder in FOLDERS.items() for sub in ["", *find_packages(folder)]]
setup(packages=packages, package_dir=FOLDERS,
      package_data={name: ["**/data/**/*", "**/*.yaml", "data/**/*", "*.yaml"] for name in FOLDERS})
