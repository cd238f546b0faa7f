"""The chat screen: type, watch the reply stream in as Markdown, stop it with Escape.

A first slice of the full TUI (its own issue): one conversation, kept in memory, streamed over
the hub's HTTP API exactly as a phone would.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Footer, Header, Input, Markdown, Static

from hub import contracts as c
from tui.client import HubClient, HubError


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage { margin: 1 0 0 8; padding: 0 1; background: $primary 20%; }
    """


class ReplyMessage(Markdown):
    DEFAULT_CSS = """
    ReplyMessage { margin: 1 8 0 0; padding: 0 1; background: $surface; }
    """


class Notice(Static):
    DEFAULT_CSS = """
    Notice { margin: 1 0 0 0; color: $error; }
    Notice.info { color: $text-muted; }
    """


class ChatApp(App[None]):
    TITLE = "tiny-hub"
    CSS = """
    #log { height: 1fr; padding: 0 1; }
    #prompt { dock: bottom; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop", "Stop reply"),
        Binding("ctrl+q", "quit", "Quit"),
    ]

    busy: reactive[bool] = reactive(False)

    def __init__(self, client: HubClient) -> None:
        super().__init__()
        self.client = client
        self.history: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield VerticalScroll(id="log")
        yield Input(placeholder="Say something to your companion…", id="prompt")
        yield Footer()

    async def on_mount(self) -> None:
        self.query_one("#prompt", Input).focus()
        self.load_health()

    @work(exclusive=True, group="health")
    async def load_health(self) -> None:
        try:
            health = await self.client.health()
        except HubError as exc:
            self.sub_title = "hub unreachable"
            await self._append(Notice(str(exc)))
            return
        model = health.get("model", {})
        mode = "offline, embedded model" if model.get("provider") == c.PROVIDER_EMBEDDED else ""
        self.sub_title = " · ".join(
            p for p in (f"{model.get('provider')} {model.get('id')}", mode) if p
        )

    @on(Input.Submitted, "#prompt")
    async def send(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text or self.busy:
            return
        event.input.clear()
        self.history.append({"role": "user", "content": text})
        await self._append(UserMessage(text))
        self.stream_reply()

    @work(exclusive=True, group="turn")
    async def stream_reply(self) -> None:
        self.busy = True
        reply = ReplyMessage("")
        await self._append(reply)
        stream = Markdown.get_stream(reply)
        text = ""
        try:
            async for event in self.client.stream_chat(self.history):
                kind = event.get("type")
                if kind == c.EV_BLOCK_DELTA and c.DELTA_TEXT in event:
                    text += event[c.DELTA_TEXT]
                    await stream.write(event[c.DELTA_TEXT])
                    self.query_one("#log", VerticalScroll).scroll_end(animate=False)
                elif kind == c.EV_ERROR:
                    await self._append(Notice(f"error: {event.get('error')}"))
        except HubError as exc:
            await self._append(Notice(str(exc)))
        finally:
            await stream.stop()
            if text:
                self.history.append({"role": "assistant", "content": text})
            self.busy = False

    def action_stop(self) -> None:
        if self.busy:
            self.workers.cancel_group(self, "turn")
            self.call_later(self._append, Notice("stopped", classes="info"))

    async def _append(self, widget: Static | Markdown) -> None:
        log = self.query_one("#log", VerticalScroll)
        await log.mount(widget)
        log.scroll_end(animate=False)
