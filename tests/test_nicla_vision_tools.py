"""The nicla_* tools in a real hub: the emulated OpenMV board on a pty (real pyserial), the
driver started by the hub's own manager, the tools through a chat turn, real speech-to-text."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from drivers.nicla_vision.tools import (
    nicla_listen,
    nicla_status,
    nicla_take_photo,
    nicla_take_video,
)
from fakes.ollama import FakeOllama
from firmware_bridges.emulators.nicla_vision import NiclaVisionEmulator
from harness.waits import until
from hub import contracts as c
from hub.api.server import RunningServer
from media.audio import read_wav
from media.video import decode_jpeg
from tests.conftest import StartHub, owner_headers
from tests.sse import tool_in_a_turn
from tests.toolcall import result_text, use_tool


@pytest.fixture
def board(tmp_path: Path) -> Iterator[NiclaVisionEmulator]:
    emulator = NiclaVisionEmulator(link=tmp_path / "nicla")
    emulator.start()
    yield emulator
    emulator.stop()


def vision_state(server: RunningServer) -> str:
    found = [r["status"] for r in server.hub.drivers.records() if r["driver"] == "nicla_vision"]
    return str(found[0]) if found else "absent"


@pytest.fixture
async def hub(
    start_hub: StartHub, fake_ollama: FakeOllama, board: NiclaVisionEmulator, tmp_path: Path
) -> RunningServer:
    server = await start_hub(
        ollama_host=fake_ollama.url, drivers={"nicla_vision": {"port": str(tmp_path / "nicla")}}
    )
    await until(lambda: vision_state(server) == "online")
    return server


async def test_take_photo_through_a_chat_turn(hub: RunningServer, fake_ollama: FakeOllama) -> None:
    result, _transcript = await tool_in_a_turn(hub, fake_ollama, "nicla_take_photo")
    assert result["status"] == "success", result
    image = next(block["image"] for block in result["content"] if "image" in block)
    jpeg = base64.b64decode(image["base64"])
    assert decode_jpeg(jpeg).ndim == 3
    key = result["content"][1]["json"]["media"].removeprefix("/media/")
    assert hub.hub.devices.media.get(hub.hub.owner.id, key) == (jpeg, "image/jpeg")
    audit = [a["command"] for a in hub.hub.audit.recent() if a["driver"] == "nicla_vision"]
    assert any("jpeg_image_snapshot" in command for command in audit), audit


async def test_video_listen_and_status(hub: RunningServer) -> None:
    video = await use_tool(hub, nicla_take_video, seconds=1)
    assert video["status"] == "success", video
    clip, content_type = hub.hub.devices.media.get(
        hub.hub.owner.id, video["content"][1]["json"]["media"].removeprefix("/media/")
    )
    assert content_type == "video/mp4" and clip[4:8] == b"ftyp"
    heard = await use_tool(hub, nicla_listen, seconds=2)
    assert heard["status"] == "success", heard
    assert "kitchen light" in result_text(heard).lower()
    kept = heard["content"][1]["json"]["transcript"]
    assert kept["source"] == "nicla_vision"
    wav, _ = hub.hub.devices.media.get(hub.hub.owner.id, kept["media"].removeprefix("/media/"))
    assert read_wav(wav).rate == 16_000 and read_wav(wav).seconds == pytest.approx(2.0, abs=0.05)
    status = await use_tool(hub, nicla_status)
    assert status["status"] == "success" and "firmware" in result_text(status)
    assert "battery" not in result_text(status)  # the board does not know it: nothing is made up


async def test_snapshot_route_falls_back_to_the_nicla(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    async with http.get(f"{hub.url}/api/camera/snapshot", headers=owner_headers(hub)) as response:
        assert response.status == 200 and response.content_type == "image/jpeg"
        assert decode_jpeg(await response.read()).ndim == 3


async def test_a_board_vanishing_mid_photo_is_a_clear_error_and_keeps_nothing(
    hub: RunningServer, board: NiclaVisionEmulator
) -> None:
    board.vanish_mid_next_result()
    result = await use_tool(hub, nicla_take_photo)
    assert result["status"] == "error", result
    assert "Nicla Vision" in result_text(result)
    assert hub.hub.devices.media.keys(hub.hub.owner.id) == []
    await until(lambda: vision_state(hub) != "online")
    board.replug()
    await until(lambda: vision_state(hub) == "online")
    assert (await use_tool(hub, nicla_take_photo))["status"] == "success"


async def test_limits_and_callers(hub: RunningServer, board: NiclaVisionEmulator) -> None:
    calls_before = len(board.calls)
    too_long = await use_tool(hub, nicla_take_video, seconds=600)
    assert too_long["status"] == "error"
    assert len(board.calls) == calls_before  # refused before the board was asked
    for tool in (nicla_take_photo, nicla_take_video, nicla_listen, nicla_status):
        assert result_text(await use_tool(hub, tool, caller=None)) == c.LOGIN_REQUIRED


async def test_without_a_board_the_tools_say_so(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    result = await use_tool(server, nicla_take_photo)
    assert result["status"] == "error"
    assert result_text(result).startswith("Nicla Vision is not connected to this hub")


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("nicla_take_video", {"seconds": 1}, "Recorded 1 s with the Nicla Vision"),
        ("nicla_listen", {"seconds": 2}, "kitchen light"),
        ("nicla_status", {}, "firmware"),
    ],
)
async def test_each_tool_in_a_chat_turn(
    hub: RunningServer, fake_ollama: FakeOllama, tool: str, arguments: dict[str, Any], said: str
) -> None:
    result, transcript = await tool_in_a_turn(hub, fake_ollama, tool, arguments)
    assert result["status"] == "success", result
    assert said in result["content"][0]["text"].lower() or said in result["content"][0]["text"]
    assert transcript.text == "Done."
