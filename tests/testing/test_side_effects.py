"""The semantics properties on a user's env call only the tools that are safe to call blindly (MCP annotations, or an
explicit list), keep the servers' logs quiet, and write nothing into the current folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rlfactory_envs.testing import EnvSemantics

NOTES_SERVER = '''
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("notes")


@server.tool()
def write_note(name: str) -> str:
    """Write a note file (a side effect; the tool says nothing about it)."""
    Path("written").mkdir(exist_ok=True)
    (Path("written") / f"{abs(hash(name))}.txt").write_text(name)
    return "written"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def count_notes() -> int:
    """How many notes there are."""
    print("count_notes was called", file=sys.stderr, flush=True)
    return len(list(Path("written").glob("*.txt"))) if Path("written").is_dir() else 0


if __name__ == "__main__":
    server.run("stdio")
'''


@pytest.fixture
def spec(tmp_path, monkeypatch) -> Path:
    served = tmp_path / "served"
    served.mkdir()
    (served / "notes_server.py").write_text(NOTES_SERVER)
    (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "a", "question": "How many notes?", "ground_truth": "0"}))
    spec = tmp_path / "env.json"
    spec.write_text(json.dumps({"tool_servers": {"mcpServers": {"notes": {
        "command": sys.executable, "args": ["notes_server.py"], "cwd": "served"}}}, "data_path": "rows.jsonl",
        "max_turns": 3}))
    monkeypatch.chdir(tmp_path)  # the user's folder: the properties must leave it as it is
    return spec


def test_by_default_only_tools_annotated_safe_are_called_quietly_and_nothing_is_written(spec, capfd):
    semantics = EnvSemantics(str(spec), max_examples=30)
    for prop in ("episode_semantics", "seeded_determinism"):
        semantics.check(prop)
    served = spec.parent / "served"
    assert not (served / "written").exists()
    assert "count_notes was called" not in capfd.readouterr().err


def test_a_failing_property_leaves_no_example_database_behind(spec):
    def refuse_every_step(env, action, result):
        raise AssertionError("refused")

    with pytest.raises(AssertionError, match="refused"):
        EnvSemantics(str(spec), max_examples=5, check_step=refuse_every_step).check("episode_semantics")
    assert sorted(path.name for path in spec.parent.iterdir()) == ["env.json", "rows.jsonl", "served"]  # no .hypothesis


def test_an_explicit_list_lets_a_tool_with_side_effects_be_called(spec):
    EnvSemantics(str(spec), max_examples=30, call_tools=["write_note"]).check("episode_semantics")
    assert list((spec.parent / "served" / "written").glob("*.txt"))
