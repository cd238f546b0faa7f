"""Pairing a phone: ``POST /api/pair/offer`` makes a code (and its QR, drawn as text), shown
in a modal only when asked for; the screen lists paired phones (``GET /api/tokens``)."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import (
    Digits,
    Footer,
    Static,
)

from tui.settings.forms import Answer

NO_PHONES = "no phones paired yet"


def when(seconds: object) -> str:
    """An epoch time as a local date and minute ("" when the hub sent none)."""
    if not isinstance(seconds, int | float):
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def valid_for(offer: Answer) -> str:
    """How long and how often an offer's code works, from the hub's expiresIn."""
    seconds = int(offer.get("expiresIn") or 0)
    if seconds and seconds % 60 == 0:
        span = f"{seconds // 60} minute{'s' if seconds != 60 else ''}"
    else:
        span = f"{seconds} seconds"
    return f"valid for {span}, once"


class PairNotice(ModalScreen[None]):
    """A pairing offer: the QR (as the hub drew it, for a terminal) and its code, large. The QR
    with its quiet zone is up to 57 columns; beside it the code takes 19, so both fit in 80
    columns (taller than 24 rows, the box scrolls)."""

    DEFAULT_CSS = """
    PairNotice { align: center middle; }
    PairNotice #pair {
        width: auto; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0; scrollbar-size-vertical: 1;
    }
    PairNotice #pair-row { height: auto; width: auto; }
    PairNotice #qr { width: auto; height: auto; }
    PairNotice #pair-side { width: 19; height: auto; padding: 0 0 0 1; }
    PairNotice .title { text-style: bold; }
    PairNotice #code { text-style: bold; color: $accent; width: auto; margin: 1 0; }
    PairNotice #valid { text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "close", "Close", id="settings_close_pair"),
    ]

    def __init__(self, offer: Answer, title: str = "Pair a phone") -> None:
        super().__init__()
        self.title_text = title
        self.code = str(offer.get("code", ""))
        self.qr = str((offer.get("qr") or {}).get("text", ""))
        self.valid = valid_for(offer)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="pair"), Horizontal(id="pair-row"):
            yield Static(Text(self.qr.rstrip("\n"), no_wrap=True), id="qr")
            with Vertical(id="pair-side"):
                yield Static(self.title_text, classes="title", markup=False)
                yield Static("Scan the QR in the tiny app, or type the code:", markup=False)
                yield Digits(self.code, id="code")
                yield Static(self.valid, id="valid", markup=False)
                yield Static(
                    "A new code voids this one. The phone must reach the hub's LAN address.",
                    markup=False,
                )
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
