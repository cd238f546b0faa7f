"""Acting on the hub's client tools (``hub/agent/tools/client.py`` and ``page.py``) in a terminal.

The hub runs these tools by handing them to the client: their result carries
``{"clientAction": name, "request": {...}}``. The TUI does what a terminal can and says so
honestly when it cannot (no speech program, a clipboard that depends on the terminal, no
flashlight). Notes, conversation edits and the map (``tui/map_board.py``) stay on this machine:
nothing here talks to the hub.

Each action returns an :class:`Outcome` the chat screen shows; the screen does the mounting
and asking, so this module has no knowledge of the screen's layout.
"""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
import subprocess
import webbrowser
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from textual.app import App
from textual.color import Color
from textual.theme import Theme
from textual.widget import Widget

from hub.client.conversation import is_tool_message, paired
from tui.config import TuiConfig
from tui.conversations import Message, Notes, message_text
from tui.map_board import MapBoard, Marker, View, marker_from
from tui.sounds import NOTES, SoundPlayer
from tui.widgets import build_component

SPEECH_PROGRAMS = ("espeak-ng", "espeak", "say", "spd-say")
SEE_THE_MAP = "the Map screen shows it"
# The device actions a terminal has no hardware for, and how the chat says so.
CANNOT = {
    "vibrate": "this terminal cannot vibrate",
    "flashlight": "this terminal has no flashlight",
    "set_brightness": "this terminal cannot change the screen's brightness",
}
CLIPBOARD_CAVEAT = (
    "sent with the terminal's OSC 52 sequence: it reaches the clipboard only if your terminal "
    "supports it (macOS Terminal does not; tmux needs set-clipboard on)"
)

# Presets Textual ships keep Textual's name; the rest are registered as custom themes.
BUILTIN_PRESETS = {"dracula": "dracula", "nord": "nord"}
CUSTOM_THEMES = (
    Theme(
        name="tiny",
        primary="#7C5CFF",
        secondary="#00C2A8",
        accent="#FFB454",
        background="#14121F",
        surface="#1D1A2B",
        panel="#2A2540",
    ),
    Theme(
        name="cyberpunk",
        primary="#FF2A6D",
        secondary="#05D9E8",
        accent="#D1F7FF",
        warning="#F9C80E",
        success="#01FF89",
        error="#FF3864",
        background="#0D0221",
        surface="#1A0B3B",
        panel="#2E1760",
    ),
    Theme(
        name="ocean",
        primary="#2E86DE",
        secondary="#48DBFB",
        accent="#00D2D3",
        background="#0B1E2D",
        surface="#12304A",
        panel="#1B4463",
    ),
    Theme(
        name="forest",
        primary="#4CAF50",
        secondary="#8BC34A",
        accent="#CDDC39",
        background="#0F1A12",
        surface="#18281C",
        panel="#23382A",
    ),
    Theme(
        name="sunset",
        primary="#FF7E5F",
        secondary="#FEB47B",
        accent="#FFCC70",
        background="#2B1B24",
        surface="#3A2430",
        panel="#4A2E3D",
    ),
    Theme(
        name="amber",
        primary="#FFB000",
        secondary="#FFCC00",
        accent="#FF8C00",
        foreground="#FFB000",
        background="#1A1200",
        surface="#261B00",
        panel="#332400",
    ),
)
PRESETS: dict[str, str] = {
    **BUILTIN_PRESETS,
    **{theme.name: theme.name for theme in CUSTOM_THEMES},
}
CUSTOM_PREFIX = "custom-"


def register_themes(app: App[Any]) -> None:
    """Make every preset available to ``app.theme`` (Textual lacks most of them)."""
    for theme in CUSTOM_THEMES:
        app.register_theme(theme)


def colour_theme(accent: str, background: str) -> Theme:
    """A theme from two #rrggbb colours; its name encodes them, so it can be rebuilt at start."""
    dark = Color.parse(background).brightness < 0.5
    name = f"{CUSTOM_PREFIX}{accent[1:].lower()}-{background[1:].lower()}"
    return Theme(name=name, primary=accent, accent=accent, background=background, dark=dark)


