"""A flood of MCP sessions cannot lock a real HTTP tool server (a subprocess) for everyone else: one client's
sessions beyond its share end its own least recently used idle ones, idle sessions end sooner than the SDK's 30
minutes, a new session is refused (503) only while every one is busy, another client is served throughout, and the
toolbox opens a new session when its own was ended."""

from __future__ import annotations

import asyncio
import time

import httpx

from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from tests.server_process import http_tool_server

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "Authorization": "Bearer t"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "flood", "version": "0"}}}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
LIMITS = ("--auth-token", "t", "--max-sessions", "40", "--max-sessions-per-client", "8", "--session-idle-s", "3")


def from_address(address: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=address), timeout=30)


async def open_session(client: httpx.AsyncClient, url: str) -> httpx.Response:
    return await client.post(url, json=INITIALIZE, headers=HEADERS)


async def in_session(client: httpx.AsyncClient, url: str, session: str, body: dict = LIST) -> int:
    return (await client.post(url, json=body, headers={**HEADERS, "mcp-session-id": session,
                                                       "mcp-protocol-version": "2025-06-18"})).status_code


async def test_a_session_flood_ends_the_flooders_own_sessions_and_others_are_served():
    with http_tool_server("rlfactory_tool_servers.sleep", *LIMITS) as url:
        async with from_address("127.0.0.1") as flooder, from_address("127.0.0.2") as other:
            flood = [await open_session(flooder, url) for _ in range(300)]
            assert all(response.status_code == 200 for response in flood)
            ids = [response.headers["mcp-session-id"] for response in flood]
            statuses = [await in_session(flooder, url, session) for session in ids[-12:]]
            assert statuses[:4] == [404] * 4 and statuses[4:] == [200] * 8  # only its last 8 live on
            for _ in range(3):  # another client, meanwhile, is served as if alone
                opened = await open_session(other, url)
                assert opened.status_code == 200
                assert await in_session(other, url, opened.headers["mcp-session-id"]) == 200


async def test_every_session_busy_refuses_a_new_one_and_idle_ones_end_sooner():
    sleep = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 1500}}}
    with http_tool_server("rlfactory_tool_servers.sleep", *LIMITS) as url:
        async with from_address("127.0.0.1") as client:
            ids = [(await open_session(client, url)).headers["mcp-session-id"] for _ in range(8)]
            await asyncio.gather(*(in_session(client, url, session, {**LIST, "method": "notifications/initialized"})
                                   for session in ids))
            busy = [asyncio.ensure_future(in_session(client, url, session, sleep)) for session in ids]
            await asyncio.sleep(0.5)
            refused = await open_session(client, url)
            assert refused.status_code == 503 and "open and busy" in refused.json()["error"]["message"]
            assert await asyncio.gather(*busy) == [200] * 8
            assert (await open_session(client, url)).status_code == 200  # one of its idle ones ended for it
            await asyncio.sleep(3.5)
            fresh = await open_session(client, url)  # ends every session idle for longer than 3 s
            assert fresh.status_code == 200
            assert [await in_session(client, url, session) for session in ids] == [404] * 8


def test_the_toolbox_opens_a_new_session_when_its_own_was_ended():
    with http_tool_server("rlfactory_tool_servers.sleep", *LIMITS[:-1], "1") as url:
        entry = {"url": url, "headers": {"Authorization": "Bearer t"}}
        with Toolbox({"mcpServers": {"sleep": entry}}) as toolbox:
            assert "slept" in toolbox.call_many([ToolCall("sleep", {"ms": 1})])[0].text
            time.sleep(2.5)  # the server ends the idle session
            result = toolbox.call_many([ToolCall("sleep", {"ms": 1})])[0]
            assert not result.is_error and "slept" in result.text, result.text
