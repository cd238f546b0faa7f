"""The Jobs screen's form: a job as the companion's ``schedule`` tool makes one, by hand.

It offers the schedule forms the hub keeps (every N minutes, every N hours, daily at a UTC time,
once in N minutes), previews the next runs as the hub computes them (``GET /api/jobs/preview``,
asked again as the schedule is typed) and saves with ``POST /api/jobs``: the same store and
rules as the tool, so what the hub refuses is said here, in its words.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input, Label, Select, Static

from hub.client.http import HubError
from tui.run_times import when_text
from tui.settings.forms import Answer, FormModal

# (what the person reads, the form's key, an example of its value)
KINDS: tuple[tuple[str, str, str], ...] = (
    ("every N hours", "hours", "2"),
    ("every N minutes", "minutes", "30"),
    ("daily at HH:MM (UTC)", "daily", "07:00"),
    ("once, in N minutes", "once", "45"),
)
Preview = Callable[[dict[str, Any]], Awaitable[Answer]]


def schedule_of(kind: str, value: str) -> dict[str, Any]:
    """The request's schedule fields for the form's choice and value; ValueError for a value
    that is not of its kind's shape (its range is the hub's to check)."""
    value = value.strip()
    if kind == "daily":
        return {"every": f"daily@{value}"}
    if not value.isdigit():
        raise ValueError("a whole number, please")
    if kind == "once":
        return {"runInMinutes": int(value)}
    return {"every": f"*/{int(value)}{'h' if kind == 'hours' else 'm'}"}


@dataclass(frozen=True)
class JobDraft:
    prompt: str
    schedule: dict[str, Any]
    title: str = ""

    def body(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "title": self.title, **self.schedule}


class JobForm(FormModal[JobDraft]):
    """A new job: what to do, when, and a title; the next runs shown as the hub sees them."""

    def __init__(self, submit: Callable[[JobDraft], Awaitable[Answer]], preview: Preview) -> None:
        super().__init__(submit)
        self.preview = preview

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Label("Schedule a job", classes="title")
            with Horizontal(classes="row"):
                yield Label("do")
                yield Input(
                    placeholder="what to do, as you would ask it", id="job-prompt", compact=True
                )
            with Horizontal(classes="row"):
                yield Label("when")
                yield Select(
                    [(text, key) for text, key, _ in KINDS],
                    value=KINDS[0][1],
                    allow_blank=False,
                    id="job-kind",
                    compact=True,
                )
            with Horizontal(classes="row"):
                yield Label("N or time")
                yield Input(value=KINDS[0][2], id="job-value", compact=True)
            with Horizontal(classes="row"):
                yield Label("title")
                yield Input(
                    placeholder="optional: shown on its notices", id="job-title", compact=True
                )
            yield Static("", id="job-preview", classes="note", markup=False)
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#job-prompt").focus()
        self.ask_preview()

    @on(Select.Changed, "#job-kind")
    def _kind_changed(self, event: Select.Changed) -> None:
        example = {key: value for _, key, value in KINDS}.get(str(event.value), "")
        self.query_one("#job-value", Input).value = example
        self.ask_preview()

    @on(Input.Changed, "#job-value")
    def _value_changed(self) -> None:
        self.ask_preview()

    def schedule(self) -> dict[str, Any]:
        kind = str(self.query_one("#job-kind", Select).value)
        return schedule_of(kind, self.query_one("#job-value", Input).value)

    @work(exclusive=True, group="preview")
    async def ask_preview(self) -> None:
        shown = self.query_one("#job-preview", Static)
        try:
            answer = await self.preview(self.schedule())
        except (ValueError, HubError) as exc:
            shown.update(f"({exc})")
            return
        now = float(answer.get("now") or 0.0)
        runs = ", ".join(when_text(run, now) for run in answer.get("nextRuns", [])[:3])
        shown.update(f"{answer.get('schedule')}: next {runs}")

    def draft(self) -> JobDraft:
        prompt = self.query_one("#job-prompt", Input).value.strip()
        if not prompt:
            raise ValueError("say what the job does")
        title = self.query_one("#job-title", Input).value.strip()
        return JobDraft(prompt, self.schedule(), title)
