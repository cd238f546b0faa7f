"""Jobs and alerts (docs/scheduler.md) on a real hub: the schedule forms on an adjustable clock,
restarts that neither lose nor double a run, the per-person limit, failures, and every place a
run's answer or an alert arrives — the event ring over HTTP, a dial-in device's mailbox as a
``notify`` envelope pulled like a phone pulls it, and the desktop."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.agent.tools.schedule import cancel_alerts, schedule, schedule_alert
from hub.api.server import RunningServer, start_server
from hub.cloud.notify import DesktopNotifier
from hub.config import load_settings
from hub.devices.registry import AdjustableClock
from hub.process.parts import open_scheduler
from hub.runtime.hub import Hub
from hub.scheduler.runner import Outcome
from hub.scheduler.store import MAX_JOBS, TITLE_MAX
from hub.scheduler.when import BadSchedule, parse_every
from tests.confirming import confirmed_by, proposal
from tests.conftest import StartHub, owner_headers, settings_for
from tests.daemon import enroll, send
from tests.scheduling import QUIET, clock, scheduler
from tests.sse import tool_in_a_turn
from tests.toolcall import result_text, use_tool

MINUTE = 60.0
# The loop looks once at start and then not again within a test: the tests tick themselves.


async def tick_after(server: RunningServer, seconds: float) -> list[Outcome]:
    clock(server).advance(seconds)
    return await scheduler(server).tick()


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url, **QUIET)


async def make_job(server: RunningServer, **arguments: Any) -> dict[str, Any]:
    made = await use_tool(server, schedule, action="create", **arguments)
    assert made["status"] == "success", made
    return dict(made["content"][1]["json"]["job"])


async def jobs(server: RunningServer, http: aiohttp.ClientSession) -> dict[str, Any]:
    status, answer = await send(http, "GET", f"{server.url}/api/jobs", None, owner_headers(server))
    assert status == 200, answer
    return dict(answer)


async def ring_notices(
    server: RunningServer, http: aiohttp.ClientSession, count: int
) -> list[dict[str, Any]]:
    """The first ``count`` notify events of the owner's ring, read over GET /api/events."""
    found: list[dict[str, Any]] = []

    async def read() -> None:
        async with http.get(f"{server.url}/api/events", headers=owner_headers(server)) as resp:
            async for line in resp.content:
                if line.startswith(b"data: "):
                    event = json.loads(line[6:])
                    if event["kind"] == "notify":
                        found.append(event["detail"])
                        if len(found) == count:
                            return

    await asyncio.wait_for(read(), 30)
    return found


async def pull(http: aiohttp.ClientSession, server: RunningServer, phone: dict[str, Any]) -> Any:
    """What a phone pulls from its mailbox (PUT /api/devices/relay), each payload parsed."""
    body = {"deviceId": phone["device_id"], "token": phone["device_token"], "max": 10}
    status, answer = await send(http, "PUT", f"{server.url}/api/devices/relay", body)
    assert status == 200, answer
    return [json.loads(message["payload"]) for message in answer["messages"]]


# --- the schedule forms -------------------------------------------------------------------------


