"""``rlf serve reward``: an env's reward over HTTP in OpenRLHF's remote reward-model protocol. The command as a user
runs it (a subprocess on a free port, the URL read from its start message), and the app in process with httpx:
scores against the env's own reward, every refusal a 4xx with a JSON error, the limits, a failing reward."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from rlfactory_adapters.reward_server import Limits, RewardService, build_app
from rlfactory_adapters.task_rows import task_rows
from rlfactory_envs import make_env
from rlfactory_reward_models.base import Reward
from tests.server_process import REWARD_URL_RE, server_process

SEARCH = "rlf/Search-NQ-v0"
SQL = "rlf/NL2SQL-Spider-v0"
RLF = [shutil.which("rlf")] if shutil.which("rlf") else [sys.executable, "-m", "rlfactory_envs.cli"]
PROMPT = "<|im_start|>user\nthe question<|im_end|>\n<|im_start|>assistant\n"
QA_PARTS = ["exact_match", "f1", "substring_match", "format"]


@pytest.fixture(scope="module")
def search_rows():
    return list(task_rows(SEARCH, limit=3))


@pytest.fixture(scope="module")
def sql_rows():
    return list(task_rows(SQL, limit=2))


def answer(text: str) -> str:
    return f"<think>\nok\n</think>\n\n<answer>{text}</answer><|im_end|>"


def payload(rows, responses, prompt: str = PROMPT) -> dict:
    return {"query": [prompt + r for r in responses], "prompts": [prompt] * len(responses),
            "labels": [row.label() for row in rows]}


@asynccontextmanager
async def served(env_id: str = SEARCH, reward_model=None, reward_parts=None, **limits) -> AsyncIterator:
    """An httpx client of the app serving ``env_id``'s reward (or ``reward_model`` in its place), and the service."""
    env = make_env(env_id)
    if reward_model is not None:
        made, env = env, type(env)(env.runtime.variant(reward_model=reward_model))
        made.close()
    service = RewardService(env, env_id, {}, Limits(**limits), reward_parts)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=build_app(service)),
                                     base_url="http://reward") as client:
            yield client, service
    finally:
        env.close()


class ScriptedReward:
    """A reward model that answers ``score`` with ``behave(item)`` (a Reward, or raises), counting calls at once."""

    reward_range = (0.0, 1.0)

    def __init__(self, behave, delay_s: float = 0.0):
        self.behave, self.delay_s = behave, delay_s
        self.running = self.most_running = 0

    async def score(self, item):
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(self.delay_s)
            return self.behave(item)
        finally:
            self.running -= 1

    async def score_batch(self, items):
        return [await self.score(item) for item in items]


# -- the env's own reward --------------------------------------------------------------------------------------


async def test_a_right_answer_scores_1_and_a_wrong_one_0(search_rows):
    gold = search_rows[0].task["golden_answers"][0]
    async with served() as (client, _):
        got = await client.post("/get_reward", json=payload(search_rows, [answer(gold), answer("Lisbon"), "no idea"]))
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["rewards"] == body["scores"] == [1.0, 0.0, 0.0]
    assert list(body["extra_logs"]) == [*QA_PARTS, "answered"]
    assert body["extra_logs"]["answered"] == [1.0, 1.0, 0.0]
    assert body["extra_logs"]["exact_match"] == [1.0, 0.0, 0.0]
    assert body["extra_logs"]["format"] == [1.0, 1.0, 0.0]
    assert body["reasons"][0] is None and body["reasons"][2] == "no final answer"
    assert body["reasons"][1].startswith("no exact match: the answer normalises to 'lisbon', the golden answers to ")


async def test_sql_execution_match_through_the_root_path(sql_rows):
    gold = sql_rows[0].task["gold_sql"]
    async with served(SQL) as (client, _):
        got = await client.post("/", json=payload(sql_rows, [answer(gold), answer("SELECT 1")]))
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["rewards"] == body["scores"] == [1.0, 0.0]
    assert body["extra_logs"]["answered"] == [1.0, 1.0]
    assert set(body["extra_logs"]) >= {"execution_match", "answered"}
    assert all(len(values) == 2 for values in body["extra_logs"].values())


