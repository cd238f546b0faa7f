"""The page and phone tools: the hub checks every input with a clear error, sends the rest to
the client, and refuses what the client said it cannot do (x-tiny-client, x-tiny-client-can)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from strands.types.tools import AgentTool

from fakes.ollama import FakeOllama, Reply
from hub import contracts as c
from hub.agent.tools import page
from hub.agent.tools.client_caps import ClientCaps, ClientHeaderInvalid, client_caps
from hub.agent.tools.context import ToolContext
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for
from tests.sse import post_chat
from tests.toolcall import call_tool, result_text


@pytest.fixture
def hub(home: Any) -> Iterator[Hub]:
    opened = Hub.open(settings_for(home))
    yield opened
    opened.close()


def run(hub: Hub, tool: AgentTool, client: ClientCaps | None = None, **arguments: Any) -> Any:
    tiny = hub.tinys.get("tiny")
    assert tiny is not None
    context = ToolContext(hub, None, tiny, client=client or ClientCaps())
    return call_tool(tool, context, **arguments)


def request_of(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    assert result["status"] == "success", result
    data = result["content"][1]["json"]
    return data["clientAction"], data["request"]


PARIS = {"id": "paris", "lat": 48.8566, "lon": 2.3522, "title": "Paris"}
BAD_INPUTS: list[tuple[AgentTool, dict[str, Any], str]] = [
    (page.add_map_marker, {**PARIS, "lat": 91}, "lat must be between -90 and 90"),
    (page.add_map_marker, {**PARIS, "lat": -90.5}, "lat must be between -90 and 90"),
    (page.add_map_marker, {**PARIS, "lon": 180.1}, "lon must be between -180 and 180"),
    (page.add_map_marker, {**PARIS, "lat": math.nan}, "lat must be a finite number"),
    (page.add_map_marker, {**PARIS, "lon": math.inf}, "lon must be a finite number"),
    (page.add_map_marker, {**PARIS, "lat": True}, "lat must be a finite number"),
    (page.add_map_marker, {**PARIS, "id": "  "}, "id must not be empty"),
    (page.add_map_marker, {**PARIS, "id": "x" * 65}, "id is at most 64 characters"),
    (page.add_map_marker, {**PARIS, "id": "eiffel tower"}, "id must not contain spaces"),
    (page.add_map_marker, {**PARIS, "title": ""}, "title must not be empty"),
    (page.add_map_marker, {**PARIS, "title": "t" * 121}, "title is at most 120 characters"),
    (page.add_map_marker, {**PARIS, "title": "a\x1b[2Jb"}, "title must not contain control"),
    (page.add_map_marker, {**PARIS, "note": "n" * 501}, "note is at most 500 characters"),
    (page.remove_map_marker, {"id": ""}, "id must not be empty"),
    (page.fly_to_marker, {"id": "paris", "zoom": 0}, "zoom must be between 1 and 20"),
    (page.fly_to_marker, {"id": "paris", "zoom": 21}, "zoom must be between 1 and 20"),
    (page.fly_to_marker, {"id": "paris", "zoom": math.nan}, "zoom must be a finite number"),
    (page.fly_to_location, {"lat": 0, "lon": -181}, "lon must be between -180 and 180"),
    (page.fly_to_location, {"lat": 0, "lon": 0, "label": "l" * 121}, "label is at most 120"),
    (page.tour_markers, {"ids": []}, "ids lists 1 to 50 markers"),
    (page.tour_markers, {"ids": ["a"] * 51}, "ids lists 1 to 50 markers"),
    (page.tour_markers, {"ids": ["a", ""]}, "id must not be empty"),
    (page.tour_markers, {"ids": ["a", 7]}, "ids must be marker ids"),
    (page.tour_markers, {"dwell_seconds": 0.5}, "dwell_seconds must be between 1 and 60"),
    (page.tour_markers, {"dwell_seconds": 61}, "dwell_seconds must be between 1 and 60"),
    (page.vibrate, {"duration_ms": 10}, "duration_ms must be between 50 and 5000"),
    (page.vibrate, {"duration_ms": 60_000}, "duration_ms must be between 50 and 5000"),
    (page.flashlight, {"on": "yes"}, "on must be true or false"),
    (page.set_brightness, {"level": 1.5}, "level must be between 0 and 1"),
    (page.set_brightness, {"level": -0.1}, "level must be between 0 and 1"),
    (page.set_brightness, {"level": math.inf}, "level must be a finite number"),
    (page.play_sound, {"sound": "airhorn"}, "sound must be one of beep, chime, success"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    BAD_INPUTS,
    ids=[
        f"{t.tool_name}-{e.split(' must')[0].split(' is')[0]}-{i}"
        for i, (t, _, e) in enumerate(BAD_INPUTS)
    ],
)
def test_each_bad_input_gets_a_clear_error(
    hub: Hub, tool: AgentTool, arguments: dict[str, Any], error: str
) -> None:
    result = run(hub, tool, **arguments)
    assert result["status"] == "error"
    assert result_text(result).startswith(f"{tool.tool_name}: ")
    assert error in result_text(result)


def test_good_input_goes_to_the_client_checked_and_trimmed(hub: Hub) -> None:
    marker = {**PARIS, "title": "  Paris  ", "note": "the capital"}
    assert request_of(run(hub, page.add_map_marker, **marker)) == (
        "add_map_marker",
        {"id": "paris", "lat": 48.8566, "lon": 2.3522, "title": "Paris", "note": "the capital"},
    )
    fly = run(hub, page.fly_to_marker, id="paris")
    assert request_of(fly) == ("fly_to_marker", {"id": "paris"})
    assert request_of(run(hub, page.fly_to_location, lat=-33.9, lon=151.2, zoom=9)) == (
        "fly_to_location",
        {"lat": -33.9, "lon": 151.2, "zoom": 9.0, "label": ""},
    )
    assert request_of(run(hub, page.tour_markers, ids=["a", "b"], dwell_seconds=2)) == (
        "tour_markers",
        {"dwellSeconds": 2.0, "ids": ["a", "b"]},
    )
    assert request_of(run(hub, page.tour_markers)) == ("tour_markers", {"dwellSeconds": 4.0})
    assert request_of(run(hub, page.clear_map_markers)) == ("clear_map_markers", {})
    assert request_of(run(hub, page.remove_map_marker, id="paris"))[1] == {"id": "paris"}
    assert request_of(run(hub, page.vibrate)) == ("vibrate", {"durationMs": 300})
    assert request_of(run(hub, page.flashlight, on=False)) == ("flashlight", {"on": False})
    assert request_of(run(hub, page.set_brightness, level=0)) == ("set_brightness", {"level": 0.0})
    for sound in c.SOUNDS:
        assert request_of(run(hub, page.play_sound, sound=sound)) == (
            "play_sound",
            {"sound": sound},
        )


def test_a_client_that_lists_what_it_can_do_gets_the_rest_refused_in_its_own_words(
    hub: Hub,
) -> None:
    terminal = client_caps({c.H_CLIENT: "terminal", c.H_CLIENT_CAN: "map, sound, hologram"})
    refusals = {
        page.flashlight: ({"on": True}, "this terminal has no flashlight; nothing was done"),
        page.vibrate: ({}, "this terminal cannot vibrate; nothing was done"),
        page.set_brightness: (
            {"level": 0.5},
            "this terminal cannot change its screen brightness; nothing was done",
        ),
    }
    for tool, (arguments, sentence) in refusals.items():
        result = run(hub, tool, terminal, **arguments)
        assert result["status"] == "error" and result_text(result) == sentence
    assert request_of(run(hub, page.play_sound, terminal, sound="chime"))[0] == "play_sound"
    assert request_of(run(hub, page.clear_map_markers, terminal))[0] == "clear_map_markers"
    watch = client_caps({c.H_CLIENT_CAN: "vibrate"})
    result = run(hub, page.add_map_marker, watch, **PARIS)
    assert result_text(result) == "this client shows no map; nothing was done"
    # bad input is still named first: the model learns what to fix, not only what is missing
    far_north = run(hub, page.add_map_marker, watch, **{**PARIS, "lat": 99})
    assert "lat must be" in result_text(far_north)


def test_a_client_that_says_nothing_is_sent_everything(hub: Hub) -> None:
    silent = client_caps({})
    assert silent == ClientCaps() and silent.can is None
    assert request_of(run(hub, page.flashlight, silent, on=True)) == ("flashlight", {"on": True})
    assert client_caps({c.H_CLIENT_CAN: ""}).can == frozenset()


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({c.H_CLIENT: "a" * 41}, "x-tiny-client must be 1 to 40 letters"),
        ({c.H_CLIENT: "<script>"}, "x-tiny-client must be 1 to 40 letters"),
        ({c.H_CLIENT_CAN: "map, Sound"}, "cannot read 'Sound'"),
        ({c.H_CLIENT_CAN: "map;sound"}, "cannot read 'map;sound'"),
        ({c.H_CLIENT_CAN: "map," * 60}, "x-tiny-client-can is longer than 200 characters"),
    ],
)
def test_a_malformed_client_header_is_refused_with_the_reason(
    headers: dict[str, str], error: str
) -> None:
    with pytest.raises(ClientHeaderInvalid, match=error.replace("(", r"\(")):
        client_caps(headers)


async def test_the_headers_reach_the_tools_and_a_bad_one_is_a_400(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    headers = {**owner_headers(server), c.H_CLIENT: "terminal", c.H_CLIENT_CAN: "map,sound"}
    calls = [
        {"function": {"name": "flashlight", "arguments": {"on": True}}},
        {"function": {"name": "play_sound", "arguments": {"sound": "beep"}}},
    ]
    fake_ollama.script(Reply(chunks=[], tool_calls=calls), Reply(chunks=["Done."]))
    body = {"messages": [{"role": "user", "content": "light and sound"}]}
    transcript = await post_chat(server.url, body, headers)
    results = {
        e["toolResult"]["name"]: e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)
    }
    assert results["flashlight"]["status"] == "error"
    assert results["flashlight"]["content"][0]["text"] == (
        "this terminal has no flashlight; nothing was done"
    )
    assert results["play_sound"]["status"] == "success"
    assert transcript.done and transcript.text == "Done."

    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.url}/api/chat",
            json=body,
            headers={**owner_headers(server), c.H_CLIENT_CAN: "map; sound"},
        ) as response,
    ):
        assert response.status == 400
        assert "x-tiny-client-can is a comma-separated list" in (await response.json())["error"]
    assert len(fake_ollama.requests) == 2  # the refused request never reached the model
