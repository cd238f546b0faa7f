"""Cloud outbox figures against a second hub on loopback playing the cloud (issue 10 §3).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``outbox_drain_items_per_s``: 1000 events queued in the durable outbox while the cloud is
  unreachable (a drain against a closed port stops at once and keeps them), then drained one at a
  time, in order, into a live loopback hub; items/s, median of ``runs`` outages.

Each item is a real dial-in ``POST /api/devices/event`` carrying an ``idempotencyKey`` (the cloud
authenticates the device, records the key and publishes the event in one transaction) plus the
outbox's own SQLite bookkeeping on a WAL file. Loopback hides network latency, so this is the
hub-side ceiling, not what a real cloud across the internet would allow.
``python -m scripts.bench_cloud [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from hub.api.limits import GUARD, Limits
from hub.cloud.client import CloudClient
from hub.cloud.outbox import Outbox
from hub.config import load_settings
from hub.runtime import Hub
from hub.server import start_server
from hub.store.migrations import open_database
from scripts.bench_rows import run_alone

ITEMS = 1000
EVENT = "/api/devices/event"


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


async def _measure(root: Path, runs: int) -> list[float]:
    settings = load_settings(
        home=root / "cloud",
        environ={},
        overrides={
            "host": "127.0.0.1",
            "port": 0,
            "camera_device": "",
            "microphone_device": "off",
        },
    )
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


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    runs = max(1, runs)
    with tempfile.TemporaryDirectory(prefix="bench-cloud-") as folder:
        rates = asyncio.run(_measure(Path(folder), runs))
    return [
        (
            "outbox_drain_items_per_s",
            statistics.median(rates),
            "items/s",
            f"{ITEMS} device_note events queued during an outage (drain against a closed port), "
            f"then drained in order into a loopback hub via CloudClient (one HTTP session per "
            f"call, idempotencyKey on each; the cloud hub's rate limit lifted); median of {runs}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 3))
