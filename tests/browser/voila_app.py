"""Helpers for the browser tests: a Voila server on a free port, a page that records errors.

The fixtures built on them are in ``conftest.py`` beside this file.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Page

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT = 60.0  # seconds until Voila listens
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# Voila's page template links Font Awesome's stylesheets from a CDN. Tests run without a
# network (and must not depend on one), so that one stylesheet is answered with an empty
# file instead of failing with console errors; icons are not what these tests check. Any
# other request off this machine is blocked and reported as a failure.
OFFLINE_STYLESHEET_PREFIXES = ("https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@",)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class VoilaServer:
    """``python -m voila NOTEBOOK`` on 127.0.0.1, run from the notebook's folder.

    Tracebacks are shown (``--show_tracebacks=True``) so that a failing cell is visible
    in the page and in the test's failure message instead of a generic banner.
    """

    def __init__(self, notebook: Path, log_path: Path) -> None:
        self.notebook = notebook
        self.log_path = log_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        """Start the server and return its URL once it accepts connections."""
        cmd = [
            sys.executable, "-m", "voila", self.notebook.name, f"--port={self.port}",
            "--no-browser", "--Voila.ip=127.0.0.1", "--show_tracebacks=True",
        ]
        with self.log_path.open("wb") as log:
            # a new session, so that stop() can end the server and the kernels it started
            self._proc = subprocess.Popen(
                cmd, cwd=self.notebook.parent, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while not _listening(self.port):
            if self._proc.poll() is not None:
                pytest.fail(f"Voila exited with code {self._proc.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"Voila did not listen within {SERVER_START_TIMEOUT:.0f} s:\n"
                            f"{self.log()}")
            time.sleep(0.2)
        return self.url

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and whatever is left of its process group."""
        if self._proc is None:
            return
        pgid = self._proc.pid  # start_new_session: the group id is the server's pid
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        try:
            os.killpg(pgid, signal.SIGKILL)  # kernels that outlived the server
        except ProcessLookupError:
            pass
        self._proc = None

    def log(self, tail: int = 4000) -> str:
        """The end of the server's combined output."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-tail:]


@dataclass
class WatchedPage:
    """A page plus everything it complained about: console errors, page errors, requests
    that tried to leave this machine."""

    page: Page
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Every recorded complaint, one line each (empty when the page behaved)."""
        return ([f"console error: {m}" for m in self.console_errors]
                + [f"page error: {m}" for m in self.page_errors]
                + [f"blocked request off this machine: {u}" for u in self.external_requests])
