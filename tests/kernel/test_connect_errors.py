"""A server that cannot be reached makes ``Toolbox.start`` fail with a ``TransportError`` naming the cause: real
commands, real processes and a real closed port, and nothing left running afterwards."""

import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rlfactory_envs.kernel.mcp.config import StdioServerEntry
from rlfactory_envs.kernel.mcp.errors import TransportError
from rlfactory_envs.kernel.mcp.loop_thread import LoopThread
from rlfactory_envs.kernel.mcp.stdio_connect import command_problem
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from tests.conftest import REPO_ROOT, free_port
from tests.server_process import listening_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child processes are read from /proc")


def child_pids() -> set[int]:
    """The live (not yet reaped) children of this process, from every thread."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            pids.update(int(pid) for pid in (task / "children").read_text().split())
        except FileNotFoundError:  # the thread ended meanwhile; its children went to another thread
            pass
    return pids


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def nothing_left_behind():
    """After the test, no child process runs, no thread remains that did not exist before, and no more file
    descriptors are open than before."""
    LoopThread().stop()  # uvloop opens its process-wide descriptors (a signal pipe) with the first loop
    threads, children, fds = set(threading.enumerate()), child_pids(), open_fds()
    yield
    deadline = time.monotonic() + 10  # threads that wait for a reaped process or an idle executor end on their own
    while True:
        extra_threads = [t.name for t in set(threading.enumerate()) - threads]
        extra_children = child_pids() - children
        if not extra_threads and not extra_children or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not extra_children, f"child processes left running: {extra_children}"
    assert not extra_threads, f"threads left running: {extra_threads}"
    assert open_fds() <= fds, f"{open_fds() - fds} more file descriptors open than before"


def start_error(servers: dict) -> str:
    """The message of the ``TransportError`` that ``Toolbox.start`` raises for ``servers``; the toolbox is closed."""
    toolbox = Toolbox({"mcpServers": servers})
    try:
        with pytest.raises(TransportError) as failure:
            toolbox.start()
    finally:
        toolbox.close()
    return str(failure.value)


def python(code: str, **tuning) -> dict:
    return {"command": sys.executable, "args": ["-c", textwrap.dedent(code)], "retries": 0, **tuning}


@pytest.mark.usefixtures("nothing_left_behind")
def test_a_command_that_does_not_exist_is_named_before_anything_is_spawned():
    message = start_error({"calc": {"command": "pyhton", "args": ["-m", "calc"]}})
    # a failed spawn would read "cannot start command 'pyhton': No such file or directory"
    assert message == ("server 'calc': command 'pyhton' not found (not on PATH and not a file); "
                       "fix mcpServers.calc.command")


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_a_process_that_exits_at_start_gives_its_exit_code_and_stderr():
    message = start_error({"calc": python("""
        import sys
        print("calc: cannot read config.yaml", file=sys.stderr)
        sys.exit(3)
    """)})
    headline, *tail = message.splitlines()
    assert headline == "server 'calc': the process exited with code 3 during start; last lines of its stderr:"
    assert tail == ["    calc: cannot read config.yaml"]


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_a_silent_exit_says_so():
    message = start_error({"calc": python("import sys; sys.exit(3)")})
    assert message == "server 'calc': the process exited with code 3 during start; it wrote nothing to stderr"


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_a_process_killed_by_a_signal_names_the_signal():
    message = start_error({"calc": python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")})
    assert message == "server 'calc': the process was killed by SIGKILL during start; it wrote nothing to stderr"


@pytest.mark.usefixtures("nothing_left_behind")
def test_a_file_that_cannot_be_executed_gives_the_reason(tmp_path):
    not_a_program = make_script(tmp_path / "calc-server")
    not_a_program.write_text("this is no program\n")
    message = start_error({"calc": {"command": str(not_a_program), "retries": 0}})
    assert message == (f"server 'calc': cannot start command '{not_a_program}': Exec format error; "
                       "fix mcpServers.calc.command")


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_a_python_server_that_crashes_on_import_shows_the_end_of_its_traceback(capfd):
    message = start_error({"calc": python("import rlfactory_no_such_module")})
    assert message.startswith("server 'calc': the process exited with code 1 during start; last lines of its stderr:\n")
    assert message.splitlines()[-1] == "    ModuleNotFoundError: No module named 'rlfactory_no_such_module'"
    assert "ModuleNotFoundError" in capfd.readouterr().err  # forwarded to our stderr as it was written


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_a_server_that_floods_stderr_neither_blocks_nor_floods_the_message(capfd):
    message = start_error({"calc": python("""
        import sys
        for i in range(20_000):
            print(f"progress line {i}", file=sys.stderr)
        print("the last words", file=sys.stderr)
        sys.exit(5)
    """, connect_timeout_s=20)})
    lines = message.splitlines()
    assert lines[0] == "server 'calc': the process exited with code 5 during start; last lines of its stderr:"
    assert lines[-2:] == ["    progress line 19999", "    the last words"]
    assert len(lines) <= 21 and len(message) < 5000
    assert capfd.readouterr().err.count("progress line") == 20_000


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_a_server_that_never_answers_is_named_with_the_timeout():
    message = start_error({"slow": python("import time; time.sleep(60)", connect_timeout_s=1)})
    assert message == "server 'slow' did not answer within 1 s (mcpServers.slow.connect_timeout_s)"


@pytest.mark.usefixtures("nothing_left_behind")
def test_an_http_url_where_nothing_listens_is_refused():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    message = start_error({"remote": {"url": url, "retries": 0}})
    assert message == f"server 'remote': cannot connect to {url}: connection refused"


@pytest.fixture
def plain_http_server():
    """``python -m http.server`` on a free loopback port: it answers an MCP POST with 501."""
    port = free_port()
    with listening_process([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.integration
def test_an_http_error_status_is_named_with_its_reason(plain_http_server, nothing_left_behind):
    message = start_error({"remote": {"url": plain_http_server, "retries": 0}})
    assert message == f"server 'remote': cannot connect to {plain_http_server}: HTTP 501 Unsupported method ('POST')"


@pytest.mark.usefixtures("nothing_left_behind")
def test_an_inprocess_module_that_does_not_import_is_named():
    message = start_error({"calc": {"module": "rlfactory_no_such_module"}})
    assert message == "cannot build server 'calc': No module named 'rlfactory_no_such_module'"


@pytest.mark.usefixtures("nothing_left_behind")
def test_an_inprocess_build_server_that_raises_is_named(tmp_path, monkeypatch):
    (tmp_path / "rlfactory_broken_server.py").write_text(
        "def build_server(args):\n    raise RuntimeError('the index is missing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    message = start_error({"calc": {"module": "rlfactory_broken_server"}})
    assert message == "cannot build server 'calc': the index is missing"


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_a_healthy_stdio_server_works_and_its_stderr_reaches_ours(capfd):
    entry = {"command": sys.executable, "args": ["-X", "importtime", "-m", "rlfactory_tool_servers.sleep"],
             "cwd": str(REPO_ROOT)}
    with Toolbox({"mcpServers": {"sleep": entry}}) as toolbox:
        [result] = toolbox.call_many([ToolCall("sleep", {"ms": 1})])
        assert result.text == "slept 1 ms" and not result.is_error
    assert "rlfactory_tool_servers.sleep" in capfd.readouterr().err  # -X importtime reports every import on stderr


def make_script(path: Path, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


def test_the_command_check_follows_the_servers_path_and_cwd(tmp_path):
    make_script(tmp_path / "bin" / "calc-server")
    make_script(tmp_path / "here" / "local-server")
    make_script(tmp_path / "here" / "plain.txt", mode=0o644)

    def problem(command, **entry):
        return command_problem(StdioServerEntry(command=command, **entry))

    assert problem(sys.executable) is None
    assert problem("sh") is None  # on our PATH, which the server inherits
    assert problem("calc-server", env={"PATH": str(tmp_path / "bin")}) is None
    assert problem("calc-server") == ("command", "command 'calc-server' not found (not on PATH and not a file)")
    assert problem("local-server", env={"PATH": "here"}, cwd=str(tmp_path)) is None  # a relative PATH entry
    assert problem("./local-server", cwd=str(tmp_path / "here")) is None
    assert problem("./local-server") == ("command", "command './local-server' not found (no such file)")
    assert problem("./plain.txt", cwd=str(tmp_path / "here")) == ("command", "command './plain.txt' is not executable")
    nowhere = tmp_path / "nowhere"
    assert problem("sh", cwd=str(nowhere)) == ("cwd", f"working directory '{nowhere}' does not exist")
