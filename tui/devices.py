"""The devices screen: every enrolled device and every driver record in one table, the
machine's own camera/microphone/speech, and the owner's event ring — kept live.

Three things keep it current, because presence can change without any event: the event stream
(``GET /api/events``, followed in a worker; each event asks for a re-fetch), a periodic re-fetch
(a device that goes quiet turns offline after 60 s with nobody announcing it), and ``r``. A hub
that is away is said in one line and retried with backoff; the screen never crashes.

What each row says is ``tui/device_rows.py``'s. The table fits the screen by the rule of
``tui/table_layout.py``: names, capabilities and details wrap between words; a column that does
not fit at all is left out, and Enter shows the whole record.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Header, Static

from hub.client.http import Event, HubClient, HubError
from tui.device_rows import (
    DEVICE_COLUMNS,
    DEVICE_LAYOUT,
    EVENT_COLUMNS,
    counted,
    driver_name,
    event_cells,
    machine_text,
    record_text,
    table_rows,
)
from tui.table_layout import column_widths, row_height
from tui.tables import Cells, cursor_key
from tui.widgets import KeysFooter

SCROLLBAR = 2


class RowDetail(ModalScreen[None]):
    """One row in full, in a box that scrolls: Escape or Enter closes it."""

    DEFAULT_CSS = """
    RowDetail { align: center middle; }
    RowDetail > VerticalScroll {
        width: 76; max-width: 100%; height: auto; max-height: 100%; padding: 0 1;
        border: round $primary; background: $surface;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "close", "Close", id="devices_close_detail"),
    ]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text, self.text = title, text

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = self.title_text
            yield Static(self.text, id="row-detail", markup=False)
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)


def sync_table(table: DataTable[Any], rows: Mapping[str, Mapping[str, str | Text]]) -> None:
    """Make the table show exactly ``rows`` (row key → column key → cell), each row as tall
    as its wrapped cells. Cells that changed are updated in place, so a live update does not
    move the cursor or the scroll; when rows come, go or change height, the rows are laid out
    again with the cursor kept on its row."""
    widths = {str(column.key.value): column.width for column in table.ordered_columns}
    heights = {key: row_height(cells, widths) for key, cells in rows.items()}
    laid_out = [(str(key.value), row.height) for key, row in table.rows.items()]
    if laid_out != list(heights.items()):
        chosen = cursor_key(table)
        table.clear()
        for key, cells in rows.items():
            table.add_row(*cells.values(), key=key, height=heights[key])
        if chosen is not None and chosen in rows:
            table.move_cursor(row=table.get_row_index(chosen))
        return
    for key, cells in rows.items():
        for column, value in cells.items():
            if table.get_cell(key, column) != value:
                table.update_cell(key, column, value)


# --- the screen -------------------------------------------------------------------------------


