"""The devices screen, driven headless against a real hub: an emulated Nicla Voice as a driver
record, a dial-in device played by the test, and the hub's adjustable clock for presence."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from textual.widgets import DataTable, Static

from drivers.transports.ble_presence import BleAdvertisements
from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState
from firmware_bridges.emulators.nicla_voice import EmulatedNiclaVoice
from harness.waits import until
from hub.api.server import RunningServer
from hub.client.http import HubClient
from hub.devices.registry import AdjustableClock
from tests.conftest import StartHub, owner_headers
from tests.daemon import enroll, send
from tests.screen_words import shown_in
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.device_rows import ago, counted, driver_name, summarize
from tui.devices import DevicesScreen, RowDetail
from tui.table_layout import CELL_PADDING, Column, column_widths, row_height


@pytest.fixture(autouse=True)
def quick_beat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The periodic re-fetch every 0.2 s instead of 5: presence tests need not wait."""
    monkeypatch.setattr(DevicesScreen, "refresh_every_s", 0.2)
    monkeypatch.setattr(DevicesScreen, "retry_max_s", 0.5)


def token_of(server: RunningServer) -> str:
    return owner_headers(server)["Authorization"].split()[1]


def app_for(url: str, token: str | None, tmp_path: Path) -> TinyApp:
    return TinyApp(HubClient(url, token), TuiConfig(tmp_path))


def devices_of(app: TinyApp) -> DevicesScreen:
    screen = app.screen
    assert isinstance(screen, DevicesScreen)
    return screen


def row(screen: DevicesScreen, key: str) -> dict[str, str]:
    """The plain text of one row of the devices table by column (the columns that fit the
    screen), or {} when the row is not there."""
    table = screen.query_one("#devices", DataTable)
    if key not in table.rows:
        return {}
    labels = [str(column.label) for column in table.ordered_columns]
    return dict(zip(labels, (str(cell) for cell in table.get_row(key)), strict=True))


def driver_row(screen: DevicesScreen) -> dict[str, str]:
    """The first driver record's row (see ``row``), or {} before there is one."""
    table = screen.query_one("#devices", DataTable)
    keys = [k.value or "" for k in table.rows if (k.value or "").startswith("driver:")]
    return row(screen, keys[0]) if keys else {}


