"""``rlf serve env --protocol ors`` driven by the real ``openreward`` client (0.1.167), run by ``.ci/ors.sh`` in a venv
of its own (the client pins an sse-starlette the MCP SDK cannot share); the server runs from the core venv
(``RLF_PYTHON``), as a user runs it. Every family: discovery (environments, splits, tasks, tools), a session on a
task, the prompt and messages, tool calls whose blocks are the env's tool results, the terminal tool that scores
the final message, ``finished`` and the reward; bad calls; the token; calls of many sessions merged behind the door."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from tests.conftest import REPO_ROOT
from tests.service.conftest import serve_command

openreward = pytest.importorskip("openreward", reason="the ORS door's tests need the openreward client: run "
                                                      "bash .ci/ors.sh (it pins what the core venv cannot share)")
from openreward import AsyncOpenReward, OpenReward  # noqa: E402
from openreward.api.errors import ToolCallError  # noqa: E402

CUSTOM_SPEC = str(REPO_ROOT / "examples" / "custom_env" / "env.yaml")
# Per family: a tool call that works on any task, and how its right answer reads from the task.
FAMILIES = {
    "rlf/Search-NQ-v0": ("search", lambda task: {"query": task["question"]},
                         lambda task: f"<answer>{task['golden_answers'][0]}</answer>"),
    "rlf/NL2SQL-Spider-v0": ("list_tables", lambda task: {}, lambda task: f"<answer>{task['gold_sql']}</answer>"),
    "rlf/Travel-v0": ("search_cities", lambda task: {"state": "Texas"}, None),
    "rlf/Android-v0": ("open_app", lambda task: {"app_name": "Contacts"}, None),
    CUSTOM_SPEC: ("multiply", lambda task: {"a": 12, "b": 17}, lambda task: task["ground_truth"]),
}


def env_name(ref: str) -> str:
    return "rlf-mcp-v0" if ref.endswith(".yaml") else ref.lower().replace("/", "-")


@pytest.mark.integration
@pytest.mark.parametrize("ref", list(FAMILIES), ids=lambda ref: "custom_env" if ref.endswith(".yaml") else ref)
def test_every_family_plays_over_ors_with_the_openreward_client(ref):
    tool, arguments, answer = FAMILIES[ref]
    with serve_command(ref, "ors", "--auth-token", "k3y") as url:
        client = OpenReward(api_key="k3y", base_url=url)
        try:
            env = client.environments.get(env_name(ref), base_url=url)
            assert env.list_splits() == ["train"]
            count, tasks = env.num_tasks("train"), [env.get_task("train", i) for i in (0, 1)]
            if count <= 1000:
                listed = env.list_tasks("train")
                assert len(listed) == count and [t.task_spec for t in listed[:2]] == [t.task_spec for t in tasks]
            else:  # Android's 46,000 are read a part at a time
                with pytest.raises(Exception, match="task_range"):
                    env.list_tasks("train")
                assert [t.task_spec for t in env.get_task_range("train", 0, 2)] == [t.task_spec for t in tasks]
            assert tool in [spec.name for spec in env.list_tools()]
            with env.session(task=tasks[0]) as session:
                prompt = session.get_prompt()[0].text
                assert prompt and session.get_messages(format="openai")[-1] == {"role": "user", "content": prompt}
                assert session.is_assistant_message_final()
                first = session.call_tool(tool, arguments(tasks[0].task_spec))
                assert not first.finished and first.reward is None and first.blocks and first.blocks[0].text
                assert first.metadata["tool_results"][0]["name"] == tool
                with pytest.raises(ToolCallError, match="not a valid tool"):
                    session.call_tool("no_such_tool", {})
                final = answer(tasks[0].task_spec) if answer else "I give up."
                last = session.call_terminal_tool(final)
                assert last.finished and last.reward == (1.0 if answer else 0.0)
                assert "episode is over" in last.blocks[-1].text
                with pytest.raises(ToolCallError, match="episode_finished|episode is over"):
                    session.call_tool(tool, arguments(tasks[0].task_spec))
            with env.session(split="train", index=1) as session:  # a task by index
                assert session.get_prompt()[0].text
        finally:
            client.close()


def stats(url: str) -> dict:
    request = urllib.request.Request(f"{url}/rlf/stats", headers={"X-API-Key": "k3y"})
    with urllib.request.urlopen(request) as reply:
        return json.load(reply)


def test_a_wrong_key_is_refused_and_sessions_close_with_their_clients():
    with serve_command("rlf/Search-NQ-v0", "ors", "--auth-token", "k3y") as url:
        bad = OpenReward(api_key="nope", base_url=url)
        try:
            with pytest.raises(Exception, match="401|Authentication"):
                bad.environments.get("rlf-search-nq-v0", base_url=url).list_splits()
        finally:
            bad.close()

        async def many() -> list[float]:
            client = AsyncOpenReward(api_key="k3y", base_url=url)
            env = client.environments.get("rlf-search-nq-v0", base_url=url)
            tasks = await env.list_tasks("train")

            async def play(task) -> float:
                async with env.session(task=task) as session:
                    await session.call_tool("search", {"query": task.task_spec["question"]})
                    out = await session.call_terminal_tool(f"<answer>{task.task_spec['golden_answers'][0]}</answer>")
                    return out.reward

            try:
                return await asyncio.gather(*(play(task) for task in tasks[:24]))
            finally:
                await client.environments.aclose()

        assert asyncio.run(many()) == [1.0] * 24
        after = stats(url)
        assert after["sessions"] == 0 and after["opened"] == after["closed"] == 24
        assert after["toolbox"]["totals"]["calls"] == 24 and after["toolbox"]["totals"]["errors"] == 0
