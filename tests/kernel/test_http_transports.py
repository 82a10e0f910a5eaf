"""The ``type`` of a ``url`` entry, as qwen-agent and Claude configs write it: one config file serves both them and
the toolbox. Streamable HTTP is the default; ``"sse"`` reaches a server that speaks the older HTTP+SSE transport;
a mismatch is named with the fix."""

import sys
import textwrap
from collections.abc import Iterator

import pytest

from rlfactory_envs.kernel.mcp.config import HttpServerEntry, load_mcp_config
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from tests.conftest import free_port
from tests.kernel.test_connect_errors import start_error
from tests.server_process import http_tool_server, listening_process

SSE_SERVER = textwrap.dedent("""
    import sys
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    server.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
""")


@pytest.mark.parametrize("written, transport", [
    (None, "streamable-http"), ("streamable-http", "streamable-http"), ("streamable_http", "streamable-http"),
    ("streamableHttp", "streamable-http"), ("http", "streamable-http"), ("sse", "sse"),
])
def test_a_url_entry_takes_the_type_names_other_clients_write(written, transport):
    entry = {"url": "http://127.0.0.1:8000/mcp", **({"type": written} if written else {})}
    [parsed] = load_mcp_config({"mcpServers": {"s": entry}}).servers.values()
    assert isinstance(parsed, HttpServerEntry) and parsed.type == transport


@pytest.mark.parametrize("entry, message", [
    ({"url": "http://h/mcp", "type": "stdio"},
     "mcpServers.s.type is 'stdio', but an entry with 'url' takes one of 'streamable-http', 'streamable_http', "
     "'streamableHttp', 'http', 'sse' or no type"),
    ({"url": "http://h/mcp", "type": "websocket"}, "mcpServers.s.type is 'websocket'"),
    ({"command": "python", "type": "sse"}, "mcpServers.s.type is 'sse', but an entry with 'command' takes one of "
     "'stdio' or no type"),
])
def test_a_type_that_contradicts_the_entry_is_refused(entry, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        load_mcp_config({"mcpServers": {"s": entry}})


def test_a_stdio_entry_may_say_it_is_stdio():
    [parsed] = load_mcp_config({"mcpServers": {"s": {"command": "python", "type": "stdio"}}}).servers.values()
    assert parsed.command == sys.executable


@pytest.fixture
def sse_server(tmp_path) -> Iterator[str]:
    """An MCP server of the SDK on the HTTP+SSE transport, on a free loopback port; yields its ``/sse`` URL."""
    port = free_port()
    script = tmp_path / "sse_server.py"
    script.write_text(SSE_SERVER)
    with listening_process([sys.executable, str(script), str(port)], port):
        yield f"http://127.0.0.1:{port}/sse"


@pytest.mark.integration
def test_an_sse_entry_reaches_an_sse_server(sse_server):
    toolbox = Toolbox({"mcpServers": {"calc": {"url": sse_server, "type": "sse"}}})
    try:
        toolbox.start()
        assert [spec.name for spec in toolbox.specs] == ["add"]
        [result] = toolbox.call_many([ToolCall("add", {"a": 2, "b": 40})])
        assert (result.text, result.is_error) == ("42", False)
    finally:
        toolbox.close()


@pytest.mark.integration
def test_an_sse_server_reached_as_streamable_http_says_which_type_to_set(sse_server):
    message = start_error({"calc": {"url": sse_server, "retries": 0}})
    assert message.startswith(f"server 'calc': cannot connect to {sse_server}: HTTP 405")
    assert 'set "type": "sse" in its mcpServers entry' in message


@pytest.mark.integration
def test_a_streamable_http_server_reached_as_sse_says_which_type_to_set(tmp_path):
    with http_tool_server("rlfactory_tool_servers.sleep") as url:
        message = start_error({"calc": {"url": url, "type": "sse", "retries": 0}})
    assert message.startswith(f"server 'calc': cannot connect to {url}: HTTP ")
    assert 'set "type": "streamable-http" in its mcpServers entry' in message
