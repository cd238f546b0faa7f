"""What memory kept from the conversation by listening, shown in the chat as "I'll remember: …"
with an undo: the hub keeps what the person said about themselves without being asked to
(``remembered`` events on their ring), and the person takes back what it should not have kept.

Undo goes through the routes every client uses: the fact is forgotten (``DELETE /learnings``,
itself undoable from the memory screen), and a fact it replaced is learned again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Static

from hub.client.http import HubClient, HubError

REMEMBERED_KIND = "remembered"


@dataclass(frozen=True)
class Heard:
    """A fact memory kept by listening, and the one it replaced ("" when none)."""

    fact_id: str
    fact: str
    replaced: str = ""


def heard_of(event: Mapping[str, Any]) -> Heard | None:
    """The fact of a ``remembered`` event, or None for any other event."""
    if event.get("kind") != REMEMBERED_KIND or not isinstance(event.get("detail"), Mapping):
        return None
    detail = event["detail"]
    fact_id, fact = detail.get("id"), detail.get("fact")
    if not isinstance(fact_id, str) or not isinstance(fact, str):
        return None
    replaced = detail.get("supersededFact")
    return Heard(fact_id, fact, replaced if isinstance(replaced, str) else "")


class RememberedLine(Horizontal):
    """ "I'll remember: …" and an Undo button, in the chat's log."""

    DEFAULT_CSS = """
    RememberedLine { height: auto; margin: 0 1; }
    RememberedLine Static { width: 1fr; color: $text-muted; }
    RememberedLine Button { min-width: 8; height: 1; border: none; }
    """

    def __init__(self, heard: Heard, client: HubClient) -> None:
        super().__init__(classes="remembered")
        self.heard = heard
        self.client = client

    def compose(self) -> ComposeResult:
        yield Static(f"I'll remember: {self.heard.fact}", id="said")
        yield Button("Undo", id="undo", variant="default")

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        said = self.query_one("#said", Static)
        event.button.disabled = True
        try:
            await self.client.call("DELETE", "/learnings", params={"id": self.heard.fact_id})
            if self.heard.replaced:
                await self.client.call("POST", "/learnings", body={"fact": self.heard.replaced})
        except HubError as exc:
            event.button.disabled = False
            said.update(f"Could not undo: {exc}")
            return
        said.update(f"Not remembered: {self.heard.fact}")
        event.button.display = False
