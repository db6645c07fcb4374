"""Driving Debian's Chromium with Playwright for the configurator's browser tests and benchmark.

Playwright's own browser download is not used (not reachable here): the system's Chromium is
launched through `executable_path`. Without Playwright or Chromium, `browser_or_skip` skips, or
fails when CONFSOLVE_REQUIRE_BROWSER=1 (set by .ci/run, so CI never passes by skipping).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
OUTPUT = Path(__file__).parent / "output" / "serve"


def chromium_path() -> str | None:
    wanted = os.environ.get("CONFSOLVE_CHROMIUM")
    for candidate in (
        wanted,
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if chromium_path() is None:
        return "no Chromium at /usr/bin/chromium (apt-get install -y chromium)"
    return None


def browser_or_skip() -> None:
    import pytest

    why = missing_browser()
    if why is None:
        return
    if os.environ.get("CONFSOLVE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests are required here (CONFSOLVE_REQUIRE_BROWSER=1), but {why}")
    pytest.skip(why)


@contextmanager
def served(pack_name: str, *, warm_up: bool = False) -> Iterator[Any]:
    """A configurator server for the pack on a free loopback port, serving in a thread."""
    from solver import load_pack
    from solver.serve.server import make_server

    server = make_server(load_pack(pack_name), "127.0.0.1", 0)
    if warm_up:
        server.warm_up()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


class Page:
    """A page of the configurator with the waits its tests need: each click waits for the state
    it caused to be drawn (the page counts states in `body[data-seq]`)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)

    def seq(self) -> int:
        return int(self.page.evaluate("Number(document.body.dataset.seq || 0)"))

    def open(self, url: str, timeout: float = 60_000) -> None:
        self.page.goto(url)
        self.page.wait_for_function(
            "document.body.dataset.seq || document.body.dataset.failed", timeout=timeout
        )
        failed = self.page.evaluate("document.body.dataset.failed")
        assert not failed, f"the page failed: {failed}"

    def wait_after(self, before: int, timeout: float = 60_000) -> None:
        self.page.wait_for_function(f"Number(document.body.dataset.seq || 0) > {before}", timeout=timeout)

    def click_value(self, field: str, value: str) -> None:
        before = self.seq()
        self.page.click(f'button[data-field="{field}"][data-value="{value}"]')
        self.wait_after(before)

    def select_value(self, field: str, value: str) -> None:
        before = self.seq()
        self.page.select_option(f'select[data-field="{field}"]', value)
        self.wait_after(before)

    def chip(self, field: str, value: str) -> Any:
        return self.page.locator(f'button[data-field="{field}"][data-value="{value}"]')

    def now(self, field: str) -> str:
        text: str = self.page.locator(f"#row-{field} .now").inner_text()
        return text

    def wait_for_reasons(self, timeout: float = 60_000) -> None:
        self.page.wait_for_function(
            "document.body.dataset.reasons === document.body.dataset.seq", timeout=timeout
        )

    def shot(self, name: str) -> Path:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        path = OUTPUT / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path
