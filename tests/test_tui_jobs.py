"""The Jobs screen (F8) and notices as toasts, driven headless against a real hub whose clock the
test moves: an alert two seconds ahead becomes a toast on any screen and a ``notify`` envelope in
a phone's mailbox; jobs are listed with next and last run, and deleted after a yes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.agent.tools.schedule import schedule, schedule_alert
from hub.api.server import RunningServer
from hub.client.http import HubClient
from tests.conftest import StartHub, owner_headers
from tests.daemon import enroll, send
from tests.scheduling import QUIET, clock, scheduler
from tests.toolcall import use_tool
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.jobs import JobsScreen
from tui.run_times import in_words, when_text
from tui.widgets import ConfirmScreen


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url, **QUIET)


def app_for(server: RunningServer, tmp_path: Path) -> TinyApp:
    token = owner_headers(server)["Authorization"].split()[1]
    return TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))


def toasts(app: TinyApp) -> list[tuple[str, str]]:
    return [(str(n.title), str(n.message)) for n in app._notifications]


def following(server: RunningServer) -> bool:
    """Whether a client follows the owner's event ring (the app's notice follower)."""
    return bool(server.hub.devices.events._subscribers.get(server.hub.owner.id))


def rows(screen: JobsScreen) -> list[list[str]]:
    table = screen.query_one("#jobs", DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def jobs_screen(app: TinyApp, pilot: Pilot[None]) -> JobsScreen:
    await pilot.press("f8")
    screen = app.screen
    assert isinstance(screen, JobsScreen)
    return screen


async def test_an_alert_two_seconds_ahead_is_a_toast_and_a_notify_envelope(
    server: RunningServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    phone = await enroll(http, server, "phone")
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)):
        await until(lambda: following(server), what="the app follows the ring")
        made = await use_tool(
            server, schedule_alert, title="Stretch", message="Stand up", in_seconds=2
        )
        assert made["status"] == "success", made
        assert toasts(app) == []
        clock(server).advance(2)
        (fired,) = await scheduler(server).tick()
        assert fired.item.title == "Stretch"
        await until(lambda: ("Stretch", "Stand up") in toasts(app), what="the toast")

    body = {"deviceId": phone["device_id"], "token": phone["device_token"], "max": 10}
    status, pulled = await send(http, "PUT", f"{server.url}/api/devices/relay", body)
    assert status == 200, pulled
    (envelope,) = [json.loads(m["payload"]) for m in pulled["messages"]]
    assert (envelope["type"], envelope["title"], envelope["body"]) == (
        "notify",
        "Stretch",
        "Stand up",
    )


async def test_notices_from_before_the_app_started_are_not_toasted(
    server: RunningServer, tmp_path: Path
) -> None:
    clock(server).advance(-3600)  # an alert that fired an hour before the app starts
    await use_tool(server, schedule_alert, title="Old news", in_seconds=1)
    clock(server).advance(1)
    assert len(await scheduler(server).tick()) == 1
    clock(server).advance(3599)
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: following(server), what="the app follows the ring")
        await use_tool(server, schedule_alert, title="New", in_seconds=1)
        clock(server).advance(1)
        await scheduler(server).tick()
        await until(lambda: any(title == "New" for title, _ in toasts(app)), what="the toast")
        await pilot.pause()
        assert [title for title, _ in toasts(app)] == ["New"]


async def test_the_jobs_screen_lists_next_and_last_run_and_deletes_after_a_yes(
    server: RunningServer, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    fake_ollama.script(Reply(["All quiet on the SD card."]))
    made = await use_tool(
        server, schedule, action="create", every="*/5m", prompt="Check the SD card", title="SD"
    )
    job: dict[str, Any] = made["content"][1]["json"]["job"]
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await jobs_screen(app, pilot)
        await until(lambda: len(rows(screen)) == 1, what="the job listed")
        what, every, next_run, last_run, status = rows(screen)[0]
        assert (what, every, last_run, status) == ("SD", "*/5m", "never", "waiting")
        assert next_run.endswith("in 5 min") and "UTC" in next_run

        clock(server).advance(300)
        (ran,) = await scheduler(server).tick()
        assert ran.text == "All quiet on the SD card."
        await until(lambda: rows(screen)[0][4] == "ok · 1 run(s)", what="the last run shown")
        assert "UTC" in rows(screen)[0][3]
        assert ("SD", "All quiet on the SD card.") in toasts(app)

        screen.query_one("#jobs", DataTable).focus()
        await pilot.press("d")
        await until(lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        await pilot.press("y")
        await until(lambda: rows(screen) == [], what="the job gone")
        assert "0 of 10 jobs" in str(screen.query_one("#status", Static).content)
    gone = server.hub.db.execute("SELECT count(*) FROM scheduled WHERE id = ?", [job["id"]])
    assert gone.fetchone()[0] == 0


def test_run_times_say_local_and_utc_and_how_far() -> None:
    assert in_words(0) == "now"
    assert in_words(90) == "in 2 min"
    assert in_words(299.5) == "in 5 min"
    assert in_words(7300) == "in 2 h"
    shown = when_text(1_000_000.0, 1_000_000.0 - 300)
    assert shown.endswith(", in 5 min") and "UTC" in shown
    assert when_text(None, 0) == "—"
