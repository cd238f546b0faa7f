"""Long-poll on the relay: ``PUT /api/devices/relay`` with ``wait`` holds the pull until an
envelope arrives, so an invoke to a device already holding a poll takes one round trip; without
``wait`` the pull answers at once, as the device protocol says."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from harness.waits import until
from hub.api.server import RunningServer, start_server
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for
from tests.daemon import PythonDaemon, enroll, send


@pytest.fixture
async def server(start_hub: StartHub) -> RunningServer:
    return await start_hub()


def creds(enrolled: dict[str, Any]) -> dict[str, Any]:
    return {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}


def online(server: RunningServer, device_id: str) -> bool:
    hub = server.hub
    device = hub.devices.registry.get(hub.owner.id, device_id)
    return device.online(hub.devices.now()) is True


async def answer_invoke(envelope: dict[str, Any]) -> dict[str, Any]:
    return {"result": f"held and answered: {envelope['prompt']}"}


async def test_an_invoke_to_a_device_holding_a_poll_takes_one_round_trip(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    device_id, token = enrolled["device_id"], enrolled["device_token"]
    daemon = PythonDaemon(server.url, device_id, token, answer_invoke, wait=25)
    with daemon:
        # the daemon's first held pull counts as the device being seen
        await until(lambda: online(server, enrolled["device_id"]), what="a held poll")
        pulls_before = daemon.pulls
        status, answer = await send(
            http,
            "POST",
            f"{server.url}/api/devices/invoke",
            {"deviceId": enrolled["device_id"], "prompt": "ping"},
            owner_headers(server),
        )
        pulls_during = daemon.pulls - pulls_before
    assert (status, answer) == (200, {"ok": True, "result": "held and answered: ping", "images": 0})
    assert pulls_during == 1, f"the reply took {pulls_during} pulls, not the one held open"


async def test_a_held_pull_returns_the_envelope_sent_while_it_waits(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    hub = server.hub
    device = hub.devices.registry.get(hub.owner.id, enrolled["device_id"])
    relay = f"{server.url}/api/devices/relay"
    held = asyncio.create_task(send(http, "PUT", relay, {**creds(enrolled), "wait": 25}))
    await until(lambda: online(server, device.id), what="the pull to be held")
    assert not held.done()
    sent = hub.devices.mailbox.send(device, {"type": "notify", "title": "door"})
    status, pulled = await held
    assert status == 200
    assert [m["id"] for m in pulled["messages"]] == [sent]
    assert json.loads(pulled["messages"][0]["payload"]) == {"type": "notify", "title": "door"}


async def test_without_wait_the_pull_answers_at_once_and_is_not_presence(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    relay = f"{server.url}/api/devices/relay"
    status, pulled = await send(http, "PUT", relay, creds(enrolled))
    assert (status, pulled) == (200, {"ok": True, "messages": []})
    assert not online(server, enrolled["device_id"]), "a plain pull is not a heartbeat"


async def test_a_held_pull_with_nothing_sent_ends_empty_when_its_time_is_up(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    relay = f"{server.url}/api/devices/relay"
    loop = asyncio.get_running_loop()
    started = loop.time()
    status, pulled = await send(http, "PUT", relay, {**creds(enrolled), "wait": 0.3})
    assert (status, pulled) == (200, {"ok": True, "messages": []})
    assert loop.time() - started >= 0.3, "the pull was not held"
    assert online(server, enrolled["device_id"])


async def test_bad_waits_are_refused_before_anything_is_held(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    relay = f"{server.url}/api/devices/relay"
    bad_waits: tuple[Any, ...] = (-1, 25.5, 3600, "5", True, [], {"s": 1}, math.nan)
    for bad in bad_waits:
        status, answer = await send(http, "PUT", relay, {**creds(enrolled), "wait": bad})
        assert status == 400, (bad, answer)
        # NaN is no JSON number: the body reader refuses it before the route sees a wait
        said = "not a JSON number" if bad is math.nan else "wait must be"
        assert said in answer["error"], answer
    status, answer = await send(http, "PUT", relay, {**creds(enrolled), "wait": 5, "max": 0})
    assert status == 400 and "max" in answer["error"]
    status, answer = await send(
        http, "PUT", relay, {"deviceId": enrolled["device_id"], "token": "wrong", "wait": 5}
    )
    assert status == 401
    assert not online(server, enrolled["device_id"]), "a refused pull is not presence"


async def test_stopping_the_hub_answers_a_held_pull_at_once(
    home: Path, http: aiohttp.ClientSession
) -> None:
    hub = Hub.open(settings_for(home))
    server = await start_server(hub, "127.0.0.1", 0)
    mailbox = hub.devices.mailbox
    held_when_told: list[bool] = []
    end_polls = mailbox.end_polls

    def telling() -> None:
        held_when_told.append(mailbox.holding(enrolled["device_id"]))
        end_polls()

    mailbox.end_polls = telling  # type: ignore[method-assign]
    try:
        enrolled = await enroll(http, server)
        relay = f"{server.url}/api/devices/relay"
        held = asyncio.create_task(send(http, "PUT", relay, {**creds(enrolled), "wait": 25}))
        await until(lambda: mailbox.holding(enrolled["device_id"]), what="the pull to be held")
        await server.stop()
        status, pulled = await held
    finally:
        hub.close()
    assert (status, pulled) == (200, {"ok": True, "messages": []})
    assert held_when_told == [True], "the hub's stop told the pull it held to answer"


async def test_ending_the_polls_answers_a_held_pull_without_waiting_out_its_time(
    home: Path,
) -> None:
    hub = Hub.open(settings_for(home))
    try:
        devices = hub.devices
        device, _token = devices.registry.enroll(hub.owner.id, name="laptop", kind="daemon")
        pull = asyncio.create_task(devices.mailbox.pull_waiting(device, wait=25))
        await until(lambda: devices.mailbox.holding(device.id), what="the pull to be held")
        devices.mailbox.end_polls()
        for _ in range(5):  # a few turns of the event loop, no clock: woken, not timed out
            await asyncio.sleep(0)
        assert pull.done(), "the held pull still waits for its 25 s"
        assert pull.result() == []
    finally:
        hub.close()


async def test_an_envelope_goes_to_the_live_pull_not_one_whose_caller_hung_up(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    """A daemon that restarts leaves its held pull behind at the hub; the envelope must reach
    the new pull, not vanish into the old connection."""
    enrolled = await enroll(http, server)
    hub = server.hub
    device = hub.devices.registry.get(hub.owner.id, enrolled["device_id"])
    relay = f"{server.url}/api/devices/relay"
    async with aiohttp.ClientSession() as old_daemon:
        abandoned = asyncio.create_task(
            send(old_daemon, "PUT", relay, {**creds(enrolled), "wait": 25})
        )
        await until(lambda: online(server, device.id), what="the first pull to be held")
        abandoned.cancel()
    held = asyncio.create_task(send(http, "PUT", relay, {**creds(enrolled), "wait": 25}))
    await asyncio.sleep(0.2)  # the new pull is held too (nothing to observe it by)
    sent = hub.devices.mailbox.send(device, {"type": "invoke", "prompt": "still there?"})
    status, pulled = await held
    if not pulled["messages"]:  # the new pull was woken first and took nothing: it asks again
        status, pulled = await send(http, "PUT", relay, {**creds(enrolled), "wait": 25})
    assert status == 200
    assert [m["id"] for m in pulled["messages"]] == [sent]