async def test_every_five_minutes_runs_at_five_and_ten_and_tells_the_ring_and_the_phone(
    server: RunningServer, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    phone = await enroll(http, server, "phone")
    fake_ollama.script(Reply(["Sunny, 21 °C."]), Reply(["Rain at noon."]))
    job = await make_job(server, every="*/5m", prompt="What's the weather?", title="Weather")
    assert job["schedule"] == "every 5 minutes"

    assert await tick_after(server, 5 * MINUTE - 1) == []
    (first,) = await tick_after(server, 1)
    assert (first.text, first.error) == ("Sunny, 21 °C.", "")
    assert await pull(http, server, phone) == [
        {
            "type": "notify",
            "title": "Weather",
            "body": "Sunny, 21 °C.",
            "tag": f"job:{job['id']}",
            "url": "",
        }
    ]
    assert await tick_after(server, 4 * MINUTE) == []
    (second,) = await tick_after(server, MINUTE)
    assert second.text == "Rain at noon."

    notices = await ring_notices(server, http, 2)
    assert [n["body"] for n in notices] == ["Sunny, 21 °C.", "Rain at noon."]
    assert [p["body"] for p in await pull(http, server, phone)] == ["Rain at noon."]
    (listed,) = (await jobs(server, http))["jobs"]
    assert (listed["runs"], listed["lastStatus"], listed["lastError"]) == (2, "ok", None)
    assert listed["nextRun"] == pytest.approx(job["createdAt"] + 15 * MINUTE)
    assert "What's the weather?" in fake_ollama.requests[-1]["messages"][-1]["content"]


async def test_daily_at_seven_runs_once_a_day(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    now = clock(server)()
    six = datetime.fromtimestamp(now, UTC).replace(hour=6, minute=0, second=0, microsecond=0)
    clock(server).advance(six.timestamp() + 86_400 - now)  # tomorrow 06:00 UTC
    job = await make_job(server, every="daily@07:00", prompt="Good morning")
    assert job["schedule"].startswith("daily at 07:00 UTC")
    assert job["nextRun"] == pytest.approx(six.timestamp() + 86_400 + 3600)

    assert await tick_after(server, 3600 - 1) == []
    assert len(await tick_after(server, 1)) == 1  # 07:00
    assert await tick_after(server, 12 * 3600) == []  # 19:00
    assert await tick_after(server, 12 * 3600 - 1) == []  # 06:59:59 the next day
    assert len(await tick_after(server, 1)) == 1  # 07:00 the next day
    (listed,) = (await jobs(server, http))["jobs"]
    assert listed["runs"] == 2


async def test_a_one_shot_runs_once_and_stays_listed_as_done(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    job = await make_job(server, run_in_minutes=3, prompt="Remind me of the oven")
    assert len(await tick_after(server, 3 * MINUTE)) == 1
    assert await tick_after(server, 3600) == []
    (listed,) = (await jobs(server, http))["jobs"]
    assert (listed["id"], listed["nextRun"], listed["runs"]) == (job["id"], None, 1)


# --- restarts -----------------------------------------------------------------------------------


@asynccontextmanager
async def hub_on(
    home: Path, fake_ollama: FakeOllama, offset: float
) -> AsyncIterator[RunningServer]:
    """A hub on ``home``, its clock ``offset`` seconds ahead (where the last one left it)."""
    hub = Hub.open(settings_for(home, ollama_host=fake_ollama.url, **QUIET))
    clock_of = hub.devices.clock
    assert isinstance(clock_of, AdjustableClock)
    clock_of.advance(offset)
    running = await start_server(hub, "127.0.0.1", 0)
    try:
        yield running
    finally:
        await running.stop()
        hub.close()


async def test_a_restart_neither_loses_nor_doubles_a_run_and_a_missed_job_runs_once(
    home: Path, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    async with hub_on(home, fake_ollama, 0) as first:
        job = await make_job(first, every="*/5m", prompt="Check the Flipper's SD card")
        assert len(await tick_after(first, 5 * MINUTE)) == 1
        offset = clock(first).offset

    async with hub_on(home, fake_ollama, offset + 2 * MINUTE) as second:  # 7 min
        await until(lambda: scheduler(second).ticks >= 1, what="the start-up tick")
        assert scheduler(second).ran == 0
        assert len(await tick_after(second, 3 * MINUTE)) == 1  # 10 min: once
        assert await scheduler(second).tick() == []
        offset = clock(second).offset

    async with hub_on(home, fake_ollama, offset + 21 * MINUTE) as third:  # 31 min: 4 slots missed
        await until(lambda: scheduler(third).ran == 1, what="the missed job's one run at start")
        assert await scheduler(third).tick() == []
        (listed,) = (await jobs(third, http))["jobs"]
        assert listed["runs"] == 3
        assert listed["nextRun"] == pytest.approx(job["createdAt"] + 35 * MINUTE)


# --- limits, failures, bad input ----------------------------------------------------------------


async def test_the_eleventh_job_is_refused(server: RunningServer) -> None:
    for number in range(MAX_JOBS):
        await make_job(server, every="*/1h", prompt=f"job {number}")
    refused = await use_tool(server, schedule, action="create", every="*/1h", prompt="one more")
    assert refused["status"] == "error"
    assert "already have 10 jobs" in result_text(refused)
    listed = await use_tool(server, schedule, action="list")
    assert "10 of 10 jobs in use" in result_text(listed)


async def test_a_failing_run_is_recorded_and_retried_by_its_schedule_not_in_a_loop(
    server: RunningServer, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    fake_ollama.script(Reply(http_status=500, error="model exploded"), Reply(["Fine now."]))
    await make_job(server, every="*/5m", prompt="Status?")
    (failed,) = await tick_after(server, 5 * MINUTE)
    assert "model exploded" in failed.error
    assert await scheduler(server).tick() == []
    assert await tick_after(server, 4 * MINUTE) == []
    (listed,) = (await jobs(server, http))["jobs"]
    assert listed["lastStatus"] == "error" and "model exploded" in listed["lastError"]
    (retried,) = await tick_after(server, MINUTE)
    assert (retried.text, retried.error) == ("Fine now.", "")
    assert len(fake_ollama.requests) == 2


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"every": "*/0m", "prompt": "x"}, "N must be 1 to 1440"),
        ({"every": "hourly", "prompt": "x"}, "unknown schedule"),
        ({"every": "daily@24:00", "prompt": "x"}, "00:00 to 23:59"),
        ({"every": "*/5m", "run_in_minutes": 5, "prompt": "x"}, "not both"),
        ({"prompt": "x"}, "not both"),
        ({"every": "*/5m", "prompt": "  "}, "prompt is empty"),
        ({"run_in_minutes": 0, "prompt": "x"}, "run_in_minutes must be"),
        ({"every": "*/5m", "prompt": "x" * 2001}, "over 2000 characters"),
    ],
)
async def test_bad_jobs_are_refused_clearly(
    server: RunningServer, arguments: dict[str, Any], problem: str
) -> None:
    refused = await use_tool(server, schedule, action="create", **arguments)
    assert refused["status"] == "error" and problem in result_text(refused)


async def test_a_repeating_job_with_run_in_minutes_zero_beside_it_is_made(
    server: RunningServer,
) -> None:
    """A model fills every argument: 0 minutes beside ``every`` asks for no one-shot."""
    job = await make_job(server, every="daily@07:00", run_in_minutes=0, prompt="Stretch")
    assert job["every"] == "daily@07:00"


async def test_deleting_needs_an_id_and_an_unknown_action_is_named(server: RunningServer) -> None:
    no_id = await use_tool(server, schedule, action="delete")
    assert no_id["status"] == "error" and "give the id" in result_text(no_id)
    unknown = await use_tool(server, schedule, action="pause")
    assert unknown["status"] == "error" and "create, list, delete" in result_text(unknown)


async def test_finished_one_shots_are_kept_newest_twenty(server: RunningServer) -> None:
    for number in range(25):
        await make_job(server, run_in_minutes=1, prompt=f"once {number}")
        assert len(await tick_after(server, MINUTE)) == 1
    listed = (await use_tool(server, schedule, action="list"))["content"][1]["json"]["jobs"]
    assert len(listed) == 21  # the newest 20 kept when the last was made, and that one
    assert listed[0]["prompt"] == "once 24"


async def test_jobs_are_each_persons_own(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = server.hub.identity.add_user("Bea")
    bea_token = server.hub.identity.issue_token(bea, "test")
    theirs = await use_tool(server, schedule, bea, action="create", every="*/1h", prompt="Bea's")
    job_id = theirs["content"][1]["json"]["job"]["id"]
    assert (await jobs(server, http))["jobs"] == []
    status, answer = await send(
        http, "DELETE", f"{server.url}/api/jobs/{job_id}", None, owner_headers(server)
    )
    assert status == 404 and "no job or alert" in answer["error"]
    refused = await use_tool(server, schedule, action="delete", id=job_id)
    assert refused["status"] == "error"
    bea_headers = {"Authorization": f"Bearer {bea_token}"}
    status, answer = await send(
        http, "DELETE", f"{server.url}/api/jobs/{job_id}", None, bea_headers
    )
    assert (status, answer) == (200, {"ok": True})
    assert (await use_tool(server, schedule, bea, action="list"))["content"][1]["json"] == {
        "jobs": []
    }


async def test_anonymous_callers_are_asked_to_sign_in(server: RunningServer) -> None:
    assert result_text(await use_tool(server, schedule, None)) == "Login required"
    for tool in (schedule_alert, cancel_alerts):
        arguments = {"title": "Tea", "in_seconds": 5} if tool is schedule_alert else {}
        refused = await use_tool(server, tool, None, **arguments)
        assert refused["status"] == "error" and "Sign in" in result_text(refused)


# --- alerts -------------------------------------------------------------------------------------


def recording_notify_send(folder: Path) -> tuple[DesktopNotifier, Path]:
    """A real notify-send stand-in on the notifier's PATH lookup: it writes its arguments."""
    record = folder / "shown.txt"
    script = folder / "notify-send"
    script.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> "{record}"\necho >> "{record}"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return DesktopNotifier(
        which=lambda name: str(script) if name == "notify-send" else None, platform="linux"
    ), record


async def test_an_alert_fires_at_its_time_on_the_ring_the_phone_and_the_desktop(
    server: RunningServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    phone = await enroll(http, server, "phone")
    scheduler(server).desktop, shown = recording_notify_send(tmp_path)
    made = await use_tool(server, schedule_alert, title="Tea", message="The kettle", in_seconds=2)
    assert made["status"] == "success", made
    alert = made["content"][1]["json"]["alert"]
    assert (await jobs(server, http))["alerts"][0]["id"] == alert["id"]

    assert await tick_after(server, 1) == []
    (fired,) = await tick_after(server, 1)
    assert fired.item.title == "Tea"
    assert await pull(http, server, phone) == [
        {
            "type": "notify",
            "title": "Tea",
            "body": "The kettle",
            "tag": f"alert:{alert['id']}",
            "url": "",
        }
    ]
    (notice,) = await ring_notices(server, http, 1)
    assert notice["title"] == "Tea"
    await until(lambda: shown.exists() and "Tea|The kettle|" in shown.read_text(), what="desktop")
    assert (await jobs(server, http))["alerts"] == []  # fired alerts are gone
    assert await tick_after(server, 3600) == []


async def test_cancel_alerts_cancels_one_or_all_of_the_callers_pending_alerts(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = server.hub.identity.add_user("Bea")
    ids = []
    for title in ("one", "two", "three"):
        made = await use_tool(server, schedule_alert, title=title, in_minutes=10)
        ids.append(made["content"][1]["json"]["alert"]["id"])
    await use_tool(server, schedule_alert, bea, title="Bea's", at="07:30")

    one = await use_tool(server, cancel_alerts, id=ids[0])
    assert [a["title"] for a in (await jobs(server, http))["alerts"]] == ["one", "two", "three"]
    said = await confirmed_by(server.hub, server.hub.owner, one)
    assert said == f"Cancelled 1 alert: [{ids[0]}] 'one'."
    rest = await use_tool(server, cancel_alerts)
    assert [i["id"] for i in proposal(rest)["items"]] == ids[1:], "only the caller's"
    assert (await confirmed_by(server.hub, server.hub.owner, rest)).startswith("Cancelled 2")
    assert (await jobs(server, http))["alerts"] == []
    assert await tick_after(server, 86_400) != []  # only Bea's fires
    assert [e.detail["title"] for e in server.hub.devices.events.recent(bea.id)] == ["Bea's"]
    owners = server.hub.devices.events.recent(server.hub.owner.id)
    assert [e for e in owners if e.kind == "notify"] == []


async def test_an_alert_at_a_time_with_zero_seconds_beside_it_is_set(
    server: RunningServer,
) -> None:
    """A model fills every argument: 0 seconds beside ``at`` asks for nothing more."""
    made = await use_tool(server, schedule_alert, title="Stretch", in_seconds=0, at="07:00")
    assert made["status"] == "success", made


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"title": "x"}, "exactly one of"),
        ({"title": "x", "in_seconds": 5, "at": "07:00"}, "exactly one of"),
        ({"title": "x", "in_seconds": -5}, "1 second to 366 days"),
        ({"title": "x", "in_seconds": 0}, "exactly one of"),
        ({"title": "x", "at": "25:00"}, "HH:MM"),
        ({"title": "x", "at": "noon"}, "HH:MM"),
        ({"title": " ", "in_seconds": 5}, "title is empty"),
    ],
)
async def test_bad_alerts_are_refused_clearly(
    server: RunningServer, arguments: dict[str, Any], problem: str
) -> None:
    refused = await use_tool(server, schedule_alert, **arguments)
    assert refused["status"] == "error" and problem in result_text(refused)


