"""The "Calling MCP tools directly: Toolbox" block of docs/tool-servers.md runs as written and prints what its comments
say."""

from __future__ import annotations

import subprocess
import sys

from tests.test_readme import blocks


def test_the_toolbox_block_runs_and_prints_what_it_says(tmp_path):
    code = blocks("docs/tool-servers.md")["toolbox"]
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['search']", 'False Doc 1(Title: "Ysolde Harn") Ysolde Harn',
                                        "['Battle of Corrow Pass', 'Siege of Wistrel']"]
    for line in done.stdout.splitlines():  # the comments beside the prints show this output
        assert f"# {line}" in code or f"# the top titles: {line}" in code, line
