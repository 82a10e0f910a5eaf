"""``rlf serve env --protocol openenv`` driven by openenv-core's own client classes (``GenericEnvClient``, async and
``.sync()``) and ``openenv validate``: every family plays over the door exactly as it plays in process, step for
step (observation text, reward, reward parts, info), and the door's bad input, limits and token."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlfactory_envs.env_spec import make_env
from rlfactory_envs.kernel.families import tooling_of
from rlfactory_envs.service.http_json import dump_json
from tests.conftest import REPO_ROOT
from tests.service.conftest import serve_command, serving

openenv_core = pytest.importorskip("openenv.core", reason="the OpenEnv door's tests need openenv-core "
                                                          "(pip install .[openenv])")
from openenv.core import GenericEnvClient  # noqa: E402

CUSTOM_SPEC = str(REPO_ROOT / "examples" / "custom_env" / "env.yaml")
FAMILIES = ["rlf/Search-NQ-v0", "rlf/NL2SQL-Spider-v0", "rlf/Travel-v0", "rlf/Android-v0", CUSTOM_SPEC]
POPPED = ("messages", "tools", "truncation_reason", "reward_parts")
"""The info keys the observation carries beside ``info``."""


class CalcPolicy:
    """The custom example's episode: one call to its calc server, then the reference answer."""

    async def act(self, env, observation: str) -> str:
        if env.turn == 0:
            return '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
        return f"<answer>{tooling_of(env).reference_answer(env, env.task)}</answer>"


def policy_for(ref, env):
    return CalcPolicy() if ref == CUSTOM_SPEC else tooling_of(env).baseline_policy(env)


def as_json(value):
    return json.loads(json.dumps(value, default=str))


def same_info(remote: dict, local_info: dict) -> None:
    local = as_json({key: value for key, value in local_info.items() if key not in POPPED})
    assert remote["info"] == local
    assert remote["messages"] == as_json(local_info.get("messages", []))
    assert remote["reward_parts"] == as_json(local_info.get("reward_parts", {}))
    assert remote["truncation_reason"] == local_info.get("truncation_reason")


@pytest.mark.integration
@pytest.mark.parametrize("ref", FAMILIES, ids=lambda ref: Path(ref).stem if ref.endswith(".yaml") else ref)
def test_every_family_plays_over_the_door_as_in_process(ref):
    local = make_env(ref)
    policy = policy_for(ref, local)
    with serve_command(ref, "openenv") as url:
        async def play() -> int:
            async with GenericEnvClient(base_url=url) as client:
                first = await client.reset(seed=7)
                obs, info = await local.areset(seed=7)
                assert (first.done, first.reward) == (False, None)
                assert first.observation["text"] == obs and first.observation["tools"] == as_json(info["tools"])
                same_info(first.observation, info)
                done, steps = False, 0
                while not done:
                    action = await policy.act(local, obs)
                    remote = await client.step({"response": action})
                    obs, reward, terminated, truncated, info = await local.astep(action)
                    assert remote.observation["text"] == obs
                    assert (remote.reward, remote.done) == (reward, terminated or truncated)
                    assert (remote.observation["terminated"], remote.observation["truncated"]) == (terminated,
                                                                                                   truncated)
                    same_info(remote.observation, info)
                    done, steps = remote.done, steps + 1
                state = await client.state()
                assert state["step_count"] == steps and state["done"] and state["reward"] == reward
                return steps

        assert asyncio.run(play()) >= 2  # every policy calls a tool before it answers
        with GenericEnvClient(base_url=url).sync() as client:  # the sync wrapper, a second session
            task = local.task_to_dict(local.task)
            result = client.reset(seed=1, options={"task": task})
            assert result.observation["info"]["task"] == as_json(task)
            result = client.step({"response": "I am not sure what to do."})
            assert not result.done and result.observation["text"]
            assert client.state()["step_count"] == 1
    local.close()


def until(condition, timeout_s: float = 10.0) -> bool:
    """Whether ``condition()`` holds within ``timeout_s`` (the server closes a session once it reads the close)."""
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


async def frames(url: str, *messages) -> list[dict]:
    """The replies of one WebSocket session to ``messages`` (JSON-encoded unless already text)."""
    from websockets.asyncio.client import connect

    async with connect(url.replace("http", "ws") + "/ws") as socket:
        replies = []
        for message in messages:
            await socket.send(message if isinstance(message, str) else json.dumps(message))
            replies.append(json.loads(await socket.recv()))
        return replies