# --- the forms, without a hub -------------------------------------------------------------------


def test_intervals_keep_their_cadence_and_skip_missed_slots() -> None:
    every = parse_every("*/5m")
    assert every.first_after(0, 0) == 300
    assert every.first_after(0, 299) == 300
    assert every.first_after(0, 300) == 600
    assert every.first_after(0, 1_234) == 1_500  # four slots missed: the next one, not a burst
    assert parse_every("*/2h").describe() == "every 2 hours"


def test_a_daily_time_is_utc_with_the_local_time_beside_it() -> None:
    daily = parse_every("daily@07:00")
    assert daily.first_after(0, 0) == 7 * 3600
    assert daily.first_after(0, 7 * 3600) == 86_400 + 7 * 3600
    assert daily.describe(zone_offset_s=3600) == "daily at 07:00 UTC (08:00 local)"
    assert daily.describe(zone_offset_s=-8 * 3600) == "daily at 07:00 UTC (23:00 local)"
    with pytest.raises(BadSchedule, match="daily@HH:MM"):
        parse_every("daily@7:00")


async def test_an_alert_is_not_held_up_by_a_long_job_and_stopping_records_the_cut_run(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, **{**QUIET, "scheduler_tick_s": 0.05})
    fake_ollama.script(Reply(first_delay_s=120))  # a turn that thinks for two minutes
    job = await make_job(server, run_in_minutes=1, prompt="Think hard")
    await use_tool(server, schedule_alert, title="Meanwhile", in_seconds=61)
    clock(server).advance(MINUTE)
    await asyncio.wait_for(fake_ollama.chat_seen.wait(), 30)
    clock(server).advance(1)
    owner = server.hub.owner.id
    await until(
        lambda: any(e.kind == "notify" for e in server.hub.devices.events.recent(owner)),
        what="the alert, with the job still running",
    )
    assert job["id"] in scheduler(server)._running

    await scheduler(server).stop()
    row = server.hub.db.execute(
        "SELECT last_status, last_error, next_run FROM scheduled WHERE id = ?", [job["id"]]
    ).fetchone()
    assert row == ("error", "the hub stopped during this run", None)


