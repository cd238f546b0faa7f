"""``tiny-hub jobs add|preview|list|remove``: the jobs the companion's ``schedule`` tool makes,
made by hand over ``/api/jobs`` (the same store, the same rules)."""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from hub.cli.over_http import Asker, over_http
from hub.scheduler.when import stamp_text


def jobs_command(args: argparse.Namespace) -> int:
    actions = {"add": _add, "preview": _preview, "list": _list, "remove": _remove}
    return over_http(args, lambda ask: actions[args.jobs_action](ask, args))


def _when(args: argparse.Namespace) -> dict[str, Any]:
    if args.every is not None:
        return {"every": args.every}
    return {"runInMinutes": args.in_minutes}


async def _add(ask: Asker, args: argparse.Namespace) -> int:
    body = {"prompt": args.prompt, "title": args.title, "tiny": args.tiny, **_when(args)}
    job = (await ask("POST", "/api/jobs", body=body))["job"]
    print(f"scheduled {job_line(job)}")
    return 0


async def _preview(ask: Asker, args: argparse.Namespace) -> int:
    preview = await ask("GET", "/api/jobs/preview", params=_when(args))
    print(preview["schedule"])
    for run in preview["nextRuns"]:
        print(f"  {stamp_text(run)}")
    return 0


async def _list(ask: Asker, args: argparse.Namespace) -> int:
    listed = await ask("GET", "/api/jobs")
    for item in [*listed["jobs"], *listed["alerts"]]:
        print(job_line(item))
    pending = sum(1 for job in listed["jobs"] if job.get("nextRun") is not None)
    print(f"{pending} of {listed['limit']} jobs in use")
    return 0


async def _remove(ask: Asker, args: argparse.Namespace) -> int:
    await ask("DELETE", f"/api/jobs/{quote(args.id, safe='')}")
    print(f"removed {args.id}")
    return 0


def job_line(item: dict[str, Any]) -> str:
    """``[id] every 2 hours: title (next 2026-12-03 18:00 UTC)``, as the tool's list says it."""
    label = item.get("title") or item.get("prompt") or item.get("message") or ""
    state = f"next {item['nextRunText']}" if item.get("nextRunText") else "done"
    if item.get("lastStatus") == "error":
        state += f"; last run failed: {item.get('lastError')}"
    elif item.get("lastRunText"):
        state += f"; last ran {item['lastRunText']}"
    return f"[{item['id']}] {item['schedule']}: {label} ({state})"
