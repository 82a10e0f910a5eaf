"""Env settings are checked against the env's parameter types wherever an env is made from an id or a spec (the
``rlf`` command, the data preparation, the adapters): plain values are converted as pydantic does, a value its
type refuses is a one-line ``ConfigError`` naming the setting, and other types are left to the env."""

from pathlib import Path

import gymnasium as gym
import pytest

import rlfactory_envs  # noqa: F401 - registers the ids
from rlfactory_envs.env_spec import resolve, setting_from_text, setting_types
from rlfactory_envs.kernel.errors import ConfigError


def test_the_settings_of_an_env_carry_their_types_up_to_tool_env():
    types = setting_types("rlf/Search-NQ-v0")
    assert types["max_turns"] is int and types["max_tool_response_chars"] is int  # SearchEnv's, then ToolEnv's
    assert str(types["max_episode_seconds"]) in ("float | None", "typing.Optional[float]")


@pytest.mark.parametrize("key, value, expected", [
    ("max_turns", "6", 6), ("max_turns", 6.0, 6), ("format_score", 1, 1.0), ("enable_thinking", "false", False),
    ("data_path", Path("/data/nq.jsonl"), "/data/nq.jsonl"), ("max_episode_seconds", None, None),
    ("chat_format", "search_r1", "search_r1"),
])
def test_plain_values_are_converted_to_the_setting_type(key, value, expected):
    converted = resolve("rlf/Search-NQ-v0", {key: value}).kwargs[key]
    assert converted == expected and type(converted) is type(expected)


@pytest.mark.parametrize("key, value, message", [
    ("max_turns", "abc", "rlf/Search-NQ-v0: max_turns='abc' is not int: Input should be a valid integer"),
    ("max_turns", 2.5, "rlf/Search-NQ-v0: max_turns=2.5 is not int"),
    ("chat_format", 3, "rlf/Search-NQ-v0: chat_format=3 is not str"),  # a name it does not know: test_cli_errors
    ("enable_thinking", "maybe", "rlf/Search-NQ-v0: enable_thinking='maybe' is not bool"),
])
def test_a_value_the_type_refuses_names_the_setting(key, value, message):
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        resolve("rlf/Search-NQ-v0", {key: value})


def test_settings_of_other_types_are_left_to_the_env_once_their_shape_is_right():
    servers = {"mcpServers": {"search": {"url": "http://127.0.0.1:8000/mcp"}}}
    assert resolve("rlf/Search-NQ-v0", {"tool_servers": servers}).kwargs["tool_servers"] is servers
    assert resolve("rlf/Search-NQ-v0", {"tools_denied": ("search",)}).kwargs["tools_denied"] == ("search",)


@pytest.mark.parametrize("env_id, key, value, message", [
    ("rlf/Search-NQ-v0", "tools_allowed", 5, "tools_allowed=5 is not Sequence[str] | None: got int"),
    ("rlf/Search-NQ-v0", "tools_denied", "search", "tools_denied='search' is not Sequence[str]: got str"),
    ("rlf/Android-v0", "templates", 5, "templates=5 is not Sequence[str] | None: got int"),
    ("rlf/MCP-v0", "reward_range", 3, "reward_range=3 is not Sequence[float]: got int"),
])
def test_python_keyword_arguments_of_other_types_are_checked_too(env_id, key, value, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]").replace("|", r"\|")):
        gym.make(env_id, **{key: value})


@pytest.mark.parametrize("key, text, expected", [
    ("max_turns", "6", 6), ("data_path", "2024", "2024"), ("data_path", "null", None),
    ("enable_thinking", "true", True), ("server_args", '["--max-topk", "5"]', ["--max-topk", "5"]),
    ("max_turns", "abc", "abc"),  # refused later by resolve, with the setting named
])
def test_a_set_text_is_read_as_the_setting_types_it(key, text, expected):
    assert setting_from_text("rlf/Search-NQ-v0", key, text) == expected
