"""Long-polling devices and the MCP server, against a ``tiny-hub serve`` process on loopback.

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``invoke_round_trip_p50_long_poll_1_device`` / ``..._100_devices``: ``POST /api/devices/invoke``
  (use_device's path) to a daemon that holds its pull open (``PUT /api/devices/relay`` with
  ``wait`` 25 s) → the held pull returns the envelope → the daemon replies → the answer comes
  back; with 99 other daemons holding pulls too. Each answer is checked.
- ``mcp_recall_p50``: ``tools/call recall`` from an MCP client written with the ``mcp`` package,
  over streamable HTTP at ``/mcp`` with the owner's token, after 20 facts were learned through
  the same client; each answer is checked to name the fact asked for.

The hub runs in its own process so the load generator does not share its event loop; both
share this machine's cores. ``python -m scripts.bench_mcp [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import aiohttp

from scripts.bench_common import BenchmarkFailed, percentile, served_hub
from scripts.bench_rows import run_alone

WAIT_S = 25
CROWD = 100
FACTS = [
    f"Ada's locker number {n} holds the {colour} umbrella"
    for n, colour in enumerate(["red", "blue", "green", "yellow", "black"] * 4)
]


async def _checked(response: aiohttp.ClientResponse) -> Any:
    body = await response.json()
    if response.status != 200:
        raise BenchmarkFailed(f"{response.method} {response.url.path}: {response.status} {body}")
    return body


async def _enroll(
    http: aiohttp.ClientSession, url: str, auth: dict[str, str], n: int
) -> list[dict[str, str]]:
    devices = []
    for i in range(n):
        body = {"name": f"d{i}", "kind": "daemon"}
        async with http.post(f"{url}/api/devices", headers=auth, json=body) as response:
            enrolled = await _checked(response)
        devices.append({"deviceId": enrolled["device_id"], "token": enrolled["device_token"]})
    return devices


async def _long_poll_daemon(
    url: str, creds: dict[str, str], address: str, stop: asyncio.Event
) -> None:
    """The device loop with ``wait``: pull held open, reply to each envelope, pull again. Each
    daemon dials from its own loopback address, as devices on a LAN each have their own (the
    hub's per-address rate limit then applies per device, as it would there)."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(connector=connector) as http:
        while not stop.is_set():
            body = {**creds, "wait": WAIT_S}
            async with http.put(f"{url}/api/devices/relay", json=body) as r:
                messages = (await _checked(r))["messages"]
            for message in messages:
                reply = {**creds, "inReplyTo": message["id"], "payload": '{"result":"ok"}'}
                async with http.patch(f"{url}/api/devices/relay", json=reply) as r:
                    await _checked(r)


async def _round_trips(
    http: aiohttp.ClientSession,
    url: str,
    auth: dict[str, str],
    devices: list[dict[str, str]],
    runs: int,
) -> list[float]:
    stop = asyncio.Event()
    daemons = [
        asyncio.create_task(_long_poll_daemon(url, d, f"127.0.{1 + i // 250}.{2 + i % 250}", stop))
        for i, d in enumerate(devices)
    ]
    await asyncio.sleep(0.5)  # every daemon's first pull is held before the first invoke
    times = []
    try:
        for _ in range(runs):
            started = time.perf_counter()
            body = {"deviceId": devices[0]["deviceId"], "prompt": "ping"}
            async with http.post(f"{url}/api/devices/invoke", headers=auth, json=body) as r:
                answer = await _checked(r)
            if answer.get("result") != "ok":
                raise BenchmarkFailed(f"unexpected invoke answer {answer}")
            times.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.1)  # the daemon is back in a held pull, as between requests
    finally:
        stop.set()
        for task in daemons:
            task.cancel()
        await asyncio.gather(*daemons, return_exceptions=True)
    failed = [t.exception() for t in daemons if not t.cancelled() and t.exception()]
    if failed:
        raise BenchmarkFailed(f"a daemon failed: {failed[0]}")
    return times


async def _recalls(url: str, token: str, runs: int) -> list[float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"}
    times = []
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for fact in FACTS:
            learned = await session.call_tool("learn", {"fact": fact})
            if learned.is_error:
                raise BenchmarkFailed(f"learn failed: {learned.content}")
        for n in range(runs):
            colour = ["red", "blue", "green", "yellow", "black"][n % 5]
            started = time.perf_counter()
            found = await session.call_tool("recall", {"query": f"the {colour} umbrella"})
            times.append((time.perf_counter() - started) * 1000)
            text = found.content[0].text if found.content else ""  # type: ignore[union-attr]
            if found.is_error or colour not in text:
                raise BenchmarkFailed(f"recall did not find the {colour} umbrella: {text!r}")
    return times


async def _measure(runs: int) -> dict[str, list[float]]:
    async with (
        served_hub() as served,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http,
    ):
        url, token, auth = served.url, served.token, served.auth
        devices = await _enroll(http, url, auth, CROWD)
        return {
            "alone": await _round_trips(http, url, auth, devices[:1], runs),
            "crowd": await _round_trips(http, url, auth, devices, runs),
            "recall": await _recalls(url, token, runs),
        }


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    measured = asyncio.run(_measure(max(1, runs)))
    how = (
        f"POST /api/devices/invoke → a daemon holding PUT /api/devices/relay wait={WAIT_S} "
        f"takes the envelope and replies → the answer; p50 of {runs}"
    )
    return [
        ("invoke_round_trip_p50_long_poll_1_device", percentile(measured["alone"], 0.5), "ms", how),
        (
            "invoke_round_trip_p50_long_poll_100_devices",
            percentile(measured["crowd"], 0.5),
            "ms",
            how + f"; {CROWD - 1} other daemons hold pulls too",
        ),
        (
            "mcp_recall_p50",
            percentile(measured["recall"], 0.5),
            "ms",
            f"tools/call recall over streamable HTTP /mcp (mcp package client, owner token), "
            f"{len(FACTS)} facts learned first, each answer checked; p50 of {runs}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 30))
