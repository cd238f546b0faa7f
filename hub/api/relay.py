"""The dial-in devices' mailbox over HTTP (docs/protocol.md, the relay): a heartbeat, a pull of
the envelopes waiting (held up to 25 s when asked), and the answer to one."""

from __future__ import annotations

import contextlib
from typing import Any

import sqlite_utils
from aiohttp import web

from hub.api.auth import Access, access
from hub.api.dial_in import DIAL_IN, devices_of, dial_in, once, run
from hub.api.errors import http_error
from hub.api.spec import (
    ANY,
    BOOLEAN,
    INTEGER,
    OK,
    STRING,
    Operation,
    array,
    documented,
    nullable,
    obj,
)
from hub.devices.registry import Device, DeviceNotFound
from hub.devices.relay import check_limit, check_wait
from hub.devices.service import Devices

routes = web.RouteTableDef()


@routes.post("/api/devices/heartbeat")
@access(Access.DEVICE)
@documented(
    Operation(
        "a dial-in device's heartbeat",
        answers={200: OK},
        body=obj(
            DIAL_IN,
            capabilities=array(STRING),
            lanUrl=nullable(STRING),
            wantUnread=BOOLEAN,
        ),
        errors=(404,),
    )
)
async def heartbeat(request: web.Request) -> web.Response:
    device, body = await dial_in(request)
    devices = devices_of(request)
    await run(
        lambda: devices.registry.heartbeat(device, body.get("capabilities"), body.get("lanUrl"))
    )
    answer_body: dict[str, Any] = {"ok": True}
    if body.get("wantUnread"):
        answer_body["unread"] = devices.mailbox.unread(device)
    return web.json_response(answer_body)


@routes.put("/api/devices/relay")
@access(Access.DEVICE)
@documented(
    Operation(
        "pull envelopes from the device's mailbox",
        answers={200: obj({"messages": array(obj())})},
        body=obj(DIAL_IN, max=INTEGER),
        errors=(404,),
    )
)
async def pull(request: web.Request) -> web.Response:
    """``{max?, wait?}``: without ``wait`` the answer is at once; with it the pull is held up to
    ``wait`` seconds (at most 25) for an envelope. A held pull counts as the device being seen
    when it starts: it ends within 25 s and the device pulls again, well inside the 60 s presence
    window, so a device that long-polls needs no separate heartbeat to stay online (and the
    answer that carries an envelope waits for no write)."""
    device, body = await dial_in(request)
    devices = devices_of(request)
    limit = await run(lambda: check_limit(body.get("max")))
    wait = await run(lambda: check_wait(body.get("wait")))
    if wait:
        _seen(devices, device)
    messages = await run(
        lambda: devices.mailbox.pull_waiting(device, limit, wait, lambda: _hung_up(request))
    )
    if wait and _hung_up(request):  # a daemon that restarted left this pull behind: keep its mail
        devices.mailbox.put_back(device, messages)
        messages = []
    return web.json_response({"ok": True, "messages": [m.as_json() for m in messages]})


def _hung_up(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _seen(devices: Devices, device: Device) -> None:
    """Presence for a held pull; a device removed while its pull was held stays removed."""
    with contextlib.suppress(DeviceNotFound, sqlite_utils.db.NotFoundError):
        devices.registry.heartbeat(device)


@routes.patch("/api/devices/relay")
@access(Access.DEVICE)
@documented(
    Operation(
        "answer an envelope",
        answers={200: OK},
        body=obj(
            {**DIAL_IN, "payload": ANY},
            inReplyTo=STRING,
            idempotencyKey=STRING,
        ),
        errors=(404, 409),
    )
)
async def reply(request: web.Request) -> web.Response:
    device, body = await dial_in(request)
    if "payload" not in body:
        raise http_error(web.HTTPBadRequest, "payload is required")
    mailbox = devices_of(request).mailbox

    def work() -> dict[str, Any]:
        mailbox.reply(device, body.get("inReplyTo"), body["payload"])
        return {"ok": True}

    # With a key, a repeat of a delivered reply answers the same; without one, a second reply
    # is still "already answered".
    return once(request, device, body, work)
