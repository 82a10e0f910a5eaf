"""``rlf serve reward`` as a shared service a client cannot blow up or starve: a token (401 otherwise, the bearer
scheme in any letter case), a label's task refused unless it is one of the server's own (or ``--trust-labels``),
and then bounded in bytes (the attack of issue 27: one label whose gold query yields 99,999 rows of wide
characters took the server from 111 MB to 2.8 GB), and slots shared fairly among clients."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import httpx

from rlfactory_adapters.reward_server import Limits, RewardService, build_app
from rlfactory_adapters.task_rows import task_rows
from rlfactory_envs import make_env
from rlfactory_reward_models.base import Reward
from tests.adapters.test_reward_server import PROMPT, SEARCH, SQL, ScriptedReward, answer, payload, served
from tests.server_process import REWARD_URL_RE, server_process

WIDE_GOLD = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 99999) "
             "SELECT x, char(128512) || hex(zeroblob(300)) FROM c")
"""99,999 rows of 601 characters, one of them 4 bytes wide: 63 MB as the old count read them, 250 MB in Python, on
each of the task's eleven test-suite databases, cached."""


def attack_label() -> str:
    task = {"task_id": "attack", "db_id": "bookshop", "question": "Everything?", "gold_sql": WIDE_GOLD}
    return json.dumps({"env_id": SQL, "env_kwargs": {}, "task": task})


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def post(url: str, label: str, sql: str, token: str = "t") -> httpx.Response:
    body = {"query": [PROMPT + answer(sql)], "prompts": [PROMPT], "labels": [label]}
    return httpx.post(url, json=body, headers={"Authorization": f"bearer {token}"}, timeout=120)


def test_a_label_whose_gold_query_yields_99999_wide_rows_is_refused_or_bounded():
    honest = next(iter(task_rows(SQL, limit=1)))
    for trust in ([], ["--trust-labels"]):
        command = [sys.executable, "-m", "rlfactory_adapters.reward_server", "--env", SQL, "--port", "0",
                   "--auth-token", "t", *trust]
        with server_process(command) as server:
            url = server.wait_for(REWARD_URL_RE).group(1)
            assert httpx.post(url, json={}).status_code == 401
            assert post(url, honest.label(), honest.task["gold_sql"], token="wrong").status_code == 401
            warm = post(url, honest.label(), honest.task["gold_sql"])  # suites built, pools open
            assert warm.status_code == 200 and warm.json()["rewards"] == [1.0], warm.text
            before = peak_rss_mb(server.process.pid)
            attacked = [post(url, attack_label(), WIDE_GOLD) for _ in range(3)]
            grown = peak_rss_mb(server.process.pid) - before
        if not trust:
            assert all(got.status_code == 400 and "not one of this server's" in got.json()["error"]
                       and "--trust-labels" in got.json()["error"] for got in attacked)
        else:
            assert all(got.status_code == 200 and got.json()["rewards"] == [0.0] for got in attacked)
            assert "gold query failed" in attacked[0].json()["reasons"][0]
        assert grown < 150, f"the server grew by {grown:.0f} MB"  # 2.7 GB a request before


async def test_a_task_the_server_does_not_hold_is_refused_unless_labels_are_trusted():
    row = next(iter(task_rows(SEARCH, limit=1)))
    changed = json.loads(row.label())
    changed["task"]["golden_answers"] = ["anything I like"]
    async with served() as (client, _):
        got = await client.post("/", json={**payload([row], [answer("anything I like")]),
                                           "labels": [json.dumps(changed)]})
        assert got.status_code == 400 and "labels[0]: its task (task_id" in got.json()["error"]
    env = make_env(SEARCH)
    try:
        trusting = RewardService(env, SEARCH, {}, Limits(), trust_labels=True)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=build_app(trusting)),
                                     base_url="http://reward") as client:
            got = await client.post("/", json={**payload([row], [answer("anything I like")]),
                                               "labels": [json.dumps(changed)]})
        assert got.status_code == 200 and got.json()["rewards"] == [1.0]
    finally:
        env.close()


async def test_one_clients_big_request_does_not_starve_another():
    model = ScriptedReward(lambda item: Reward(1.0), delay_s=0.1)
    rows = list(task_rows(SEARCH, limit=1))
    async with served(reward_model=model, reward_parts=[], max_concurrency=2) as (_, service):
        app = build_app(service)
        clients = [httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=(address, 1000)),
                                     base_url="http://reward") for address in ("10.0.0.1", "10.0.0.2")]
        big = asyncio.ensure_future(clients[0].post("/", json=payload(rows * 40, [answer("a")] * 40)))
        await asyncio.sleep(0.15)
        started = time.monotonic()
        small = await clients[1].post("/", json=payload(rows, [answer("a")]))
        waited = time.monotonic() - started
        assert small.json()["rewards"] == [1.0] and waited < 1.0, waited  # first come, first served: 2 s
        assert (await big).json()["rewards"] == [1.0] * 40
        for client in clients:
            await client.aclose()
