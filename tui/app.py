"""The terminal UI: one Textual app with a screen per part of the hub, talking to it only over
its HTTP API (``hub/client/http.py``) — the reference client of the API the phones use.

Screens are Textual modes (chat, devices, memory, settings, map, inbox, community, jobs,
tools), each built once and kept, so switching away from a streaming reply does not stop it.
Every binding has an id; ``[keys]`` in ``tui.toml`` rebinds any of them (``tui/config.py``).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.reactive import reactive

from hub.client.http import Event, HubClient
from tui.chat import ChatScreen
from tui.client_tools import register_themes
from tui.community import CommunityScreen
from tui.config import TuiConfig
from tui.devices import DevicesScreen
from tui.inbox import InboxScreen
from tui.jobs import JobsScreen
from tui.map import MapScreen
from tui.map_board import MapBoard
from tui.memory import MemoryScreen
from tui.notices import follow_notices
from tui.remembered import RememberedLine, heard_of
from tui.settings import SettingsScreen
from tui.tools import ToolsScreen

SCREENS_IN_ORDER = (
    "chat",
    "devices",
    "memory",
    "settings",
    "map",
    "inbox",
    "community",
    "jobs",
    "tools",
)


class TinyApp(App[None]):
    TITLE = "tiny-hub"
    BINDINGS: ClassVar[list[BindingType]] = [
        # F1 … F9 show the screens in their order.
        *(
            Binding(f"f{key}", f"switch_mode('{mode}')", mode.title(), id=f"show_{mode}")
            for key, mode in enumerate(SCREENS_IN_ORDER, start=1)
        ),
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
    ]

    tiny_name: reactive[str] = reactive("tiny")
    """The tiny the chat talks to (chosen on the settings screen; sent as x-tiny-name)."""

    def __init__(self, client: HubClient, config: TuiConfig) -> None:
        super().__init__()
        self.client = client
        self.config = config
        self.model_headers: dict[str, str] = {}
        """x-tiny-model-* headers for this session (a cloud key lives here, in memory only:
        the hub does not store keys, and the TUI never writes one down)."""
        self.map_board = MapBoard(config.map_path)
        """The live map: the chat's map actions change it, the Map screen draws it."""
        self.chat: ChatScreen | None = None
        """The chat screen, once its mode has been shown (what memory heard joins its log)."""

    def _chat_screen(self) -> ChatScreen:
        self.chat = ChatScreen(self.client)
        return self.chat

    def on_mount(self) -> None:
        self.client.open()  # one session, one connection pool, for every screen's requests
        self.add_mode("chat", self._chat_screen)
        self.add_mode("devices", lambda: DevicesScreen(self.client))
        self.add_mode("memory", lambda: MemoryScreen(self.client))
        self.add_mode("settings", lambda: SettingsScreen(self.client))
        self.add_mode("map", lambda: MapScreen(self.map_board))
        self.add_mode("inbox", lambda: InboxScreen(self.client))
        self.add_mode("community", lambda: CommunityScreen(self.client))
        self.add_mode("jobs", lambda: JobsScreen(self.client))
        self.add_mode("tools", lambda: ToolsScreen(self.client))
        register_themes(self)  # the presets set_theme offers, before the saved theme is applied
        if self.config.keys:
            self.set_keymap(self.config.keys)
        if self.config.theme in self.available_themes:
            self.theme = self.config.theme
        self.switch_mode("chat")
        for problem in self.config.problems:
            self.notify(problem, severity="warning", timeout=10)
        if self.client.token:  # the ring is a signed-in person's; an anonymous client has none
            self.follow_notices()

    @work(group="notices", exclusive=True)
    async def follow_notices(self) -> None:
        """A toast for every notice on the person's ring (a job ran, an alert fired)."""
        await follow_notices(self.client, self.show_notice, heard=self.show_heard)

    def show_notice(self, title: str, body: str) -> None:
        self.notify(body or title, title=title, timeout=10)
        if isinstance(self.screen, JobsScreen):
            self.screen.action_refresh()  # a job just ran: its last run changed

    def show_heard(self, event: Event) -> None:
        """What memory kept by listening, in the chat with an undo."""
        heard = heard_of(event)
        if heard is None:
            return
        if self.chat is None or not self.chat.is_mounted:
            self.notify(f"I'll remember: {heard.fact}", timeout=10)
            return
        self.chat.query_one("#log", VerticalScroll).mount(RememberedLine(heard, self.client))

    @on(SettingsScreen.TinyChosen)
    def _tiny_chosen(self, message: SettingsScreen.TinyChosen) -> None:
        self.tiny_name = message.tiny

    @on(SettingsScreen.SessionHeaders)
    def _session_headers(self, message: SettingsScreen.SessionHeaders) -> None:
        self.model_headers = message.headers

    async def on_unmount(self) -> None:
        self.map_board.close()  # a tour is a task on this loop, which is ending
        await self.client.close()
