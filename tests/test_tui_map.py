"""The Map screen (F5) and the page tools in the TUI, against a real hub and the scripted fake
model: markers the model adds are listed, drawn and kept across restarts, a tour visits each,
play_sound says which output it used, and what a terminal has no hardware for is said plainly.
"""

from __future__ import annotations

import io
import stat
import wave
from pathlib import Path
from types import ModuleType

import pytest
from textual.widgets import OptionList

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.client.http import HubClient
from tests.conftest import StartHub
from tests.test_tui import chat_of, notices
from tests.test_tui_chat import say, tool_turn, turn_done
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.map import MapScreen, WorldMap
from tui.map_board import MapBoard, Marker, View
from tui.sounds import NOTES, RATE, SoundPlayer
from tui.widgets import ToolCard
from tui.world import Frame, Pin, draw, land_mask

PARIS = {"id": "paris", "lat": 48.8566, "lon": 2.3522, "title": "Paris", "note": "the capital"}
TOKYO = {"id": "tokyo", "lat": 35.6762, "lon": 139.6503, "title": "Tokyo"}


async def open_map(app: TinyApp, pilot: object) -> MapScreen:
    await pilot.press("f5")  # type: ignore[attr-defined]
    await until(lambda: isinstance(app.screen, MapScreen))
    screen = app.screen
    assert isinstance(screen, MapScreen)
    return screen