class DevicesScreen(Screen[None]):
    DEFAULT_CSS = """
    DevicesScreen #status { height: auto; padding: 0 1; color: $text-muted; }
    DevicesScreen #status.problem { color: $error; }
    DevicesScreen #devices { height: 1fr; min-height: 4; }
    DevicesScreen #machine { height: auto; padding: 0 1; color: $text-muted; }
    DevicesScreen .heading { height: 1; padding: 0 1; text-style: bold; background: $panel; }
    DevicesScreen #events { height: 1fr; min-height: 4; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh", "Refresh", id="refresh"),
    ]

    refresh_every_s: ClassVar[float] = 5.0
    """Re-fetch this often even without events: presence expires silently."""
    debounce_s: ClassVar[float] = 0.2
    """A burst of events (a replay of the ring) costs one re-fetch."""
    retry_min_s: ClassVar[float] = 1.0
    retry_max_s: ClassVar[float] = 30.0
    settled_after_s: ClassVar[float] = 1.0
    """A stream that has not failed this long after connecting counts as live."""
    ring_rows: ClassVar[int] = 200

    hub_problem: reactive[str] = reactive("", init=False)
    stream_problem: reactive[str] = reactive("", init=False)
    stream_live: reactive[bool] = reactive(False, init=False)
    counts: reactive[str] = reactive("", init=False)

    def __init__(self, client: HubClient) -> None:
        super().__init__(name="devices")
        self.client = client
        self.ring: deque[Event] = deque(maxlen=self.ring_rows)
        self.last_event_id = 0
        self.names: dict[str, str] = {}
        self.records: dict[str, Mapping[str, Any]] = {}
        self.device_rows: dict[str, Cells] = {}
        """Row key → every column's cell (DEVICE_COLUMNS); ``widths`` says which fit."""
        self.widths: dict[str, int] = {}
        """Column key → width, for the columns shown now."""
        self._wake = asyncio.Event()
        self._attempt = 0
        self._events_dirty = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading…", id="status")
        yield DataTable(id="devices", cursor_type="row", zebra_stripes=True)
        yield Static("", id="machine")
        yield Static("Event ring, newest first", classes="heading")
        yield DataTable(id="events", cursor_type="row", zebra_stripes=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#events", DataTable).add_columns(*((name, name) for name in EVENT_COLUMNS))
        self.poll()
        self.follow()

    def action_refresh(self) -> None:
        self._wake.set()

    def on_resize(self) -> None:
        self.draw_devices()

    def draw_devices(self) -> None:
        """The devices table laid out for the screen's width (tui/table_layout.py)."""
        table = self.query_one("#devices", DataTable)
        by_column = {
            key: dict(zip(DEVICE_COLUMNS, cells, strict=True))
            for key, cells in self.device_rows.items()
        }
        in_order = [[row[c.key] for c in DEVICE_LAYOUT] for row in by_column.values()]
        fit = column_widths(DEVICE_LAYOUT, in_order, self.size.width - SCROLLBAR)
        widths = {name: fit[name] for name in DEVICE_COLUMNS if name in fit}
        if widths != self.widths:
            table.clear(columns=True)
            for name, width in widths.items():
                table.add_column(name, key=name, width=width)
            self.widths = widths
        sync_table(table, {key: {c: row[c] for c in widths} for key, row in by_column.items()})

    @on(DataTable.RowSelected, "#devices")
    def _row_chosen(self, event: DataTable.RowSelected) -> None:
        record = self.records.get(str(event.row_key.value))
        if record is None:
            return
        name = driver_name(record) if "driver" in record else str(record.get("name") or "?")
        self.app.push_screen(RowDetail(name, record_text(record)))

    # --- devices and drivers: fetched on a beat, on events, and on request -------------------

    @work(exclusive=True, group="poll")
    async def poll(self) -> None:
        """Fetch, then wait for the beat, an event or ``r``; back off while the hub is away."""
        with contextlib.suppress(NoMatches):  # the screen is closing: its widgets are gone
            await self._poll()

    async def _poll(self) -> None:
        delay = self.retry_min_s
        while True:
            problem = await self.load()
            if problem is None:
                wait, delay = self.refresh_every_s, self.retry_min_s
                self.hub_problem = ""
            else:
                wait, delay = delay, min(delay * 2, self.retry_max_s)
                self.hub_problem = f"{problem}; retrying in {wait:g} s (r: now)"
            await self._sleep_or_wake(wait)

    async def _sleep_or_wake(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)
        if self._wake.is_set():
            await asyncio.sleep(self.debounce_s)  # let the rest of a burst arrive
        self._wake.clear()

    async def load(self) -> str | None:
        """One re-fetch of /api/devices and /api/drivers: None, or what went wrong."""
        try:
            devices = (await self.client.call("GET", "/api/devices")).get("devices", [])
            drivers = await self.client.call("GET", "/api/drivers")
        except (HubError, TimeoutError) as exc:
            return str(exc) or "the hub did not answer in time"
        self.show_devices(devices, drivers.get("drivers", []), drivers.get("machine") or {})
        return None

    def show_devices(
        self,
        devices: Sequence[Mapping[str, Any]],
        records: Sequence[Mapping[str, Any]],
        machine: Mapping[str, Any],
    ) -> None:
        now = time.time()
        self.records = {f"device:{d.get('id')}": d for d in devices}
        self.records.update({f"driver:{r.get('device_id')}": r for r in records})
        self.device_rows = table_rows(devices, records, now)
        self.draw_devices()
        self.query_one("#machine", Static).update(machine_text(machine))
        names = {str(d.get("id")): str(d.get("name")) for d in devices}
        names.update({str(r.get("device_id")): driver_name(r) for r in records})
        if names != self.names:
            self.names = names
            self._events_changed()
        self.counts = (
            f"{counted(devices, records)} · updated {datetime.fromtimestamp(now):%H:%M:%S}"
        )

    # --- the event ring: followed live, resumed after the last id on reconnect ---------------

    @work(exclusive=True, group="events")
    async def follow(self) -> None:
        with contextlib.suppress(NoMatches):  # the screen is closing: its widgets are gone
            await self._follow()

    async def _follow(self) -> None:
        delay = self.retry_min_s
        while True:
            started = time.monotonic()
            lost = await self._follow_once()
            if time.monotonic() - started > self.refresh_every_s:
                delay = self.retry_min_s  # it ran a good while: this is a new outage
            self.stream_live = False
            self.stream_problem = f"{lost}; reconnecting in {delay:g} s"
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.retry_max_s)

    async def _follow_once(self) -> str:
        """Follow the stream until it ends; say why it ended."""
        self._attempt += 1
        attempt = self._attempt
        self.set_timer(self.settled_after_s, partial(self._settled, attempt))
        try:
            async for event in self.client.follow_events(self.last_event_id):
                self._settled(attempt)
                self.take(event)
        except (HubError, TimeoutError) as exc:
            return str(exc) or "the hub did not answer in time"
        finally:
            if self._attempt == attempt:
                self._attempt += 1  # a pending settle timer of this attempt no longer applies
        return "the hub closed the event stream"

    def _settled(self, attempt: int) -> None:
        if attempt == self._attempt:
            self.stream_live, self.stream_problem = True, ""

    def take(self, event: Event) -> None:
        event_id = event.get("id")
        if isinstance(event_id, int):
            if event_id <= self.last_event_id:
                return  # already shown (a replay after a reconnect)
            self.last_event_id = event_id
        self.ring.appendleft(event)
        self._events_changed()
        self._wake.set()  # an event may mean a device changed: re-fetch (debounced)

    def _events_changed(self) -> None:
        """Redraw the ring once per burst, not once per event of a 1000-event replay."""
        if not self._events_dirty:
            self._events_dirty = True
            self.set_timer(0.05, self._draw_events)

    def _draw_events(self) -> None:
        self._events_dirty = False
        try:
            table = self.query_one("#events", DataTable)
        except NoMatches:  # the screen is closing
            return
        now = time.time()
        table.clear()
        for index, event in enumerate(self.ring):
            key = str(event.get("id", f"e{index}"))
            table.add_row(*event_cells(event, self.names, now), key=key)

    # --- the one status line ------------------------------------------------------------------

    def watch_hub_problem(self) -> None:
        self._show_status()

    def watch_stream_problem(self) -> None:
        self._show_status()

    def watch_stream_live(self) -> None:
        self._show_status()

    def watch_counts(self) -> None:
        self._show_status()

    def _show_status(self) -> None:
        problem = self.hub_problem or (
            f"event stream lost: {self.stream_problem}" if self.stream_problem else ""
        )
        if problem:
            said = problem
        elif not self.stream_live:
            said = f"connecting to the event stream… · {self.counts}"
        else:
            said = f"live · {self.counts}"
        status = self.query_one("#status", Static)
        status.update(Text(said))
        status.set_class(bool(problem), "problem")
