"""Our servers as an outside MCP client sees them: the MCP Inspector's CLI mode (npm
``@modelcontextprotocol/inspector``), over stdio and streamable HTTP. It is shown no batched form, its ``--strict``
check of the tool schemas finds nothing, and a request that asks for the batched forms gets them, schemas sound.

Install it first with ``bash .ci/mcp_servers.sh``; without node or the package the integration tests skip.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from rlfactory_envs.search.family import SAMPLE_CORPUS_PATH
from rlfactory_envs.sql.family import SAMPLE_DB_DIR
from rlfactory_tool_servers.wire import SHOW_BATCH_FORMS
from tests.conftest import REPO_ROOT
from tests.server_process import server_process
from tests.third_party_servers import INSPECTOR_PACKAGE, INSPECTOR_VERSION, INSTALL_SCRIPT, inspector_command

RLF_SERVE = [sys.executable, "-m", "rlfactory_envs.cli", "serve"]
STRICT_FINDINGS = re.compile(r"^(Warning|Error): tool ", re.MULTILINE)


def inspector(home, *args: str) -> subprocess.CompletedProcess[str]:
    """``inspector --cli ARGS``, its catalog kept under ``home``; the result's stdout is its JSON answer."""
    return subprocess.run([*inspector_command(), "--cli", *args], cwd=REPO_ROOT, env={**os.environ, "HOME": str(home)},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


def listed(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, result.stderr
    return [tool["name"] for tool in json.loads(result.stdout)["tools"]]


def test_install_script_pins_the_tested_inspector() -> None:
    script = INSTALL_SCRIPT.read_text(encoding="utf-8")
    assert re.search(rf'^INSPECTOR_PACKAGE="{re.escape(INSPECTOR_PACKAGE)}"$', script, re.MULTILINE)
    assert re.search(rf'^INSPECTOR_VERSION="{re.escape(INSPECTOR_VERSION)}"$', script, re.MULTILINE)


@pytest.mark.integration
def test_rlf_serve_search_shows_the_inspector_no_batched_form_and_nothing_strict_flags(tmp_path) -> None:
    result = inspector(tmp_path, "--method", "tools/list", "--strict", *RLF_SERVE, "search")
    assert listed(result) == ["search"]
    assert not STRICT_FINDINGS.search(result.stderr), result.stderr


@pytest.mark.integration
def test_asked_for_them_the_batched_forms_are_listed_with_schemas_strict_accepts(tmp_path) -> None:
    result = inspector(tmp_path, "--metadata", f"{SHOW_BATCH_FORMS}=true", "--method", "tools/list", "--strict",
                       *RLF_SERVE, "sql", "--db-dir", str(SAMPLE_DB_DIR))
    assert sorted(listed(result)) == sorted(f"{name}{form}" for name in ("list_tables", "describe_table", "run_query")
                                            for form in ("", "_batch"))
    assert not STRICT_FINDINGS.search(result.stderr), result.stderr


@pytest.mark.integration
def test_the_inspector_lists_and_calls_over_streamable_http(tmp_path) -> None:
    command = [*RLF_SERVE, "search", "--corpus", str(SAMPLE_CORPUS_PATH), "--transport", "http", "--port", "0"]
    with server_process(command) as server:
        url = server.url()
        assert listed(inspector(tmp_path, url, "--method", "tools/list")) == ["search"]
        called = inspector(tmp_path, url, "--method", "tools/call", "--tool-name", "search", "--tool-arg",
                           "query=ship", "topk=1")
        # The Inspector calls only a tool it was shown: a batched form once its listing asks for them.
        batched = inspector(tmp_path, url, "--metadata", f"{SHOW_BATCH_FORMS}=true", "--method", "tools/call",
                            "--tool-name", "search_batch", "--tool-arg", 'calls=[{"query": "ship", "topk": 1}]')
    assert called.returncode == 0, called.stderr
    answer = json.loads(called.stdout)
    assert not answer["isError"] and answer["content"][0]["text"].startswith("Doc 1(Title: ")
    assert batched.returncode == 0, batched.stderr
    [entry] = json.loads(batched.stdout)["structuredContent"]["results"]
    assert entry["text"] == answer["content"][0]["text"] and not entry["is_error"]


def test_the_docs_inspector_line_pins_the_tested_version_and_its_node() -> None:
    page = " ".join((REPO_ROOT / "docs" / "tool-servers.md").read_text(encoding="utf-8").split())
    assert f"npx -y {INSPECTOR_PACKAGE}@{INSPECTOR_VERSION} --cli" in page
    manifest = REPO_ROOT / ".third_party" / "node" / "node_modules" / INSPECTOR_PACKAGE / "package.json"
    if not manifest.is_file():
        pytest.skip(f"{INSPECTOR_PACKAGE} is not installed; run `bash .ci/mcp_servers.sh`")
    engines = json.loads(manifest.read_text(encoding="utf-8"))["engines"]["node"]  # ">=22.19.0"
    needed = ".".join(engines.removeprefix(">=").split(".")[:2])
    assert f"Inspector {'.'.join(INSPECTOR_VERSION.split('.')[:2])} needs Node >= {needed}" in page


def test_without_node_the_install_script_says_what_will_skip_and_ci_fails(tmp_path) -> None:
    import shutil

    bare = tmp_path / "bin"  # a PATH with the script's one external command and no node
    bare.mkdir()
    (bare / "dirname").symlink_to(shutil.which("dirname"))
    run = [shutil.which("bash"), str(INSTALL_SCRIPT)]
    developer = subprocess.run(run, env={"PATH": str(bare)}, capture_output=True, text=True, timeout=60)
    assert developer.returncode == 0 and "'node' is not on PATH, so the third-party MCP tests" in developer.stderr
    assert "will skip" in developer.stderr
    ci = subprocess.run([*run, "--require"], env={"PATH": str(bare)}, capture_output=True, text=True, timeout=60)
    assert ci.returncode == 1 and "'node' is not on PATH" in ci.stderr
