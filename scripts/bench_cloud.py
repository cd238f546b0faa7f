"""Cloud outbox figures against a second hub on loopback playing the cloud (docs/cloud.md).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``outbox_drain_items_per_s``: 1000 events queued in the durable outbox while the cloud is
  unreachable (a drain against a closed port stops at once and keeps them), then drained one at a
  time, in order, into a live loopback hub; items/s, median of ``runs`` outages.

- ``cloud_heartbeat_cpu_s_per_hour``: the hub-side CPU a running ``CloudLink`` spends on its
  heartbeat, per hour at the real 20 s interval.

Each outbox item is a real dial-in ``POST /api/devices/event`` carrying an ``idempotencyKey``
(the cloud authenticates the device, records the key and publishes the event in one
transaction) plus the outbox's own SQLite bookkeeping on a WAL file. Loopback hides network
latency, so this is the hub-side ceiling, not what a real cloud across the internet would allow.

The heartbeat figure runs the cloud hub in a child process, so this process's CPU time
(``time.process_time``: user + system, all threads) is the hub's side alone: building the
capability list, the plain-HTTP loopback POST through ``CloudClient`` (a fresh HTTP session per
call), and the asyncio sleep/wake. A ``CloudLink`` with ``heartbeat_s`` = 0.05 (``idle_poll_s``
= 3600, so after its first pull the relay loop sleeps and does not count) is started;
after two warm-up beats, CPU time is read across ``BEATS`` (100) further beats. An idle
baseline (this process sleeping in asyncio, no link, for the same wall time) is subtracted;
the difference per beat times 180 (3600 s / 20 s) is the figure.
``python -m scripts.bench_cloud [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import socket
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp

from harness.machine import MACHINE_OFF
from hub.api.limits import GUARD, Limits
from hub.api.server import start_server
from hub.cloud.client import CloudClient
from hub.cloud.link import CloudLink
from hub.cloud.outbox import Outbox
from hub.config import load_settings
from hub.runtime.hub import Hub
from hub.store.migrations import open_database
from scripts.bench_rows import run_alone

ITEMS = 1000
EVENT = "/api/devices/event"
BEATS = 100
BEAT_S = 0.05
REAL_BEAT_S = 20.0
BEATS_PER_HOUR = 3600 / REAL_BEAT_S  # 180


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _enroll(url: str, owner_token: str) -> tuple[str, str]:
    body = {"name": "bench-hub", "kind": "daemon", "capabilities": []}
    headers = {"Authorization": f"Bearer {owner_token}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/api/devices", json=body, headers=headers) as response,
    ):
        answer = await response.json()
    if response.status != 200:
        raise RuntimeError(f"enrolling the bench device failed: {answer}")
    return str(answer["device_id"]), str(answer["device_token"])


def _settings(home: Path) -> Any:
    return load_settings(
        home=home,
        environ={},
        overrides={
            "host": "127.0.0.1",
            "port": 0,
            "drivers": MACHINE_OFF,
        },
    )


async def _measure(root: Path, runs: int) -> list[float]:
    settings = _settings(root / "cloud")
    hub = Hub.open(settings)
    server = await start_server(hub, "127.0.0.1", 0)
    # The hub's per-address rate limit would otherwise be what is measured (and a real cloud
    # has its own); lifted here so the figure is the outbox and the dial-in route.
    server.runner.app[GUARD].limits = Limits(address_rate_per_s=1e9, address_burst=10**9)
    try:
        device_id, token = await _enroll(server.url, settings.owner_token_path.read_text().strip())
        live = CloudClient(server.url, device_id, token)
        offline = CloudClient(f"http://127.0.0.1:{_closed_port()}", device_id, token)
        rates = []
        for run in range(runs):
            outbox = Outbox(open_database(root / f"local-{run}" / "hub.db"))
            for n in range(ITEMS):
                outbox.put("POST", EVENT, {"kind": "device_note", "detail": {"n": n}})
            outage = await outbox.drain(offline)
            if not outage.unavailable or outage.pending != ITEMS:
                raise RuntimeError(f"the outage drain did not keep the queue: {outage}")
            started = time.perf_counter()
            result = await outbox.drain(live)
            elapsed = time.perf_counter() - started
            if not result.complete or result.delivered != ITEMS:
                raise RuntimeError(f"the drain did not deliver everything: {result}")
            rates.append(ITEMS / elapsed)
        return rates
    finally:
        await server.stop()
        hub.close()


def _serve_cloud(root: str, conn: Connection) -> None:
    """The child process: a loopback cloud hub with the bench device enrolled; its address and
    credentials are sent back, and it serves until the parent says stop."""
    asyncio.run(_cloud_main(Path(root), conn))


async def _cloud_main(root: Path, conn: Connection) -> None:
    settings = _settings(root)
    hub = Hub.open(settings)
    server = await start_server(hub, "127.0.0.1", 0)
    server.runner.app[GUARD].limits = Limits(address_rate_per_s=1e9, address_burst=10**9)
    try:
        device_id, token = await _enroll(server.url, settings.owner_token_path.read_text().strip())
        conn.send((server.url, device_id, token))
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
    finally:
        await server.stop()
        hub.close()


class _BeatCounter(CloudClient):
    """Counts heartbeats; ``reached`` is set once ``wanted`` of them were answered."""

    beats = 0
    wanted = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reached = asyncio.Event()

    async def until(self, beats: int) -> None:
        self.wanted = beats
        self.reached.clear()
        if self.beats < beats:
            await self.reached.wait()

    async def heartbeat(self, capabilities: list[str], lan_url: str | None) -> dict[str, Any]:
        answer = await super().heartbeat(capabilities, lan_url)
        self.beats += 1
        if self.beats >= self.wanted:
            self.reached.set()
        return answer


async def _beats_cpu(root: Path, url: str, device_id: str, token: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) this process spent across ``BEATS`` heartbeats."""
    hub = Hub.open(_settings(root))
    client = _BeatCounter(url, device_id, token)
    link = CloudLink(hub, client, Outbox(hub.db), heartbeat_s=BEAT_S, idle_poll_s=3600.0)
    try:
        await link.start()
        await client.until(2)  # warmed up: a beat and the relay loop's first pull are done
        first, cpu0, wall0 = client.beats, time.process_time(), time.perf_counter()
        await client.until(first + BEATS)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if link.state != "online":
            raise RuntimeError(f"the link went {link.state} during the bench: {link.detail}")
        return cpu * BEATS / (client.beats - first), wall
    finally:
        await link.stop()
        hub.close()