def test_every_reply_is_valid_json_whatever_the_env_put_in_it():
    reply = json.loads(dump_json({"text": "caf\u00e9", "reward": float("nan"), "path": Path("/x"), 3: "k"}))
    assert reply == {"text": "caf\u00e9", "reward": None, "path": "/x", "3": "k"}
    assert json.loads(dump_json({"text": "a lone \ud800"})) == {"text": "a lone \ud800"}


def test_a_bad_frame_costs_only_that_frame():
    with serving("rlf/Search-NQ-v0") as (url, table):
        replies = asyncio.run(frames(
            url, "{not json", ["a", "list"], {"type": "jump"}, {"type": "step", "data": {"response": "hi"}},
            {"type": "reset", "data": {"seed": -1}}, {"type": "reset", "data": {"task": {"question": "q"}}},
            {"type": "reset", "data": {"options": {"task_id": "no-such-task"}}},
            {"type": "reset", "data": {"seed": 3}}, {"type": "step", "data": {"response": 3}},
            {"type": "step", "data": {"text": "hi"}}, {"type": "step", "data": {"response": "<answer>x</answer>"}},
            {"type": "state"}, '{"type": "step", "data": {"response": "\\ud800"}}'))
        codes = [reply["data"].get("code") for reply in replies]
        assert codes == ["INVALID_JSON", "VALIDATION_ERROR", "UNKNOWN_TYPE", "EXECUTION_ERROR", "VALIDATION_ERROR",
                         "VALIDATION_ERROR", "VALIDATION_ERROR", None, "VALIDATION_ERROR", "VALIDATION_ERROR", None,
                         None, "INVALID_JSON"]
        assert "lone UTF-16 surrogate" in replies[12]["data"]["message"]  # not msgspec's "Input data was truncated"
        assert "call reset() before step()" in replies[3]["data"]["message"]
        assert "options={\"task\"" in replies[5]["data"]["message"]
        assert "no-such-task" in replies[6]["data"]["message"]
        assert replies[7]["type"] == "observation" and replies[10]["data"]["done"] is True
        assert replies[11] == {"type": "state", "data": {**replies[11]["data"], "step_count": 1, "done": True}}
        assert until(lambda: table.stats()["sessions"] == 0) and table.closed == 1


def test_sessions_over_the_limit_get_capacity_reached_and_a_closed_session_frees_its_slot():
    with serving("rlf/Search-NQ-v0", max_sessions=2) as (url, table):
        async def run() -> None:
            first, second = GenericEnvClient(base_url=url), GenericEnvClient(base_url=url)
            await first.reset(seed=0)
            await second.reset(seed=1)
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                async with GenericEnvClient(base_url=url) as third:
                    await third.reset()
            await first.close()
            for _ in range(50):  # the server closes the session once it reads the close frame
                if len(table) < 2:
                    break
                await asyncio.sleep(0.02)
            async with GenericEnvClient(base_url=url) as fourth:
                assert not (await fourth.reset(seed=2)).done
            await second.close()

        asyncio.run(run())


def test_an_oversized_frame_closes_only_its_connection():
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    with serving("rlf/Search-NQ-v0", max_request_bytes=65_536) as (url, table):
        async def run() -> int:
            async with GenericEnvClient(base_url=url) as other:
                await other.reset(seed=0)
                async with connect(url.replace("http", "ws") + "/ws", max_size=None) as socket:
                    await socket.send(json.dumps({"type": "step", "data": {"response": "x" * 100_000}}))
                    with pytest.raises(ConnectionClosed) as closed:
                        await socket.recv()
                result = await other.step({"response": "<answer>Mount Arvel</answer>"})
                assert result.done
                return closed.value.rcvd.code

        assert asyncio.run(run()) == 1009
        assert until(lambda: len(table) == 0)


