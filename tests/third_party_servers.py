"""MCP programs that nobody in this project wrote, installed from npm by ``bash .ci/mcp_servers.sh``: a reference
server, and the MCP Inspector as an outside client.

The integration tests run them as real subprocesses: node runs the installed entry script directly (not through
npx), so nothing is fetched while the tests run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
INSTALL_SCRIPT = REPO_ROOT / ".ci" / "mcp_servers.sh"
NODE_PREFIX = REPO_ROOT / ".third_party" / "node"

# The official reference server of the MCP project; the pin must equal the one in .ci/mcp_servers.sh.
EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
EVERYTHING_BIN = "mcp-server-everything"  # the package's ``bin`` entry: the launcher script

# The MCP Inspector, whose CLI mode (``inspector --cli``) lists and calls tools as an outside client; the pin must
# equal the one in .ci/mcp_servers.sh.
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"
INSPECTOR_BIN = "inspector"

_INSTALL_HINT = "run `bash .ci/mcp_servers.sh` (needs node and npm)"


def installed_script(package: str, version: str, bin_name: str) -> tuple[str, Path]:
    """``(node, script)``: absolute paths of node and of ``package``'s ``bin_name`` entry script as
    ``.ci/mcp_servers.sh`` installs it. Calls ``pytest.skip`` when node is not on PATH, or the package is not
    installed at ``version``."""
    node = shutil.which("node")
    if node is None:
        pytest.skip(f"node is not on PATH; install Node.js, then {_INSTALL_HINT}")
    manifest_path = NODE_PREFIX / "node_modules" / package / "package.json"
    if not manifest_path.is_file():
        pytest.skip(f"{package} is not installed in {NODE_PREFIX}; {_INSTALL_HINT}")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("version") != version:
        pytest.skip(f"{package} {manifest.get('version')} is installed in {NODE_PREFIX}, the tests pin {version}; "
                    f"{_INSTALL_HINT}")
    script = (manifest_path.parent / manifest["bin"][bin_name]).resolve()
    if not script.is_file():
        pytest.skip(f"{package}'s entry script {script} is missing; {_INSTALL_HINT}")
    return os.path.abspath(node), script


def inspector_command() -> list[str]:
    """The command that runs the installed MCP Inspector: ``node <entry script>`` (add ``--cli`` and the rest);
    ``pytest.skip`` as ``installed_script`` does."""
    node, script = installed_script(INSPECTOR_PACKAGE, INSPECTOR_VERSION, INSPECTOR_BIN)
    return [node, str(script)]


def everything_server_entry(**tuning: Any) -> dict[str, Any]:
    """The ``mcpServers`` entry that launches the installed everything server over stdio: ``node <entry script>
    stdio``, both as absolute paths, with the toolbox settings ``tuning`` (``timeout_s``, ...) added.

    Calls ``pytest.skip`` when node is not on PATH, or the package is not installed at ``EVERYTHING_VERSION``.
    """
    node, script = installed_script(EVERYTHING_PACKAGE, EVERYTHING_VERSION, EVERYTHING_BIN)
    # The launcher's first argument picks the transport (stdio, sse, streamableHttp); stdio is its default.
    return {"command": node, "args": [str(script), "stdio"], **tuning}
