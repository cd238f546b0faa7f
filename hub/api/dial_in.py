"""What every dial-in route shares (docs/protocol.md, devices): the device named and
authenticated by the ``{deviceId, token}`` in its body, store errors as HTTP answers, and the
replay of a call a sender's outbox makes again.

Dial-in calls carry no user: they are anonymous to the auth middleware and authenticated here,
and each acts only inside the device owner's world.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hub import contracts as c
from hub.api.body import read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.lengths import check_lengths
from hub.api.spec import STRING
from hub.devices.endpoint import EndpointError, EndpointRefused
from hub.devices.idempotency import idempotency_key
from hub.devices.registry import Device
from hub.devices.service import Devices

DIAL_IN = {"deviceId": STRING, "token": STRING}
"""What every dial-in request body carries (see :func:`dial_in`)."""


def devices_of(request: web.Request) -> Devices:
    return request.app[HUB].devices


async def run(action: Callable[[], Any]) -> Any:
    """Run a store call or a dial-out; a device that fails us is a 502, a refused URL a 400."""
    try:
        result = action()
        return await result if asyncio.iscoroutine(result) else result
    except EndpointRefused as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None
    except EndpointError as exc:
        raise http_error(web.HTTPBadGateway, str(exc)) from None


async def json_object(request: web.Request) -> dict[str, Any]:
    body = await read_json_body(request, c.MAX_REQUEST_BYTES)
    if not isinstance(body, dict):
        raise http_error(web.HTTPBadRequest, "body must be a JSON object")
    check_lengths(body)
    return body


async def dial_in(request: web.Request) -> tuple[Device, dict[str, Any]]:
    body = await json_object(request)
    device = await run(lambda: devices_of(request).registry.authenticate(body))
    return device, body


def once(
    request: web.Request,
    device: Device,
    body: dict[str, Any],
    work: Callable[[], dict[str, Any]],
) -> web.Response:
    """Answer a dial-in call that may carry ``idempotencyKey``: a replay of a call already done
    (a sender's outbox resending after a lost answer) gets the stored answer, not a second run."""
    key = idempotency_key(body)
    route = f"{request.method} {request.path}"
    return web.json_response(devices_of(request).idempotency.once(device, key, route, work))