async def test_only_the_response_after_the_prompt_is_scored(search_rows):
    """An answer written into the prompt earns nothing; of several turns the last is scored; a label may be an
    object rather than a JSON string (OpenRLHF passes the row's label untouched)."""
    gold = search_rows[0].task["golden_answers"][0]
    row = search_rows[0]
    prompt = f"<|im_start|>system\nanswer like <answer>{gold}</answer><|im_end|>\n<|im_start|>assistant\n"
    multi = f"{answer('wrong')}\n<|im_start|>user\ntry again<|im_end|>\n<|im_start|>assistant\n{answer(gold)}"
    request = {"query": [prompt + "no tags", prompt + multi], "prompts": [prompt, prompt],
               "labels": [json.loads(row.label()), row.label()]}
    async with served() as (client, _):
        got = (await client.post("/", json=request)).json()
    assert got["rewards"] == [0.0, 1.0] and got["extra_logs"]["answered"] == [0.0, 1.0]


async def test_every_answer_has_the_same_extra_logs_keys(search_rows):
    """OpenRLHF merges the samples' metrics by key: the keys never depend on the items, an empty batch included."""
    async with served() as (client, _):
        empty_first = (await client.post("/", json=payload([], []))).json()
        first = (await client.post("/", json=payload(search_rows[:1], ["nothing"]))).json()
        second = (await client.post("/", json=payload(search_rows[:2], [answer("x"), answer("y")]))).json()
        empty_after = (await client.post("/", json=payload([], []))).json()
    assert empty_first == {"rewards": [], "scores": [], "extra_logs": {"answered": []}, "reasons": []}
    assert list(first["extra_logs"]) == list(second["extra_logs"]) == [*QA_PARTS, "answered"]
    assert empty_after["extra_logs"] == {key: [] for key in [*QA_PARTS, "answered"]}


async def test_reward_parts_given_fix_the_keys_and_an_unreported_part_is_logged_once(search_rows, caplog):
    gold = search_rows[0].task["golden_answers"][0]
    async with served(reward_parts=["f1", "answered", "not_a_part"]) as (client, _):
        for _ in range(2):
            got = (await client.post("/", json=payload(search_rows[:1], [answer(gold)]))).json()
    assert got["extra_logs"] == {"f1": [1.0], "not_a_part": [0.0], "answered": [1.0]}
    unreported = [r.getMessage() for r in caplog.records if "is not reported" in r.getMessage()]
    assert len(unreported) == 3 and "'exact_match'" in unreported[0] and "--reward-parts" in unreported[0]


async def test_get_describes_the_server():
    async with served() as (client, _):
        got = await client.get("/")
    assert got.status_code == 200
    body = got.json()
    assert body["env_id"] == SEARCH and body["limits"]["max_items"] == 4096 and "POST /" in body["request"]


# -- a reward that fails ---------------------------------------------------------------------------------------


def _raise(item):
    raise RuntimeError("the judge is down")


@pytest.mark.parametrize(("behave", "reason"), [
    (_raise, "reward model failed: RuntimeError('the judge is down')"),
    (lambda item: Reward(math.nan, {"f1": math.inf}), "the reward model returned nan"),
])
async def test_a_failing_reward_scores_the_low_end_with_the_reason(search_rows, behave, reason, caplog):
    async with served(reward_model=ScriptedReward(behave)) as (client, _):
        got = await client.post("/", json=payload(search_rows[:2], [answer("a"), "b"]))
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["rewards"] == [0.0, 0.0] and body["reasons"] == [reason, reason]
    assert body["extra_logs"]["answered"] == [1.0, 0.0]
    assert any("2 of 2 rewards failed" in r.getMessage() for r in caplog.records)


async def test_a_slow_reward_scores_the_low_end_after_the_timeout(search_rows):
    slow = ScriptedReward(lambda item: Reward(1.0), delay_s=5.0)
    async with served(reward_model=slow, reward_parts=[], score_timeout_s=0.2) as (client, _):
        got = (await client.post("/", json=payload(search_rows[:1], [answer("a")]))).json()
    assert got["rewards"] == [0.0]
    assert got["reasons"] == ["the reward took longer than 0.2 s (--score-timeout-s)"]


async def test_items_are_scored_concurrently_within_the_bound(search_rows):
    model = ScriptedReward(lambda item: Reward(1.0), delay_s=0.05)
    async with served(reward_model=model, reward_parts=[], max_concurrency=4) as (client, _):
        rows = [search_rows[0]] * 16
        requests = [client.post("/", json=payload(rows, [answer("a")] * 16)) for _ in range(2)]
        answers = await asyncio.gather(*requests)
    assert all(a.json()["rewards"] == [1.0] * 16 for a in answers)
    assert model.most_running == 4


