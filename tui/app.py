"""The terminal UI: one Textual app with a screen per part of the hub, talking to it only over
its HTTP API (``tui/client.py``) — the reference client of the API the phones use.

Screens are Textual modes (chat, devices, memory, settings, community), each built once and kept, so
switching away from a streaming reply does not stop it. Every binding has an id; ``[keys]`` in
``tui.toml`` rebinds any of them (``tui/config.py``).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import App
from textual.binding import Binding, BindingType
from textual.reactive import reactive

from tui.chat import ChatScreen
from tui.client import HubClient
from tui.client_tools import register_themes
from tui.community import CommunityScreen
from tui.config import TuiConfig
from tui.devices import DevicesScreen
from tui.memory import MemoryScreen
from tui.settings import SettingsScreen

SCREENS_IN_ORDER = ("chat", "devices", "memory", "settings", "community")


class TinyApp(App[None]):
    TITLE = "tiny-hub"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "switch_mode('chat')", "Chat", id="show_chat"),
        Binding("f2", "switch_mode('devices')", "Devices", id="show_devices"),
        Binding("f3", "switch_mode('memory')", "Memory", id="show_memory"),
        Binding("f4", "switch_mode('settings')", "Settings", id="show_settings"),
        Binding("f7", "switch_mode('community')", "Community", id="show_community"),
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

    def on_mount(self) -> None:
        self.client.open()  # one session, one connection pool, for every screen's requests
        self.add_mode("chat", lambda: ChatScreen(self.client))
        self.add_mode("devices", lambda: DevicesScreen(self.client))
        self.add_mode("memory", lambda: MemoryScreen(self.client))
        self.add_mode("settings", lambda: SettingsScreen(self.client))
        self.add_mode("community", lambda: CommunityScreen(self.client))
        register_themes(self)  # the presets set_theme offers, before the saved theme is applied
        if self.config.keys:
            self.set_keymap(self.config.keys)
        if self.config.theme in self.available_themes:
            self.theme = self.config.theme
        self.switch_mode("chat")
        for problem in self.config.problems:
            self.notify(problem, severity="warning", timeout=10)

    @on(SettingsScreen.TinyChosen)
    def _tiny_chosen(self, message: SettingsScreen.TinyChosen) -> None:
        self.tiny_name = message.tiny

    @on(SettingsScreen.SessionHeaders)
    def _session_headers(self, message: SettingsScreen.SessionHeaders) -> None:
        self.model_headers = message.headers

    async def on_unmount(self) -> None:
        await self.client.close()
