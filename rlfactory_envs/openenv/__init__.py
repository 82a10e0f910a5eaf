"""The OpenEnv family: ``rlf/OpenEnv-v0``, any running OpenEnv server played as an rlf env."""