async def test_over_max_requests_in_flight_is_a_503(search_rows):
    model = ScriptedReward(lambda item: Reward(1.0), delay_s=0.5)
    async with served(reward_model=model, reward_parts=[], max_requests=1) as (client, _):
        first = asyncio.ensure_future(client.post("/", json=payload(search_rows[:1], [answer("a")])))
        while model.running == 0:
            await asyncio.sleep(0.01)
        refused = await client.post("/", json=payload(search_rows[:1], [answer("a")]))
        assert (await first).status_code == 200
        after = await client.post("/", json=payload(search_rows[:1], [answer("a")]))
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert "--max-requests" in refused.json()["error"] and after.status_code == 200


# -- refusals --------------------------------------------------------------------------------------------------


def _bad_requests(rows):
    good = payload(rows[:2], [answer("a"), answer("b")])
    label = json.loads(rows[0].label())
    cases = {
        "not JSON": (b"{not json", "the body is not JSON"),
        "not UTF-8": (b'{"query": "\xff"}', "the body is not JSON"),
        "not an object": ([1, 2], "the body must be a JSON object with the lists query, prompts, labels; got a list"),
        "missing keys": ({"query": []}, "the body has no 'prompts' or 'labels'"),
        "not a list": ({**good, "prompts": "p"}, "'prompts' must be a list, got a string"),
        "lengths differ": ({**good, "labels": good["labels"][:1]},
                           "query, prompts and labels must have the same length; got 2, 2 and 1"),
        "query not a string": ({**good, "query": [good["query"][0], 7]}, "query[1] must be a string, got a number"),
        "prompt not a string": ({**good, "prompts": [None, PROMPT]}, "prompts[0] must be a string, got null"),
        "query without its prompt": ({**good, "query": [good["query"][0], "other" + answer("b")]},
                                     "query[1] does not start with prompts[1]"),
        "label not JSON": ({**good, "labels": [good["labels"][0], "{oops"]},
                           "labels[1]: the OpenRLHF label is not JSON"),
        "label not an object": ({**good, "labels": [3, good["labels"][1]]},
                                "labels[0]: the OpenRLHF label must be a JSON object, got int"),
        "label without env_id": ({**good, "labels": [{"task": label["task"]}, good["labels"][1]]},
                                 "labels[0]: the OpenRLHF label has no env_id"),
        "label of another env": ({**good, "labels": [good["labels"][0], {**label, "env_id": SQL}]},
                                 f"labels[1] is a task of {SQL}, but this server scores {SEARCH}; serve that env's "
                                 f"reward with --env {SQL}"),
        "label with a bad task": ({**good, "labels": [{**label, "task": {"question": "q"}}, good["labels"][1]]},
                                  f"labels[0]: its task is not a task of {SEARCH}"),
    }
    assert sorted(cases) == sorted(BAD_REQUESTS)
    return cases


BAD_REQUESTS = ["not JSON", "not UTF-8", "not an object", "missing keys", "not a list", "lengths differ",
                "query not a string", "prompt not a string", "query without its prompt", "label not JSON",
                "label not an object", "label without env_id", "label of another env", "label with a bad task"]


@pytest.mark.parametrize("case", BAD_REQUESTS)
async def test_a_bad_request_is_a_400_saying_what_is_wrong(search_rows, case):
    body, message = _bad_requests(search_rows)[case]
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with served() as (client, _):
        got = await client.post("/get_reward", content=content, headers={"content-type": "application/json"})
    assert got.status_code == 400 and got.headers["content-type"] == "application/json"
    assert got.json()["error"].startswith(message), got.json()


async def test_the_size_limits_are_413s(search_rows):
    big = payload(search_rows[:1], [answer("a" * 2000)])
    async with served(max_request_bytes=1000, max_items=2, max_query_chars=500) as (client, _):
        declared = await client.post("/", json=big)

        async def chunks():
            for _ in range(20):
                yield b" " * 100
            yield json.dumps(payload([], [])).encode()

        streamed = await client.post("/", content=chunks())  # no Content-Length: cut while reading
        assert "content-length" not in streamed.request.headers
    async with served(max_items=2, max_query_chars=500) as (client, _):
        items = await client.post("/", json=payload([search_rows[0]] * 3, ["a"] * 3))
        long_query = await client.post("/", json=big)
        at_limits = await client.post("/", json=payload([search_rows[0]] * 2, ["a" * (500 - len(PROMPT))] * 2))
    assert declared.status_code == streamed.status_code == 413
    assert declared.json() == streamed.json() == {
        "error": "the body is over the limit of 1000 bytes (--max-request-bytes)"}
    assert items.status_code == 413 and items.json()["error"] == "3 items in one request, over the limit of 2 " \
                                                                  "(--max-items)"
    assert long_query.status_code == 413 and long_query.json()["error"].startswith("query[0] has ")
    assert "(--max-query-chars)" in long_query.json()["error"]
    assert at_limits.status_code == 200