async def test_the_model_adds_two_markers_and_tours_them_on_the_map_screen(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        Reply(
            chunks=[],
            tool_calls=[
                {"function": {"name": "add_map_marker", "arguments": PARIS}},
                {"function": {"name": "add_map_marker", "arguments": TOKYO}},
            ],
        ),
        *tool_turn(("tour_markers", {"dwell_seconds": 1})),
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test(size=(120, 36)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "show me Paris and Tokyo")
        await turn_done(chat, 2)
        said = notices(chat)
        assert "map: added “Paris” at 48.86° N, 2.35° E (the Map screen shows it)" in said
        assert "map: added “Tokyo” at 35.68° N, 139.65° E (the Map screen shows it)" in said
        assert any(n.startswith("map: touring 2 markers, 1 s each: Paris → Tokyo") for n in said)
        screen = await open_map(app, pilot)
        assert screen.listed_titles == ["Paris", "Tokyo"]
        options = screen.query_one("#markers", OptionList)
        assert [str(options.get_option_at_index(i).id) for i in range(2)] == ["paris", "tokyo"]
        world = screen.query_one(WorldMap)
        await until(lambda: app.map_board.view.label == "Tokyo", what="the tour reaches Tokyo")
        await pilot.pause()
        assert sorted(world.shown.values()) == ["1", "2"]  # both drawn on the world
        await until(lambda: app.map_board.touring is None, what="the tour ends")
        where = str(screen.query_one("#where").render())
        assert "centred on “Tokyo” (35.68° N, 139.65° E)" in where

    again = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with again.run_test(size=(120, 36)) as pilot:
        screen = await open_map(again, pilot)
        assert screen.listed_titles == ["Paris", "Tokyo"]
        assert again.map_board.markers["paris"].note == "the capital"
        assert again.map_board.view.label == "Tokyo"


async def test_flying_removing_and_clearing_follow_the_model(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(("add_map_marker", PARIS), ("add_map_marker", TOKYO)),
        *tool_turn(("fly_to_marker", {"id": "paris", "zoom": 6})),
        *tool_turn(("fly_to_location", {"lat": -33.87, "lon": 151.21, "label": "Sydney"})),
        *tool_turn(("remove_map_marker", {"id": "paris"}), ("fly_to_marker", {"id": "rome"})),
        *tool_turn(("clear_map_markers", {})),
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test(size=(120, 36)) as pilot:
        chat = chat_of(app)
        board = app.map_board
        await say(pilot, chat, "two places")
        await turn_done(chat, 2)
        await say(pilot, chat, "go to Paris")
        await turn_done(chat, 4)
        assert board.view == View(48.8566, 2.3522, 6.0, "Paris")
        assert any(n.startswith("map: centred on “Paris” at 48.86° N") for n in notices(chat))
        await say(pilot, chat, "now Sydney")
        await turn_done(chat, 6)
        assert board.view == View(-33.87, 151.21, 6.0, "Sydney")
        assert "map: centred on “Sydney” at 33.87° S, 151.21° E, zoom 6" in " ".join(notices(chat))
        await say(pilot, chat, "drop Paris, show Rome")
        await turn_done(chat, 8)
        assert list(board.markers) == ["tokyo"]
        assert "map: removed “Paris”" in notices(chat)
        assert "map: no marker 'rome' here (markers: tokyo)" in notices(chat)
        await say(pilot, chat, "clear the map")
        await turn_done(chat, 10)
        assert board.markers == {} and "map: cleared 1 marker" in notices(chat)
    assert MapBoard(TuiConfig(tmp_path).map_path).markers == {}


async def test_phone_hardware_is_refused_in_the_terminals_own_words(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    """The TUI tells the hub it is a terminal that can show a map and play sounds, so the hub
    answers vibrate, flashlight and brightness itself; the card says so in the chat."""
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(
            ("vibrate", {"duration_ms": 200}),
            ("flashlight", {"on": True}),
            ("set_brightness", {"level": 0.4}),
        )
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "buzz, light, dim")
        await turn_done(chat, 2)
        shown = {card.tool_name: str(card.render()) for card in chat.query(ToolCard)}
        assert {card.status for card in chat.query(ToolCard)} == {"error"}
        assert "error: this terminal cannot vibrate; nothing was done" in shown["vibrate"]
        assert "error: this terminal has no flashlight; nothing" in shown["flashlight"]
        assert "error: this terminal cannot change its screen brightness" in shown["set_brightness"]


async def test_a_hub_that_sends_them_anyway_gets_the_same_plain_answer(tmp_path: Path) -> None:
    """A hub that does not read the client headers still sends the requests; the terminal
    then says itself that it cannot."""
    app = TinyApp(HubClient("http://127.0.0.1:9", None), TuiConfig(tmp_path))
    async with app.run_test():
        tools = chat_of(app).client_tools
        vibrate = await tools.run("vibrate", {"durationMs": 200}, [])
        light = await tools.run("flashlight", {"on": True}, [])
        bright = await tools.run("set_brightness", {"level": 0.2}, [])
    assert vibrate.text == "this terminal cannot vibrate: nothing was done"
    assert light.text == "this terminal has no flashlight: nothing was done"
    assert bright.text == "this terminal cannot change the screen's brightness: nothing was done"
    assert {vibrate.severity, light.severity, bright.severity} == {"warning"}


def portaudio_missing() -> ModuleType:
    raise OSError("PortAudio library not found")


def recording_player(folder: Path) -> Path:
    """A real program called aplay that keeps the WAV file it is asked to play."""
    program = folder / "aplay"
    kept = folder / "played.wav"
    program.write_text(
        f'#!/bin/sh\nfor last; do :; done\ncp "$last" "{kept}"\necho "$last" > "{kept}.path"\n'
    )
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return program


async def test_play_sound_says_which_output_it_used(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(("play_sound", {"sound": "chime"})),
        *tool_turn(("play_sound", {"sound": "alert"})),
    )
    player = recording_player(tmp_path)
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path / "tui"))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        tools = chat.client_tools
        tools.sounds.loader = portaudio_missing
        tools.which = lambda name: str(player) if name == "aplay" else None
        await say(pilot, chat, "chime")
        await turn_done(chat, 2)
        assert "played chime with aplay" in notices(chat)
        await until(lambda: (tmp_path / "played.wav").exists() and not tools.sounds.playing)
        with wave.open(io.BytesIO((tmp_path / "played.wav").read_bytes())) as played:
            assert (played.getnchannels(), played.getframerate()) == (1, RATE)
            seconds = sum(length for _, length in NOTES["chime"])
            assert played.getnframes() == sum(int(RATE * s) for _, s in NOTES["chime"])
            assert abs(played.getnframes() / RATE - seconds) < 0.01
        given = Path((tmp_path / "played.wav.path").read_text().strip())
        assert given.name.startswith("tiny-sound-")
        await until(lambda: not given.exists(), what="the temporary WAV is removed")
        tools.which = lambda name: None
        await say(pilot, chat, "alert")
        await turn_done(chat, 4)
        assert "no audio output here: rang the terminal bell for alert" in notices(chat)


def machine_output() -> str | None:
    player = SoundPlayer(lambda: None, which=lambda name: None)
    found = player.output_device()
    return found[1] if found else None


async def test_play_sound_through_this_machines_audio_output() -> None:
    name = machine_output()
    if name is None:
        pytest.skip(
            "this machine has no audio output device (PortAudio lists none); the tone is "
            "played through a real player program and the terminal bell in the tests above"
        )
    rang: list[bool] = []
    player = SoundPlayer(lambda: rang.append(True), which=lambda name: None)
    said = await player.play("beep")
    assert said == f"played beep through the audio output ({name})" and not rang
    await until(lambda: not player.playing)


