"""The inbox screen: conversations with other people of the hub, their unread counts, one
conversation at a time, and a reply line.

Everything goes through ``/api/messages`` exactly as a phone would. Opening a conversation
(Enter on its row) reads it, which marks it read at the hub. The reply line writes to the open
conversation; a line that starts with ``@login`` starts (or continues) that one instead.

The list is fetched again when a message arrives (the hub puts a ``notify`` notice tagged
``message:<login>`` on the person's event ring, which the screen follows), on every visit,
every ``refresh_s`` while shown (a stream lost without notice), after a send, and on ``r``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Input, Static

from hub.client.http import Event, HubClient, HubError
from tui.tables import cursor_key, one_line
from tui.widgets import KeysFooter

LAST_CHARS = 48
SHOWN_MESSAGES = 100
MESSAGE_TAG = "message:"
MAX_RETRY_S = 30.0


def clock(stamp: Any) -> str:
    try:
        return datetime.fromtimestamp(float(stamp)).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError, OverflowError):
        return ""


def conversation_text(login: str, messages: Sequence[Mapping[str, Any]]) -> Text:
    """One conversation, oldest first; what the other person wrote in bold."""
    if not messages:
        return Text(f"No messages with {login} yet: write the first below.", style="dim")
    text = Text()
    for n, message in enumerate(messages):
        mine = message.get("from") != login
        if n:
            text.append("\n")
        via = f" → {message['tiny']}" if message.get("tiny") else ""
        text.append(f"{clock(message.get('sentAt'))} {message.get('from')}{via}: ", style="dim")
        text.append(str(message.get("text", "")), style="" if mine else "bold")
    return text


def message_from(event: Event) -> str | None:
    """The ``@login`` a ring event says a message came from, or None for any other event."""
    detail = event.get("detail")
    tag = detail.get("tag") if event.get("kind") == "notify" and isinstance(detail, dict) else None
    if isinstance(tag, str) and tag.startswith(MESSAGE_TAG):
        return "@" + tag.removeprefix(MESSAGE_TAG)
    return None


def addressed(line: str) -> tuple[str, str] | None:
    """``@login the text`` as (``@login``, the text), or None for a plain reply."""
    head, _, rest = line.strip().partition(" ")
    if head.startswith("@") and len(head) > 1:
        return head, rest.strip()
    return None


class InboxScreen(Screen[None]):
    DEFAULT_CSS = """
    InboxScreen #status { height: auto; padding: 0 1; color: $text-muted; }
    InboxScreen #status.problem { height: auto; color: $error; }
    InboxScreen #conversations { height: 1fr; min-height: 4; }
    InboxScreen #thread {
        height: 1fr; min-height: 3; padding: 0 1; border-top: solid $primary;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh", "Refresh", id="inbox_refresh"),
        Binding("slash", "focus_reply", "Write", id="inbox_write"),
        Binding("escape", "focus_list", "List", id="inbox_list", show=False),
    ]
    AUTO_FOCUS = "#conversations"
    refresh_s: ClassVar[float] = 15.0

    def __init__(self, client: HubClient) -> None:
        super().__init__(name="inbox")
        self.client = client
        self.open_with: str | None = None
        """The @login of the conversation shown, where a plain reply goes."""
        self.unread: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="status")
        yield DataTable(id="conversations", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="thread"):
            yield Static(Text("Enter opens a conversation.", style="dim"), id="messages")
        yield Input(placeholder="@login message (Enter sends)", id="reply")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#conversations", DataTable).add_columns(
            ("with", "with"), ("unread", "unread"), ("last", "last")
        )
        self.set_interval(self.refresh_s, self._refresh_when_shown)
        self.follow()

    def on_screen_resume(self) -> None:
        self.load()

    def _refresh_when_shown(self) -> None:
        if self.is_current:
            self.load()

    @work(group="events")
    async def follow(self) -> None:
        """Follow the person's event ring for as long as the screen lives, again after a lost
        stream (waiting 1 s, then twice as long each time, up to ``MAX_RETRY_S``)."""
        after, retry_s = 0, 1.0
        while True:
            try:
                async for event in self.client.follow_events(after):
                    event_id, retry_s = event.get("id"), 1.0
                    after = max(after, event_id) if isinstance(event_id, int) else after
                    sender = message_from(event)
                    if sender is not None:
                        self.arrived(sender)
            except (HubError, TimeoutError):
                pass
            await asyncio.sleep(retry_s)
            retry_s = min(retry_s * 2, MAX_RETRY_S)

    def arrived(self, sender: str) -> None:
        """A message came: the list shows it; the open conversation too, when it is from
        the person being looked at (reading it there marks it read, as they are reading)."""
        self.load()
        if self.is_current and sender == self.open_with:
            self.open(sender)

    # --- the overview -----------------------------------------------------------------------

    @work(exclusive=True, group="overview")
    async def load(self) -> None:
        try:
            answer = await self.client.call("GET", "/api/messages")
        except (HubError, TimeoutError) as exc:
            self.say(str(exc) or "the hub did not answer in time", problem=True)
            return
        conversations = [c for c in answer.get("conversations", []) if isinstance(c, dict)]
        self.show_overview(conversations)
        total = answer.get("unread", 0)
        self.say(f"{len(conversations)} conversation(s), {total} unread")

    def show_overview(self, conversations: Sequence[Mapping[str, Any]]) -> None:
        table = self.query_one("#conversations", DataTable)
        was = self.selected()
        table.clear()
        self.unread = {}
        for line in conversations:
            login, last = str(line.get("with", "")), line.get("last") or {}
            self.unread[login] = int(line.get("unread") or 0)
            table.add_row(
                Text(login, style="bold" if self.unread[login] else ""),
                str(self.unread[login] or ""),
                one_line(f"{last.get('from')}: {last.get('text', '')}", LAST_CHARS),
                key=login,
            )
        if was in self.unread:
            table.move_cursor(row=table.get_row_index(was))

    def selected(self) -> str | None:
        key = cursor_key(self.query_one("#conversations", DataTable))
        return key if key in self.unread else None

    # --- one conversation -------------------------------------------------------------------

    @on(DataTable.RowSelected, "#conversations")
    def opened(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.open(event.row_key.value)

    @work(exclusive=True, group="thread")
    async def open(self, login: str) -> None:
        """Show the conversation with ``login`` (reading it marks it read)."""
        self.open_with = login
        self.query_one("#reply", Input).placeholder = f"Reply to {login} (Enter sends)"
        shown = self.query_one("#messages", Static)
        try:
            answer = await self.client.call(
                "GET", f"/api/messages/{login.lstrip('@')}", params={"limit": SHOWN_MESSAGES}
            )
        except (HubError, TimeoutError) as exc:
            shown.update(Text(str(exc) or "the hub did not answer in time", style="red"))
            return
        shown.update(conversation_text(login, answer.get("messages", [])))
        self.query_one("#thread", VerticalScroll).scroll_end(animate=False)
        if answer.get("markedRead"):
            self.load()

    # --- writing ----------------------------------------------------------------------------

    @on(Input.Submitted, "#reply")
    def submitted(self, event: Input.Submitted) -> None:
        line = event.value.strip()
        target = addressed(line)
        to, text = target if target else (self.open_with, line)
        if to is None:
            self.notify("Open a conversation first, or start the line with @login.")
            return
        if not text:
            self.notify("Write something to send.")
            return
        self.send(to, text)

    @work(exclusive=True, group="write")
    async def send(self, to: str, text: str) -> None:
        try:
            answer = await self.client.call("POST", "/api/messages", body={"to": to, "text": text})
        except (HubError, TimeoutError) as exc:
            self.notify(str(exc) or "the hub did not answer in time", severity="error")
            return  # the line stays, to fix and send again
        self.query_one("#reply", Input).value = ""
        message = answer.get("message") or {}
        self.open(str(message.get("to") or to))
        self.load()

    # --- the rest ---------------------------------------------------------------------------

    def action_refresh(self) -> None:
        self.load()
        if self.open_with:
            self.open(self.open_with)

    def action_focus_reply(self) -> None:
        self.query_one("#reply", Input).focus()

    def action_focus_list(self) -> None:
        self.query_one("#conversations", DataTable).focus()

    def say(self, line: str, problem: bool = False) -> None:
        status = self.query_one("#status", Static)
        status.update(Text(line))
        status.set_class(problem, "problem")
