"""The owner's event ring over HTTP: followed as Server-Sent Events (``GET /api/events``), and
what dial-in devices report on it (``POST /api/devices/event``, ``POST /api/devices/task-result``;
the domain is ``hub/devices/reports.py``)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.body import query_int
from hub.api.dial_in import DIAL_IN, devices_of, dial_in, once
from hub.api.errors import http_error
from hub.api.keys import HUB, PARTS
from hub.api.quotas import QUOTAS, person_of
from hub.api.spec import ANY, EVENT_STREAM, INTEGER, STRING, Operation, bounded, documented, obj
from hub.devices.events import RingEvent
from hub.devices.reports import accepted_kinds, check_fits, finish_task, publish_event, task_detail

routes = web.RouteTableDef()


@routes.get("/api/events")
@access(Access.USER)
@documented(
    Operation(
        "your event ring as Server-Sent Events",
        answers={200: ANY},
        query={"after": bounded(0, 2**62)},
        content_types=(EVENT_STREAM,),
    )
)
async def events(request: web.Request) -> web.StreamResponse:
    """The caller's event ring as SSE: what is stored after ``?after=``, then live events."""
    after = query_int(request, "after", 0, 0, 2**62)
    me, most = signed_in(request).id, request.app[HUB].settings.quota_open_streams
    with request.app[QUOTAS].stream(person_of(request, me), most):
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            }
        )
        await response.prepare(request)
        ring = devices_of(request).events
        with contextlib.suppress(ConnectionResetError):
            async for event in ring.follow(me, after):
                await response.write(_frame(event))
        return response


def _frame(event: RingEvent) -> bytes:
    return f"id: {event.id}\ndata: {json.dumps(event.as_json())}\n\n".encode()


@routes.post("/api/devices/event")
@access(Access.DEVICE)
@documented(
    Operation(
        "publish an event on the owner's ring",
        answers={200: obj({"id": INTEGER})},
        body=obj(
            {**DIAL_IN, "kind": STRING},
            detail=ANY,
            idempotencyKey=STRING,
        ),
        errors=(404, 409),
    )
)
async def device_event(request: web.Request) -> web.Response:
    device, body = await dial_in(request)
    hub = request.app[HUB]
    kinds = accepted_kinds(hub.drivers.catalog.event_kinds())
    kind = body.get("kind")
    if not isinstance(kind, str) or kind not in kinds:
        raise http_error(web.HTTPBadRequest, f"kind must be one of {', '.join(kinds)}")
    detail = body.get("detail")
    check_fits(detail, "detail")

    def work() -> dict[str, Any]:
        event = publish_event(hub.devices, hub.transcripts, device, kind, detail)
        return {"ok": True, "id": event.id}

    return once(request, device, body, work)


@routes.post("/api/devices/task-result")
@access(Access.DEVICE)
@documented(
    Operation(
        "report a finished task",
        answers={200: obj({"id": INTEGER})},
        body=obj(
            {**DIAL_IN, "taskId": STRING},
            summary=STRING,
            result=ANY,
            idempotencyKey=STRING,
        ),
        errors=(404, 409),
    )
)
async def task_result(request: web.Request) -> web.Response:
    device, body = await dial_in(request)
    task_id = body.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise http_error(web.HTTPBadRequest, "taskId is required")
    summary, result = body.get("summary"), body.get("result")
    if summary is not None and not isinstance(summary, str):
        raise http_error(web.HTTPBadRequest, "summary must be a string")
    detail = task_detail(device, task_id, summary, result)
    check_fits(detail, "result")

    def work() -> dict[str, Any]:
        event, notice = finish_task(devices_of(request), device, detail)
        if device.owner == request.app[HUB].owner.id:
            request.app[PARTS].show_on_desktop(notice.title, notice.body)
        return {"ok": True, "id": event.id}

    return once(request, device, body, work)
