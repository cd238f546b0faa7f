"""The TUI's live map: its markers and where it looks, kept in ``map.json`` in the data dir.

The hub keeps no map (docs/page-tools.md): the model's map tools reach the TUI as client
actions, and this board is what they change. It is one object for the app, so the chat (which
carries the actions out) and the Map screen (which draws them) share it; the screen listens for
changes. A tour is a task on the board that moves the view from marker to marker.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tui.conversations import write_json_atomically

Listener = Callable[[], None]


@dataclass(frozen=True)
class Marker:
    id: str
    title: str
    lat: float
    lon: float
    note: str = ""

    @property
    def where(self) -> str:
        return f"{degrees(self.lat, 'N', 'S')}, {degrees(self.lon, 'E', 'W')}"


@dataclass(frozen=True)
class View:
    """Where the map looks: its centre, zoom (1 is the whole world) and what is there."""

    lat: float = 20.0
    lon: float = 0.0
    zoom: float = 1.0
    label: str = ""


def degrees(value: float, positive: str, negative: str) -> str:
    return f"{abs(value):.2f}° {positive if value >= 0 else negative}"


def _finite(value: object, low: float, high: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and low <= number <= high else None


def marker_from(raw: Mapping[str, Any]) -> Marker | None:
    """A marker from a request or the file; None when a field is missing or out of range
    (the hub checks requests first, so only a hand-edited file gets here)."""
    lat, lon = _finite(raw.get("lat"), -90, 90), _finite(raw.get("lon"), -180, 180)
    marker_id, title, note = raw.get("id"), raw.get("title"), raw.get("note", "")
    if lat is None or lon is None or not isinstance(marker_id, str) or not marker_id:
        return None
    if not isinstance(title, str) or not isinstance(note, str):
        return None
    return Marker(marker_id, title or marker_id, lat, lon, note)


class MapBoard:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.problem = ""
        self.markers: dict[str, Marker] = {}
        self.view = View()
        self.touring: tuple[int, int] | None = None
        """(1-based stop, stops) while a tour runs."""
        self._tour: asyncio.Task[None] | None = None
        self._listeners: list[Listener] = []
        self._load()

    # --- listening ----------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _changed(self, save: bool = True) -> None:
        if save:
            self._save()
        for listener in list(self._listeners):
            listener()

    # --- the file -----------------------------------------------------------------------

    def _load(self) -> None:
        if not self.path.exists():
            return
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.problem = f"{self.path.name} is unreadable ({exc}); it is kept aside"
            return
        if not isinstance(raw, dict) or not isinstance(raw.get("markers"), list):
            self.problem = f"{self.path.name} has no markers list; it is kept aside"
            return
        for item in raw["markers"]:
            marker = marker_from(item) if isinstance(item, dict) else None
            if marker is not None:
                self.markers[marker.id] = marker
        view = raw.get("view")
        if isinstance(view, dict):
            self.view = self._view_from(view) or self.view

    @staticmethod
    def _view_from(raw: Mapping[str, Any]) -> View | None:
        lat, lon = _finite(raw.get("lat"), -90, 90), _finite(raw.get("lon"), -180, 180)
        zoom = _finite(raw.get("zoom"), 1, 20)
        label = raw.get("label", "")
        if lat is None or lon is None or zoom is None or not isinstance(label, str):
            return None
        return View(lat, lon, zoom, label)

    def _save(self) -> None:
        """Write the board; an unreadable file is moved aside (``map.json.broken``) first,
        not overwritten: a person may still want what was in it."""
        if self.problem and self.path.exists():
            self.path.replace(self.path.with_name(self.path.name + ".broken"))
            self.problem = ""
        markers = [asdict(m) for m in self.markers.values()]
        write_json_atomically(self.path, {"markers": markers, "view": asdict(self.view)})

    # --- what the map tools do ----------------------------------------------------------

    def add(self, marker: Marker) -> bool:
        """Put ``marker`` on the map; True when it replaced one with the same id."""
        replaced = marker.id in self.markers
        self.markers[marker.id] = marker
        self._changed()
        return replaced

    def remove(self, marker_id: str) -> Marker | None:
        gone = self.markers.pop(marker_id, None)
        if gone is not None:
            self._changed()
        return gone

    def clear(self) -> int:
        self.stop_tour()
        count = len(self.markers)
        self.markers.clear()
        self._changed()
        return count

    def look_at(self, view: View, *, from_tour: bool = False) -> None:
        if not from_tour:
            self.stop_tour()
        self.view = view
        self._changed()

    def view_of(self, marker: Marker, zoom: float | None = None) -> View:
        return View(marker.lat, marker.lon, zoom or self.view.zoom, marker.title)

    # --- tours --------------------------------------------------------------------------

    def start_tour(self, stops: list[Marker], dwell_s: float) -> None:
        """Visit ``stops`` in turn, ``dwell_s`` at each; a new tour, a flight or a clear ends
        the one running."""
        self.stop_tour()
        self._tour = asyncio.get_running_loop().create_task(self._run_tour(stops, dwell_s))

    def close(self) -> None:
        """The app is ending: nobody listens any more, and a running tour stops."""
        self._listeners.clear()
        self.stop_tour()

    def stop_tour(self) -> None:
        if self._tour is not None and not self._tour.done():
            self._tour.cancel()
        self._tour = None
        if self.touring is not None:
            self.touring = None
            self._changed(save=False)

    async def _run_tour(self, stops: list[Marker], dwell_s: float) -> None:
        try:
            for number, marker in enumerate(stops, start=1):
                if marker.id not in self.markers:  # removed since the tour began
                    continue
                self.touring = (number, len(stops))
                self.look_at(self.view_of(marker), from_tour=True)
                await asyncio.sleep(dwell_s)
        finally:
            if self._tour is asyncio.current_task():  # not when a newer tour replaced it
                self._tour, self.touring = None, None
                self._changed(save=False)
