"""Shared fixtures: real hubs on 127.0.0.1, a scripted fake Ollama, temporary data dirs."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama
from fakes.telegram import FakeTelegram
from harness.machine import drivers_with_machine_off
from hub.api.server import RunningServer, start_server
from hub.config import Settings, load_settings
from hub.core.collector import settled
from hub.runtime.hub import Hub
from tests.netguard import no_network  # noqa: F401  (a fixture every test module can use)

StartHub = Callable[..., Awaitable[RunningServer]]

# A test hub loads the embedded model when a test talks to it, not at start: hundreds of hubs
# (and the `tiny-hub` processes the tests start, which inherit this) would each start a runner.
# The tests of the warm-up turn it on.
os.environ["TINY_HUB_EMBEDDED_WARM_AT_START"] = "false"
# Boards a test serves announce their ports here (drivers/transports/announced.py): one place
# per test process, so the hubs of other processes, and the person's own, never see them.
os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="tiny-hub-run-")


@pytest.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegram]:
    """The Telegram Bot API, faked on 127.0.0.1."""
    fake = FakeTelegram()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def closed_port() -> int:
    """A port nobody listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def settings_for(home: Path, **overrides: Any) -> Settings:
    """Settings for a test hub. The machine's own camera and microphone are off unless a test
    turns them on: a developer's webcam must not be opened by the suite. The embedded model is
    SmolLM2 unless a test names another: with the agent-model extra installed, ``auto`` would
    load the 1.5B for every test that reaches the embedded model."""
    base = {
        "host": "127.0.0.1",
        "port": 0,
        "embedded_warm_at_start": False,
        "embedded_model": "smollm2",
    }
    drivers = drivers_with_machine_off(overrides.pop("drivers", None))
    return load_settings(home=home, environ={}, overrides={**base, **overrides, "drivers": drivers})


@pytest.fixture
async def fake_ollama() -> AsyncIterator[FakeOllama]:
    fake = FakeOllama()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def start_hub(home: Path) -> AsyncIterator[StartHub]:
    """Start a real hub (HTTP on a free loopback port) with the given settings overrides."""
    running: list[RunningServer] = []

    async def start(*, hardware: dict[str, Any] | None = None, **overrides: Any) -> RunningServer:
        """``hardware``: emulated devices, through Hub.open's own seams (``drivers``: config
        handed to a driver, such as an emulated camera, radio or sound device)."""
        hub = Hub.open(settings_for(home, **overrides), hardware=hardware)
        server = await start_server(hub, "127.0.0.1", 0)
        running.append(server)
        return server

    yield start
    for server in running:
        await server.stop()
        server.hub.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def owner_headers(server: RunningServer) -> dict[str, str]:
    token = server.hub.settings.owner_token_path.read_text().strip()
    return {"Authorization": f"Bearer {token}"}


def error_message(body: dict[str, Any]) -> str:
    """The message of an error answer: the hub's ``{"error": "..."}``, or OpenAI's
    ``{"error": {"message": "..."}}`` on ``/v1`` (docs/openai.md)."""
    error = body["error"]
    return str(error["message"] if isinstance(error, dict) else error)


SLOW_TIMEOUT_S = 300


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """Collection imports every test module with the collector paused, as the hub loads its
    code: what it imported (every library the tests use) lives as long as the run, so it is
    frozen out of the collector's passes, which keep the hub's pace (``hub/core/collector.py``; in
    two TUI test files, their time went from 15.4 s to 6.8 s)."""
    with settled():
        return (yield)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked slow (the real model, a whole process) gets 300 s before pytest-timeout
    stops it; every other test gets the configured 60 s, so one hang costs a minute.

    Slow tests come first, so pytest-xdist deals them out one to each worker before the rest: a
    minute-long test that starts last keeps the whole run waiting for it while the other
    workers have nothing left to do."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