def events_shown(screen: DevicesScreen) -> list[list[str]]:
    table = screen.query_one("#events", DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def status_line(screen: DevicesScreen) -> str:
    return str(screen.query_one("#status", Static).content)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_a_dial_in_device_goes_online_on_a_heartbeat_and_offline_when_quiet(
    start_hub: StartHub, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    server = await start_hub()
    laptop = await enroll(http, server, "laptop")
    key = f"device:{laptop['device_id']}"
    app = app_for(server.url, token_of(server), tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f2")
        screen = devices_of(app)
        await until(lambda: bool(row(screen, key)))
        shown = row(screen, key)
        assert (shown["name"], shown["kind"], shown["transport"]) == ("laptop", "daemon", "relay")
        assert shown["capabilities"] == "shell, screenshot"
        assert shown["status"] == "offline · never seen"
        await until(lambda: status_line(screen).startswith("live · 1 device, 0 online · "))
        heartbeat = {"deviceId": laptop["device_id"], "token": laptop["device_token"]}
        answer = await send(http, "POST", f"{server.url}/api/devices/heartbeat", heartbeat)
        assert answer[0] == 200, answer
        await until(lambda: row(screen, key).get("status", "").startswith("online · seen "))
        await until(lambda: status_line(screen).startswith("live · 1 device, 1 online · "))
        clock = server.hub.devices.clock
        assert isinstance(clock, AdjustableClock)
        clock.advance(61)  # a minute of silence, without waiting one
        await until(lambda: row(screen, key).get("status", "").startswith("offline · last seen "))
        assert "camera: unavailable: turned off" in str(
            screen.query_one("#machine", Static).content
        )


async def test_enter_on_a_row_shows_the_whole_record_cut_from_the_table(
    start_hub: StartHub, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    server = await start_hub()
    laptop = await enroll(http, server, "laptop")
    key = f"device:{laptop['device_id']}"
    app = app_for(server.url, token_of(server), tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f2")
        screen = devices_of(app)
        await until(lambda: bool(row(screen, key)))
        screen.query_one("#devices", DataTable).focus()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, RowDetail))
        shown = str(app.screen.query_one("#row-detail", Static).content)
        assert f"id: {laptop['device_id']}" in shown
        assert "name: laptop" in shown and '"shell"' in shown
        await pilot.press("escape")
        await until(lambda: app.screen is screen)


async def test_at_80_columns_the_table_drops_columns_instead_of_cutting_them(
    start_hub: StartHub, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    server = await start_hub()
    device = await enroll(http, server, "a-device-with-a-rather-long-name-for-a-table")
    key = f"device:{device['device_id']}"
    app = app_for(server.url, token_of(server), tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f2")
        screen = devices_of(app)
        table = screen.query_one("#devices", DataTable)
        await until(lambda: bool(row(screen, key)))
        await pilot.pause()
        assert {"name", "status"} <= set(row(screen, key))
        assert len(row(screen, key)) < 6  # something had to give
        assert table.virtual_size.width <= table.size.width, (table.virtual_size, table.size)
        await pilot.resize_terminal(200, 40)
        await until(lambda: len(row(screen, key)) == 6)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_flipper_is_listed_by_the_name_it_gives_counted_and_shown_uncut(
    start_hub: StartHub, tmp_path: Path, size: tuple[int, int]
) -> None:
    board = FlipperEmulator(FlipperState(), link=tmp_path / "flipper")
    board.start()
    try:
        server = await start_hub(drivers={"flipper": {"port": str(tmp_path / "flipper")}})
        app = app_for(server.url, token_of(server), tmp_path)
        async with app.run_test(size=size) as pilot:
            await pilot.press("f2")
            screen = devices_of(app)
            table = screen.query_one("#devices", DataTable)

            def flipper() -> dict[str, str]:
                return driver_row(screen)

            await until(lambda: flipper().get("status") == "online")
            assert flipper()["name"] == f"Flipper {FlipperState().name}", "its own name"
            assert str(tmp_path) not in flipper()["name"], "not its pty's path"
            await until(lambda: status_line(screen).startswith("live · 1 device, 1 online · "))
            assert flipper()["capabilities"] == "flipper, subghz, ir, nfc, storage"
            await pilot.pause()
            shown = shown_in(table)
            assert "…" not in shown and re.search(r"\bstorage\b", shown), shown
            assert table.virtual_size.width <= table.size.width, (table.virtual_size, table.size)
            if size[0] >= 120:
                assert flipper()["detail"].startswith(f"Flipper {FlipperState().name}, firmware")
            table.focus()
            await pilot.press("enter")  # the whole record: the port the hub found it on
            await until(lambda: isinstance(app.screen, RowDetail))
            record = str(app.screen.query_one("#row-detail", Static).content)
            assert f"name: flipper on {tmp_path / 'flipper'}" in record
    finally:
        board.stop()


async def test_events_appear_in_the_ring_newest_first_with_the_device_name(
    start_hub: StartHub, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    server = await start_hub()
    hub = server.hub
    hub.devices.events.publish(hub.owner.id, "device_note", None, {"note": "before the screen"})
    phone = await enroll(http, server, "phone")
    app = app_for(server.url, token_of(server), tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f2")
        screen = devices_of(app)
        await until(lambda: len(events_shown(screen)) == 1)
        assert events_shown(screen)[0][1:] == ["device_note", "hub", "before the screen"]
        hub.devices.events.publish(hub.owner.id, "nicla_wake", None, {"label": "hey"})
        await until(lambda: len(events_shown(screen)) == 2)
        body = {
            "deviceId": phone["device_id"],
            "token": phone["device_token"],
            "kind": "nicla_transcript",
            "detail": {"text": "turn on\nthe kitchen light"},
        }
        status, answer = await send(http, "POST", f"{server.url}/api/devices/event", body)
        assert status == 200, answer
        await until(lambda: len(events_shown(screen)) == 3)
        shown = events_shown(screen)
        assert [r[1:] for r in shown] == [
            ["nicla_transcript", "phone", "turn on the kitchen light"],
            ["nicla_wake", "hub", "hey"],
            ["device_note", "hub", "before the screen"],
        ]


async def test_a_driver_record_is_listed_and_its_wakes_reach_the_ring(
    start_hub: StartHub, tmp_path: Path
) -> None:
    board = EmulatedNiclaVoice(pace=0.0)
    server = await start_hub(
        hardware={
            "drivers": {"nicla_voice": {"backend": board.client_backend()}},
            "advertisements": BleAdvertisements(0.02, board.scanner_backend()),
            "backoff_min_s": 0.0,
        }
    )
    app = app_for(server.url, token_of(server), tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:  # wide enough for every column
        await pilot.press("f2")
        screen = devices_of(app)
        await until(lambda: driver_row(screen).get("status") == "online")
        shown = driver_row(screen)
        name = shown["name"]
        assert (shown["kind"], shown["transport"]) == ("nicla_voice", "BLE")
        assert shown["capabilities"]  # the driver's own list, whatever it is
        assert board.wake("NN0:hey_arduino")
        await until(lambda: any(e[1] == "nicla_wake" for e in events_shown(screen)))
        wake = next(e for e in events_shown(screen) if e[1] == "nicla_wake")
        assert wake[2:] == [name, "NN0:hey_arduino"]


async def test_an_unreachable_hub_is_said_and_retried_until_it_answers(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    server = await start_hub()
    await enroll(http, server, "laptop")
    client = HubClient(f"http://127.0.0.1:{closed_port}", token_of(server))
    app = TinyApp(client, TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f2")
        screen = devices_of(app)
        await until(lambda: "cannot reach the hub" in status_line(screen))
        assert "retrying in" in status_line(screen)
        assert screen.query_one("#status", Static).has_class("problem")
        client.url = server.url  # the hub comes back
        await pilot.press("r")
        await until(lambda: status_line(screen).startswith("live · 1 device"))
        assert not screen.query_one("#status", Static).has_class("problem")


class Cable:
    """A TCP pipe between the TUI and the hub that the test can cut and reconnect: a network
    drop, without stopping the hub (whose shutdown would wait for the open stream)."""

    def __init__(self, target_port: int) -> None:
        self.target_port, self.port = target_port, 0
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def plug(self) -> None:
        self.server = await asyncio.start_server(self._pipe, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()
        await self.server.wait_closed()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [writer, up_writer]

        async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))


async def test_a_dropped_event_stream_is_said_and_resumed_after_the_last_event(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    hub = server.hub
    hub.devices.events.publish(hub.owner.id, "device_note", None, {"note": "one"})
    cable = Cable(server.port)
    await cable.plug()
    app = app_for(f"http://127.0.0.1:{cable.port}", token_of(server), tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f2")
        screen = devices_of(app)
        await until(lambda: len(events_shown(screen)) == 1)
        await until(lambda: status_line(screen).startswith("live"))
        await cable.cut()
        await until(lambda: "cannot reach the hub" in status_line(screen))
        await until(lambda: "reconnecting in" in screen.stream_problem)
        hub.devices.events.publish(hub.owner.id, "device_note", None, {"note": "two"})
        await cable.plug()
        await until(lambda: len(events_shown(screen)) == 2)
        assert [e[3] for e in events_shown(screen)] == ["two", "one"]  # no replayed "one"
        await until(lambda: status_line(screen).startswith("live"))
    await cable.cut()


def test_wording_of_ages_and_summaries() -> None:
    assert [ago(s) for s in (-3, 5, 61, 7200, 90_000)] == [
        "0 s ago",
        "5 s ago",
        "1 min ago",
        "2 h ago",
        "1 d ago",
    ]
    assert summarize({"taskId": "t1", "summary": "done", "result": [1]}) == "done"
    assert summarize({"a": 1, "b": "x"}) == 'a=1, b="x"'
    assert summarize(None) == "" and summarize("x" * 200).endswith("…")


def test_a_driver_record_is_named_by_what_the_device_says() -> None:
    online = {"driver": "flipper", "name": "flipper on /dev/pts/5", "status": "online"}
    said = {**online, "detail": "Flipper Unyana, firmware 1.4.3"}
    assert driver_name(said) == "Flipper Unyana"
    vision = {**online, "driver": "nicla_vision", "name": "nicla_vision on /dev/pts/6"}
    said_on = {**vision, "detail": "Nicla Vision on /dev/pts/6, firmware 4.5.2"}
    assert driver_name(said_on) == "Nicla Vision", "the port is not part of its name"
    assert driver_name(online) == "flipper on /dev/pts/5", "nothing said yet: the hub's name"
    offline = {**said, "status": "offline", "detail": "Flipper is not connected"}
    assert driver_name(offline) == "flipper on /dev/pts/5"
    usb = {**said, "name": "Flipper Zero (Unyana)"}
    assert driver_name(usb) == "Flipper Zero (Unyana)", "a name the port gave is kept"


def test_the_header_counts_devices_as_a_person_does() -> None:
    assert counted([], []) == "no devices yet"
    flipper = {"driver": "flipper", "status": "online"}
    assert counted([], [flipper]) == "1 device, 1 online"
    phone = {"kind": "daemon", "online": False}
    endpoint = {"kind": "endpoint", "online": None}  # reached per call: not online, not off
    assert counted([phone, endpoint], [flipper]) == "3 devices, 1 online"


LAYOUT = (
    Column("name", wraps=True, minimum=8),
    Column("status"),
    Column("capabilities", wraps=True, minimum=10),
    Column("detail", wraps=True, minimum=12),
)
ROW = ["Flipper Unyana", "online", "flipper, subghz, ir, nfc, storage", "firmware 1.4.3"]


@pytest.mark.parametrize("width", [20, 40, 60, 80, 120, 200])
def test_columns_fit_by_rule_and_no_word_is_split(width: int) -> None:
    widths = column_widths(LAYOUT, [ROW], width)
    assert sum(w + CELL_PADDING for w in widths.values()) <= width
    assert "name" in widths or width < len("Flipper") + CELL_PADDING
    for index, column in enumerate(LAYOUT):
        if column.key not in widths:  # left out whole, and only after every shown one
            assert all(later.key not in widths for later in LAYOUT[index + 1 :] if later.wraps)
            continue
        longest = max(len(word) for word in ROW[index].split())
        assert widths[column.key] >= longest, "a word is never split"
        if not column.wraps:
            assert widths[column.key] == len(ROW[index]), "a word column shows its cell whole"
    if width >= 200:  # room for everything: every cell on one line
        cells = dict(zip([c.key for c in LAYOUT], ROW, strict=True))
        assert row_height(cells, widths) == 1
    if width == 60:
        cells = dict(zip([c.key for c in LAYOUT], ROW, strict=True))
        shown = {key: cells[key] for key in widths}
        assert row_height(shown, widths) == 2, widths  # the capabilities wrap once
