"""A tool server command run as a user runs it, in a subprocess, with its stderr read as it comes: a test waits for
the start message (and reads the URL in it) or for a log line, instead of polling a port."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tests.conftest import REPO_ROOT

HTTP_URL_RE = re.compile(r"over streamable HTTP at (http://\S+);")
"""The URL in a server's start message."""
REWARD_URL_RE = re.compile(r": serving the reward of \S+ at (http://\S+) ")
"""The URL in ``rlf serve reward``'s start message."""


class ServerProcess:
    """A running server command; ``stderr`` is what it wrote there so far."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def stderr(self) -> str:
        with self._changed:
            return "".join(self._lines)

    def wait_for(self, pattern: str | re.Pattern[str], timeout_s: float = 60.0) -> re.Match[str]:
        """The first match of ``pattern`` in a stderr line, waiting for it; ``AssertionError`` with the stderr when
        the process ends or ``timeout_s`` passes first."""
        pattern = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                for line in self._lines:
                    if found := pattern.search(line):
                        return found
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no line matching {pattern.pattern!r} on stderr (exit status "
                                         f"{self.process.poll()}):\n{''.join(self._lines)}")
                self._changed.wait(min(left, 0.5))

    def url(self, timeout_s: float = 60.0) -> str:
        """The MCP URL the start message gives."""
        return self.wait_for(HTTP_URL_RE, timeout_s).group(1)

    def stop(self) -> str:
        """Stop the process (if it still runs) and wait for it; what it wrote on stdout."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._reader.join(10)
        assert self.process.stdout is not None
        return self.process.stdout.read()


@contextmanager
def server_process(command: Sequence[str]) -> Iterator[ServerProcess]:
    """Run ``command`` from the repository root, stdin closed; stopped on exit."""
    process = subprocess.Popen(list(command), cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    server = ServerProcess(process)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def http_tool_server(module: str, *args: str, timeout_s: float = 60.0) -> Iterator[str]:
    """``python -m module args --transport http --port 0``; yields the MCP URL its start message gives, then stops
    it."""
    with server_process([sys.executable, "-m", module, *args, "--transport", "http", "--port", "0"]) as server:
        yield server.url(timeout_s)


@contextmanager
def listening_process(command: Sequence[str], port: int, timeout_s: float = 30.0) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` (a server that says nothing when it is ready) until it accepts connections on loopback
    ``port``; stopped on exit."""
    process = subprocess.Popen(list(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, f"{command} did not start listening"
                time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)
