"""Enrolled devices at scale: heartbeat rate, and envelope round trips through the relay mailbox."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from scripts.bench_common import (
    Figure,
    percentile,
    served_hub,
)


def bench_devices(runs: int) -> list[Figure]:
    return asyncio.run(_devices(runs))


async def _devices(runs: int) -> list[Figure]:
    import aiohttp

    async with served_hub() as served, aiohttp.ClientSession() as http:
        url, auth = served.url, served.auth
        devices = []
        for i in range(100):
            async with http.post(
                f"{url}/api/devices", headers=auth, json={"name": f"d{i}", "kind": "daemon"}
            ) as response:
                enrolled = await response.json()
            devices.append({"deviceId": enrolled["device_id"], "token": enrolled["device_token"]})
        rate = await _heartbeat_rate(http, url, devices)
        alone = await _round_trips(http, url, auth, devices[:1], runs)
        crowd = await _round_trips(http, url, auth, devices, runs)
    how = (
        "POST /api/devices/invoke (use_device's path): envelope queued → the target daemon "
        "(polling every 0.1 s when idle) pulls and replies → the answer returned"
    )
    return [
        Figure("invoke_round_trip_p50_1_device", percentile(alone, 0.5), "ms", how, alone),
        Figure(
            "invoke_round_trip_p50_100_devices",
            percentile(crowd, 0.5),
            "ms",
            how + "; 99 other daemons heartbeat every 20 s and poll every 3 s",
            crowd,
        ),
        Figure(
            "heartbeats_per_s",
            rate,
            "/s",
            "POST /api/devices/heartbeat from 16 concurrent "
            "clients for 5 s against a tiny-hub serve process",
            [rate],
        ),
    ]


async def _heartbeat_rate(http: Any, url: str, devices: list[dict[str, str]]) -> float:
    done, deadline = 0, time.perf_counter() + 5.0

    async def worker(index: int) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            async with http.post(
                f"{url}/api/devices/heartbeat", json=devices[index % len(devices)]
            ) as response:
                await response.read()
            done += 1

    await asyncio.gather(*(worker(i) for i in range(16)))
    return done / 5.0


async def _round_trips(
    http: Any, url: str, auth: dict[str, str], devices: list[dict[str, str]], runs: int
) -> list[float]:
    """Invoke the first device ``runs`` times; the others behave like the contract's daemon."""
    stop = asyncio.Event()

    async def daemon(creds: dict[str, str], idle_s: float) -> None:
        beat_at = 0.0
        while not stop.is_set():
            if time.perf_counter() >= beat_at:
                async with http.post(f"{url}/api/devices/heartbeat", json=creds) as response:
                    await response.read()
                beat_at = time.perf_counter() + 20
            async with http.put(f"{url}/api/devices/relay", json=creds) as response:
                messages = (await response.json())["messages"]
            for message in messages:
                async with http.patch(
                    f"{url}/api/devices/relay",
                    json={**creds, "inReplyTo": message["id"], "payload": '{"result":"ok"}'},
                ) as r:
                    await r.read()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0 if messages else idle_s)

    tasks = [
        asyncio.create_task(daemon(creds, 0.1 if i == 0 else 3.0))
        for i, creds in enumerate(devices)
    ]
    target = devices[0]["deviceId"]
    times = []
    for _ in range(runs):
        times.append(await _invoke_once(http, url, auth, target))
    stop.set()
    await asyncio.gather(*tasks)
    return times


async def _invoke_once(http: Any, url: str, auth: dict[str, str], target: str) -> float:
    started = time.perf_counter()
    async with http.post(
        f"{url}/api/devices/invoke", headers=auth, json={"deviceId": target, "prompt": "ping"}
    ) as response:
        answer = await response.json()
    if answer.get("result") != "ok":
        raise RuntimeError(f"unexpected answer {answer}")
    return (time.perf_counter() - started) * 1000
