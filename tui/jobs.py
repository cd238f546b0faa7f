"""The jobs screen: your scheduled jobs and pending alerts, with next and last run, kept live.

Jobs are made by talking to the companion (its ``schedule`` and ``schedule_alert`` tools) or
here by hand: ``a`` opens a form (``tui/job_form.py``) that saves with ``POST /api/jobs``, the
same store and rules as the tool. The screen shows them as ``GET /api/jobs`` gives them and
deletes one with ``d`` (``DELETE /api/jobs/{id}``, after a yes). Times are shown on this
machine's clock with UTC beside them, because a daily job's time is UTC. It re-fetches on a
beat, on ``r`` and when a notice arrives (a job ran, an alert fired); a hub that is away is said
in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from datetime import datetime
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from hub.client.http import HubClient, HubError
from tui.job_form import JobDraft, JobForm
from tui.run_times import when_text
from tui.tables import Cells, cursor_key, one_line
from tui.widgets import ConfirmScreen, KeysFooter

COLUMNS = ("what", "schedule", "next run", "last run", "status")
WHAT_CHARS = 28
STATUS_CHARS = 40


def status_cell(item: Mapping[str, Any]) -> Text:
    if item.get("lastStatus") == "error":
        return Text(one_line(f"failed: {item.get('lastError')}", STATUS_CHARS), style="bold red")
    if item.get("nextRun") is None:
        return Text("done", style="dim")
    if item.get("lastStatus") == "ok":
        return Text(f"ok · {item.get('runs', 0)} run(s)", style="green")
    return Text("waiting", style="dim")


def job_cells(item: Mapping[str, Any], now: float) -> Cells:
    is_alert = item.get("kind") == "alert"
    label = item.get("title") or item.get("prompt") or item.get("message") or "?"
    return (
        one_line(f"{'alert: ' if is_alert else ''}{label}", WHAT_CHARS),
        "once" if is_alert else str(item.get("every") or "once"),
        when_text(item.get("nextRun"), now),
        when_text(item.get("lastRun"), now) if item.get("runs") else "never",
        status_cell(item),
    )


class JobsScreen(Screen[None]):
    DEFAULT_CSS = """
    JobsScreen #status { height: auto; padding: 0 1; color: $text-muted; }
    JobsScreen #status.problem { color: $error; }
    JobsScreen #jobs { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "add", "Add", id="jobs_add"),
        Binding("r", "refresh", "Refresh", id="jobs_refresh"),
        Binding("d", "delete", "Delete", id="jobs_delete"),
    ]

    refresh_every_s: ClassVar[float] = 10.0

    def __init__(self, client: HubClient) -> None:
        super().__init__(name="jobs")
        self.client = client
        self.items: dict[str, Mapping[str, Any]] = {}
        self._wake = asyncio.Event()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading…", id="status")
        yield DataTable(id="jobs", cursor_type="row", zebra_stripes=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#jobs", DataTable).add_columns(*((name, name) for name in COLUMNS))
        self.poll()

    def action_refresh(self) -> None:
        self._wake.set()

    @work(exclusive=True, group="poll")
    async def poll(self) -> None:
        with contextlib.suppress(NoMatches):  # the screen is closing: its widgets are gone
            while True:
                await self.load()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.refresh_every_s)
                self._wake.clear()

    async def load(self) -> None:
        try:
            answer = await self.client.call("GET", "/api/jobs")
        except (HubError, TimeoutError) as exc:
            self.say(f"{exc or 'the hub did not answer in time'}; r to retry", problem=True)
            return
        self.show(answer)

    def show(self, answer: Mapping[str, Any]) -> None:
        now = float(answer.get("now") or 0.0)
        listed = [*answer.get("jobs", []), *answer.get("alerts", [])]
        self.items = {str(item.get("id")): item for item in listed}
        table = self.query_one("#jobs", DataTable)
        table.clear()
        for key, item in self.items.items():
            table.add_row(*job_cells(item, now), key=key)
        jobs = sum(1 for item in answer.get("jobs", []) if item.get("nextRun") is not None)
        alerts = len(answer.get("alerts", []))
        hint = "" if listed else " · a adds one (or ask the companion)"
        self.say(
            f"{jobs} of {answer.get('limit', '?')} jobs, {alerts} pending alert(s) · "
            f"updated {datetime.now():%H:%M:%S}{hint}"
        )

    def say(self, text: str, *, problem: bool = False) -> None:
        status = self.query_one("#status", Static)
        status.update(Text(text))
        status.set_class(problem, "problem")

    def action_add(self) -> None:
        self.app.push_screen(JobForm(self._create, self._preview), self._added)

    async def _create(self, draft: JobDraft) -> dict[str, Any]:
        return await self.client.call("POST", "/api/jobs", body=draft.body())

    async def _preview(self, schedule: dict[str, Any]) -> dict[str, Any]:
        return await self.client.call("GET", "/api/jobs/preview", params=schedule)

    def _added(self, answer: dict[str, Any] | None) -> None:
        if answer is None:
            return
        job = answer.get("job", {})
        self.notify(f"{job.get('schedule')}: next {job.get('nextRunText')}", title="job added")
        self._wake.set()

    def action_delete(self) -> None:
        key = cursor_key(self.query_one("#jobs", DataTable))
        if key is None:
            return
        item = self.items.get(key, {})
        label = item.get("title") or item.get("prompt") or item.get("message") or key
        question = Text(f"Delete {item.get('kind', 'job')} “{one_line(str(label), 60)}”?")
        self.app.push_screen(
            ConfirmScreen(question, "Delete", "Keep", danger=True), partial(self._answered, key)
        )

    def _answered(self, key: str, yes: bool | None) -> None:
        if yes:
            self.delete(key)

    @work(group="jobs-delete")
    async def delete(self, key: str) -> None:
        try:
            await self.client.call("DELETE", f"/api/jobs/{key}")
        except HubError as exc:
            self.say(str(exc), problem=True)
            return
        self._wake.set()

    @on(DataTable.RowSelected, "#jobs")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        item = self.items.get(str(event.row_key.value))
        if item is not None:
            text = item.get("prompt") or item.get("message") or ""
            self.notify(str(text) or "(no text)", title=str(item.get("title") or "job"))