async def test_desktop_notices_follow_their_setting(server: RunningServer) -> None:
    assert scheduler(server).desktop is None  # QUIET turns them off
    hub = server.hub
    on = load_settings(home=hub.settings.home, environ={})
    assert isinstance(open_scheduler(replace(hub, settings=on)).desktop, DesktopNotifier)


async def test_the_model_schedules_a_job_in_a_real_turn(
    server: RunningServer, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    arguments = {"action": "create", "every": "daily@07:00", "prompt": "Weather?", "title": "AM"}
    result, _ = await tool_in_a_turn(server, fake_ollama, "schedule", arguments)
    assert result["status"] == "success", result
    assert "daily at 07:00 UTC" in result["content"][0]["text"]
    (listed,) = (await jobs(server, http))["jobs"]
    assert (listed["title"], listed["every"], listed["tiny"]) == ("AM", "daily@07:00", "tiny")
    alert, _ = await tool_in_a_turn(
        server, fake_ollama, "schedule_alert", {"title": "T", "in_minutes": 5}
    )
    assert alert["status"] == "success", alert


async def test_a_title_over_its_limit_is_refused_not_cut(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    body = {"prompt": "tea?", "runInMinutes": 5, "title": "t" * 10_000}
    status, answer = await send(http, "POST", f"{server.url}/api/jobs", body, owner_headers(server))
    assert status == 400 and f"over {TITLE_MAX} characters" in answer["error"]
    body["title"] = "t" * TITLE_MAX
    status, answer = await send(http, "POST", f"{server.url}/api/jobs", body, owner_headers(server))
    assert status == 200 and answer["job"]["title"] == "t" * TITLE_MAX


@pytest.mark.parametrize(
    ("body", "query"),
    [
        ({"prompt": "tea?", "every": "", "runInMinutes": 5}, "every=&runInMinutes=5"),
        ({"prompt": "tea?", "every": "*/5m", "runInMinutes": 5}, "every=*/5m&runInMinutes=5"),
    ],
)
async def test_every_and_run_in_minutes_together_are_refused_even_empty(
    server: RunningServer, http: aiohttp.ClientSession, body: dict[str, Any], query: str
) -> None:
    """The schema's oneOf says one of the two: an empty every beside runInMinutes is both."""
    status, answer = await send(http, "POST", f"{server.url}/api/jobs", body, owner_headers(server))
    assert status == 400 and "not both" in answer["error"]
    preview = f"{server.url}/api/jobs/preview?{query}"
    status, answer = await send(http, "GET", preview, None, owner_headers(server))
    assert status == 400 and "not both" in answer["error"]
    assert (await jobs(server, http))["jobs"] == []
