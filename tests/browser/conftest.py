"""Fixtures for the browser tests: a Voila server on a free port and a watched Chromium page.

Chromium is Debian's (``/usr/bin/chromium``, or ``$CHROMIUM_PATH``), driven by Playwright's
sync API; Playwright's own browser download is never used. A missing browser or notebook
fails the test with a message saying what to install; it never skips.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Route, sync_playwright

from .voila_app import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LOCAL_HOSTS,
    OFFLINE_STYLESHEET_PREFIXES,
    VoilaServer,
    WatchedPage,
)


@pytest.fixture(scope="session")
def chromium_executable() -> Path:
    """Debian's Chromium; fails (never skips) when it is not installed."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium "
                    "(`sudo apt-get install chromium`; `./workbook test` does it for you) "
                    "or set CHROMIUM_PATH", pytrace=False)
    return CHROMIUM


@pytest.fixture(scope="session")
def browser(chromium_executable: Path) -> Iterator[Browser]:
    """A headless Chromium driven by Playwright (sync API), shared by the session's tests."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(chromium_executable), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page_width() -> int:
    """Width of the browser window in CSS pixels; a test may parametrize it (1024, 1400)."""
    return 1400


@pytest.fixture
def watched_page(browser: Browser, page_width: int) -> Iterator[WatchedPage]:
    """A fresh page that records console errors, page errors and off-machine requests."""
    context = browser.new_context(viewport={"width": page_width, "height": 1000})
    page = context.new_page()
    watched = WatchedPage(page)
    page.on("console",
            lambda msg: watched.console_errors.append(f"{msg.text} @ {msg.location.get('url')}")
            if msg.type == "error" else None)
    page.on("pageerror", lambda exc: watched.page_errors.append(str(exc)))

    def route(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).hostname in LOCAL_HOSTS:
            route.continue_()
        elif url.startswith(OFFLINE_STYLESHEET_PREFIXES):
            route.fulfill(status=200, content_type="text/css", body="/* offline */")
        else:
            watched.external_requests.append(url)
            route.abort()

    page.route("**/*", route)
    yield watched
    context.close()


@pytest.fixture
def serve_voila(tmp_path: Path) -> Iterator[Callable[[Path], VoilaServer]]:
    """``serve_voila(notebook)``: a started :class:`VoilaServer`, stopped when the test ends."""
    servers: list[VoilaServer] = []

    def serve(notebook: Path) -> VoilaServer:
        if not notebook.is_file():
            pytest.fail(f"notebook {notebook} does not exist", pytrace=False)
        server = VoilaServer(notebook, tmp_path / f"voila-{len(servers)}.log")
        servers.append(server)
        server.start()
        return server

    yield serve
    for server in servers:
        server.stop()
