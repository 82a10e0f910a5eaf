"""A user's mistake through the real `rlf` command: one line naming the problem and the fix, no traceback (unless
``--debug``), a non-zero exit; and episodes that fail for a reason outside the model make the rollout fail."""

import json
import subprocess
import sys

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from tests.conftest import free_port, openai_endpoint
from tests.test_cli import rlf


def one_line_error(result, *, code: int = 2) -> str:
    """The single error line of a failed ``rlf`` run, checked to be all it printed besides warnings."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("rlf rollout: warning:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_set_value_of_the_wrong_type_names_the_setting():
    line = one_line_error(rlf("rollout", "rlf/Search-NQ-v0", "-n", "1", "--set", "max_turns=abc"))
    assert line.startswith("rlf rollout: error: rlf/Search-NQ-v0: max_turns='abc' is not int: ")


def test_a_set_choice_names_the_choices():
    line = one_line_error(rlf("rollout", "rlf/Search-NQ-v0", "-n", "1", "--set", "chat_format=chatgpt"))
    assert "unknown chat_format 'chatgpt'; choose one of qwen3, hermes, search_r1, template" in line


def test_set_values_are_read_as_the_setting_types_them(tmp_path):
    summary = tmp_path / "summary.json"
    result = rlf("rollout", "rlf/Search-NQ-v0", "-n", "2", "--no-progress", "--set", "max_turns=1",
                 "--set", "enable_thinking=false", "--set", "format_score=0", "--summary-json", str(summary))
    assert result.returncode == 0, result.stderr
    assert json.loads(summary.read_text())["mean_turns"] == 1.0


def test_bad_json_options_are_named():
    line = one_line_error(rlf("rollout", "rlf/Search-NQ-v0", "--env-kwargs", "{max_turns: 2}"))
    assert line.startswith("rlf rollout: error: --env-kwargs is not valid JSON (")
    line = one_line_error(rlf("rollout", "rlf/Search-NQ-v0", "--env-kwargs", "[1]"))
    assert "--env-kwargs must be a JSON object" in line


def test_a_missing_spider_questions_file_is_named_as_missing():
    line = one_line_error(rlf("rollout", "rlf/NL2SQL-Spider-v0", "--set", "data_path=/nonexistent/dev.json"))
    assert line.startswith("rlf rollout: error: no such file: /nonexistent/dev.json")


def test_debug_shows_the_traceback():
    result = rlf("rollout", "rlf/NL2SQL-Spider-v0", "--set", "data_path=/nonexistent/dev.json", "--debug")
    assert result.returncode != 0 and "Traceback" in result.stderr and "FileNotFoundError" in result.stderr


def test_an_unreachable_tool_server_url_says_connection_refused():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    servers = {"mcpServers": {"search": {"url": url, "retries": 0}}}
    line = one_line_error(rlf("rollout", "rlf/Search-NQ-v0", "-n", "1", "--env-kwargs",
                              json.dumps({"tool_servers": servers})))
    assert line.startswith(f"rlf rollout: error: server 'search': cannot connect to {url}: connection refused")


def test_a_server_process_that_exits_at_start_gives_its_code_and_stderr():
    crash = "import sys; print('index file is corrupt', file=sys.stderr); sys.exit(3)"
    servers = {"mcpServers": {"search": {"command": sys.executable, "args": ["-c", crash], "retries": 0}}}
    result = rlf("rollout", "rlf/Search-NQ-v0", "-n", "1", "--env-kwargs", json.dumps({"tool_servers": servers}))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "server 'search': the process exited with code 3" in result.stderr
    assert "index file is corrupt" in result.stderr


def test_a_family_whose_prompt_tools_are_missing_warns(tmp_path):
    servers = {"mcpServers": {"sleep": {"module": "rlfactory_tool_servers.sleep"}}}
    result = rlf("rollout", "rlf/Search-NQ-v0", "-n", "1", "--no-progress", "--env-kwargs",
                 json.dumps({"tool_servers": servers}))
    assert result.returncode == 0, result.stderr
    [warning] = [line for line in result.stderr.splitlines() if line.startswith("rlf rollout: warning:")]
    assert "its prompt tells the model to call search, but the model sees no such tool (tool servers: sleep" in warning


def test_denying_a_prompt_tool_warns():
    result = rlf("rollout", "rlf/NL2SQL-Spider-v0", "-n", "1", "--no-progress", "--env-kwargs",
                 json.dumps({"tools_denied": ["run_query"]}))
    assert result.returncode == 0 and "call run_query, but the model sees no such tool" in result.stderr


def test_the_bundled_families_do_not_warn():
    for env_id in ("rlf/Search-NQ-v0", "rlf/NL2SQL-Spider-v0", "rlf/Travel-v0"):
        result = rlf("rollout", env_id, "-n", "1", "--no-progress")
        assert result.returncode == 0 and "warning" not in result.stderr, (env_id, result.stderr)


def test_a_dead_model_endpoint_fails_before_any_episode():
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    line = one_line_error(rlf("rollout", "rlf/Search-NQ-v0", "-n", "2", "--policy", "openai", "--model", "m",
                              "--base-url", base_url))
    assert line.startswith(f"rlf rollout: error: cannot reach the model endpoint {base_url}/: connection refused; "
                           "start the server")


async def failing_chat(request: Request) -> JSONResponse:
    return JSONResponse({"error": {"message": "CUDA out of memory", "type": "server_error"}}, status_code=500)


@pytest.fixture(scope="module")
def failing_endpoint():
    with openai_endpoint(failing_chat, models=["qwen3"]) as url:
        yield url


def test_a_model_the_endpoint_does_not_serve_is_named(failing_endpoint):
    line = one_line_error(rlf("rollout", "rlf/Search-NQ-v0", "-n", "1", "--policy", "openai", "--model", "qwen",
                              "--base-url", failing_endpoint))
    assert f"the model endpoint {failing_endpoint}/ does not serve 'qwen'; it serves 'qwen3'; pass --model" in line


def test_episodes_failing_at_the_endpoint_fail_the_run_and_say_why(failing_endpoint, tmp_path):
    out = tmp_path / "runs" / "trajectories.jsonl"
    result = rlf("rollout", "rlf/Search-NQ-v0", "-n", "2", "--no-progress", "--policy", "openai", "--model", "qwen3",
                 "--base-url", failing_endpoint, "--out", str(out))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "truncated / failed           2 / 2" in result.stdout
    reason = f"policy failed: the model endpoint {failing_endpoint}/ answered HTTP 500: "
    assert f"failed because               2 x {reason}" in result.stdout
    assert "2 of 2 episodes failed for a reason outside the model" in result.stderr
    assert [json.loads(line)["error"].startswith(reason) for line in out.read_text().splitlines()] == [True, True]


def test_the_data_preparation_reports_a_bad_setting_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "rlfactory_adapters.prepare_data", "--trainer", "openrlhf",
                             "--env", "rlf/Search-NQ-v0", "--env-kwargs", '{"max_turns": "four"}',
                             "--out", str(tmp_path / "rows.jsonl")], capture_output=True, text=True, timeout=120)
    line = one_line_error(result)
    assert line.startswith("python -m rlfactory_adapters.prepare_data: error: rlf/Search-NQ-v0: max_turns='four' ")


def test_a_server_that_dies_at_start_shows_the_tail_of_its_stderr(tmp_path):
    (tmp_path / "dies.py").write_text("import sys\nfor i in range(40): print(f'log line {i}', file=sys.stderr)\n"
                                      "sys.exit('fatal: the config lacks KEY')\n")
    (tmp_path / "rows.jsonl").write_text('{"id": "a", "question": "q?", "ground_truth": "1"}\n')
    spec = tmp_path / "env.json"
    spec.write_text(json.dumps({"tool_servers": {"mcpServers": {"d": {"command": sys.executable, "args": ["dies.py"]}}},
                                "data_path": "rows.jsonl"}))
    result = rlf("rollout", str(spec), "--policy", "reference", "--no-progress")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = result.stderr[result.stderr.index("rlf rollout: error: "):].splitlines()
    assert error[0].startswith("rlf rollout: error: server 'd': the process exited with code 1 during start; last "
                               "lines of its stderr:")
    assert error[-1] == "    fatal: the config lacks KEY" and "    log line 39" in error
