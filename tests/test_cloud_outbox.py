"""The durable cloud outbox (docs/cloud.md) against a second hub on loopback playing the cloud:
order, exactly once (idempotency keys at the receiver), outages, a revoked token, a refused item,
and a SIGKILL with a full outbox."""

from __future__ import annotations

import asyncio
import base64
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub.api.limits import GUARD, Limits
from hub.api.server import RunningServer
from hub.cloud.client import CloudClient
from hub.cloud.outbox import Outbox
from hub.store.migrations import open_database
from tests.conftest import StartHub
from tests.daemon import enroll, send

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
EVENT = "/api/devices/event"


@pytest.fixture
async def cloud(start_hub: StartHub) -> RunningServer:
    return await start_hub()


@pytest.fixture
async def device(cloud: RunningServer, http: aiohttp.ClientSession) -> dict[str, Any]:
    return await enroll(http, cloud, "hub-at-home")


@pytest.fixture
def client(cloud: RunningServer, device: dict[str, Any]) -> CloudClient:
    return CloudClient(cloud.url, device["device_id"], device["device_token"], timeout_s=5)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "local" / "hub.db"


@pytest.fixture
def outbox(db_path: Path) -> Outbox:
    return Outbox(open_database(db_path))


def notes_at(cloud: RunningServer) -> list[Any]:
    """The ``detail`` of every device event in the cloud's ring, oldest first."""
    ring = cloud.hub.devices.events.recent(cloud.hub.owner.id, limit=1000)
    return [e.detail for e in ring if e.kind in ("device_note", "task_result")]


def put_notes(outbox: Outbox, *numbers: int) -> list[int]:
    return [outbox.put("POST", EVENT, {"kind": "device_note", "detail": {"n": n}}) for n in numbers]


async def test_items_are_delivered_in_order_exactly_once(
    cloud: RunningServer, client: CloudClient, outbox: Outbox
) -> None:
    seqs = put_notes(outbox, 0, 1, 2, 3, 4)
    assert seqs == sorted(seqs)
    assert outbox.pending_count() == 5
    age = outbox.oldest_pending_age()
    assert age is not None and age >= 0

    result = await outbox.drain(client)

    assert (result.delivered, result.failed, result.pending, result.stopped) == (5, 0, 0, None)
    assert result.complete
    assert notes_at(cloud) == [{"n": n} for n in range(5)]
    assert outbox.pending_count() == 0 and outbox.oldest_pending_age() is None
    item = outbox.item(seqs[0])
    assert item is not None and item.state == "delivered" and item.attempts == 1
    assert item.answer is not None and item.answer["ok"] is True

    again = await outbox.drain(client)
    assert (again.delivered, again.pending) == (0, 0)
    assert notes_at(cloud) == [{"n": n} for n in range(5)]


async def test_an_unreachable_cloud_keeps_the_queue_then_gets_it_all_once(
    cloud: RunningServer,
    client: CloudClient,
    device: dict[str, Any],
    outbox: Outbox,
    closed_port: int,
) -> None:
    put_notes(outbox, 0, 1, 2)
    offline = CloudClient(
        f"http://127.0.0.1:{closed_port}", device["device_id"], device["device_token"]
    )

    stopped = await outbox.drain(offline)

    assert stopped.unavailable and not stopped.complete
    assert (stopped.delivered, stopped.pending) == (0, 3)
    assert notes_at(cloud) == []
    put_notes(outbox, 3)  # more owed while offline: still behind the older ones

    result = await outbox.drain(client)

    assert result.complete and result.delivered == 4
    assert notes_at(cloud) == [{"n": n} for n in range(4)]


async def test_a_resend_after_a_lost_answer_is_not_done_twice(
    cloud: RunningServer, client: CloudClient, outbox: Outbox
) -> None:
    """The cloud accepted the call but the hub died before marking it delivered: the drain after
    restart sends it again with the same key, and the cloud answers without a second event."""
    seq = outbox.put("POST", EVENT, {"kind": "device_note", "detail": {"n": 1}}, key="evt-1")
    first = await client.call(
        "POST", EVENT, {"kind": "device_note", "detail": {"n": 1}, "idempotencyKey": "evt-1"}
    )

    result = await outbox.drain(client)

    assert result.delivered == 1
    assert notes_at(cloud) == [{"n": 1}]
    item = outbox.item(seq)
    assert item is not None and item.answer == first  # the stored answer, the same event id
    assert outbox.put("POST", EVENT, {"kind": "device_note", "detail": {}}, key="evt-1") == seq


async def test_replays_of_task_results_media_and_replies_are_recognised(
    cloud: RunningServer, client: CloudClient, device: dict[str, Any]
) -> None:
    task = {"taskId": "t1", "summary": "done", "idempotencyKey": "task-1"}
    assert await client.call("POST", "/api/devices/task-result", task) == await client.call(
        "POST", "/api/devices/task-result", task
    )
    assert notes_at(cloud) == [
        {"taskId": "t1", "summary": "done", "result": None, "device": "hub-at-home"}
    ]

    image = {"data": base64.b64encode(PNG).decode(), "contentType": "image/png"}
    keyed = {**image, "idempotencyKey": "media-1"}
    first = await client.call("POST", "/api/media", keyed)
    assert await client.call("POST", "/api/media", keyed) == first
    assert (await client.call("POST", "/api/media", image))["key"] != first["key"]

    sent = cloud.hub.devices.registry.get(cloud.hub.owner.id, device["device_id"])
    message_id = cloud.hub.devices.mailbox.send(sent, {"type": "invoke", "prompt": "hi"})
    [envelope] = await client.pull()
    reply = {"inReplyTo": envelope.id, "payload": '{"result": "hello"}', "idempotencyKey": "r-1"}
    assert await client.call("PATCH", "/api/devices/relay", reply) == {"ok": True}
    assert await client.call("PATCH", "/api/devices/relay", reply) == {"ok": True}
    assert cloud.hub.devices.mailbox.reply_to(cloud.hub.owner.id, message_id) == (
        "answered",
        '{"result": "hello"}',
    )
    status, answer = await _dial(client, "PATCH", "/api/devices/relay", reply, key=None)
    assert status == 400 and "already answered" in answer["error"]