def restore_theme(app: App[Any], name: str) -> bool:
    """Apply the saved theme ``name``, rebuilding a custom colour theme from its name."""
    if name.startswith(CUSTOM_PREFIX):
        colours = name.removeprefix(CUSTOM_PREFIX).split("-")
        if len(colours) == 2:
            try:
                app.register_theme(colour_theme(f"#{colours[0]}", f"#{colours[1]}"))
            except Exception:  # a hand-edited name: fall back to the default
                return False
    if name not in app.available_themes:
        return False
    app.theme = name
    return True


def client_request(tool_result: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(clientAction, request)`` when a successful tool result is a client action."""
    if tool_result.get("status") != "success":
        return None
    for block in tool_result.get("content") or []:
        data = block.get("json") if isinstance(block, Mapping) else None
        if isinstance(data, Mapping) and isinstance(data.get("clientAction"), str):
            request = data.get("request")
            return data["clientAction"], dict(request) if isinstance(request, Mapping) else {}
    return None


def suggestions_of(tool_result: Mapping[str, Any]) -> list[str]:
    """The chips of a successful ``suggest_followups`` result (none otherwise)."""
    if tool_result.get("name") != "suggest_followups" or tool_result.get("status") != "success":
        return []
    for block in tool_result.get("content") or []:
        data = block.get("json") if isinstance(block, Mapping) else None
        if isinstance(data, Mapping) and isinstance(data.get("suggestions"), list):
            return [str(s) for s in data["suggestions"] if str(s).strip()][:4]
    return []


@dataclass
class Confirm:
    """Ask the person first; ``on_yes`` runs only on yes and returns what to show."""

    question: str
    on_yes: Callable[[], str]
    on_no: str


@dataclass
class Outcome:
    """What the chat shows after a client action (``text`` may be empty: nothing to add)."""

    text: str
    severity: str = "info"
    widget: Widget | None = None
    confirm: Confirm | None = None
    messages_changed: bool = False
    notes_changed: bool = False


class Opener(Protocol):
    def __call__(self, url: str) -> bool: ...


class ClientTools:
    """Runs client actions for one app. ``opener`` and ``which`` are seams: tests never open a
    browser or speak, and a machine without a speech program is one ``which`` away."""

    def __init__(
        self,
        app: App[Any],
        config: TuiConfig,
        *,
        opener: Opener = webbrowser.open,
        which: Callable[[str], str | None] = shutil.which,
        board: MapBoard | None = None,
    ) -> None:
        self.app = app
        self.config = config
        self.notes = Notes(config.notes_path)
        self.board = board if board is not None else MapBoard(config.map_path)
        self.opener = opener
        self.which = which
        self.sounds = SoundPlayer(app.bell, which=lambda name: self.which(name))
        self.speaking: set[asyncio.Task[int]] = set()
        self._handlers: dict[str, Callable[[dict[str, Any], list[Message]], Awaitable[Outcome]]]
        self._handlers = {
            "remember": self._remember,
            "forget": self._forget,
            "manage_messages": self._manage_messages,
            "set_theme": self._set_theme,
            "copy_to_clipboard": self._copy,
            "open_url": self._open_url,
            "speak": self._speak,
            "render_ui": self._render_ui,
            "add_map_marker": self._add_marker,
            "remove_map_marker": self._remove_marker,
            "fly_to_marker": self._fly_to_marker,
            "fly_to_location": self._fly_to_location,
            "clear_map_markers": self._clear_markers,
            "tour_markers": self._tour,
            "play_sound": self._play_sound,
            **{action: functools.partial(self._cannot, action) for action in CANNOT},
        }

    async def run(self, action: str, request: dict[str, Any], messages: list[Message]) -> Outcome:
        """Do ``action``; never raises: whatever goes wrong becomes a notice in the chat."""
        handler = self._handlers.get(action)
        if handler is None:
            return Outcome(
                f"this terminal does not know the client action {action!r}; nothing was done",
                "warning",
            )
        try:
            return await handler(request, messages)
        except Exception as exc:  # a client action must never end the chat
            return Outcome(f"{action} failed here: {exc}", "error")

    async def _remember(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        note = str(request.get("note", "")).strip()
        if not note:
            return Outcome("remember: the note was empty; nothing kept", "warning")
        count = self.notes.add(note)
        return Outcome(f"noted on this device ({count} notes): {note}", notes_changed=True)

    async def _forget(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        contains = str(request.get("contains", "")).strip()
        if not contains:
            return Outcome("forget: say which notes; nothing deleted", "warning")
        gone = self.notes.forget(contains)
        if not gone:
            return Outcome(f"no note on this device contains {contains!r}")
        return Outcome(f"deleted {len(gone)} note(s) containing {contains!r}", notes_changed=True)

    async def _manage_messages(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        action = request.get("action")
        if action == "stats":
            return Outcome(message_stats(messages))
        start, end = int(request.get("start", 0)), min(int(request.get("end", 0)), len(messages))
        if not 0 <= start < end:
            return Outcome(
                f"{action}: no messages in that range (this conversation has {len(messages)})",
                "warning",
            )
        if action == "drop":
            del messages[start:end]
            done = f"dropped messages {start}–{end - 1}"
        elif action == "compact":
            messages[start:end] = [compacted(messages[start:end])]
            done = f"compacted messages {start}–{end - 1} into one"
        else:
            return Outcome(f"manage_messages: unknown action {action!r}", "warning")
        # A range may have split a tool call from its result: the rest of the pair goes too.
        messages[:] = paired(messages)
        return Outcome(done, messages_changed=True)

    async def _set_theme(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        preset = str(request.get("preset") or "")
        if preset:
            name = PRESETS.get(preset)
            if name is None:
                return Outcome(f"set_theme: no preset called {preset!r}", "warning")
            register_themes(self.app)
        else:
            theme = colour_theme(str(request.get("accent")), str(request.get("background")))
            self.app.register_theme(theme)
            name = theme.name
        self.app.theme = name
        try:
            self.config.save_theme(name)
        except OSError as exc:
            return Outcome(f"theme: {preset or name}, for this session only: {exc}", "warning")
        return Outcome(f"theme: {preset or name} (kept for next time)")

    async def _copy(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        text = str(request.get("text", ""))
        self.app.copy_to_clipboard(text)
        return Outcome(f"copied {len(text)} characters, {CLIPBOARD_CAVEAT}")

    async def _open_url(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        url = str(request.get("url", ""))

        def open_it() -> str:
            if self.opener(url):
                return f"opened {url} in your browser"
            return f"could not open a browser on this machine; the address is {url}"

        return Outcome(
            f"the companion wants to open {url}",
            confirm=Confirm(f"Open this address in your browser?\n\n{url}", open_it, "not opened"),
        )

    async def _speak(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        text = str(request.get("text", "")).strip()
        program = next((p for p in map(self.which, SPEECH_PROGRAMS) if p), None)
        if program is None:
            return Outcome(
                "this terminal cannot speak: no text-to-speech program "
                f"({', '.join(SPEECH_PROGRAMS)}) on PATH",
                "warning",
            )
        # A leading dash would read as an option to the speech program.
        process = await asyncio.create_subprocess_exec(
            program,
            f" {text}" if text.startswith("-") else text,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        task = asyncio.create_task(process.wait())
        self.speaking.add(task)
        task.add_done_callback(self.speaking.discard)
        return Outcome(f"speaking with {program.rsplit('/', 1)[-1]}: {shorten_words(text, 12)}")

    async def _render_ui(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        component = str(request.get("component", ""))
        try:
            widget = build_component(component, request.get("props"))
        except ValueError as exc:
            return Outcome(f"render_ui {component}: {exc}", "warning")
        return Outcome("", widget=widget)  # the drawing says it all

    # --- the map and the device actions ---------------------------------------------------

    async def _add_marker(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        marker = marker_from(request)
        if marker is None:
            return Outcome("add_map_marker: the marker was incomplete; nothing added", "warning")
        verb = "replaced" if self.board.add(marker) else "added"
        return Outcome(f"map: {verb} “{marker.title}” at {marker.where} ({SEE_THE_MAP})")

    def _missing(self, marker_id: str) -> Outcome:
        known = ", ".join(self.board.markers) or "none yet"
        return Outcome(f"map: no marker {marker_id!r} here (markers: {known})", "warning")

    async def _remove_marker(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        marker_id = str(request.get("id", ""))
        gone = self.board.remove(marker_id)
        if gone is None:
            return self._missing(marker_id)
        return Outcome(f"map: removed “{gone.title}”")

    async def _fly_to_marker(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        marker = self.board.markers.get(str(request.get("id", "")))
        if marker is None:
            return self._missing(str(request.get("id", "")))
        self.board.look_at(self.board.view_of(marker, _zoom(request)))
        return Outcome(f"map: centred on “{marker.title}” at {marker.where}, {self._zoom_words()}")

    async def _fly_to_location(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        place = marker_from({**request, "id": "-", "title": str(request.get("label") or "")})
        if place is None:
            return Outcome("fly_to_location: the place was incomplete; the map stays", "warning")
        label = str(request.get("label") or "")
        self.board.look_at(
            View(place.lat, place.lon, _zoom(request) or self.board.view.zoom, label)
        )
        named = f"“{label}” at {place.where}" if label else place.where
        return Outcome(f"map: centred on {named}, {self._zoom_words()}")

    def _zoom_words(self) -> str:
        return f"zoom {self.board.view.zoom:g} ({SEE_THE_MAP})"

    async def _clear_markers(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        count = self.board.clear()
        return Outcome(f"map: cleared {count} marker{'s' if count != 1 else ''}")

    async def _tour(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        ids = request.get("ids")
        wanted = [str(i) for i in ids] if isinstance(ids, list) else list(self.board.markers)
        stops: list[Marker] = [self.board.markers[i] for i in wanted if i in self.board.markers]
        missing = [i for i in wanted if i not in self.board.markers]
        if not stops:
            return Outcome("tour_markers: no markers on the map to visit", "warning")
        dwell = float(request.get("dwellSeconds") or 4.0)
        self.board.start_tour(stops, dwell)
        route = " → ".join(m.title for m in stops)
        skipped = f"; not on the map: {', '.join(missing)}" if missing else ""
        return Outcome(
            f"map: touring {len(stops)} markers, {dwell:g} s each: {route} ({SEE_THE_MAP}){skipped}"
        )

    async def _play_sound(self, request: dict[str, Any], messages: list[Message]) -> Outcome:
        sound = str(request.get("sound", ""))
        if sound not in NOTES:
            return Outcome(f"play_sound: this terminal has no sound called {sound!r}", "warning")
        return Outcome(await self.sounds.play(sound))

    async def _cannot(
        self, action: str, request: dict[str, Any], messages: list[Message]
    ) -> Outcome:
        return Outcome(f"{CANNOT[action]}: nothing was done", "warning")


def _zoom(request: dict[str, Any]) -> float | None:
    zoom = request.get("zoom")
    if isinstance(zoom, int | float) and not isinstance(zoom, bool) and 1 <= zoom <= 20:
        return float(zoom)
    return None


def shorten_words(text: str, words: int) -> str:
    split = text.split()
    return " ".join(split[:words]) + (" …" if len(split) > words else "")


def message_stats(messages: Sequence[Message]) -> str:
    """Counts a person can act on: how many, whose, how long (tokens estimated as chars/4).
    The messages of tool calls and results count apart: they are neither the person's words
    nor a reply, yet they are sent, and their numbers are the ones drop and compact take."""
    tools = sum(1 for m in messages if is_tool_message(m))
    users = sum(1 for m in messages if m.get("role") == "user" and not is_tool_message(m))
    chars = sum(
        len(json.dumps(m.get("content"), ensure_ascii=False))
        if is_tool_message(m)
        else len(message_text(m))
        for m in messages
    )
    others = len(messages) - users - tools
    return (
        f"{len(messages)} messages ({users} yours, {others} others, {tools} of tool calls and "
        f"results), {chars} characters, about {chars // 4} tokens"
    )


def compacted(messages: Sequence[Message]) -> Message:
    """One assistant message standing for ``messages``: a local summary, no model involved."""
    openings = [shorten_words(message_text(m), 6) for m in messages]
    summary = " / ".join(o for o in openings if o)
    if len(summary) > 400:
        summary = summary[:399] + "…"
    return {"role": "assistant", "content": f"(compacted {len(messages)} messages: {summary})"}