async def _idle_cpu(wall: float) -> float:
    """CPU this process spends over ``wall`` seconds with no link: the event loop asleep."""
    cpu0 = time.process_time()
    await asyncio.sleep(wall)
    return time.process_time() - cpu0


def _heartbeat_cpu(root: Path, runs: int) -> tuple[list[float], list[float]]:
    """Per run: (CPU seconds per beat, link minus idle baseline) and the idle baseline per beat."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    cloud = context.Process(target=_serve_cloud, args=(str(root / "hb-cloud"), child))
    cloud.start()
    try:
        if not parent.poll(60):
            raise RuntimeError("the loopback cloud did not start")
        url, device_id, token = parent.recv()
        per_beat, idle_per_beat = [], []
        for run in range(runs):
            cpu, wall = asyncio.run(_beats_cpu(root / f"hb-local-{run}", url, device_id, token))
            idle = asyncio.run(_idle_cpu(wall))
            per_beat.append(max(0.0, cpu - idle) / BEATS)
            idle_per_beat.append(idle / BEATS)
        return per_beat, idle_per_beat
    finally:
        parent.send("stop")
        cloud.join(30)
        if cloud.is_alive():
            cloud.terminate()


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    runs = max(1, runs)
    with tempfile.TemporaryDirectory(prefix="bench-cloud-") as folder:
        rates = asyncio.run(_measure(Path(folder), runs))
        per_beat, idle_per_beat = _heartbeat_cpu(Path(folder), runs)
    beat_cpu = statistics.median(per_beat)
    return [
        (
            "outbox_drain_items_per_s",
            statistics.median(rates),
            "items/s",
            f"{ITEMS} device_note events queued during an outage (drain against a closed port), "
            f"then drained in order into a loopback hub via CloudClient (one HTTP session per "
            f"call, idempotencyKey on each; the cloud hub's rate limit lifted); median of {runs}",
        ),
        (
            "cloud_heartbeat_cpu_s_per_hour",
            beat_cpu * BEATS_PER_HOUR,
            "s/h",
            f"hub-process CPU (time.process_time) over {BEATS} CloudLink heartbeats at "
            f"{BEAT_S} s to a loopback cloud hub in a child process (not counted), minus an idle "
            f"asyncio baseline over the same wall time "
            f"({statistics.median(idle_per_beat) * 1e3:.3f} ms/beat), "
            f"= {beat_cpu * 1e3:.3f} ms/beat, x {BEATS_PER_HOUR:.0f} beats/h "
            f"(one per {REAL_BEAT_S:.0f} s); median of {runs}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 3))
