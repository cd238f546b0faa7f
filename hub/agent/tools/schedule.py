"""schedule, schedule_alert, cancel_alerts: work the hub does later, without the person.

``schedule`` is an account tool (a job runs a turn *as* someone). The alert tools are mounted for
everyone, as the contract says, but an alert becomes a notice on its owner's ring, so an
anonymous caller, who has none, is asked to sign in. The hub keeps both (docs/scheduler.md), so
they happen with every client closed.

Deleting a job and cancelling alerts are proposals the person confirms in their app
(``hub.agent.tools.confirming``): a job is a prompt they wrote, an alert a reminder they count on.
"""

from __future__ import annotations

import re
from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.confirming import proposed
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.confirmations.actions import CANCEL_ALERTS, DELETE_JOB
from hub.confirmations.store import Item
from hub.core.errors import Refused
from hub.memory.forgetting import plural
from hub.scheduler.store import MAX_JOBS, Scheduled, ScheduleStore
from hub.scheduler.when import local_text, next_local_time, stamp_text

ACTIONS = ("create", "list", "delete")
MAX_ALERT_S = 366 * 86_400
SIGN_IN_FOR_ALERTS = (
    "Sign in to set alerts: an alert is delivered to your own event ring and devices, and "
    "an anonymous chat has none."
)
_AT = re.compile(r"^(\d{1,2}):(\d{2})$")


def _store(ctx: ToolContext) -> ScheduleStore:
    return ScheduleStore(ctx.hub.db, ctx.hub.devices.clock)


def _job_line(job: Scheduled) -> str:
    state = f"next {stamp_text(job.next_run)}" if job.next_run else "done"
    if job.last_status == "error":
        state += f"; last run failed: {job.last_error}"
    elif job.last_run and job.runs:
        state += f"; last ran {stamp_text(job.last_run)}"
    return f"[{job.id}] {job.when()}: {job.label} ({state})"


def _scheduled(job: Scheduled) -> str:
    """What was scheduled and when it first runs, in the person's time, then the job's line."""
    first = f", first at {local_text(job.next_run)}" if job.next_run else ""
    return f"Scheduled {job.label!r} ({job.when()}){first}. {_job_line(job)}."


