"""The cloud link long-polls when the cloud takes ``wait`` and polls as before when it does not:
against a hub playing the cloud (it holds pulls), and a fake cloud that refuses or ignores the
field."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from harness.waits import until
from hub.api.server import RunningServer, start_server
from hub.cloud.client import CloudClient, Envelope
from hub.cloud.link import CloudLink
from hub.cloud.outbox import Outbox
from hub.runtime.hub import Hub
from tests.conftest import StartHub, settings_for
from tests.daemon import enroll

QUICK = {"heartbeat_s": 0.2, "idle_poll_s": 0.2, "backoff_min_s": 0.02, "backoff_max_s": 0.1}
NOTIFY = json.dumps({"type": "notify", "title": "door", "body": "open"})


class RecordingClient(CloudClient):
    """Numbers each pull as it starts and remembers what it brought."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.begun = 0
        self.pulls: list[tuple[int, list[str]]] = []

    async def pull(self, limit: int = 10, wait_s: float | None = None) -> list[Envelope]:
        self.begun += 1
        number = self.begun
        pulled = await super().pull(limit, wait_s)
        self.pulls.append((number, [e.id for e in pulled]))
        return pulled


@pytest.fixture
async def local(start_hub: StartHub) -> RunningServer:
    return await start_hub()


async def test_an_envelope_reaches_a_link_holding_a_pull_in_one_round_trip(
    local: RunningServer, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    cloud_hub = Hub.open(settings_for(tmp_path / "cloud"))
    cloud = await start_server(cloud_hub, "127.0.0.1", 0)
    link: CloudLink | None = None
    try:
        enrolled = await enroll(http, cloud, name="home-hub")
        client = RecordingClient(cloud.url, enrolled["device_id"], enrolled["device_token"])
        link = CloudLink(local.hub, client, Outbox(local.hub.db), **QUICK)
        await link.start()
        owner, devices = cloud_hub.owner.id, cloud_hub.devices
        device = devices.registry.get(owner, enrolled["device_id"])
        await until(lambda: link is not None and link.status()["state"] == "online")
        await until(lambda: client.begun > len(client.pulls), what="a pull held at the cloud")
        begun_before_send = client.begun
        sent = devices.mailbox.send(device, json.loads(NOTIFY))
        await until(lambda: devices.mailbox.reply_to(owner, sent)[0] == "answered")
        carrying = [number for number, ids in client.pulls if sent in ids]
        assert link.long_poll
    finally:
        if link is not None:
            await link.stop()
        await cloud.stop()
        cloud_hub.close()
    assert len(carrying) == 1 and carrying[0] <= begun_before_send, (
        "the pull held before the send took it"
    )


@asynccontextmanager
async def fake_cloud(mode: str) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A cloud that ``refuse``s pulls carrying ``wait`` (400) or ``ignore``s the field; it has
    one notify envelope to hand out and records every call."""
    calls: list[dict[str, Any]] = []
    waiting = [{"id": "msg_1", "payload": NOTIFY, "created_at": time.time()}]

    async def relay(request: web.Request) -> web.Response:
        body = await request.json()
        calls.append({"method": request.method, **body})
        if request.method == "PUT" and mode == "refuse" and "wait" in body:
            return web.json_response({"error": "unknown field: wait"}, status=400)
        if request.method == "PUT":
            handed, waiting[:] = list(waiting), []
            return web.json_response({"ok": True, "messages": handed})
        return web.json_response({"ok": True})

    async def anything(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_route("*", "/api/devices/relay", relay)
    app.router.add_route("*", "/{tail:.*}", anything)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", calls
    finally:
        await runner.cleanup()


def pulls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in calls if c["method"] == "PUT"]


def replies(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in calls if c["method"] == "PATCH"]


async def test_a_cloud_that_refuses_wait_is_polled_without_it(local: RunningServer) -> None:
    async with fake_cloud("refuse") as (url, calls):
        link = CloudLink(local.hub, CloudClient(url, "dev", "tok"), Outbox(local.hub.db), **QUICK)
        await link.start()
        try:
            await until(lambda: len(pulls(calls)) >= 4, what="pulls after the refusal")
            await until(lambda: bool(replies(calls)), what="the envelope answered")
        finally:
            await link.stop()
    made = pulls(calls)
    assert "wait" in made[0] and all("wait" not in p for p in made[1:])
    assert not link.long_poll and link.status()["state"] == "online"
    assert replies(calls)[0]["inReplyTo"] == "msg_1"


async def test_a_cloud_that_ignores_wait_gets_the_idle_sleep_not_a_busy_loop(
    local: RunningServer,
) -> None:
    pauses: list[float] = []

    async def recorded(seconds: float) -> None:
        """The pause the link asks for, kept; the test need not wait it out."""
        pauses.append(seconds)
        await asyncio.sleep(0.01)

    quick = {**QUICK, "idle_poll_s": 60.0}
    async with fake_cloud("ignore") as (url, calls):
        link = CloudLink(
            local.hub,
            CloudClient(url, "dev", "tok"),
            Outbox(local.hub.db),
            **quick,
            idle_sleep=recorded,
        )
        await link.start()
        try:
            await until(lambda: len(pulls(calls)) >= 4, what="four pulls")
        finally:
            await link.stop()
    made = pulls(calls)
    assert all(p["wait"] == link.long_poll_s for p in made)
    assert replies(calls) and replies(calls)[0]["inReplyTo"] == "msg_1"
    # the first pull brought the envelope (no pause after it); after every empty one the link
    # asks for an idle pause, since the cloud answered at once instead of holding the pull
    assert pauses[0] == 0, pauses
    assert len(pauses) >= 3 and all(pause > 0 for pause in pauses[1:]), pauses