def test_a_dead_client_costs_its_session_and_its_phone():
    from rlfactory_envs.kernel.tool_call import ToolCall
    from websockets.asyncio.client import connect

    with serving("rlf/Android-v0") as (url, table):
        async def run() -> None:
            socket = await connect(url.replace("http", "ws") + "/ws")
            await socket.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(await socket.recv())["type"] == "observation"
            episode_id = next(iter(table._episodes.values())).env.episode_id
            socket.transport.abort()  # the client dies: no close frame, the TCP connection just drops
            for _ in range(200):
                if not len(table):
                    break
                await asyncio.sleep(0.02)
            assert len(table) == 0
            toolbox = table.served.prototype.toolbox
            gone = await toolbox.acall_many([ToolCall("get_screen", {}, episode=episode_id)])
            assert gone[0].is_error and "there is no phone for episode" in gone[0].text

        asyncio.run(run())


def test_idle_sessions_are_closed_and_told_so():
    from websockets.asyncio.client import connect

    with serving("rlf/Search-NQ-v0", idle_timeout_s=0.2) as (url, table):
        async def run() -> dict:
            async with connect(url.replace("http", "ws") + "/ws") as socket:
                await socket.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
                await socket.recv()
                for _ in range(100):
                    if not len(table):
                        break
                    await asyncio.sleep(0.05)
                assert len(table) == 0 and table.closed == 1
                await socket.send(json.dumps({"type": "state"}))
                return json.loads(await socket.recv())

        reply = asyncio.run(run())
        assert reply["data"]["code"] == "SESSION_ERROR" and "idle" in reply["data"]["message"]


def test_http_episodes_keep_state_by_episode_id():
    import httpx

    with serving("rlf/Search-NQ-v0", max_request_bytes=4096) as (url, table):
        with httpx.Client(base_url=url) as http:
            reset = http.post("/reset", json={"seed": 0, "episode_id": "mine"}).json()
            assert reset["observation"]["info"]["episode_id"] == "mine" and reset["done"] is False
            assert http.post("/step", json={"action": {"response": "<answer>x</answer>"}}).status_code == 422
            assert http.post("/step", json={"action": {"response": "hi"}, "episode_id": "other"}).status_code == 404
            step = http.post("/step", json={"action": {"response": "<answer>x</answer>"}, "episode_id": "mine"})
            assert step.status_code == 200 and step.json()["done"] is True
            again = http.post("/step", json={"action": {"response": "hi"}, "episode_id": "mine"})
            assert again.status_code == 409 and "reset" in again.json()["detail"]
            state = http.get("/state", params={"episode_id": "mine"}).json()
            assert state["episode_id"] == "mine" and state["step_count"] == 1
            big = http.post("/step", content=b"{" + b" " * 5000 + b"}", headers={"content-type": "application/json"})
            assert big.status_code == 413 and "--max-request-bytes" in big.json()["detail"]
            assert http.post("/reset", json={"seed": "zero"}).status_code == 422
            tools = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
            assert [tool["name"] for tool in tools["result"]["tools"]] == ["search"]
            assert len(table) == 1


def test_a_token_guards_http_and_the_websocket_handshake_and_openenv_validate_passes():
    import httpx

    with serving("rlf/Search-NQ-v0", token="t0k") as (url, _):
        assert httpx.get(f"{url}/health").status_code == 401
        assert httpx.get(f"{url}/health", headers={"Authorization": "bearer t0k"}).status_code == 200
        assert httpx.get(f"{url}/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{url}/health", headers={"X-API-Key": "t0k"}).status_code == 200
        with_token = url.replace("http://", "http://rlf:t0k@")

        async def run() -> None:
            with pytest.raises(ConnectionError, match="401"):
                await GenericEnvClient(base_url=url).connect()
            async with GenericEnvClient(base_url=with_token) as client:
                assert not (await client.reset(seed=0)).done

        asyncio.run(run())
        validate = [str(Path(sys.executable).with_name("openenv")), "validate", "--url", with_token]
        report = subprocess.run(validate, capture_output=True, text=True, timeout=120)
        assert report.returncode == 0, report.stdout + report.stderr
        assert json.loads(report.stdout)["passed"] is True


def test_a_bad_env_or_setting_is_one_line_before_anything_listens():
    for args, words in ((["nope/Nothing-v0", "--protocol", "openenv"], "unknown env"),
                        (["rlf/Search-NQ-v0", "--protocol", "ors", "--set", "max_turns=abc"], "max_turns")):
        done = subprocess.run([sys.executable, "-m", "rlfactory_envs.cli", "serve", "env", *args], text=True,
                              capture_output=True, timeout=120)
        assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1
