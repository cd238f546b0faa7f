"""The Tools screen's forms: forge a tool, install one from GitHub, try a forged one.

Each saves to the hub while it stays open (``FormModal``), with the routes the companion's tools'
rules live behind: ``POST /api/tools`` runs the code once in the sandbox before keeping it,
``POST /api/tools/install`` reads a file pinned by commit from a trusted owner, and
``POST /api/tools/<name>/run`` calls a forged tool as a turn would.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input, Label, Static, TextArea

from hub.client.http import HubError
from tui.settings.forms import Answer, FormModal

EXAMPLE_CODE = "({ text }) => ({ words: text.split(/\\s+/).filter(Boolean).length })"
EXAMPLE_SCHEMA = '{"type": "object", "properties": {"text": {"type": "string"}}}'


def json_object(text: str, what: str) -> dict[str, Any]:
    """``text`` as a JSON object; ValueError saying what is wrong with it."""
    try:
        loaded = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"{what} must be a JSON object {{...}}")
    return loaded


@dataclass(frozen=True)
class ToolDraft:
    body: dict[str, Any]


class ForgeForm(FormModal[ToolDraft]):
    """A new forged tool: name, description, one arrow function and its input's schema."""

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Label("Forge a tool", classes="title")
            with Horizontal(classes="row"):
                yield Label("name")
                yield Input(
                    placeholder="word_count (becomes my_word_count)", id="tool-name", compact=True
                )
            with Horizontal(classes="row"):
                yield Label("does")
                yield Input(
                    placeholder="for the model that calls it", id="tool-description", compact=True
                )
            yield Label("code: one JavaScript arrow function, at most 4 KB", classes="note")
            yield TextArea(EXAMPLE_CODE, id="tool-code", compact=True, language=None)
            with Horizontal(classes="row"):
                yield Label("input")
                yield Input(value=EXAMPLE_SCHEMA, id="tool-schema", compact=True)
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#tool-name").focus()

    def draft(self) -> ToolDraft:
        name = self.query_one("#tool-name", Input).value.strip()
        description = self.query_one("#tool-description", Input).value.strip()
        if not name or not description:
            raise ValueError("a name and what it does, please")
        schema = json_object(self.query_one("#tool-schema", Input).value, "the input schema")
        code = self.query_one("#tool-code", TextArea).text
        return ToolDraft(
            {"name": name, "description": description, "code": code, "inputSchema": schema}
        )


class InstallForm(FormModal[ToolDraft]):
    """A tool file's raw GitHub URL at a full commit SHA."""

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Label("Install a tool from GitHub", classes="title")
            with Horizontal(classes="row"):
                yield Label("file URL")
                yield Input(
                    placeholder="https://raw.githubusercontent.com/…", id="tool-url", compact=True
                )
            yield Label(
                "The file's URL at a full 40-character commit SHA; its owner must be on the "
                "hub's allowlist or trusted by you.",
                classes="note",
            )
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#tool-url").focus()

    def draft(self) -> ToolDraft:
        url = self.query_one("#tool-url", Input).value.strip()
        if not url:
            raise ValueError("the file's URL, please")
        return ToolDraft({"url": url})


class TryForm(FormModal[ToolDraft]):
    """An input for one of the person's forged tools; the result is shown in the form."""

    def __init__(self, name: str, *args: Any) -> None:
        super().__init__(*args)
        self.tool_name = name

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Label(f"Try {self.tool_name}", classes="title")
            with Horizontal(classes="row"):
                yield Label("input")
                yield Input(value="{}", id="tool-input", compact=True)
            yield Static("", id="tool-result", classes="note", markup=False)
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#tool-input").focus()

    def draft(self) -> ToolDraft:
        given = json_object(self.query_one("#tool-input", Input).value, "the input")
        return ToolDraft({"input": given})

    @work(exclusive=True, group="submit")
    async def send(self, request: Callable[[], Awaitable[Answer]]) -> None:
        """A run's result is shown here, and the form stays open for another input."""
        try:
            answer = await request()
        except HubError as exc:
            self.show_error(str(exc))
            return
        self.show_error("")
        mark = "✓" if answer.get("ok") else "✗"
        self.query_one("#tool-result", Static).update(f"{mark} {answer.get('result')}")
