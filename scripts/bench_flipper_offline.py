"""How fast the hub notices a Flipper unplugged, and plugged back in, with no restart."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench_common import (
    Figure,
    running_hub,
)


def bench_flipper_offline(runs: int) -> list[Figure]:
    return asyncio.run(_flipper_offline(runs))


async def _flipper_offline(runs: int) -> list[Figure]:
    """Unplug the emulated Flipper → its record shows offline; replug → online again."""
    from firmware_bridges.emulators.flipper import FlipperEmulator

    offline, online = [], []
    with tempfile.TemporaryDirectory() as tmp:
        link = Path(tmp) / "flipper"
        device = FlipperEmulator(link=link)
        device.start()
        async with running_hub(drivers={"flipper": {"port": str(link)}}) as server:
            hub = server.hub
            await _state(hub, "online")
            for _ in range(runs):
                started = time.monotonic()
                device.unplug()
                await _state(hub, "offline")
                offline.append(time.monotonic() - started)
                started = time.monotonic()
                device.replug()
                await _state(hub, "online")
                online.append(time.monotonic() - started)
        device.stop()
    how = "emulated Flipper on a pty behind a pinned symlink, driver manager scanning every 1 s"
    return [
        Figure(
            "flipper_offline_s",
            statistics.median(offline),
            "s",
            "unplug → /api/drivers says offline; " + how,
            offline,
        ),
        Figure(
            "flipper_back_online_s",
            statistics.median(online),
            "s",
            "replug → online again, no restart; " + how,
            online,
        ),
    ]


async def _state(hub: Any, wanted: str) -> None:
    """Poll the manager's records every 10 ms (it has no change event to wait on)."""
    for _ in range(6000):
        if any(r["status"] == wanted for r in hub.drivers.records() if r["driver"] == "flipper"):
            return
        await asyncio.sleep(0.01)
    raise RuntimeError(f"the Flipper never became {wanted}")