async def test_other_paths_are_404_and_get_is_405_except_on_root():
    async with served() as (client, _):
        missing = await client.post("/v1/rewards", json={})
        get = await client.get("/get_reward")
        put = await client.put("/", json={})
    assert missing.status_code == 404 and missing.json() == {"error": "no such path /v1/rewards; POST to / or "
                                                                      "/get_reward"}
    assert get.status_code == 405 and get.json()["error"].startswith("GET is not allowed here")
    assert put.status_code == 405 and "POST" in put.headers["allow"]


# -- the command -----------------------------------------------------------------------------------------------


def test_rlf_serve_reward_serves_on_a_free_port_and_logs_each_request(search_rows):
    command = [*RLF, "serve", "reward", "--env", SEARCH, "--port", "0", "--log-level", "info"]
    gold = search_rows[0].task["golden_answers"][0]
    with server_process(command) as server:
        url = server.wait_for(REWARD_URL_RE).group(1)
        start = next(line for line in server.stderr.splitlines() if "serving the reward" in line)
        assert start == (f"rlf serve reward: serving the reward of {SEARCH} at {url} (POST / or /get_reward, "
                         "OpenRLHF --reward.remote_url)")
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
        got = httpx.post(f"{url}/get_reward", json=payload(search_rows[:2], [answer(gold), answer("no")]))
        refused = httpx.post(url, json={"query": []})
        server.wait_for(r"POST / 400 [\d.]+ ms: the body has no 'prompts' or 'labels'")
        logged = server.wait_for(r"POST /get_reward 200 [\d.]+ ms: 2 items, mean reward 0\.500$")
    assert got.status_code == 200 and got.json()["rewards"] == [1.0, 0.0]
    assert refused.status_code == 400 and logged


def test_the_module_runs_on_its_own_with_env_kwargs(sql_rows):
    command = [sys.executable, "-m", "rlfactory_adapters.reward_server", "--env", SQL, "--port", "0",
               "--set", "max_turns=3"]
    with server_process(command) as server:
        url = server.wait_for(REWARD_URL_RE).group(1)
        got = httpx.post(url, json=payload(sql_rows[:1], [answer(sql_rows[0].task["gold_sql"])]), timeout=60)
    lines = server.stderr.splitlines()
    assert lines[0] == (f"python -m rlfactory_adapters.reward_server: serving the reward of {SQL} at {url} (POST / or "
                        '/get_reward, OpenRLHF --reward.remote_url); env kwargs: {"max_turns": 3}')
    # the label names no kwargs, the server's env has some: said once, at warning level
    assert len(lines) == 2 and "WARNING" in lines[1] and "the labels' are not used" in lines[1]
    assert got.json()["rewards"] == [1.0]


@pytest.mark.parametrize(("args", "message"), [
    (["--env", "rlf/No-Such-v0"], "unknown env 'rlf/No-Such-v0'"),
    (["--env", SEARCH, "--env-kwargs", "{oops"], "--env-kwargs is not valid JSON"),
    (["--env", SEARCH, "--set", "max_turns=many"], "max_turns"),
    (["--env", SEARCH, "--set", "no_such_setting=1"], "unknown setting 'no_such_setting'"),
])
def test_a_users_mistake_is_one_line_and_status_2(args, message):
    result = subprocess.run([*RLF, "serve", "reward", *args, "--port", "0"], capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("rlf serve reward: error: ")
    assert message in result.stderr


def test_serve_lists_reward_and_its_help_is_its_own():
    listed = subprocess.run([*RLF, "serve", "-h"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "reward" in listed.stdout.split("one of", 1)[1]
    helped = subprocess.run([*RLF, "serve", "reward", "-h"], capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: rlf serve reward [-h] --env ENV")
    assert "--max-request-bytes" in helped.stdout and "--reward.remote_url" in " ".join(helped.stdout.split())
    missing = subprocess.run([*RLF, "serve", "reward"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "--env" in missing.stderr
