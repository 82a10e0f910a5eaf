"""``rlf view`` as a user runs it, in a subprocess, and a real headless Chromium to look at it: Debian's
``chromium`` package driven by Playwright with the system executable (Playwright never downloads a browser here).
Tests that need the browser skip, saying why, where it or Playwright is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("RLF_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
URL_RE = re.compile(r"at (http://\S+) ")
SCREENSHOTS = Path(os.environ.get("RLF_VIEW_SCREENSHOTS", Path(tempfile.gettempdir()) / "rlf-view-screenshots"))
"""Where the browser tests write their screenshots (docs/images/ holds a few of them)."""


def rlf_command() -> list[str]:
    """The installed ``rlf`` console script of this interpreter's environment."""
    script = Path(sys.executable).with_name("rlf")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rlfactory_envs.cli"]


class Viewer:
    """A running ``rlf view``: its address, its process (for its memory), and what it printed."""

    def __init__(self, process: subprocess.Popen[str], url: str):
        self.process = process
        self.url = url

    def rss_mb(self) -> float:
        """The server process's resident memory now, in MiB."""
        return _status_kb(self.process.pid, "VmRSS") / 1024

    def peak_rss_mb(self) -> float:
        return _status_kb(self.process.pid, "VmHWM") / 1024


def _status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


@contextmanager
def viewer(*args: str | Path, timeout: float = 60.0) -> Iterator[Viewer]:
    """``rlf view ARGS --port 0`` until the block ends; yields once it printed its address."""
    process = subprocess.Popen([*rlf_command(), "view", *map(str, args), "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = URL_RE.search(line)
        if not found:
            process.kill()
            raise AssertionError(f"rlf view printed no address: {line!r}; stderr: {process.stderr.read()[-2000:]}")
        yield Viewer(process, found.group(1))
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (the system's), with a fresh profile; the test skips where there is none."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (the test extra)")
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's chromium package (apt-get install -y chromium), "
                    "as .ci/run does")
    with tempfile.TemporaryDirectory(prefix="rlf-view-profile-") as profile, sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900})
        try:
            yield context
        finally:
            context.close()


def open_page(context: object, url: str) -> object:
    """A new tab at ``url``, failing the test on any script error on the page."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    page.goto(url)
    return page


def screenshot(page: object, name: str) -> Path:
    """Write the page's screenshot to ``SCREENSHOTS/name.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
