"""The Map screen (F5): the markers the companion put on the map, drawn on a small world map
beside their list, and where the map looks now.

The board (``tui/map_board.py``) is the app's; the chat changes it when the model calls a map
tool, and this screen redraws when it changes, so a tour moves the map even while the chat is
in front. The world is drawn in braille where the terminal's encoding can show it, else in
plain ``#``; the list beside it works everywhere.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Label, OptionList, Static
from textual.widgets.option_list import Option

from tui.map_board import MapBoard, Marker, View, degrees
from tui.widgets import KeysFooter
from tui.world import Frame, Pin, draw, label_for

ZOOM_MIN, ZOOM_MAX = 1.0, 20.0


def pins_of(markers: list[Marker]) -> list[Pin]:
    return [Pin(m.lat, m.lon, label_for(i)) for i, m in enumerate(markers)]


def where_text(board: MapBoard) -> str:
    """The line under the map: where it looks, at what zoom, and the tour's progress."""
    view = board.view
    place = f"{degrees(view.lat, 'N', 'S')}, {degrees(view.lon, 'E', 'W')}"
    words = [f"centred on “{view.label}” ({place})" if view.label else f"centred on {place}"]
    words.append(f"zoom {view.zoom:g}")
    if board.touring is not None:
        words.append(f"tour: stop {board.touring[0]} of {board.touring[1]}")
    if not board.markers:
        words.append("no markers yet: ask the companion to put some on the map")
    return " · ".join(words)


class WorldMap(Widget):
    """The world, centred where the board looks, with each marker as its list number."""

    DEFAULT_CSS = """
    WorldMap { width: 1fr; height: 1fr; }
    """

    def __init__(self, board: MapBoard, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.board = board
        self.shown: dict[tuple[int, int], str] = {}
        """(column, row) → the marker label drawn there, at the last render."""

    @property
    def braille(self) -> bool:
        return self.app.console.encoding.lower().startswith("utf")

    def render(self) -> Text:
        width, height = self.content_size.width, self.content_size.height
        if width < 4 or height < 2:
            return Text("")
        view = self.board.view
        markers = list(self.board.markers.values())
        drawing = draw(
            Frame(view.lat, view.lon, view.zoom),
            width,
            height,
            pins_of(markers),
            braille=self.braille,
        )
        self.shown = drawing.pins
        focus = {label_for(i) for i, m in enumerate(markers) if m.title == view.label}
        text = Text(no_wrap=True, overflow="crop")
        for row, line in enumerate(drawing.rows):
            for column, char in enumerate(line):
                label = drawing.pins.get((column, row))
                if label is None:
                    text.append(char, style="green")
                else:
                    text.append(
                        label, style="bold reverse yellow" if label in focus else "bold red"
                    )
            if row < len(drawing.rows) - 1:
                text.append("\n")
        return text


class MapScreen(Screen[None]):
    DEFAULT_CSS = """
    MapScreen #map-main { height: 1fr; }
    MapScreen #world { border: round $panel; }
    MapScreen #side { width: 32; border-left: solid $panel; }
    MapScreen #side Label { color: $text-muted; padding: 0 1; }
    MapScreen #markers { height: 1fr; border: none; }
    MapScreen #note { height: auto; max-height: 8; padding: 0 1; color: $text-muted; }
    MapScreen #where { height: auto; padding: 0 1; background: $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("plus,equals_sign", "zoom(2)", "Zoom in", id="map_zoom_in"),
        Binding("minus", "zoom(0.5)", "Zoom out", id="map_zoom_out"),
        Binding("0", "whole_world", "World", id="map_whole_world"),
    ]

    def __init__(self, board: MapBoard) -> None:
        super().__init__(name="map")
        self.board = board
        self._listed: tuple[Marker, ...] = ()

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="map-main"):
            yield WorldMap(self.board, id="world")
            with Vertical(id="side"):
                yield Label("Markers (Enter flies there)")
                yield OptionList(id="markers")
                yield Static("", id="note", markup=False)
        yield Static("", id="where", markup=False)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = "the live map"
        self.board.subscribe(self.show_board)
        self.show_board()
        if self.board.problem:
            self.notify(self.board.problem, severity="warning", timeout=10)

    def on_unmount(self) -> None:
        self.board.unsubscribe(self.show_board)

    def show_board(self) -> None:
        """Redraw from the board: the list only when the markers changed (so the highlight
        stays), the map and the line under it always."""
        markers = tuple(self.board.markers.values())
        if markers != self._listed:
            self._listed = markers
            options = self.query_one("#markers", OptionList)
            options.clear_options()
            options.add_options(
                Option(f"{label_for(i)} {m.title}\n  {m.where}", id=m.id)
                for i, m in enumerate(markers)
            )
        self.query_one(WorldMap).refresh()
        self.query_one("#where", Static).update(where_text(self.board))
        shown = self.board.markers.get(self._marker_at_view() or "")
        self.query_one("#note", Static).update(shown.note if shown is not None else "")

    def _marker_at_view(self) -> str | None:
        view = self.board.view
        for marker in self.board.markers.values():
            if (marker.lat, marker.lon, marker.title) == (view.lat, view.lon, view.label):
                return marker.id
        return None

    @property
    def listed_titles(self) -> list[str]:
        return [m.title for m in self._listed]

    @on(OptionList.OptionSelected, "#markers")
    def _fly_to_picked(self, event: OptionList.OptionSelected) -> None:
        marker = self.board.markers.get(str(event.option.id))
        if marker is not None:
            self.board.look_at(self.board.view_of(marker))

    def action_zoom(self, factor: float) -> None:
        view = self.board.view
        zoom = min(ZOOM_MAX, max(ZOOM_MIN, view.zoom + (1 if factor > 1 else -1)))
        self.board.look_at(View(view.lat, view.lon, zoom, view.label))

    def action_whole_world(self) -> None:
        self.board.look_at(View(zoom=ZOOM_MIN))
