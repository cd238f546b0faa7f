"""/api/jobs: the caller's scheduled jobs and pending alerts; adding a job, previewing a
schedule's next runs, and deleting one.

The agent's ``schedule`` tool and these routes keep jobs in the one ``ScheduleStore``, with its
rules (the schedule forms, the per-person limit, the text limits): a job made by hand (``tiny-hub
jobs add``, the TUI's Jobs screen) is the same row the tool lists, and the other way round. A
client shows them with their next and last run and last error, and removes one. Someone else's
id answers 404, exactly like one that does not exist.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.body import query_int, read_json_body, whole_number
from hub.api.keys import HUB
from hub.api.spec import (
    ANY,
    INTEGER,
    NUMBER,
    OK,
    STRING,
    Operation,
    array,
    bounded,
    closed,
    documented,
    matching,
    obj,
    text,
)
from hub.scheduler.store import MAX_JOBS, TEXT_MAX, TITLE_MAX, ScheduleRefused, ScheduleStore
from hub.scheduler.when import FORMS, MAX_ONE_SHOT_MINUTES, parse_every

routes = web.RouteTableDef()

MAX_JOB_BODY_BYTES = 16_384
PREVIEW_RUNS = 5
JOB_FIELDS = ("prompt", "every", "runInMinutes", "title", "tiny")
# The forms parse_every reads (its ranges, N of 1-1440 minutes or 1-168 hours and a real time
# of day, are the handler's to say); either this or runInMinutes, not both.
EVERY = matching(r"^ *(\*/[0-9]{1,4}[mhMH]|[dD][aA][iI][lL][yY]@[0-9]{2}:[0-9]{2}) *$")


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


@routes.post("/api/jobs")
@access(Access.USER)
@documented(
    Operation(
        "schedule a job: a prompt run as you, repeating (every) or once (runInMinutes)",
        body={
            **closed(
                {"prompt": text(TEXT_MAX)},
                every=EVERY,
                runInMinutes=bounded(1, MAX_ONE_SHOT_MINUTES),
                title={"type": "string", "maxLength": TITLE_MAX},
                tiny=STRING,
            ),
            # repeating or once: exactly one of the two
            "oneOf": [{"required": ["every"]}, {"required": ["runInMinutes"]}],
        },
        answers={200: obj({"job": ANY})},
        errors=(404, 409),
    )
)
async def add_job(request: web.Request) -> web.Response:
    body = await read_json_body(request, MAX_JOB_BODY_BYTES)
    if not isinstance(body, dict):
        raise ScheduleRefused("body must be a JSON object")
    unknown = sorted(set(body) - set(JOB_FIELDS))
    if unknown:
        raise ScheduleRefused(f"unknown field(s): {', '.join(unknown)} ({', '.join(JOB_FIELDS)})")
    if "every" in body and "runInMinutes" in body:  # even an empty every: the schema's oneOf
        raise ScheduleRefused(f"give either every ({FORMS}) or runInMinutes, not both")
    words = {name: _text_field(body, name) for name in ("prompt", "every", "title", "tiny")}
    minutes = whole_number(body.get("runInMinutes"))
    if minutes is None and body.get("runInMinutes") is not None:
        raise ScheduleRefused("runInMinutes must be a whole number of minutes")
    user = signed_in(request)
    if words["tiny"]:
        request.app[HUB].tinys.resolve(words["tiny"], user, None)  # a tiny they may talk to
    job = _store(request).add_job(
        user.id,
        words["prompt"],
        every=words["every"].strip(),
        run_in_minutes=minutes,
        tiny=words["tiny"].strip(),
        title=words["title"].strip(),
    )
    return web.json_response({"job": job.as_json()})


def _text_field(body: dict[str, Any], name: str) -> str:
    value = body.get(name, "")
    if not isinstance(value, str):
        raise ScheduleRefused(f"{name} must be a string")
    return value


@routes.get("/api/jobs/preview")
@access(Access.USER)
@documented(
    Operation(
        "a schedule in words and its next runs, without saving anything (every or runInMinutes)",
        query={"every": EVERY, "runInMinutes": bounded(1, MAX_ONE_SHOT_MINUTES)},
        answers={200: obj({"schedule": STRING, "nextRuns": array(NUMBER), "now": NUMBER})},
    )
)
async def preview_job(request: web.Request) -> web.Response:
    store, every = _store(request), request.query.get("every", "").strip()
    now = store.clock()
    if ("every" in request.query) == ("runInMinutes" in request.query):
        raise ScheduleRefused(f"give either every ({FORMS}) or runInMinutes, not both")
    if every:
        schedule = parse_every(every)
        runs = [schedule.first_after(now, now)]
        while len(runs) < PREVIEW_RUNS:
            runs.append(schedule.first_after(now, runs[-1]))
        words = schedule.describe()
    elif "runInMinutes" in request.query:
        minutes = query_int(request, "runInMinutes", 0, 1, MAX_ONE_SHOT_MINUTES)
        runs, words = [now + minutes * 60.0], f"once, in {minutes} min"
    else:
        raise ScheduleRefused(f"give either every ({FORMS}) or runInMinutes, not both")
    return web.json_response({"schedule": words, "nextRuns": runs, "now": now})


@routes.delete("/api/jobs/{id}")
@access(Access.USER)
@documented(Operation("delete one of your jobs or alerts", answers={200: OK}, errors=(404,)))
async def delete_job(request: web.Request) -> web.Response:
    _store(request).delete(signed_in(request).id, request.match_info["id"])
    return web.json_response({"ok": True})
