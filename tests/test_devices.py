"""Bring your own device (docs/protocol.md, devices): enrollment, presence, the relay, media,
events, use_device, and the hub as an endpoint device — with a Python dial-in daemon and, when Node
is here, the contract's own Node daemon."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.agent.tools.context import ToolContext
from hub.agent.tools.devices import use_device
from hub.api.server import RunningServer
from hub.people.identity import hash_token
from tests.conftest import StartHub, owner_headers
from tests.daemon import PythonDaemon, enroll, send
from tests.toolcall import call_tool

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url)


async def call_use_device(server: RunningServer, **arguments: Any) -> dict[str, Any]:
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    ctx = ToolContext(server.hub, server.hub.owner, tiny)
    result = await call_tool(use_device, ctx, **arguments)
    return dict(result)


async def echo_status(envelope: dict[str, Any]) -> dict[str, Any]:
    if envelope.get("type") == "invoke":
        return {"result": f"disk 42% full; you asked: {envelope['prompt']}"}
    return {"ok": False, "error": f"unknown envelope type {envelope.get('type')}"}


# --- enrollment ---------------------------------------------------------------------------------


async def test_enrollment_lists_kind_capabilities_and_presence(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    assert set(enrolled) == {"ok", "device_id", "device_token"}
    token = enrolled["device_token"]
    stored = server.hub.db.execute("SELECT token_hash FROM devices").fetchone()[0]
    assert stored == hash_token(token), "only the hash is kept"
    status, listing = await send(
        http, "GET", f"{server.url}/api/devices", None, owner_headers(server)
    )
    assert status == 200
    device = listing["devices"][0]
    assert (device["name"], device["kind"], device["capabilities"], device["online"]) == (
        "laptop",
        "daemon",
        ["shell", "screenshot"],
        False,
    )
    assert token not in json.dumps(listing)


async def test_only_the_owner_enrolls(server: RunningServer, http: aiohttp.ClientSession) -> None:
    bea = server.hub.identity.add_user("bea")
    bea_auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(bea, 't')}"}
    body = {"name": "x", "kind": "daemon"}
    assert (await send(http, "POST", f"{server.url}/api/devices", body, bea_auth))[0] == 403
    assert (await send(http, "POST", f"{server.url}/api/devices", body))[0] == 401


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"name": "", "kind": "daemon"}, "name"),
        ({"name": "x", "kind": "toaster"}, "kind"),
        ({"name": "x", "kind": "daemon", "capabilities": "shell"}, "capabilities"),
        ({"name": "x", "kind": "daemon", "secret": "abcdefghij"}, "endpoint devices only"),
        ({"name": "x", "kind": "endpoint", "secret": "abcdefghij"}, "url"),
        (
            {"name": "x", "kind": "endpoint", "url": "http://example.com", "secret": "abcdefghij"},
            "https",
        ),
    ],
)
async def test_bad_enrollment(
    server: RunningServer, http: aiohttp.ClientSession, body: dict[str, Any], problem: str
) -> None:
    status, answer = await send(
        http, "POST", f"{server.url}/api/devices", body, owner_headers(server)
    )
    assert status == 400 and problem in answer["error"]
    assert server.hub.db["devices"].count == 0


async def test_adopt_rotates_the_token_and_delete_removes(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    status, adopted = await send(
        http,
        "POST",
        f"{server.url}/api/devices/adopt",
        {"deviceId": enrolled["device_id"]},
        owner_headers(server),
    )
    assert status == 200 and adopted["device_token"] != enrolled["device_token"]
    beat = f"{server.url}/api/devices/heartbeat"
    old = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
    assert (await send(http, "POST", beat, old))[0] == 401
    new = {"deviceId": enrolled["device_id"], "token": adopted["device_token"]}
    assert (await send(http, "POST", beat, new))[0] == 200
    status, _ = await send(
        http,
        "DELETE",
        f"{server.url}/api/devices?id={enrolled['device_id']}",
        None,
        owner_headers(server),
    )
    assert status == 200
    assert (await send(http, "POST", beat, new))[0] == 401


async def test_another_owners_device_is_not_found(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    bea = server.hub.identity.add_user("bea")
    bea_auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(bea, 't')}"}
    for method, path, body in (
        ("POST", "/api/devices/adopt", {"deviceId": enrolled["device_id"]}),
        ("DELETE", f"/api/devices?id={enrolled['device_id']}", None),
        ("GET", f"/api/devices/endpoint?deviceId={enrolled['device_id']}", None),
    ):
        status, answer = await send(http, method, server.url + path, body, bea_auth)
        assert status == 404, (path, answer)
        assert "laptop" not in json.dumps(answer)
    assert (await send(http, "GET", f"{server.url}/api/devices", None, bea_auth))[1] == {
        "devices": []
    }


# --- presence -----------------------------------------------------------------------------------


async def test_presence_goes_offline_within_a_minute_and_comes_back(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    creds = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
    beat = f"{server.url}/api/devices/heartbeat"

    async def online() -> Any:
        listing = (
            await send(http, "GET", f"{server.url}/api/devices", None, owner_headers(server))
        )[1]
        return listing["devices"][0]

    assert (
        await send(
            http,
            "POST",
            beat,
            {**creds, "capabilities": ["camera"], "lanUrl": "http://192.168.1.20:8080"},
        )
    )[0] == 200
    device = await online()
    assert (device["online"], device["capabilities"], device["lanUrl"]) == (
        True,
        ["camera"],
        "http://192.168.1.20:8080",
    )
    server.hub.devices.clock.advance(61)  # unplugged: a minute passes without a heartbeat
    assert (await online())["online"] is False
    assert (await send(http, "POST", beat, creds))[0] == 200
    device = await online()
    assert device["online"] is True, "back without re-enrolling"
    assert device["capabilities"] == ["camera"], "a heartbeat without the list leaves it"


@pytest.mark.parametrize(
    "creds",
    [{}, {"deviceId": "dev_nope", "token": "x"}, {"token": "x"}, {"deviceId": 5, "token": "x"}],
)
async def test_dial_in_calls_need_the_right_token(
    server: RunningServer, http: aiohttp.ClientSession, creds: dict[str, Any]
) -> None:
    await enroll(http, server)
    for method, path in (
        ("POST", "/api/devices/heartbeat"),
        ("PUT", "/api/devices/relay"),
        ("PATCH", "/api/devices/relay"),
        ("POST", "/api/media"),
        ("POST", "/api/devices/event"),
    ):
        status, answer = await send(http, method, server.url + path, creds)
        assert status == 401, (path, answer)


# --- the relay ----------------------------------------------------------------------------------


async def test_ask_a_dial_in_device_gets_its_real_answer(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    with PythonDaemon(server.url, enrolled["device_id"], enrolled["device_token"], echo_status):
        result = await call_use_device(
            server, action="ask", name="laptop", prompt="how full is the disk?"
        )
    assert result["status"] == "success"
    assert result["content"][0]["text"] == "disk 42% full; you asked: how full is the disk?"
    listed = await call_use_device(server, action="list")
    assert "laptop (daemon; online: True; capabilities: shell)" in listed["content"][0]["text"]


async def test_a_slow_answer_is_pending_then_redeemed(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    server.hub.devices.invoke_wait_s = 0.2
    release = asyncio.Event()

    async def slow(envelope: dict[str, Any]) -> dict[str, Any]:
        await release.wait()
        return {"result": "done at last"}

    with PythonDaemon(server.url, enrolled["device_id"], enrolled["device_token"], slow):
        pending = await call_use_device(server, action="ask", name="laptop", prompt="work")
        details = pending["content"][1]["json"]
        assert details["pending"] is True
        release.set()
        for _ in range(100):
            redeemed = await call_use_device(server, action="result", id=details["id"])
            if "done at last" in redeemed["content"][0]["text"]:
                break
            await asyncio.sleep(0.05)
    assert redeemed["content"][0]["text"] == "done at last"


async def test_relay_bad_input(server: RunningServer, http: aiohttp.ClientSession) -> None:
    enrolled = await enroll(http, server)
    other = await enroll(http, server, name="phone")
    creds = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
    relay = f"{server.url}/api/devices/relay"
    for bad in (0, 51, "ten", True):
        status, answer = await send(http, "PUT", relay, {**creds, "max": bad})
        assert status == 400 and "max" in answer["error"]
    device = server.hub.devices.registry.get(server.hub.owner.id, other["device_id"])
    foreign = server.hub.devices.mailbox.send(device, {"type": "invoke", "prompt": "hi"})
    status, _ = await send(http, "PATCH", relay, {**creds, "inReplyTo": foreign, "payload": "{}"})
    assert status == 404, "another device's message"
    status, _ = await send(
        http, "PATCH", relay, {**creds, "inReplyTo": "msg_nope", "payload": "{}"}
    )
    assert status == 404
    mine = server.hub.devices.mailbox.send(
        server.hub.devices.registry.get(server.hub.owner.id, enrolled["device_id"]),
        {"type": "invoke", "prompt": "x"},
    )
    big = json.dumps({"result": "x" * (8 * 1024)})
    status, answer = await send(http, "PATCH", relay, {**creds, "inReplyTo": mine, "payload": big})
    assert status == 400 and "8192" in answer["error"]
    status, answer = await send(
        http, "PATCH", relay, {**creds, "inReplyTo": mine, "payload": "not json"}
    )
    assert status == 400
    assert (await send(http, "PATCH", relay, {**creds, "inReplyTo": mine, "payload": "{}"}))[
        0
    ] == 200
    assert (await send(http, "PATCH", relay, {**creds, "inReplyTo": mine, "payload": "{}"}))[
        0
    ] == 400, "answered once"


async def test_default_pull_is_ten_and_unread_counts(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    creds = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
    device = server.hub.devices.registry.get(server.hub.owner.id, enrolled["device_id"])
    for i in range(12):
        server.hub.devices.mailbox.send(device, {"type": "notify", "title": f"n{i}"})
    status, beat = await send(
        http, "POST", f"{server.url}/api/devices/heartbeat", {**creds, "wantUnread": True}
    )
    assert (status, beat) == (200, {"ok": True, "unread": 12})
    status, pulled = await send(http, "PUT", f"{server.url}/api/devices/relay", creds)
    assert len(pulled["messages"]) == 10
    assert json.loads(pulled["messages"][0]["payload"]) == {"type": "notify", "title": "n0"}
    status, pulled = await send(http, "PUT", f"{server.url}/api/devices/relay", creds)
    assert len(pulled["messages"]) == 2


async def test_sweep_dead_letters_after_an_hour_and_forgets_replies_after_a_day(
    server: RunningServer,
) -> None:
    devices, owner = server.hub.devices, server.hub.owner.id
    device, _ = devices.registry.enroll(owner, name="pi", kind="daemon")
    unsent = devices.mailbox.send(device, {"type": "invoke", "prompt": "a"})
    answered = devices.mailbox.send(device, {"type": "invoke", "prompt": "b"})
    devices.mailbox.reply(device, answered, {"result": "ok"})
    devices.clock.advance(3601)
    assert devices.mailbox.sweep() == (1, 0)
    assert devices.mailbox.pull(device) == []
    with pytest.raises(Exception, match="never picked up"):
        await devices.result(owner, unsent)
    assert (await devices.result(owner, answered)).text == "ok"
    devices.clock.advance(24 * 3600)
    assert devices.mailbox.sweep()[1] == 1
    with pytest.raises(Exception, match="kept 24 hours"):
        await devices.result(owner, answered)


# --- media and images ---------------------------------------------------------------------------


async def test_media_upload_serve_and_reply_images(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    creds = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
    status, stored = await send(
        http,
        "POST",
        f"{server.url}/api/media",
        {**creds, "data": base64.b64encode(PNG).decode(), "contentType": "image/png"},
    )
    assert status == 200 and stored["url"] == f"/media/{stored['key']}"
    async with http.get(server.url + stored["url"], headers=owner_headers(server)) as response:
        assert response.content_type == "image/png" and await response.read() == PNG
    async with http.get(server.url + stored["url"]) as response:
        assert response.status == 401

    async def with_images(envelope: dict[str, Any]) -> dict[str, Any]:
        return {
            "result": "here is the desk",
            "images": [
                {"url": stored["url"], "format": "png"},
                {"url": f"{server.url}{stored['url']}", "format": "png"},
                {"url": "https://elsewhere.example/cat.png", "format": "png"},
            ],
        }

    with PythonDaemon(server.url, enrolled["device_id"], enrolled["device_token"], with_images):
        result = await call_use_device(server, action="ask", name="laptop", prompt="photo?")
    images = [block for block in result["content"] if "image" in block]
    assert [i["image"]["source"]["bytes"] for i in images] == [PNG, PNG]
    assert "ignored 1 image" in result["content"][0]["text"]


@pytest.mark.parametrize(
    ("data", "content_type", "problem"),
    [
        ("@@not base64@@", "image/png", "base64"),
        (base64.b64encode(b"<html>").decode(), "text/html", "contentType"),
        (base64.b64encode(PNG).decode(), "image/svg+xml", "contentType"),
        ("", "image/png", "base64"),
    ],
)
async def test_bad_media(
    server: RunningServer,
    http: aiohttp.ClientSession,
    data: str,
    content_type: str,
    problem: str,
) -> None:
    enrolled = await enroll(http, server)
    creds = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
    status, answer = await send(
        http,
        "POST",
        f"{server.url}/api/media",
        {**creds, "data": data, "contentType": content_type},
    )
    assert status == 400 and problem in answer["error"]


# --- events, task results, ask --------------------------------------------------------------------


async def test_events_reach_the_owners_stream(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, server)
    creds = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
    status, answer = await send(
        http, "POST", f"{server.url}/api/devices/event", {**creds, "kind": "doorbell"}
    )
    assert status == 400 and "nicla_wake" in answer["error"]
    received: list[dict[str, Any]] = []

    async def listen() -> None:
        async with http.get(f"{server.url}/api/events", headers=owner_headers(server)) as resp:
            async for line in resp.content:
                if line.startswith(b"data: "):
                    received.append(json.loads(line[6:]))
                    if len(received) == 2:
                        return

    listener = asyncio.create_task(listen())
    await asyncio.sleep(0.2)
    await send(
        http,
        "POST",
        f"{server.url}/api/devices/event",
        {**creds, "kind": "nicla_wake", "detail": {"word": "hey tiny"}},
    )
    await send(
        http,
        "POST",
        f"{server.url}/api/devices/task-result",
        {**creds, "taskId": "t1", "summary": "backup finished"},
    )
    await asyncio.wait_for(listener, 10)
    assert [(e["kind"], e["detail"]) for e in received] == [
        ("nicla_wake", {"word": "hey tiny"}),
        (
            "task_result",
            {"taskId": "t1", "summary": "backup finished", "result": None, "device": "laptop"},
        ),
    ]
    status, answer = await send(http, "POST", f"{server.url}/api/devices/task-result", creds)
    assert status == 400 and "taskId" in answer["error"]


async def test_a_device_asks_its_owners_tiny(
    server: RunningServer, http: aiohttp.ClientSession, fake_ollama: FakeOllama
) -> None:
    enrolled = await enroll(http, server)
    creds = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
    fake_ollama.script(Reply(chunks=["It is ", "sunny."]))
    status, answer = await send(
        http, "POST", f"{server.url}/api/devices/ask", {**creds, "text": "weather?"}
    )
    card = {"title": "weather?", "body": "It is sunny."}
    assert (status, answer) == (200, {"text": "It is sunny.", "card": card})
    assert (
        "(from your device laptop) weather?" in fake_ollama.requests[-1]["messages"][-1]["content"]
    )
    status, _ = await send(http, "POST", f"{server.url}/api/devices/ask", {**creds, "text": ""})
    assert status == 400


# --- the hub as an endpoint device (the contract's curl lines) ---------------------------------


async def test_the_hub_answers_the_seeds_endpoint_routes(
    server: RunningServer, http: aiohttp.ClientSession, fake_ollama: FakeOllama
) -> None:
    auth = owner_headers(server)
    for method, path, body in (
        ("GET", "/api/telemetry", None),
        ("POST", "/api/chat", {"prompt": "status?"}),
        ("GET", "/api/camera/snapshot", None),
    ):
        assert (await send(http, method, server.url + path, body))[0] == 401, path
    status, telemetry = await send(http, "GET", f"{server.url}/api/telemetry", None, auth)
    assert status == 200 and telemetry["model"]["provider"] == "ollama"
    fake_ollama.script(Reply(chunks=["All ", "good."]))
    status, reply = await send(http, "POST", f"{server.url}/api/chat", {"prompt": "status?"}, auth)
    assert (status, reply) == (200, {"reply": "All good."})
    status, answer = await send(http, "GET", f"{server.url}/api/camera/snapshot", None, auth)
    assert status == 503 and "no camera" in answer["error"]


# --- the contract's Node daemon, unchanged ----------------------------------------------------

NODE_DAEMON = Path(__file__).resolve().parents[1] / "fakes" / "documented_daemon.mjs"


@pytest.fixture
async def node_daemon(server: RunningServer, http: aiohttp.ClientSession) -> AsyncIterator[None]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node binary on this machine (the Python daemon tests cover the loop)")
    enrolled = await enroll(http, server, name="node-box")
    process = await asyncio.create_subprocess_exec(
        node,
        str(NODE_DAEMON),
        env={
            "APP": server.url,
            "DEVICE_ID": enrolled["device_id"],
            "DEVICE_TOKEN": enrolled["device_token"],
            "PATH": "/usr/bin:/bin",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    yield
    process.terminate()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), 10)


async def test_the_seeds_node_daemon_answers(node_daemon: None, server: RunningServer) -> None:
    result = await call_use_device(server, action="ask", name="node-box", prompt="uptime")
    assert result["content"][0]["text"] == "node ran: uptime"


async def test_invoke_over_http(server: RunningServer, http: aiohttp.ClientSession) -> None:
    enrolled = await enroll(http, server)
    auth, url = owner_headers(server), f"{server.url}/api/devices/invoke"
    with PythonDaemon(server.url, enrolled["device_id"], enrolled["device_token"], echo_status):
        status, answer = await send(
            http, "POST", url, {"deviceId": enrolled["device_id"], "prompt": "df -h"}, auth
        )
    assert (status, answer) == (
        200,
        {"ok": True, "result": "disk 42% full; you asked: df -h", "images": 0},
    )
    server.hub.devices.invoke_wait_s = 0.05
    status, pending = await send(
        http, "POST", url, {"deviceId": enrolled["device_id"], "prompt": "later"}, auth
    )
    assert pending["pending"] is True
    status, still = await send(http, "GET", f"{url}?id={pending['id']}", None, auth)
    assert still == {"ok": True, "pending": True, "id": pending["id"]}
    for body, code in (
        ({"deviceId": enrolled["device_id"], "prompt": ""}, 400),
        ({"deviceId": "dev_nope", "prompt": "x"}, 404),
    ):
        assert (await send(http, "POST", url, body, auth))[0] == code
    assert (await send(http, "GET", f"{url}?id=msg_nope", None, auth))[0] == 404


async def test_stopping_the_hub_ends_open_event_streams(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub()
    async with http.get(f"{server.url}/api/events", headers=owner_headers(server)) as response:
        assert response.status == 200
        await until(lambda: bool(server.hub.devices.events._subscribers[server.hub.owner.id]))
        stopping = asyncio.create_task(server.stop())
        ended = await response.content.read()  # the stream ends: the server let it go
        assert ended == b""
        await stopping
    assert stopping.done() and stopping.exception() is None
