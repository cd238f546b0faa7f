"""The hub as a dial-in device of the cloud: a second hub on loopback plays the cloud.

The local hub is enrolled at the cloud hub exactly as a daemon would be, then ``CloudLink``
runs the contract's loop against it: presence with capabilities and lanUrl, ``invoke`` answered by
the local agent (the fake model), ``notify`` on the owner's ring, an error reply for anything
else, offline with backoff while chat keeps working, and a refused token that stops the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.api.server import RunningServer, start_server
from hub.cloud.client import CloudClient, CloudUnavailable, Envelope
from hub.cloud.link import CloudLink, fit_result
from hub.cloud.outbox import Outbox
from hub.contracts import RELAY_PAYLOAD_MAX_BYTES
from hub.devices.events import RingEvent
from hub.runtime.hub import Hub
from tests.conftest import owner_headers, settings_for
from tests.daemon import enroll, send

LAN_URL = "http://192.168.1.20:8765"
FAST = {"heartbeat_s": 0.2, "idle_poll_s": 0.05, "backoff_min_s": 0.02, "backoff_max_s": 0.1}


class CountingClient(CloudClient):
    """A CloudClient that counts its calls (a refused hub must stop calling) and can fail the
    next few replies as an outage would."""

    calls = 0
    fail_replies = 0

    async def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any],
        *,
        held_s: float = 0.0,
    ) -> dict[str, Any]:
        self.calls += 1
        if method == "PATCH" and self.fail_replies:
            self.fail_replies -= 1
            raise CloudUnavailable("the cloud failed PATCH /api/devices/relay (503: test)")
        return await super()._call(method, path, body, held_s=held_s)


@dataclass
class Pair:
    cloud: RunningServer
    local: RunningServer
    device_id: str
    token: str
    http: aiohttp.ClientSession
    restart_cloud: Callable[[], Awaitable[RunningServer]]
    links: list[CloudLink] = field(default_factory=list)

    def link(self, token: str | None = None, **options: Any) -> CloudLink:
        client = CountingClient(self.cloud.url, self.device_id, token or self.token, timeout_s=5)
        made = CloudLink(self.local.hub, client, Outbox(self.local.hub.db), **{**FAST, **options})
        self.links.append(made)
        return made

    async def cloud_devices(self) -> list[dict[str, Any]]:
        headers = owner_headers(self.cloud)
        status, answer = await send(
            self.http, "GET", f"{self.cloud.url}/api/devices", headers=headers
        )
        assert status == 200, answer
        return list(answer["devices"])

    def send_envelope(self, envelope: dict[str, Any]) -> str:
        devices = self.cloud.hub.devices
        device = devices.registry.get(self.cloud.hub.owner.id, self.device_id)
        return devices.mailbox.send(device, envelope)

    async def reply_of(self, message_id: str) -> dict[str, Any]:
        mailbox, owner = self.cloud.hub.devices.mailbox, self.cloud.hub.owner.id
        await until(lambda: mailbox.reply_to(owner, message_id)[0] == "answered")
        reply = mailbox.reply_to(owner, message_id)[1]
        assert reply is not None
        parsed = json.loads(reply)
        assert isinstance(parsed, dict)
        return parsed


@pytest.fixture
async def pair(tmp_path: Path, fake_ollama: FakeOllama) -> AsyncIterator[Pair]:
    servers: list[RunningServer] = []

    async def serve(home: Path, port: int = 0, **overrides: Any) -> RunningServer:
        hub = Hub.open(settings_for(home, **overrides))
        server = await start_server(hub, "127.0.0.1", port)
        servers.append(server)
        return server

    cloud = await serve(tmp_path / "cloud")
    local = await serve(tmp_path / "local", ollama_host=fake_ollama.url, lan_url=LAN_URL)

    async def restart_cloud() -> RunningServer:
        """The same cloud (its database, its devices) listening again on the same port."""
        server = await start_server(cloud.hub, "127.0.0.1", cloud.port)
        servers.append(server)
        return server

    async with aiohttp.ClientSession() as http:
        enrolled = await enroll(http, cloud, name="home-hub", capabilities=["chat"])
        made = Pair(
            cloud, local, enrolled["device_id"], enrolled["device_token"], http, restart_cloud
        )
        yield made
        for link in made.links:
            await link.stop()
    for server in reversed(servers):
        with contextlib.suppress(Exception):
            await server.stop()
    cloud.hub.close()
    local.hub.close()


async def test_the_cloud_lists_the_hub_online_with_capabilities_and_lan_url(pair: Pair) -> None:
    link = pair.link()
    await link.start()
    await until(lambda: link.status()["state"] == "online")
    listed = next(d for d in await pair.cloud_devices() if d["id"] == pair.device_id)
    assert listed["online"] is True
    assert listed["lanUrl"] == LAN_URL
    expected = sorted({"chat", "memory", *pair.local.hub.capabilities()})
    assert listed["capabilities"] == expected
    status = link.status()
    assert status["since"] is not None and status["pending"] == 0


async def test_an_invoke_from_the_cloud_is_answered_by_the_local_agent(
    pair: Pair, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["The kettle", " is on."]))
    link = pair.link()
    await link.start()
    body = {"deviceId": pair.device_id, "prompt": "is the kettle on?"}
    status, answer = await send(
        pair.http, "POST", f"{pair.cloud.url}/api/devices/invoke", body, owner_headers(pair.cloud)
    )
    assert status == 200, answer
    assert answer["result"] == "The kettle is on."
    sent = fake_ollama.requests[-1]["messages"]
    assert sent[-1]["role"] == "user" and "is the kettle on?" in str(sent[-1]["content"])


async def test_a_long_result_is_truncated_with_a_note_not_rejected(
    pair: Pair, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["é" * 6000, "x" * 6000]))
    link = pair.link()
    await link.start()
    reply = await pair.reply_of(pair.send_envelope({"type": "invoke", "prompt": "write a lot"}))
    result = reply["result"]
    assert result.startswith("é" * 100)
    assert "(truncated: " in result and result.endswith(" characters more)")
    assert len(json.dumps(reply, ensure_ascii=False).encode()) <= RELAY_PAYLOAD_MAX_BYTES


async def test_a_notify_shows_as_a_device_note_on_the_local_ring(pair: Pair) -> None:
    link = pair.link()
    await link.start()
    message_id = pair.send_envelope(
        {"type": "notify", "title": "Door", "body": "Someone is at the door", "tag": "door"}
    )
    assert await pair.reply_of(message_id) == {"ok": True}
    ring = pair.local.hub.devices.events.recent(pair.local.hub.owner.id)
    notes = [e for e in ring if e.kind == "device_note"]
    assert len(notes) == 1
    assert notes[0].detail["title"] == "Door"
    assert notes[0].detail["body"] == "Someone is at the door"


def cloud_events(pair: Pair, kind: str | None = None) -> list[RingEvent]:
    """What the cloud's ring holds from the hub's device (the cloud hub's own owner)."""
    ring = pair.cloud.hub.devices.events.recent(pair.cloud.hub.owner.id, limit=1000)
    return [e for e in ring if e.device_id == pair.device_id and kind in (None, e.kind)]


async def test_a_local_device_event_is_forwarded_to_the_cloud_once(pair: Pair) -> None:
    ring, owner = pair.local.hub.devices.events, pair.local.hub.owner.id
    ring.publish(owner, "nicla_wake", "nicla-1", {"word": "before"})  # history: not replayed
    link = pair.link()
    await link.start()
    await until(lambda: link.status()["state"] == "online")
    ring.publish(owner, "task_result", None, {"taskId": "t"})  # not a device event kind
    ring.publish(owner, "nicla_wake", "nicla-1", {"word": "hey tiny"})
    await until(lambda: len(cloud_events(pair)) == 1)
    forwarded = cloud_events(pair)[0]
    assert (forwarded.kind, forwarded.detail) == ("nicla_wake", {"word": "hey tiny"})
    await until(lambda: link.status()["pending"] == 0)
    await asyncio.sleep(0.3)  # several relay rounds: nothing is sent again
    assert len(cloud_events(pair)) == 1 and link.forwarded == 1


async def test_a_cloud_notify_is_not_echoed_back_to_the_cloud(pair: Pair) -> None:
    link = pair.link()
    await link.start()
    message_id = pair.send_envelope({"type": "notify", "title": "Door", "body": "knock"})
    assert await pair.reply_of(message_id) == {"ok": True}
    ring, owner = pair.local.hub.devices.events, pair.local.hub.owner.id
    ring.publish(owner, "device_note", "nicla-1", {"title": "local note"})
    # events are forwarded in ring order: once the later local note is there, an echo of the
    # cloud's note (published before it) would be there too
    await until(lambda: len(cloud_events(pair, "device_note")) == 1)
    assert [e.detail for e in cloud_events(pair)] == [{"title": "local note"}]
    assert link.forwarded == 1


async def test_an_event_waits_in_the_outbox_while_the_cloud_is_stopped(pair: Pair) -> None:
    link = pair.link()
    await link.start()
    await until(lambda: link.status()["state"] == "online")
    await pair.cloud.stop()
    await until(lambda: link.status()["state"] == "offline")
    ring, owner = pair.local.hub.devices.events, pair.local.hub.owner.id
    ring.publish(owner, "nicla_transcript", "nicla-1", {"text": "turn on the lights"})
    await until(lambda: link.forwarded == 1)
    await asyncio.sleep(0.2)  # several backoff rounds against the stopped cloud
    assert link.status()["pending"] == 1
    assert cloud_events(pair) == []

    await pair.restart_cloud()
    await until(lambda: len(cloud_events(pair)) == 1)
    assert cloud_events(pair)[0].detail == {"text": "turn on the lights"}
    await until(lambda: link.status()["pending"] == 0)
    assert len(cloud_events(pair)) == 1


async def test_events_published_while_the_link_was_stopped_are_sent_on_start(
    pair: Pair,
) -> None:
    link = pair.link()
    await link.start()
    ring, owner = pair.local.hub.devices.events, pair.local.hub.owner.id
    ring.publish(owner, "nicla_wake", "nicla-1", {"n": 1})
    await until(lambda: len(cloud_events(pair)) == 1)
    await link.stop()
    ring.publish(owner, "nicla_sentry", "nicla-1", {"n": 2})
    await link.start()
    await until(lambda: len(cloud_events(pair)) == 2)
    await until(lambda: link.status()["pending"] == 0)
    assert [e.detail for e in cloud_events(pair)] == [{"n": 1}, {"n": 2}]


async def test_an_unknown_envelope_gets_an_error_reply(pair: Pair) -> None:
    link = pair.link()
    await link.start()
    reply = await pair.reply_of(pair.send_envelope({"type": "dance", "steps": 3}))
    assert reply == {"ok": False, "error": "unknown envelope type dance"}
    no_type = await pair.reply_of(pair.send_envelope({"prompt": "hi"}))
    assert no_type["ok"] is False and "unknown envelope type" in no_type["error"]


async def test_a_payload_that_is_not_json_gets_an_error_reply(pair: Pair) -> None:
    """The cloud's mailbox never stores such a payload, so the handler is asked directly."""
    link = pair.link()
    reply = json.loads(await link._handle(Envelope("msg_x", "not json {")))
    assert reply["ok"] is False and "not JSON" in reply["error"]
    listed = json.loads(await link._handle(Envelope("msg_y", "[1, 2]")))
    assert listed["ok"] is False and "unknown envelope type" in listed["error"]


async def test_cloud_stopped_means_offline_since_and_chat_keeps_answering(
    pair: Pair, fake_ollama: FakeOllama
) -> None:
    link = pair.link()
    await link.start()
    await until(lambda: link.status()["state"] == "online")
    await pair.cloud.stop()
    await until(lambda: link.status()["state"] == "offline")
    status = link.status()
    assert status["since"] is not None
    assert "cannot reach the cloud" in status["detail"]

    fake_ollama.script(Reply(chunks=["still", " here"]))
    chat_status, answer = await send(
        pair.http,
        "POST",
        f"{pair.local.url}/api/chat",
        {"prompt": "are you there?"},
        owner_headers(pair.local),
    )
    assert chat_status == 200, answer
    assert answer["reply"] == "still here"
    assert link.running  # backing off, not given up

    await pair.restart_cloud()
    await until(lambda: link.status()["state"] == "online")
    message_id = pair.send_envelope({"type": "notify", "title": "back", "body": "again"})
    assert await pair.reply_of(message_id) == {"ok": True}


async def test_a_reply_the_cloud_failed_to_take_stays_in_the_outbox_until_delivered(
    pair: Pair,
) -> None:
    link = pair.link()
    client = link.client
    assert isinstance(client, CountingClient)
    client.fail_replies = 2
    await link.start()
    message_id = pair.send_envelope({"type": "notify", "title": "later", "body": "b"})
    await until(lambda: client.fail_replies == 0)  # two delivery attempts failed
    assert await pair.reply_of(message_id) == {"ok": True}  # the stored reply, delivered
    await until(lambda: link.status() == {**link.status(), "state": "online", "pending": 0})
    notes = pair.local.hub.devices.events.recent(pair.local.hub.owner.id)
    assert [e.detail["title"] for e in notes if e.kind == "device_note"] == ["later"]


async def test_a_wrong_token_is_refused_and_the_loop_stops(pair: Pair) -> None:
    link = pair.link(token="not-the-token")
    await link.start()
    await until(lambda: not link.running)
    status = link.status()
    assert status["state"] == "refused"
    assert "cloud join" in status["detail"] and "cloud adopt" in status["detail"]
    client = link.client
    assert isinstance(client, CountingClient)
    calls = client.calls
    await asyncio.sleep(0.3)  # several poll and heartbeat periods: nothing more is sent
    assert client.calls == calls
    assert calls <= 2  # one heartbeat and one pull at most, never a retry


async def test_a_token_revoked_while_running_stops_the_loop(pair: Pair) -> None:
    link = pair.link()
    await link.start()
    await until(lambda: link.status()["state"] == "online")
    status, answer = await send(
        pair.http,
        "DELETE",
        f"{pair.cloud.url}/api/devices?id={pair.device_id}",
        headers=owner_headers(pair.cloud),
    )
    assert status == 200, answer
    await until(lambda: not link.running)
    assert link.status()["state"] == "refused"


async def test_failures_back_off_exponentially_up_to_the_cap(pair: Pair) -> None:
    link = pair.link(backoff_min_s=1.0, backoff_max_s=300.0)
    steps = [link._backoff(n) for n in range(1, 16)]
    assert 0.5 <= steps[0] <= 1.0
    assert 4.0 <= steps[3] <= 8.0
    assert all(150.0 <= s <= 300.0 for s in steps[10:])


async def test_stop_cancels_cleanly_and_start_again_works(pair: Pair) -> None:
    link = pair.link()
    await link.start()
    await until(lambda: link.status()["state"] == "online")
    await link.stop()
    assert not link.running
    await link.start()
    reply = await pair.reply_of(pair.send_envelope({"type": "notify", "title": "t", "body": "b"}))
    assert reply == {"ok": True}


def test_fit_result_keeps_a_short_result_whole_and_cuts_a_long_one() -> None:
    assert json.loads(fit_result("short")) == {"result": "short"}
    long = "\u0007" + "🙂" * 5000  # control characters and 4-byte characters weigh more
    fitted = fit_result(long)
    assert len(fitted.encode()) <= RELAY_PAYLOAD_MAX_BYTES
    result = json.loads(fitted)["result"]
    kept = result.split("\n\n(truncated: ")[0]
    assert long.startswith(kept)
    assert result.endswith(f"(truncated: {len(long) - len(kept)} characters more)")


async def test_a_hub_that_has_joined_dials_in_when_it_starts(
    pair: Pair, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """What `tiny-hub cloud join` leaves behind (config + cloud.token) is all a start needs:
    the hub heartbeats, /api/health says online, and a stop ends the link."""
    from hub.cloud.account import save_token

    home = tmp_path / "joined"
    home.mkdir()
    save_token(home / "cloud.token", pair.token)
    hub = Hub.open(settings_for(home, cloud_url=pair.cloud.url, cloud_device_id=pair.device_id))
    server = await start_server(hub, "127.0.0.1", 0)
    try:

        async def health() -> dict[str, Any]:
            async with http.get(
                f"{server.url}/api/health", headers=owner_headers(server)
            ) as response:
                return dict((await response.json())["cloud"])

        await until_async(lambda: health(), lambda cloud: cloud["state"] == "online")
        listed = {d["id"]: d for d in await pair.cloud_devices()}
        assert listed[pair.device_id]["online"] is True
    finally:
        await server.stop()
        hub.close()
    link = server.parts.cloud
    assert isinstance(link, CloudLink) and not link.running


async def until_async(fetch: Any, done: Any) -> None:
    for _ in range(200):
        if done(await fetch()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


async def test_a_hub_that_has_not_joined_says_the_cloud_is_off(
    pair: Pair, http: aiohttp.ClientSession
) -> None:
    async with http.get(
        f"{pair.local.url}/api/health", headers=owner_headers(pair.local)
    ) as response:
        assert (await response.json())["cloud"] == {"state": "off", "memory": {"state": "off"}}


@contextlib.asynccontextmanager
async def misbehaving_cloud(how: str) -> AsyncIterator[str]:
    """A cloud on 127.0.0.1 that answers every dial-in call with a 500, with garbage, or not at
    all (it holds the request open)."""
    from aiohttp import web

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        if how == "500":
            return web.json_response({"error": "the cloud fell over"}, status=500)
        if how == "garbage":
            return web.Response(text="<html>502 Bad Gateway</html>", content_type="text/html")
        await asyncio.sleep(3600)  # hangs: the client's own timeout must end the call
        return web.Response()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("how", ["500", "garbage", "hang"])
async def test_a_misbehaving_cloud_means_offline_and_chat_goes_on(
    pair: Pair, fake_ollama: FakeOllama, how: str
) -> None:
    async with misbehaving_cloud(how) as url:
        client = CloudClient(url, pair.device_id, pair.token, timeout_s=0.3)
        link = CloudLink(pair.local.hub, client, Outbox(pair.local.hub.db), **FAST)
        pair.links.append(link)
        await link.start()
        await until(lambda: link.status()["state"] == "offline")
        assert link.running  # it backs off and keeps trying; it does not stop or crash
        fake_ollama.script(Reply(chunks=["still here"]))
        async with pair.http.post(
            f"{pair.local.url}/api/chat",
            json={"prompt": "are you there?"},
            headers=owner_headers(pair.local),
        ) as response:
            assert response.status == 200
            assert (await response.json())["reply"] == "still here"
        await link.stop()
