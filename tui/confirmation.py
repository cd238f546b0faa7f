"""The card a proposal becomes in the chat: what the companion asks to do (forget these facts,
delete this job), and the person's Confirm or Decline. The card only shows and tells; the chat
screen sends the answer to the hub and hands the card the outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Static

from hub.client.proposals import item_lines


class ConfirmationCard(Vertical):
    """One proposal. Confirm is never focused first: a stray Enter confirms nothing."""

    DEFAULT_CSS = """
    ConfirmationCard {
        height: auto; margin: 1 6 0 0; padding: 0 1; border: round $warning;
    }
    ConfirmationCard.-confirmed { border: round $success; }
    ConfirmationCard.-declined, ConfirmationCard.-failed { border: round $secondary; }
    ConfirmationCard #items { color: $text-muted; }
    ConfirmationCard Horizontal { height: auto; margin-top: 1; }
    ConfirmationCard Button { margin-right: 2; }
    """

    class Answered(Message):
        """The person pressed Confirm (``yes``) or Decline."""

        def __init__(self, card: ConfirmationCard, yes: bool) -> None:
            super().__init__()
            self.card = card
            self.yes = yes

    def __init__(self, proposal: Mapping[str, Any]) -> None:
        super().__init__()
        self.proposal = dict(proposal)
        self.pending_id = str(proposal["id"])
        self.state = "waiting"
        self.outcome = ""
        self.border_title = "⚠ waiting for you"

    def compose(self) -> ComposeResult:
        title = str(self.proposal.get("title") or self.proposal.get("action"))
        yield Static(Text(f"The companion asks to {title}.", style="bold"), id="title")
        yield Static("\n".join(item_lines(self.proposal)), id="items", markup=False)
        with Horizontal(id="answers"):
            yield Button("Confirm", id="confirm", variant="error")
            yield Button("Decline", id="decline")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.query_one("#answers").disabled = True  # one answer, whatever is pressed next
        self.post_message(self.Answered(self, event.button.id == "confirm"))

    def settled(self, state: str, outcome: str) -> None:
        """The hub's answer: confirmed (with what it did), declined, or failed (why)."""
        self.state, self.outcome = state, outcome
        self.set_class(state == "confirmed", "-confirmed")
        self.set_class(state == "declined", "-declined")
        self.set_class(state == "failed", "-failed")
        self.border_title = {"confirmed": "✓ confirmed", "declined": "declined"}.get(
            state, "not answered"
        )
        self.query_one("#answers").display = False
        shown = self.query("#outcome")
        if shown:
            shown.first(Static).update(outcome)
        else:
            self.mount(Static(outcome, id="outcome", markup=False))
        if state == "failed":  # the hub did not take the answer: it can be given again
            self.query_one("#answers").display = True
            self.query_one("#answers").disabled = False
