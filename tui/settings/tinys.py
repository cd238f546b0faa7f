"""Tinys: the new-tiny and edit-prompt form, and the one-time notice of a private tiny's key."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import (
    Footer,
    Input,
    Label,
    Select,
    Static,
    TextArea,
)

from tui.settings.forms import Answer, FormModal
from tui.tables import clip

PROMPT_PREVIEW_CHARS = 44


@dataclass(frozen=True)
class TinyDraft:
    """A new tiny (name, visibility, prompt) or, with ``name`` set and ``creating`` off, a new
    prompt for an existing one."""

    name: str
    prompt: str
    visibility: str = "public"
    creating: bool = True

    def body(self) -> dict[str, str]:
        if not self.creating:
            return {"systemPrompt": self.prompt}
        body = {"name": self.name, "visibility": self.visibility}
        if self.prompt.strip():
            body["systemPrompt"] = self.prompt
        return body


def prompt_preview(prompt: str) -> str:
    """The first non-empty line of a prompt, cut to fit one table row at 80 columns."""
    line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
    return clip(line, PROMPT_PREVIEW_CHARS)


class TinyForm(FormModal[TinyDraft]):
    """Create a tiny (name, visibility, prompt), or edit an existing tiny's prompt."""

    def __init__(
        self, submit: Callable[[TinyDraft], Awaitable[Answer]], editing: Answer | None = None
    ) -> None:
        super().__init__(submit)
        self.editing = editing

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            if self.editing is None:
                yield Label("New tiny", classes="title")
                with Horizontal(classes="row"):
                    yield Label("name")
                    yield Input(placeholder="lowercase, digits, '-'", id="name", compact=True)
                with Horizontal(classes="row"):
                    yield Label("visibility")
                    yield Select(
                        [("public", "public"), ("private (needs its key)", "private")],
                        value="public",
                        allow_blank=False,
                        id="visibility",
                        compact=True,
                    )
                prompt = ""
            else:
                yield Label(f"The prompt of {self.editing['name']}", classes="title")
                prompt = self.editing.get("systemPrompt", "")
            yield Label("prompt (empty: the hub's default prompt)", classes="note")
            yield TextArea(prompt, id="prompt", compact=True)
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#name" if self.editing is None else "#prompt").focus()

    def draft(self) -> TinyDraft:
        prompt = self.query_one("#prompt", TextArea).text
        if self.editing is not None:
            return TinyDraft(self.editing["name"], prompt, creating=False)
        visibility = self.query_one("#visibility", Select).value
        return TinyDraft(
            self.query_one("#name", Input).value.strip(), prompt, visibility=str(visibility)
        )


class KeyNotice(ModalScreen[None]):
    """A private tiny's key, the one time the hub shows it."""

    DEFAULT_CSS = """
    KeyNotice { align: center middle; }
    KeyNotice #notice {
        width: 78; max-width: 100%; height: auto;
        border: round $warning; background: $surface; padding: 0 1;
    }
    KeyNotice #key { text-style: bold; margin: 1 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy", "Copy key", id="settings_copy_key"),
        Binding("escape,enter", "close", "Close", id="settings_close_key"),
    ]

    def __init__(self, tiny: str, key: str) -> None:
        super().__init__()
        self.tiny = tiny
        self.key = key

    def compose(self) -> ComposeResult:
        with Vertical(id="notice"):
            yield Static(f"{self.tiny} is private. Its key:", markup=False)
            yield Static(self.key, id="key", markup=False)
            yield Static(
                "Copy it now: the hub keeps only a hash and will not show it again. A phone or "
                "another person needs it (x-tiny-key) to talk to this tiny.",
                markup=False,
            )
        yield Footer()

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.key)
        self.notify("key copied (if your terminal allows it)")

    def action_close(self) -> None:
        self.key = ""
        self.dismiss(None)
