"""rlf/MCP-v0: a user's env from data (tools, dataset, reward), every setting and every bad config."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gymnasium as gym
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rlfactory_envs
from rlfactory_envs import ConfigError, make_env
from tests.generic import fixtures

ROWS = [
    {"id": "a", "question": "What is 6 times 7?", "ground_truth": "42", "level": "easy"},
    {"id": "b", "question": "What is 12 plus 30?", "ground_truth": "42", "level": "easy"},
    {"id": "c", "question": "What is 2 to the 10th?", "ground_truth": "1024", "level": "hard"},
]
LOOKUP = ["tests.generic.fixtures:lookup"]


def write_jsonl(path: Path, rows: list) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def data(tmp_path) -> str:
    return write_jsonl(tmp_path / "questions.jsonl", ROWS)


def make(**kwargs):
    return gym.make("rlf/MCP-v0", **kwargs).unwrapped


def call(name: str, **arguments) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


# -- an episode --------------------------------------------------------------------------------------------------

def test_an_episode_with_python_function_tools_and_a_module_reward(data):
    fixtures.SEEN.clear()
    env = make(tools=LOOKUP, data_path=data, reward="tests.generic.fixtures:numeric_reward", check_reward=False)
    try:
        obs, info = env.reset(options={"task_id": "c"})
        assert obs == "What is 2 to the 10th?" and info["dataset"] == "questions"
        assert info["messages"][0]["role"] == "system" and "<answer>" in info["messages"][0]["content"]
        assert [tool["function"]["name"] for tool in info["tools"]] == ["lookup"]
        assert info["tools"][0]["function"]["description"] == "The temperature of a city (a fixed table)."
        obs, reward, terminated, truncated, info = env.step(call("lookup", city="Oslo"))
        assert "-3 degrees celsius" in obs and reward == 0.0 and not (terminated or truncated)
        obs, reward, terminated, truncated, info = env.step(call("lookup", city="Rome"))
        assert info["tool_results"][0]["is_error"] and "no data for 'Rome'" in obs
        obs, reward, terminated, truncated, info = env.step("<answer> 1024 </answer>")
        assert (obs, reward, terminated, truncated) == ("", 1.0, True, False)
    finally:
        env.close()
    seen = fixtures.SEEN[-1]
    assert seen["answer"] == "1024" and seen["ground_truth"] == "1024" and seen["level"] == "hard"
    assert seen["task"]["id"] == "c" and seen["response"] == "<answer> 1024 </answer>"
    assert [r["name"] for r in seen["tool_results"]] == ["lookup", "lookup"]
    assert seen["tool_results"][0]["arguments"] == {"city": "Oslo"}
    assert [m["role"] for m in seen["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                                     "assistant"]


def test_local_functions_are_tools_too(data):
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    async def count(text: str) -> int:
        """Count the characters."""
        return len(text)

    env = make(tools=[shout, count, fixtures.lookup], data_path=data, check_reward=False)
    try:
        env.reset(seed=0)
        assert {spec.name for spec in env.tool_specs} == {"shout", "count", "lookup"}
        obs, *_ = env.step(call("shout", text="hi") + call("count", text="four") + call("lookup", city="lima"))
        assert "HI" in obs and "\n4\n" in obs and "19 degrees" in obs
    finally:
        env.close()


def test_no_answer_reaches_the_reward_as_none(data):
    fixtures.SEEN.clear()
    env = make(tools=LOOKUP, data_path=data, reward="tests.generic.fixtures:numeric_reward", max_turns=2,
               check_reward=False)
    try:
        env.reset(seed=1)
        env.step("thinking")
        _, reward, terminated, truncated, info = env.step("still thinking")
        assert truncated and not terminated and reward == 0.0 and info["answer"] is None
        assert fixtures.SEEN[-1]["answer"] is None
    finally:
        env.close()


def test_the_embedded_sample_needs_nothing():
    env = make()
    try:
        obs, info = env.reset(seed=0)
        assert info["dataset"] == "rlf-mcp-sample" and "pencils" in obs or "kilometres" in obs or "books" in obs \
            or "eggs" in obs
        gold = info["task"]["ground_truth"]
        obs, *_ = env.step(call("calculate", expression="2 * 21"))
        assert "\n42\n" in obs
        _, reward, terminated, *_ = env.step(f"<answer>{gold}</answer>")
        assert terminated and reward == 1.0
    finally:
        env.close()


# -- rewards -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("reward", "answer", "value"), [
    ("exact_match", "42", 1.0), ("exact_match", "forty-two", 0.0), ("f1", "it is 42", 0.5),
    ("contains", "the answer is 42", 1.0), ("tests.generic.fixtures:numeric_reward", "42.0", 1.0),
])
def test_built_in_and_module_rewards(data, reward, answer, value):
    env = make(tools=LOOKUP, data_path=data, reward=reward)
    try:
        env.reset(options={"task_id": "a"})
        assert env.step(f"<answer>{answer}</answer>")[1] == pytest.approx(value)
    finally:
        env.close()


def test_a_dict_reward_gives_named_parts_and_an_async_reward_is_awaited(data):
    env = make(tools=LOOKUP, data_path=data, reward="tests.generic.fixtures:async_parts_reward")
    try:
        env.reset(options={"task_id": "a"})
        env.step(call("lookup", city="oslo"))
        _, reward, _, _, info = env.step("<answer>42</answer>")
        assert reward == 1.0 and info["reward_parts"] == {"tool_calls": 1.0}
    finally:
        env.close()


@pytest.mark.parametrize(("reward", "reason"), [
    ("tests.generic.fixtures:raises_on_wrong_reward", "raised RuntimeError: cannot score 'wrong'"),
    ("tests.generic.fixtures:text_reward", "returned a str as its score"),
    ("tests.generic.fixtures:wide_reward", "outside reward_range [0, 1]"),
])
def test_a_failing_reward_scores_the_low_end_with_the_reason(data, reward, reason):
    env = make(tools=LOOKUP, data_path=data, reward=reward, check_reward=False)
    try:
        env.reset(options={"task_id": "a"})
        _, value, terminated, _, info = env.step("<answer>wrong</answer>")
        assert terminated and value == 0.0 and reason in info["reward_reason"]
    finally:
        env.close()


def test_a_slow_reward_is_cut_by_its_deadline(data):
    env = make(tools=LOOKUP, data_path=data, reward="tests.generic.fixtures:slow_reward", reward_timeout_s=0.2,
               check_reward=False)
    try:
        env.reset(options={"task_id": "a"})
        _, value, _, _, info = env.step("<answer>42</answer>")
        assert value == 0.0 and "no score within reward_timeout_s=0.2" in info["reward_reason"]
    finally:
        env.close()


def test_a_declared_reward_range_is_kept(data):
    env = make(tools=LOOKUP, data_path=data, reward="tests.generic.fixtures:wide_reward", reward_range=[0, 10])
    try:
        assert env.reward_range == (0.0, 10.0)
        env.reset(seed=0)
        assert env.step("<answer>x</answer>")[1] == 5.0
    finally:
        env.close()


def test_a_reward_function_object(data):
    env = make(tools=LOOKUP, data_path=data, reward=lambda answer, ground_truth: answer == "42")
    try:
        env.reset(options={"task_id": "b"})
        assert env.step("<answer>42</answer>")[1] == 1.0
    finally:
        env.close()


# -- data layouts ------------------------------------------------------------------------------------------------

def test_prompt_rows_text_and_messages_positions_and_context(tmp_path):
    data = write_jsonl(tmp_path / "mixed.jsonl", [
        {"prompt": "Say hi.", "ground_truth": "hi"},
        {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say bye."}],
         "answer": ["bye", "goodbye"], "source": "x"},
    ])
    env = make(tools=LOOKUP, data_path=data)
    try:
        obs, info = env.reset(options={"task_id": "0"})
        assert obs == "Say hi." and info["messages"] == [{"role": "user", "content": "Say hi."}]
        obs, info = env.reset(options={"task_id": 1})
        assert info["messages"][0] == {"role": "system", "content": "Be brief."} and obs == "Say bye."
        assert info["task"]["ground_truth"] == ["bye", "goodbye"] and info["task"]["source"] == "x"
        assert env.step("<answer>goodbye</answer>")[1] == 1.0
    finally:
        env.close()


def test_system_prompt_and_prompt_template(data):
    env = make(tools=LOOKUP, data_path=data, system_prompt="You are a calculator.",
               prompt_template="[{level}] Question: {question}")
    try:
        obs, info = env.reset(options={"task_id": "c"})
        assert obs == "[hard] Question: What is 2 to the 10th?"
        assert info["messages"][0] == {"role": "system", "content": "You are a calculator."}
    finally:
        env.close()


def test_verl_and_search_r1_parquet_layouts(tmp_path):
    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist([
        {"data_source": "nq", "prompt": [{"role": "user", "content": "Question: who wrote Hamlet?\n"}],
         "ability": "fact-reasoning", "reward_model": {"style": "rule", "ground_truth": {"target": ["Shakespeare"]}},
         "extra_info": {"split": "train", "index": 0}},
    ]), path)
    env = make(tools=LOOKUP, data_path=str(path))
    try:
        obs, info = env.reset(seed=0)
        assert obs == "Question: who wrote Hamlet?\n" and info["task"]["ground_truth"] == {"target": ["Shakespeare"]}
        assert info["task"]["data_source"] == "nq" and "reward_model" not in info["task"]
        assert env.step("<answer>shakespeare</answer>")[1] == 1.0
    finally:
        env.close()


def test_pinned_rows_round_trip(data):
    env = make(tools=LOOKUP, data_path=data)
    try:
        _, first = env.reset(options={"task_id": "b"})
        _, again = env.reset(options={"task": first["task"]})
        assert again["messages"] == first["messages"] and again["task"] == first["task"]
        obs, _ = env.reset(options={"task": {"question": "Given in full?", "ground_truth": "yes"}})
        assert obs == "Given in full?"
        with pytest.raises(ValueError, match="no 'question'"):
            env.reset(options={"task": {"ground_truth": "x"}})
    finally:
        env.close()


# -- tools: filters, bound arguments, pydata, qwen-agent ---------------------------------------------------------

def test_tool_filters_hide_and_refuse(data):
    tools = LOOKUP + ["tests.generic.fixtures:account_balance"]
    env = make(tools=tools, data_path=data, tools_denied=["account_balance"])
    try:
        env.reset(seed=0)
        assert [spec.name for spec in env.tool_specs] == ["lookup"]
        obs, _, _, _, info = env.step(call("account_balance", account="x", currency="EUR") + call("lookup", city="lima"))
        assert info["tool_results"][0]["is_error"] and "unknown tool 'account_balance'" in obs
        assert "Available tools: lookup." in obs and "19 degrees" in obs
    finally:
        env.close()
    env = make(tools=tools, data_path=data, tools_allowed=["account_balance"], bound_arguments={"account": "id"})
    try:
        env.reset(seed=0)
        assert [spec.name for spec in env.tool_specs] == ["account_balance"]
    finally:
        env.close()


def test_bound_arguments_come_from_the_task_and_are_hidden(data):
    env = make(tools=["tests.generic.fixtures:account_balance"], data_path=data, bound_arguments={"account": "level"})
    try:
        _, info = env.reset(options={"task_id": "c"})
        assert list(info["tools"][0]["function"]["parameters"]["properties"]) == ["currency"]
        obs, *_ = env.step(call("account_balance", account="someone-else", currency="EUR"))
        assert "hard: 100 EUR" in obs
    finally:
        env.close()


def test_rl_factory_pydata_is_read_as_it_is(tmp_path, data):
    pydata = tmp_path / "mcp_tools.pydata"
    pydata.write_text(repr([
        {"mcpServers": {"weather": {"command": "python", "args": ["-m", "rlfactory_tool_servers.functions",
                                                                  "tests.generic.fixtures:lookup"],
                                    "cwd": str(Path(__file__).resolve().parents[2])}}},
    ]), encoding="utf-8")
    env = make(tool_servers=str(pydata), data_path=data)
    try:
        env.reset(seed=0)
        obs, *_ = env.step(call("lookup", city="oslo", unit="fahrenheit"))
        assert "26.6 degrees fahrenheit" in obs
    finally:
        env.close()


def test_qwen_agent_tools_go_through_the_same_toolbox(tmp_path, data):
    pytest.importorskip("qwen_agent", reason="qwen-agent is not installed (pip install 'rlfactory-envs[qwen-agent]')")
    pydata = tmp_path / "mcp_tools.pydata"
    import tests.tool_servers.qwen_tools_fixtures  # noqa: F401 - registers fixture_repeat with qwen-agent

    pydata.write_text(repr(["fixture_repeat"]), encoding="utf-8")
    for source in ({"qwen_agent_tools": ["tests.tool_servers.qwen_tools_fixtures:RepeatTool"]},
                   {"qwen_agent_tools": [{"name": "fixture_repeat", "separator": "-"}]},
                   {"tool_servers": str(pydata)}):
        env = make(data_path=data, **source)
        try:
            env.reset(seed=0)
            assert [spec.name for spec in env.tool_specs] == ["fixture_repeat"]
            obs, _, _, _, info = env.step(call("fixture_repeat", text="ab", times=3))
            assert not info["tool_results"][0]["is_error"]
            assert ("ab-ab-ab" if "qwen_agent_tools" in source and isinstance(source["qwen_agent_tools"][0], dict)
                    else "ab ab ab") in obs
        finally:
            env.close()


# -- bad configs fail at make, in one line -----------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tool_servers": {"mcpServers": {"calc": {"command": "no-such-command-xyz"}}}},
     "command 'no-such-command-xyz' not found"),
    ({"tool_servers": {"mcpServers": {"calc": {"command": sys.executable,
                                               "args": ["-c", "import sys; print('bad config', file=sys.stderr); "
                                                              "sys.exit(3)"]}}}},
     "exited with code 3"),
    ({"tools": LOOKUP, "reward": "no_such_module_xyz:score"}, "cannot import module 'no_such_module_xyz'"),
    ({"tools": LOOKUP, "reward": "tests.generic.fixtures:no_such_function"}, "has no attribute 'no_such_function'"),
    ({"tools": LOOKUP, "reward": "tests.generic.fixtures:not_a_function"}, "is not a function"),
    ({"tools": LOOKUP, "reward": "exactmatch"}, "unknown reward 'exactmatch'"),
    ({"tools": LOOKUP, "reward": "tests.generic.fixtures:text_reward"}, "returned a str as its score"),
    ({"tools": LOOKUP, "reward": "tests.generic.fixtures:raising_reward"}, "raised TypeError: object of type 'NoneType' has no len"),
    ({"tools": LOOKUP, "reward": "tests.generic.fixtures:wide_reward"}, "outside reward_range"),
    ({"tools": ["tests.generic.fixtures:nope"]}, "has no attribute 'nope'"),
    ({"tools": LOOKUP, "tools_allowed": ["lookup", "search"]}, "tools_allowed names tools no server offers: search"),
    ({"tools": LOOKUP, "bound_arguments": {"city": "no_column"}}, "has no column 'no_column'"),
    ({"tools": LOOKUP, "bound_arguments": {"db_id": "level"}}, "no tool takes an argument 'db_id'"),
    ({"tools": LOOKUP, "prompt_template": "{question} ({difficulty})"}, "prompt_template"),
    ({"tools": LOOKUP, "reward_range": [1, 0]}, "low < high"),
    ({"tool_servers": "does/not/exist.json"}, "no such file"),
])
def test_bad_config_fails_at_make_naming_the_problem(data, kwargs, message):
    with pytest.raises(ConfigError, match=message) as raised:
        make(data_path=data, **kwargs)
    assert "\n" not in str(raised.value).split("last lines of its stderr")[0]


@pytest.mark.parametrize(("rows", "message"), [
    ([{"ground_truth": "1"}], r"line 1: the row has no 'question'"),
    ([{"question": "q"}, {"prompt": [{"role": "assistant", "content": "x"}]}], r"line 2: .*end with the user"),
    ([{"id": 1, "question": "q"}, {"id": 1, "question": "r"}], "repeats"),
])
def test_bad_rows_name_file_and_line(tmp_path, rows, message):
    data = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ValueError, match=message):
        make(tools=LOOKUP, data_path=data)


def test_a_missing_data_file_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        make(tools=LOOKUP, data_path=str(tmp_path / "missing.jsonl"))


# -- env spec files ----------------------------------------------------------------------------------------------

def test_an_env_spec_file_is_made_like_an_id(tmp_path):
    (tmp_path / "data").mkdir()
    write_jsonl(tmp_path / "data" / "q.jsonl", ROWS)
    (tmp_path / "my_reward.py").write_text("def score(answer, ground_truth):\n    return answer == ground_truth\n")
    (tmp_path / "env.yaml").write_text(
        "tools: ['tests.generic.fixtures:lookup']\ndata_path: data/q.jsonl\nreward: my_reward:score\nmax_turns: 3\n")
    env = make_env(tmp_path / "env.yaml", max_turns=2)
    try:
        assert env.max_turns == 2 and env.tasks.path == str(tmp_path / "data" / "q.jsonl")
        env.reset(options={"task_id": "a"})
        assert env.step("<answer>42</answer>")[1] == 1.0
    finally:
        env.close()
    spec = rlfactory_envs.load_spec(tmp_path / "env.yaml")
    assert spec.env_id == "rlf/MCP-v0" and str(tmp_path) in spec.kwargs["python_path"]


def test_a_json_spec_for_a_built_in_family(tmp_path):
    (tmp_path / "sql.json").write_text(json.dumps({"env": "rlf/NL2SQL-Spider-v0", "max_turns": 2}))
    env = make_env(str(tmp_path / "sql.json"))
    try:
        assert type(env).__name__ == "SqlEnv" and env.max_turns == 2
    finally:
        env.close()


@pytest.mark.parametrize(("text", "message"), [
    ("tools: [x\n", "not valid YAML"),
    ("- a list\n", "expected an object of env settings"),
    ("env: rlf/Nope-v0\n", "'env' must be a registered id"),
    ("tools: ['tests.generic.fixtures:lookup']\nmax_turnz: 3\n", "unknown setting 'max_turnz' for rlf/MCP-v0"),
])
def test_bad_spec_files(tmp_path, text, message):
    (tmp_path / "env.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        make_env(tmp_path / "env.yaml")


def test_rlf_takes_an_env_spec(tmp_path):
    import subprocess

    spec = str(Path(__file__).resolve().parents[2] / "examples" / "custom_env" / "env.yaml")
    rlf = [sys.executable, "-m", "rlfactory_envs.cli"]
    listed = subprocess.run([*rlf, "list", spec], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "rlf/MCP-v0" in listed.stdout and "questions.jsonl" in listed.stdout
    scripted = subprocess.run([*rlf, "rollout", spec, "-n", "2"], capture_output=True, text=True, timeout=120)
    assert scripted.returncode == 2 and "has no scripted baseline policy" in scripted.stderr
    assert "Traceback" not in scripted.stderr
    (tmp_path / "bad.yaml").write_text("tools: ['tests.generic.fixtures:lookup']\nreward: nope:nope\n")
    bad = subprocess.run([*rlf, "rollout", str(tmp_path / "bad.yaml"), "--policy", "openai", "--model", "m"],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1].startswith("rlf rollout: error: reward 'nope:nope': cannot import")
