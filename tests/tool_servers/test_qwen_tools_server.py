"""The qwen-agent tool server: real qwen-agent tools (tests/tool_servers/qwen_tools_fixtures.py and qwen-agent's
built-in ``storage``) served over MCP and called through the toolbox, in-process and as a stdio subprocess; bad
command lines; and qwen-agent's ``code_interpreter`` where it can run."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("qwen_agent", reason="qwen-agent is not installed (pip install -e '.[qwen-agent]')")

from rlfactory_envs.kernel.mcp.toolbox import Toolbox  # noqa: E402
from rlfactory_envs.kernel.tool_call import ToolCall  # noqa: E402
from rlfactory_tool_servers.qwen_tools import build_server  # noqa: E402
from rlfactory_tool_servers.qwen_tools.formatting import cap_text, tool_result_text  # noqa: E402
from rlfactory_tool_servers.qwen_tools.schema import ParametersError, input_schema  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402

FIXTURES = "tests.tool_servers.qwen_tools_fixtures"
REPEAT, IMAGE, STATS, FAIL, SLEEP = (f"{FIXTURES}:{name}" for name in
                                     ("RepeatTool", "DescribeImageTool", "StatsTool", "FailingTool", "SleepTool"))
MODULE = "rlfactory_tool_servers.qwen_tools"


def inprocess(*args: str) -> dict:
    return {"mcpServers": {"qwen": {"module": MODULE, "args": list(args)}}}


def call(name: str, call_id: int = 0, **arguments) -> ToolCall:
    return ToolCall(name, arguments, call_id)


def test_tools_are_listed_with_their_own_name_description_and_schema():
    with Toolbox(inprocess(REPEAT, IMAGE)) as toolbox:
        specs = {spec.name: spec for spec in toolbox.specs}
    assert set(specs) == {"fixture_repeat", "fixture_describe_image"}  # no batched forms
    repeat = specs["fixture_repeat"]
    assert repeat.description == "Repeat a text a number of times, separated by spaces."
    assert repeat.input_schema == {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "the text to repeat"},
                       "times": {"type": "integer", "description": "how many times (default 2)", "minimum": 1}},
        "required": ["text"],
    }
    assert specs["fixture_describe_image"].input_schema == {  # converted from the old list form
        "type": "object",
        "properties": {"url": {"type": "string", "description": "the image URL"},
                       "detail": {"type": "string", "description": "how much detail", "enum": ["low", "high"]}},
        "required": ["url"],
    }


def test_calls_return_the_tools_text():
    with Toolbox(inprocess(REPEAT, IMAGE, STATS, "--tool-config", '{"fixture_repeat": {"separator": "-"}}')) as toolbox:
        repeated, described, stats = toolbox.call_many([
            call("fixture_repeat", 0, text="ab", times=3),
            call("fixture_describe_image", 1, url="https://example.org/red.png"),
            call("fixture_stats", 2, text="two words"),
        ])
    assert [r.is_error for r in (repeated, described, stats)] == [False, False, False]
    assert repeated.text == "ab-ab-ab"  # the tool's cfg came from --tool-config
    assert described.text == ("An image at https://example.org/red.png (low detail):\n[image content omitted]\n"
                              "a red square.")
    assert json.loads(stats.text) == {"words": 2, "chars": 9}


def test_failures_are_error_results_that_name_the_tool_and_the_error():
    with Toolbox(inprocess(REPEAT, FAIL)) as toolbox:
        failed, missing, out_of_range = toolbox.call_many([
            call("fixture_fail", 0, reason="disk on fire"),
            call("fixture_repeat", 1),
            call("fixture_repeat", 2, text="x", times=0),
        ])
    assert failed.is_error and failed.text == ("Error executing tool fixture_fail: RuntimeError: broken on purpose: "
                                               "disk on fire")
    assert "Traceback" not in failed.text
    assert missing.is_error and missing.text == ("Error executing tool fixture_repeat: invalid arguments: 'text' is "
                                                 "a required property")
    assert out_of_range.is_error
    assert out_of_range.text.endswith("invalid arguments at $.times: 0 is less than the minimum of 1")


@pytest.mark.alone
def test_a_slow_tool_runs_in_a_thread_and_times_out_as_an_error():
    with Toolbox(inprocess(REPEAT, SLEEP, "--timeout-s", "3")) as toolbox:
        started = time.perf_counter()
        slow, slower, quick = toolbox.call_many([call("fixture_sleep", 0, seconds=1.0), call("fixture_sleep", 1,
                                                 seconds=1.0), call("fixture_repeat", 2, text="hi")])
        elapsed = time.perf_counter() - started
        assert (slow.text, slower.text, quick.text) == ("slept 1.0 s", "slept 1.0 s", "hi hi")
        assert quick.latency_s < 0.5 and elapsed < 1.9  # the sleeps ran side by side, without blocking the server
    with Toolbox(inprocess(SLEEP, "--timeout-s", "0.3")) as toolbox:
        [late] = toolbox.call_many([call("fixture_sleep", seconds=1.5)])
    assert late.is_error and late.latency_s < 1.2
    assert late.text == ("Error executing tool fixture_sleep: no answer within 0.3 s (--timeout-s); the call was "
                         "abandoned")


def test_long_results_are_cut_with_a_note():
    with Toolbox(inprocess(REPEAT, "--max-result-chars", "20")) as toolbox:
        [long] = toolbox.call_many([call("fixture_repeat", text="abcde", times=10)])
    assert not long.is_error
    assert long.text == "abcde abcde abcde ab\n[result cut: showing the first 20 of 59 characters]"


def test_a_built_in_tool_by_its_registered_name(tmp_path):
    config = json.dumps({"storage": {"storage_root_path": str(tmp_path)}})
    with Toolbox(inprocess("storage", "--tool-config", config)) as toolbox:
        [spec] = toolbox.specs
        [saved] = toolbox.call_many([call("storage", operate="put", key="/notes/a", value="hello")])
        read, absent = toolbox.call_many([call("storage", 0, operate="get", key="/notes/a"),
                                          call("storage", 1, operate="get", key="/notes/b")])
    assert spec.input_schema["required"] == ["operate"]
    assert (saved.text, read.text) == ("Successfully saved notes/a.", "hello")
    assert (tmp_path / "notes" / "a").read_text() == "hello"
    assert absent.is_error and absent.text == ("Error executing tool storage: KeyNotExistsError: Get Failed: notes/b "
                                               "does not exist")


@pytest.mark.integration
def test_over_stdio_subprocess():
    entry = {"command": sys.executable, "args": ["-m", MODULE, REPEAT, FAIL, "--timeout-s", "5"],
             "cwd": str(REPO_ROOT)}
    with Toolbox({"mcpServers": {"qwen": entry}}) as toolbox:
        names = [spec.name for spec in toolbox.specs]
        repeated, failed = toolbox.call_many([call("fixture_repeat", 0, text="yo", times=2),
                                              call("fixture_fail", 1, reason="subprocess")])
    assert names == ["fixture_repeat", "fixture_fail"]
    assert (repeated.is_error, repeated.text) == (False, "yo yo")
    assert failed.is_error and failed.text.endswith("RuntimeError: broken on purpose: subprocess")


@pytest.mark.parametrize("argv,message", [
    (["no_such_tool"], "unknown qwen-agent tool 'no_such_tool' (registered: "),
    (["no_such_package.tools:Tool"], "cannot import module 'no_such_package.tools' for tool "
                                     "'no_such_package.tools:Tool' (ModuleNotFoundError: No module named "
                                     "'no_such_package'); make it importable"),
    ([f"{FIXTURES}:Missing"], f"module '{FIXTURES}' has no 'Missing'"),
    ([f"{FIXTURES}:NotATool"], "is class NotATool, not a subclass of qwen_agent.tools.base.BaseTool"),
    ([REPEAT, REPEAT], "tool 'fixture_repeat' is named twice"),
    ([f"{FIXTURES}:KeyedTool"], "cannot create qwen-agent tool 'fixture_keyed' (ValueError: fixture_keyed needs "
                                "cfg['api_key']); check what the tool needs installed or running, and its "
                                "--tool-config entry"),
    ([REPEAT, "--tool-config", '{"fixture_repaet": {}}'], "--tool-config names 'fixture_repaet', which the server "
                                                          "does not serve (it serves 'fixture_repeat')"),
    ([REPEAT, "--tool-config", "[1]"], "--tool-config must be a JSON object"),
    ([REPEAT, "--timeout-s", "0"], "--timeout-s must be positive"),
])
def test_bad_arguments_exit_with_one_clear_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        build_server(argv)
    assert exited.value.code == 2
    stderr = capsys.readouterr().err
    error_lines = [line for line in stderr.splitlines() if ": error: " in line]
    assert len(error_lines) == 1 and message in error_lines[0] and "Traceback" not in stderr


def test_parameters_conversion_and_rejection():
    assert input_schema([]) == {"type": "object", "properties": {}}
    assert input_schema([{"name": "q", "type": "string", "required": False}]) == {
        "type": "object", "properties": {"q": {"type": "string"}}}
    for bad, problem in [([{"type": "string"}], "has no name"), ([{"name": "a"}, {"name": "a"}], "declared twice"),
                         ({"type": "array"}, '"type": "object"'), ("text", "not str"),
                         ({"type": "object", "properties": {"a": {"type": "strin"}}}, "not a valid JSON schema")]:
        with pytest.raises(ParametersError, match=problem):
            input_schema(bad)


def test_result_text_forms():
    assert tool_result_text("plain") == "plain"
    assert tool_result_text([{"text": "a"}, {"file": "/tmp/x.pdf"}, {"audio": "a.wav"}]) == (
        "a\n[file content omitted]\n[audio content omitted]")
    assert tool_result_text([{"text": "a", "image": "b"}]) == '[{"text": "a", "image": "b"}]'  # not a content item
    assert tool_result_text([]) == "[]" and tool_result_text(None) == "null" and tool_result_text(3.5) == "3.5"
    assert cap_text("abc", 3) == "abc"


def code_interpreter_missing() -> str | None:
    """Why qwen-agent 0.0.34's ``code_interpreter`` cannot run here, or ``None`` when it can: it starts its Jupyter
    kernel inside a Docker container (image ``code-interpreter:latest``, which it builds on first use from a
    Dockerfile its wheel does not ship), and talks to it with ``jupyter_client`` from the host."""
    if shutil.which("docker") is None:
        return "no docker command (qwen-agent 0.0.34's code_interpreter runs its kernel in a Docker container)"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode != 0:
        return "no running Docker daemon (qwen-agent 0.0.34's code_interpreter runs its kernel in a Docker container)"
    images = subprocess.run(["docker", "images", "-q", "code-interpreter:latest"], capture_output=True, text=True,
                            timeout=20)
    if not images.stdout.strip():
        return ("no Docker image code-interpreter:latest (qwen-agent 0.0.34 builds it from a Dockerfile its wheel "
                "does not ship, with network access)")
    if importlib.util.find_spec("jupyter_client") is None:
        return "jupyter_client is not installed (pip install 'qwen-agent[code_interpreter]')"
    return None


def test_code_interpreter(tmp_path):
    reason = code_interpreter_missing()
    if reason is not None:
        pytest.skip(f"code_interpreter cannot run here: {reason}")
    config = json.dumps({"code_interpreter": {"work_dir": str(tmp_path)}})
    entry = {"module": MODULE, "args": ["code_interpreter", "--tool-config", config, "--timeout-s", "240"],
             "timeout_s": 300}
    with Toolbox({"mcpServers": {"qwen": entry}}) as toolbox:
        [result] = toolbox.call_many([call("code_interpreter", code="print(6 * 7)")])
    assert not result.is_error and "42" in result.text