@tool(name="schedule", context=True)
async def schedule(
    tool_context: StrandsToolContext,
    action: str = "list",
    prompt: str = "",
    every: str = "",
    run_in_minutes: int | None = None,
    id: str = "",
    title: str = "",
) -> dict[str, Any]:
    """Background jobs that run a message as the user, without them, and send them the answer.

    Args:
        action: create, list or delete.
        prompt: for create: what to do at each run, as the user would ask it.
        every: for a repeating job only, with its unit: */30m (every 30 minutes), */2h
            (every 2 hours) or daily@07:00 (each day at 07:00 UTC).
        run_in_minutes: for a one-shot job instead ("in 25 minutes"): run once, this many
            minutes from now; every stays empty.
        id: for delete: the job's id (the person confirms the deletion in their app).
        title: for create: a short name for the job (shown on notifications).
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    store = _store(ctx)
    if every.strip() and not run_in_minutes:
        run_in_minutes = None  # a model fills every argument: 0 minutes is none asked for
    try:
        if action == "create":
            job = store.add_job(
                ctx.caller.id,
                prompt,
                every=every.strip(),
                run_in_minutes=run_in_minutes,
                tiny=ctx.tiny.name,
                title=title.strip(),
            )
            return ok(_scheduled(job), job=job.as_json())
        if action == "delete":
            if not id.strip():
                return failed("give the id of the job to delete (schedule action list shows it)")
            job = store.get(ctx.caller.id, id.strip())
            if job.kind != "job":
                return failed(f"{job.id} is an alert: cancel_alerts cancels it")
            line = Item(job.id, _job_line(job))
            return proposed(
                ctx, DELETE_JOB, f"delete the job {job.label!r}", [line], {"id": job.id}
            )
    except Refused as exc:
        return failed(str(exc))
    if action != "list":
        return failed(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")
    jobs = store.of_owner(ctx.caller.id, "job")
    lines = "\n".join(_job_line(job) for job in jobs) or "(no jobs)"
    pending = sum(job.next_run is not None for job in jobs)
    return ok(
        f"{lines}\n{pending} of {MAX_JOBS} jobs in use.", jobs=[job.as_json() for job in jobs]
    )


def _alert_time(now: float, in_seconds: int | None, in_minutes: int | None, at: str) -> float | str:
    """When the alert fires, or what is wrong with how it was asked."""
    # A model fills every argument: 0 seconds or minutes is none asked for.
    given = [x for x in (in_seconds, in_minutes) if x] + ([at] if at else [])
    if len(given) != 1:
        return "give exactly one of in_seconds, in_minutes or at (HH:MM)"
    if at:
        match = _AT.match(at.strip())
        if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
            return f"at must be a time of day HH:MM (00:00 to 23:59), not {at!r}"
        return next_local_time(int(match.group(1)), int(match.group(2)), now)
    seconds = in_seconds or (in_minutes or 0) * 60
    if not 1 <= seconds <= MAX_ALERT_S:
        return "the alert must be 1 second to 366 days away"
    return now + seconds


@tool(name="schedule_alert", context=True)
async def schedule_alert(
    title: str,
    tool_context: StrandsToolContext,
    message: str = "",
    in_seconds: int | None = None,
    in_minutes: int | None = None,
    at: str = "",
) -> dict[str, Any]:
    """A reminder or alert at a time ("remind me in 20 minutes to ..."): a notification on the
    user's devices and screens, kept by the hub so it fires with every app closed.

    Args:
        title: what the alert says ("Tea is ready").
        message: more detail, optional.
        in_seconds: fire this many seconds from now.
        in_minutes: or this many minutes from now.
        at: or at this time of day, HH:MM on the hub's local clock (today, else tomorrow).
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return failed(SIGN_IN_FOR_ALERTS)
    store = _store(ctx)
    when = _alert_time(store.clock(), in_seconds, in_minutes, at)
    if isinstance(when, str):
        return failed(when)
    try:
        alert = store.add_alert(ctx.caller.id, title, message, when)
    except Refused as exc:
        return failed(str(exc))
    return ok(
        f"Alert [{alert.id}] {alert.title!r} set for {stamp_text(alert.next_run)}.",
        alert=alert.as_json(),
    )


@tool(name="cancel_alerts", context=True)
async def cancel_alerts(tool_context: StrandsToolContext, id: str = "") -> dict[str, Any]:
    """Cancel the user's pending alerts: all of them, or one by id. The person confirms it in
    their app.

    Args:
        id: the alert to cancel; empty cancels every pending alert.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return failed(SIGN_IN_FOR_ALERTS)
    store = _store(ctx)
    if id.strip():
        try:
            found = store.get(ctx.caller.id, id.strip())
        except Refused as exc:
            return failed(str(exc))
        alerts = [found] if found.kind == "alert" and found.next_run is not None else []
        if not alerts:
            return failed(f"no pending alert {id.strip()!r} of yours")
    else:
        alerts = [a for a in store.of_owner(ctx.caller.id, "alert") if a.next_run is not None]
        if not alerts:
            return ok("There are no pending alerts to cancel.", cancelled=0)
    return proposed(
        ctx,
        CANCEL_ALERTS,
        f"cancel {plural(len(alerts), 'pending alert')}",
        [Item(a.id, f"{a.title!r} at {stamp_text(a.next_run)}") for a in alerts],
        {"ids": [a.id for a in alerts]},
    )


TOOLS: list[AgentTool] = [schedule, schedule_alert, cancel_alerts]


def tools(ctx: ToolContext) -> list[AgentTool]:
    return TOOLS


# "Remind me in 45 minutes to call the plumber" scored below the offer's bar against the
# descriptions alone: the requests people word for jobs are declared here.
hinted(
    "jobs",
    schedule,
    asked_like=(
        "remind me in an hour",
        "set a reminder",
        "remind me to do it later",
        "every day at 7",
        "each week on monday",
        "what reminders do I have?",
        "cancel my reminders",
    ),
)
hinted("jobs", schedule_alert, cancel_alerts, read_first=True)
