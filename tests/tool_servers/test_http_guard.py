"""Who may call a tool server over HTTP (a real server process): a bearer token the toolbox sends from the
mcpServers entry's headers, a foreign Host refused, and a loud warning for a server open to the network."""

from __future__ import annotations

import sys

import httpx
import pytest

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.session import TransportError
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_tool_servers.http_guard import exposure_warning, is_loopback
from tests.server_process import http_tool_server, server_process

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "0"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def sleep_once(url: str, headers: dict[str, str] | None = None) -> str:
    entry = {"url": url, **({"headers": headers} if headers else {})}
    with Toolbox({"mcpServers": {"sleep": entry}}) as toolbox:
        return toolbox.call_many([ToolCall("sleep", {"ms": 1})])[0].text


def test_a_token_is_required_and_sent_from_the_entrys_headers():
    with http_tool_server("rlfactory_tool_servers.sleep", "--auth-token", "s3cret") as url:
        for scheme in ("Bearer", "bearer", "BEARER"):  # the scheme's name is case-insensitive (RFC 9110)
            assert "slept" in sleep_once(url, {"Authorization": f"{scheme} s3cret"})
        for headers in (None, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"},
                        {"Authorization": "Basic s3cret"}, {"Authorization": "Bearers3cret"}):
            with pytest.raises((TransportError, ConfigError), match=r"HTTP 401.*Authorization.*Bearer <token>"):
                sleep_once(url, headers)
        refused = httpx.post(url, json=INITIALIZE, headers=HEADERS)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"


def test_the_token_can_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("RLF_MCP_AUTH_TOKEN", "from-env")
    with http_tool_server("rlfactory_tool_servers.sleep") as url:
        assert httpx.post(url, json=INITIALIZE, headers=HEADERS).status_code == 401
        assert "slept" in sleep_once(url, {"Authorization": "Bearer from-env"})


def test_a_foreign_host_or_origin_is_refused_on_loopback():
    with http_tool_server("rlfactory_tool_servers.sleep") as url:
        assert httpx.post(url, json=INITIALIZE, headers=HEADERS).status_code == 200
        foreign_host = httpx.post(url, json=INITIALIZE, headers={**HEADERS, "Host": "evil.example:80"})
        foreign_origin = httpx.post(url, json=INITIALIZE, headers={**HEADERS, "Origin": "http://evil.example"})
        assert foreign_host.status_code in (403, 421) and foreign_origin.status_code == 403


def test_allowed_hosts_turn_the_check_on_for_another_bind():
    command = [sys.executable, "-m", "rlfactory_tool_servers.sleep", "--transport", "http", "--port", "0",
               "--host", "0.0.0.0", "--allowed-hosts", "tools.internal", "--auth-token", "t"]
    with server_process(command) as server:
        url = server.url().replace("0.0.0.0", "127.0.0.1")
        auth = {**HEADERS, "Authorization": "Bearer t"}
        assert httpx.post(url, json=INITIALIZE, headers={**auth, "Host": "tools.internal:9"}).status_code == 200
        assert httpx.post(url, json=INITIALIZE, headers={**auth, "Host": "evil.example"}).status_code in (403, 421)
        assert "WARNING: listening on" not in server.stderr


def test_a_server_open_to_the_network_says_so_at_start():
    command = [sys.executable, "-m", "rlfactory_tool_servers.sleep", "--transport", "http", "--port", "0",
               "--host", "0.0.0.0"]
    with server_process(command) as server:
        line = server.wait_for("WARNING: listening on 0.0.0.0").string
        assert "--auth-token" in line and "RLF_MCP_AUTH_TOKEN" in line and "--allowed-hosts" in line


def test_the_warning_rules():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("127.0.0.2") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.5") and not is_loopback("tools.internal")
    assert exposure_warning("p", "127.0.0.1", None, []) is None
    assert exposure_warning("p", "0.0.0.0", "t", []) is None
    assert "no --allowed-hosts" not in exposure_warning("p", "0.0.0.0", None, ["tools.internal"])
