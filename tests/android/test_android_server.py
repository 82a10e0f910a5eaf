"""The android tool server: phones bounded in number and idle time, the env's tools, and the actions over a real MCP
client, as a user driving it without our env would (the episode in each request's ``_meta``)."""

from __future__ import annotations

import json
import time

import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers import wire
from rlfactory_tool_servers.android.server import AndroidTools, build_server
from rlfactory_tool_servers.android.sessions import DeviceStore

U = {wire.EPISODE: "u"}


def test_the_store_keeps_at_most_max_devices_dropping_the_least_recently_used():
    store = DeviceStore(max_devices=3)
    for session in "abc":
        store.open(session, "ContactsAddContact", 0, None, "t3a")
    store.get("a")
    store.open("d", "ContactsAddContact", 0, None, "t3a")
    assert len(store) == 3 and store.dropped == 1
    with pytest.raises(Exception, match="there is no phone for episode 'b'"):
        store.get("b")


def test_an_idle_phone_is_dropped_at_the_next_open():
    store = DeviceStore(idle_s=0.05)
    store.open("old", "ContactsAddContact", 0, None, "t3a")
    time.sleep(0.1)
    store.open("new", "ContactsAddContact", 1, None, "t3a")
    assert len(store) == 1 and store.dropped == 1


def test_the_server_option_bounds_the_phones():
    service_store = []
    original = AndroidTools.__init__

    def spy(self, store=None):
        service_store.append(store)
        original(self, store)

    AndroidTools.__init__ = spy
    try:
        build_server(["--max-devices", "7", "--idle-s", "9"])
    finally:
        AndroidTools.__init__ = original
    assert (service_store[0].max_devices, service_store[0].idle_s) == (7, 9)
    with pytest.raises(SystemExit):
        build_server(["--max-devices", "0"])


@pytest.mark.parametrize("arguments, message", [
    ({"template": "Nope"}, "no task template 'Nope'"),
    ({"template": "ContactsAddContact", "params": "[1]"}, "params must be a JSON object"),
    ({"template": "ContactsAddContact", "params": "{"}, "params must be a JSON object"),
    ({"template": "ContactsAddContact", "observation": "png"}, "observation must be one of"),
])
def test_device_open_refuses_bad_arguments_with_a_message(arguments, message):
    tools = AndroidTools()
    arguments = {"episode": "s", "seed": 0, "params": "", "observation": "t3a", **arguments}
    with pytest.raises(ToolError, match=message):
        tools.device_open(**arguments)
    assert len(tools.store) == 0


async def test_an_episode_id_that_is_no_short_string_is_refused():
    async with Client(build_server([])) as client:
        for bad in ("x" * 201, "", 5):
            opened = await client.call_tool("device_open", {"template": "ContactsAddContact"},
                                            meta={wire.EPISODE: bad})
            assert opened.is_error and "at most 200 characters" in opened.content[0].text


async def test_a_client_drives_a_phone_through_the_mcp_tools():
    async with Client(build_server([])) as client:
        opened = await client.call_tool("device_open", {"template": "ContactsPhoneNumber", "seed": 3}, meta=U)
        assert "UI element 0" in opened.content[0].text
        result = await client.call_tool("open_app", {"app_name": "Contacts"}, meta=U)
        assert "Opened Contacts." in result.content[0].text and "The screen now:" in result.content[0].text
        bad = await client.call_tool("click", {"index": 99}, meta=U)
        assert bad.is_error and "Nothing changed." in bad.content[0].text
        ended = await client.call_tool("status", {"goal_status": "complete"}, meta=U)
        assert "Episode ended" in ended.content[0].text
        after = await client.call_tool("wait", {}, meta=U)
        assert after.is_error and "the episode has ended" in after.content[0].text
        verdict = json.loads((await client.call_tool("device_verify", {}, meta=U)).content[0].text)
        assert verdict["success"] is False and verdict["subgoals"]["answered"] is False
        assert verdict["actions"] == 1
        closed = await client.call_tool("device_close", {}, meta=U)
        assert closed.content[0].text == "closed"
        missing = await client.call_tool("get_screen", {}, meta=U)
        assert missing.is_error and "device_open" in missing.content[0].text


async def test_a_thousand_phones_in_one_batched_request():
    async with Client(build_server([])) as client:
        episodes = {wire.EPISODES: [f"s{i}" for i in range(1000)]}
        calls = [{"template": "ContactsAddContact", "seed": i} for i in range(1000)]
        opened = (await client.call_tool("device_open_batch", {"calls": calls}, meta=episodes)).structured_content
        opened = opened["results"]
        assert len(opened) == 1000 and not any(entry["is_error"] for entry in opened)
        clicks = [{"app_name": "Contacts"} for i in range(1000)]
        acted = (await client.call_tool("open_app_batch", {"calls": clicks}, meta=episodes)).structured_content
        acted = acted["results"]
        assert all("Opened Contacts." in entry["text"] for entry in acted)
