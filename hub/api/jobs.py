"""/api/jobs: the caller's scheduled jobs and pending alerts, and deleting one.

Jobs and alerts are made by the agent's ``schedule`` and ``schedule_alert`` tools; this is where
a client (the TUI's Jobs screen, a phone) shows them with their next and last run and last
error, and removes one. Someone else's id answers 404, exactly like one that does not exist.
"""

from __future__ import annotations

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.keys import HUB
from hub.api.spec import ANY, INTEGER, NUMBER, OK, Operation, array, documented, obj
from hub.scheduler.store import MAX_JOBS, ScheduleStore

routes = web.RouteTableDef()


def _store(request: web.Request) -> ScheduleStore:
    hub = request.app[HUB]
    return ScheduleStore(hub.db, hub.devices.clock)


@routes.get("/api/jobs")
@access(Access.USER)
@documented(
    Operation(
        "your scheduled jobs and pending alerts, with next and last run",
        answers={
            200: obj({"jobs": array(ANY), "alerts": array(ANY), "limit": INTEGER, "now": NUMBER})
        },
    )
)
async def list_jobs(request: web.Request) -> web.Response:
    store, owner = _store(request), signed_in(request).id
    return web.json_response(
        {
            "jobs": [job.as_json() for job in store.of_owner(owner, "job")],
            "alerts": [alert.as_json() for alert in store.of_owner(owner, "alert")],
            "limit": MAX_JOBS,
            "now": store.clock(),  # the hub's clock, for "in 5 min" on a client
        }
    )


@routes.delete("/api/jobs/{id}")
@access(Access.USER)
@documented(Operation("delete one of your jobs or alerts", answers={200: OK}, errors=(404,)))
async def delete_job(request: web.Request) -> web.Response:
    _store(request).delete(signed_in(request).id, request.match_info["id"])
    return web.json_response({"ok": True})
