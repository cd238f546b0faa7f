"""A real ``tiny-hub serve`` SIGKILLed with a full outbox: after a restart, every item reaches the
cloud exactly once, in order. A second hub on loopback plays the cloud, down while the items
pile up and back before the hub is started again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from harness.waits import until
from hub.api.server import RunningServer, start_server
from hub.cloud.account import save_token
from hub.runtime.hub import Hub
from tests.conftest import settings_for
from tests.daemon import enroll, send

SCRIPT = Path(sys.executable).with_name("tiny-hub")
ITEMS = 40  # under the hub's per-address burst, so the test's own posts are never throttled
EVENT = "/api/devices/event"


class Served:
    """``tiny-hub serve`` as a child process, on a port it picked and printed."""

    def __init__(self, process: asyncio.subprocess.Process, url: str) -> None:
        self.process, self.url = process, url
        assert process.stdout is not None
        # the rest of stdout is never read: drain it so the child can never block on a write
        self._drain = asyncio.create_task(_drain(process.stdout))

    @classmethod
    async def start(cls, env: dict[str, str]) -> Served:
        process = await asyncio.create_subprocess_exec(
            str(SCRIPT),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert process.stdout is not None
        said = []
        while line := (await asyncio.wait_for(process.stdout.readline(), 120)).decode():
            said.append(line)
            match = re.search(r"serving on (http://127\.0\.0\.1:\d+)", line)
            if match:
                return cls(process, match.group(1))
        raise AssertionError(f"no 'serving on' line: {said}")

    async def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        await self.process.wait()
        await self._drain


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


def serve_env(home: Path, cloud_url: str, device_id: str, closed_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINY_HUB_", "OLLAMA_"))}
    env.update(
        TINY_HUB_HOME=str(home),
        OLLAMA_HOST=f"http://127.0.0.1:{closed_port}",
        TINY_HUB_CLOUD_URL=cloud_url,
        TINY_HUB_CLOUD_DEVICE_ID=device_id,
        TINY_HUB_CAMERA="",
        TINY_HUB_MICROPHONE="off",
        TINY_HUB_LAN_ADVERTISE="false",
        TINY_HUB_CLOUD_DESKTOP_NOTIFICATIONS="false",
        TINY_HUB_EMBEDDED_MODEL="smollm2",
    )
    return env


def pending_in(db_path: Path) -> int:
    """Undelivered outbox items, read from the hub's database file as it is on disk."""
    with contextlib.closing(sqlite3.connect(db_path)) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM cloud_outbox WHERE delivered_at IS NULL AND failed_at IS NULL"
        ).fetchone()
    return int(row[0])


@pytest.fixture
async def cloud(tmp_path: Path) -> AsyncIterator[Callable[[int], Awaitable[RunningServer]]]:
    """Start (or start again, on the same port and database) the hub that plays the cloud."""
    hub = Hub.open(settings_for(tmp_path / "cloud"))
    running: list[RunningServer] = []

    async def start(port: int = 0) -> RunningServer:
        server = await start_server(hub, "127.0.0.1", port)
        running.append(server)
        return server

    yield start
    for server in running:
        with contextlib.suppress(Exception):
            await server.stop()
    hub.close()


async def test_a_sigkilled_hub_delivers_its_full_outbox_exactly_once_after_restart(
    tmp_path: Path,
    cloud: Callable[[int], Awaitable[RunningServer]],
    closed_port: int,
    http: aiohttp.ClientSession,
) -> None:
    first = await cloud(0)
    enrolled = await enroll(http, first, "home-hub")
    device_id, port, cloud_url = enrolled["device_id"], first.port, first.url
    await first.stop()  # the cloud is down from here until the hub has been killed

    home = tmp_path / "local"
    home.mkdir()
    save_token(home / "cloud.token", enrolled["device_token"])
    env = serve_env(home, cloud_url, device_id, closed_port)
    served = await Served.start(env)
    try:
        # A device of the hub's own reports notes; the link forwards each into the outbox.
        owner = {"Authorization": f"Bearer {(home / 'owner.token').read_text().strip()}"}
        body = {"name": "door-sensor", "kind": "daemon", "capabilities": ["door"]}
        status, sensor = await send(http, "POST", f"{served.url}/api/devices", body, owner)
        assert status == 200, sensor
        for n in range(ITEMS):
            note = {
                "deviceId": sensor["device_id"],
                "token": sensor["device_token"],
                "kind": "device_note",
                "detail": {"n": n},
            }
            status, answer = await send(http, "POST", f"{served.url}{EVENT}", note)
            assert status == 200, answer
        await until(lambda: pending_in(home / "hub.db") == ITEMS, 60, "every note in the outbox")
    finally:
        await served.kill()
    assert served.process.returncode == -signal.SIGKILL
    assert pending_in(home / "hub.db") == ITEMS

    back = await cloud(port)
    ring = back.hub.devices.events

    def delivered() -> list[Any]:
        events = ring.recent(back.hub.owner.id, limit=1000)
        return [e.detail for e in events if e.device_id == device_id and e.kind == "device_note"]

    restarted = await Served.start(env)
    try:
        await until(lambda: len(delivered()) >= ITEMS, 120, "the notes at the cloud")
        await until(lambda: pending_in(home / "hub.db") == 0, 60, "the outbox emptied")
        await asyncio.sleep(0.5)  # more relay rounds: nothing may be sent a second time
        assert delivered() == [{"n": n} for n in range(ITEMS)]
    finally:
        await restarted.kill()