def test_the_world_map_puts_land_and_sea_where_they_are() -> None:
    mask = land_mask()
    assert mask.is_land(48.85, 2.35) and mask.is_land(-25.0, 134.0)  # Paris, inland Australia
    assert not mask.is_land(0.0, -30.0) and not mask.is_land(-40.0, -120.0)  # open ocean
    drawing = draw(Frame(0, 0, 1), 80, 20, [Pin(48.85, 2.35, "1"), Pin(-33.9, 151.2, "2")])
    assert len(drawing.rows) == 20 and {len(r) for r in drawing.rows} == {80}
    assert sorted(drawing.pins.values()) == ["1", "2"]
    paris_column, _ = next(k for k, v in drawing.pins.items() if v == "1")
    sydney_column, _ = next(k for k, v in drawing.pins.items() if v == "2")
    assert paris_column < sydney_column  # west of it, on an unwrapped world
    ascii_drawing = draw(Frame(0, 0, 1), 40, 10, braille=False)
    assert set("".join(ascii_drawing.rows)) == {"#", " "}
    zoomed = draw(Frame(48.85, 2.35, 8), 20, 6, [Pin(35.67, 139.65, "2")])
    assert zoomed.pins == {}  # Tokyo is far outside a zoomed view of Paris


def test_an_unreadable_map_file_is_kept_aside_not_overwritten(tmp_path: Path) -> None:
    path = TuiConfig(tmp_path).map_path
    path.write_text("{not json", encoding="utf-8")
    board = MapBoard(path)
    assert board.markers == {} and "map.json is unreadable" in board.problem
    board.add(Marker("rome", "Rome", 41.9, 12.5))
    assert path.with_name("map.json.broken").read_text(encoding="utf-8") == "{not json"
    assert list(MapBoard(path).markers) == ["rome"]
    path.write_text('{"markers": [{"id": "x", "lat": 95, "lon": 0, "title": "bad"}]}')
    assert MapBoard(path).markers == {}  # a hand-edited marker off the globe is left out


async def test_the_map_keys_zoom_return_to_the_world_and_fly_to_a_listed_marker(
    closed_port: int, tmp_path: Path
) -> None:
    config = TuiConfig(tmp_path)
    kept = MapBoard(config.map_path)
    kept.add(Marker(**PARIS))
    kept.add(Marker(**TOKYO))
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), config)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_map(app, pilot)
        board = app.map_board
        assert screen.listed_titles == ["Paris", "Tokyo"]
        await pilot.press("plus", "plus")
        assert board.view.zoom == 3
        await pilot.press("minus")
        assert board.view.zoom == 2
        options = screen.query_one("#markers", OptionList)
        options.focus()
        options.highlighted = 1  # the second marker
        await pilot.press("enter")
        await until(lambda: board.view.label == "Tokyo")
        assert (board.view.lat, board.view.lon, board.view.zoom) == (35.6762, 139.6503, 2)
        await pilot.pause()
        assert str(screen.query_one("#note").render()) == ""  # Tokyo has no note
        await pilot.press("0")
        assert board.view == View(zoom=1.0)
    assert MapBoard(config.map_path).view == View(zoom=1.0)  # kept for next time


async def test_a_tour_skips_a_marker_removed_on_the_way_and_a_new_tour_replaces_it(
    tmp_path: Path,
) -> None:
    board = MapBoard(TuiConfig(tmp_path).map_path)
    stops = [Marker(n, n.title(), float(i), float(i)) for i, n in enumerate(["a", "b", "c"])]
    for marker in stops:
        board.add(marker)
    seen: list[str] = []
    board.subscribe(lambda: seen.append(board.view.label) if board.touring else None)
    board.start_tour(stops, 0.05)
    board.remove("b")  # before the tour's first step runs
    await until(lambda: board.touring is None and seen != [])
    assert [label for i, label in enumerate(seen) if i == 0 or seen[i - 1] != label] == ["A", "C"]
    board.start_tour(stops, 30)
    await until(lambda: board.view.label == "A")
    board.start_tour([stops[2]], 0.05)  # the long tour ends here
    await until(lambda: board.view.label == "C" and board.touring is None)
    assert MapBoard(board.path).view.label == "C"  # each stop is kept
    board.close()
