"""MCP servers that nobody in this project wrote, installed from npm by ``bash .ci/mcp_servers.sh``.

The integration tests launch them as real stdio subprocesses: node runs the installed entry script directly
(not through npx), so nothing is fetched while the tests run.
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

_INSTALL_HINT = "run `bash .ci/mcp_servers.sh` (needs node and npm)"


def everything_package_dir() -> Path:
    """Where ``.ci/mcp_servers.sh`` installs the everything server (the folder of its ``package.json``)."""
    return NODE_PREFIX / "node_modules" / EVERYTHING_PACKAGE


def everything_server_entry(**tuning: Any) -> dict[str, Any]:
    """The ``mcpServers`` entry that launches the installed everything server over stdio: ``node <entry script>
    stdio``, both as absolute paths, with the toolbox settings ``tuning`` (``timeout_s``, ...) added.

    Calls ``pytest.skip`` when node is not on PATH, or the package is not installed at ``EVERYTHING_VERSION``.
    """
    node = shutil.which("node")
    if node is None:
        pytest.skip(f"node is not on PATH; install Node.js, then {_INSTALL_HINT}")
    manifest_path = everything_package_dir() / "package.json"
    if not manifest_path.is_file():
        pytest.skip(f"{EVERYTHING_PACKAGE} is not installed in {NODE_PREFIX}; {_INSTALL_HINT}")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("version") != EVERYTHING_VERSION:
        pytest.skip(f"{EVERYTHING_PACKAGE} {manifest.get('version')} is installed in {NODE_PREFIX}, the tests pin "
                    f"{EVERYTHING_VERSION}; {_INSTALL_HINT}")
    script = (everything_package_dir() / manifest["bin"][EVERYTHING_BIN]).resolve()
    if not script.is_file():
        pytest.skip(f"{EVERYTHING_PACKAGE}'s entry script {script} is missing; {_INSTALL_HINT}")
    # The launcher's first argument picks the transport (stdio, sse, streamableHttp); stdio is its default.
    return {"command": os.path.abspath(node), "args": [str(script), "stdio"], **tuning}