async def _dial(
    client: CloudClient, method: str, path: str, body: dict[str, Any], *, key: Any
) -> tuple[int, Any]:
    """A raw dial-in call (CloudClient sorts errors into exceptions; these tests want the body)."""
    payload = {k: v for k, v in body.items() if k != "idempotencyKey"}
    if key is not None:
        payload["idempotencyKey"] = key
    payload.update(deviceId=client.device_id, token=client._token)  # the client's own secret
    async with aiohttp.ClientSession() as http:
        return await send(http, method, client.url + path, payload)


async def test_bad_idempotency_keys_are_refused(cloud: RunningServer, client: CloudClient) -> None:
    note = {"kind": "device_note", "detail": {"n": 1}}
    status, answer = await _dial(client, "POST", EVENT, note, key="k" * 101)
    assert status == 400 and "idempotencyKey" in answer["error"]
    status, _ = await _dial(client, "POST", EVENT, note, key=7)
    assert status == 400
    status, _ = await _dial(client, "POST", EVENT, note, key="k" * 100)
    assert status == 200
    task = {"taskId": "t1"}
    status, answer = await _dial(client, "POST", "/api/devices/task-result", task, key="k" * 100)
    assert status == 400 and "already used" in answer["error"]
    assert notes_at(cloud) == [{"n": 1}]


async def test_a_refused_token_stops_the_drain_and_keeps_everything(
    cloud: RunningServer, device: dict[str, Any], client: CloudClient, outbox: Outbox
) -> None:
    put_notes(outbox, 0, 1)
    revoked = CloudClient(cloud.url, device["device_id"], "not-the-token")

    result = await outbox.drain(revoked)

    assert result.auth_failed and not result.unavailable
    assert (result.delivered, result.failed, result.pending) == (0, 0, 2)
    assert notes_at(cloud) == []
    assert (await outbox.drain(client)).delivered == 2
    assert notes_at(cloud) == [{"n": 0}, {"n": 1}]


async def test_a_refused_item_is_kept_as_failed_and_the_queue_moves_on(
    cloud: RunningServer, client: CloudClient, outbox: Outbox
) -> None:
    put_notes(outbox, 0)
    bad = outbox.put("POST", EVENT, {"kind": "not_a_kind", "detail": {}})
    put_notes(outbox, 2)

    result = await outbox.drain(client)

    assert (result.delivered, result.failed, result.pending) == (2, 1, 0) and result.complete
    assert notes_at(cloud) == [{"n": 0}, {"n": 2}]
    [failed] = outbox.failed()
    assert failed.seq == bad and failed.state == "failed"
    assert failed.failure is not None and "kind must be one of" in failed.failure
    assert (await outbox.drain(client)).failed == 0  # not retried


def test_put_refuses_what_could_never_be_sent(outbox: Outbox) -> None:
    with pytest.raises(ValueError):
        outbox.put("POST", EVENT, {"token": "x"})
    with pytest.raises(ValueError):
        outbox.put("POST", EVENT, {}, key="k" * 101)
    with pytest.raises(ValueError):
        outbox.put("GET", EVENT, {})
    assert outbox.pending_count() == 0


async def test_a_sigkilled_hub_delivers_its_full_outbox_after_restart(
    cloud: RunningServer, client: CloudClient, db_path: Path
) -> None:
    """A real process puts items into the file and is SIGKILLed with no cleanup at all; a new
    Outbox on the same file delivers every item exactly once, in order."""
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from hub.cloud.outbox import Outbox
        from hub.store.migrations import open_database
        outbox = Outbox(open_database(Path({str(db_path)!r})))
        for n in range(20):
            outbox.put("POST", {EVENT!r}, {{"kind": "device_note", "detail": {{"n": n}}}})
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=Path(__file__).parent.parent
    )
    assert await asyncio.wait_for(process.wait(), 60) == -signal.SIGKILL

    reopened = Outbox(open_database(db_path))
    assert reopened.pending_count() == 20
    result = await reopened.drain(client)

    assert result.complete and result.delivered == 20
    assert notes_at(cloud) == [{"n": n} for n in range(20)]
    assert (await Outbox(open_database(db_path)).drain(client)).delivered == 0
    assert notes_at(cloud) == [{"n": n} for n in range(20)]


async def test_a_rate_limited_cloud_means_later_not_failed(
    cloud: RunningServer, client: CloudClient, outbox: Outbox
) -> None:
    """A 429 is filed as CloudRefused by the client, but the item is fine: it stays queued."""
    guard = cloud.runner.app[GUARD]
    guard.limits = Limits(address_rate_per_s=0.001, address_burst=2)
    put_notes(outbox, 0, 1, 2, 3)

    result = await outbox.drain(client)

    assert result.unavailable
    assert (result.delivered, result.failed, result.pending) == (2, 0, 2)
    guard.limits = Limits()
    guard._buckets.clear()  # the test's own hub: start the bucket afresh
    assert (await outbox.drain(client)).delivered == 2
    assert notes_at(cloud) == [{"n": n} for n in range(4)]
