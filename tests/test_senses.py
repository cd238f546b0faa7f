"""The machine's camera through the hub: the tools in a chat turn, /api/camera/snapshot, who may
use them; and the stores every capture lands in (media, transcripts)."""

from __future__ import annotations

import base64
from pathlib import Path

import aiohttp
import pytest

from drivers.machine.tools import camera_clip, camera_photo, microphone_listen
from fakes.camera import EmulatedCamera
from fakes.ollama import FakeOllama
from fakes.sound_device import FakeSoundDevice
from harness.machine import camera_on, microphone_on
from hub import contracts as c
from hub.api.server import RunningServer, start_server
from hub.contracts import TRANSCRIPT_EVENT
from hub.devices.registry import AdjustableClock, DeviceError, DeviceNotFound
from hub.runtime.hub import Hub
from media.audio import read_wav
from media.video import decode_jpeg, is_jpeg
from tests.conftest import StartHub, owner_headers, settings_for
from tests.sse import tool_in_a_turn
from tests.toolcall import use_tool


@pytest.fixture
async def hub(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    camera = EmulatedCamera(size=(320, 240))
    return await start_hub(ollama_host=fake_ollama.url, **camera_on(camera))


async def test_camera_photo_through_a_chat_turn_shows_the_model_the_picture(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    result, transcript = await tool_in_a_turn(hub, fake_ollama, "camera_photo")
    assert result["status"] == "success", result
    image = next(block["image"] for block in result["content"] if "image" in block)
    jpeg = base64.b64decode(image["base64"])
    assert image["format"] == "jpeg" and decode_jpeg(jpeg).shape == (240, 320, 3)
    key = result["content"][1]["json"]["media"].removeprefix("/media/")
    stored, content_type = hub.hub.devices.media.get(hub.hub.owner.id, key)
    assert (stored, content_type) == (jpeg, "image/jpeg")
    # the model's next request carried the picture (strands' Ollama provider sends images)
    sent = fake_ollama.requests[-1]["messages"]
    assert any(m.get("images") for m in sent), sent
    assert transcript.text == "Done."


async def test_camera_clip_is_kept_as_mp4(hub: RunningServer) -> None:
    result = await use_tool(hub, camera_clip, seconds=1)
    assert result["status"] == "success", result
    key = result["content"][1]["json"]["media"].removeprefix("/media/")
    clip, content_type = hub.hub.devices.media.get(hub.hub.owner.id, key)
    assert content_type == "video/mp4" and clip[4:8] == b"ftyp"
    refused = await use_tool(hub, camera_clip, seconds=60)
    assert (
        refused["status"] == "error" and "between 0 and 10 seconds" in refused["content"][0]["text"]
    )


async def test_only_the_owner_may_look_or_listen(hub: RunningServer) -> None:
    for tool in (camera_photo, camera_clip, microphone_listen):
        anonymous = await use_tool(hub, tool, caller=None)
        assert anonymous["content"][0]["text"] == c.LOGIN_REQUIRED
    assert hub.hub.devices.media.keys(hub.hub.owner.id) == []


async def test_without_a_camera_or_microphone_the_tools_say_why(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)  # camera and microphone off
    photo = await use_tool(server, camera_photo)
    assert photo["status"] == "error" and "camera unavailable" in photo["content"][0]["text"]
    heard = await use_tool(server, microphone_listen)
    assert heard["status"] == "error" and "microphone unavailable" in heard["content"][0]["text"]
    absent = camera_on(EmulatedCamera(mode="absent"))  # a camera that cannot be opened
    settings = settings_for(tmp_path / "absent", drivers=absent["drivers"])
    other = await start_server(Hub.open(settings, hardware=absent["hardware"]), "127.0.0.1", 0)
    try:
        failed = await use_tool(other, camera_photo)
        assert "could not be opened" in failed["content"][0]["text"]
        assert other.hub.devices.media.keys(other.hub.owner.id) == []
    finally:
        await other.stop()
        other.hub.close()


async def test_snapshot_route_serves_a_jpeg_to_the_owner_only(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    async with http.get(f"{hub.url}/api/camera/snapshot", headers=owner_headers(hub)) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "image/jpeg"
        assert is_jpeg(await response.read())
    async with http.get(f"{hub.url}/api/camera/snapshot") as response:
        assert response.status == 401


async def test_snapshot_route_says_why_there_is_no_picture(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(**camera_on(EmulatedCamera(mode="dead")))
    async with http.get(f"{server.url}/api/camera/snapshot", headers=owner_headers(server)) as r:
        assert r.status == 503
        assert "gave no picture" in (await r.json())["error"]


async def test_api_drivers_reports_the_machine(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    async with http.get(f"{hub.url}/api/drivers", headers=owner_headers(hub)) as response:
        body = await response.json()
    assert body["machine"]["camera"]["available"] is True
    assert body["machine"]["microphone"]["available"] is False
    assert "camera" in body["capabilities"] and "microphone" not in body["capabilities"]


def test_media_is_never_half_written(tmp_path: Path) -> None:
    from hub.devices.media import MediaStore
    from hub.store.migrations import open_database

    db = open_database(tmp_path / "hub.db")
    folder = tmp_path / "media"
    store = MediaStore(db, folder, AdjustableClock())
    with pytest.raises(DeviceError, match="not a media type"):
        store.put("me", None, b"x", "text/html")
    # The row cannot be written (as when the disk fills): the file must not stay behind.
    db.execute(
        "CREATE TRIGGER full BEFORE INSERT ON media BEGIN SELECT RAISE(ABORT, 'disk full'); END"
    )
    with pytest.raises(Exception, match="disk full"):
        store.put("me", None, b"\xff\xd8\xff data", "image/jpeg")
    assert list(folder.iterdir()) == []


async def test_transcripts_are_kept_listed_and_announced(start_hub: StartHub) -> None:
    server = await start_hub()
    hub, owner = server.hub, server.hub.owner.id
    first = hub.transcripts.add(owner, "microphone", "hello there", audio_s=1.25, media_key="k1")
    second = hub.transcripts.add(owner, "nicla_voice", "turn on the light", device_id="nv:1")
    assert [t.id for t in hub.transcripts.recent(owner)] == [second.id, first.id]
    assert [t.id for t in hub.transcripts.recent(owner, source="microphone")] == [first.id]
    assert hub.transcripts.get(owner, first.id).as_json()["media"] == "/media/k1"
    with pytest.raises(DeviceNotFound):
        hub.transcripts.get("someone else", first.id)
    events = [e for e in hub.devices.events.recent(owner) if e.kind == TRANSCRIPT_EVENT]
    assert [e.detail["id"] for e in events] == [first.id, second.id]
    assert events[1].device_id == "nv:1"


async def test_microphone_listen_through_a_chat_turn_hears_the_words(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    wav = (Path(__file__).parent / "fixtures" / "speech" / "kitchen.wav").read_bytes()
    server = await start_hub(
        ollama_host=fake_ollama.url, **microphone_on(FakeSoundDevice(wav, speed=20.0))
    )
    result, _transcript = await tool_in_a_turn(
        server, fake_ollama, "microphone_listen", {"seconds": 2}
    )
    assert result["status"] == "success", result
    assert "kitchen light" in result["content"][0]["text"].lower()
    kept = result["content"][1]["json"]["transcript"]
    assert kept["source"] == "microphone" and kept["audio_s"] == pytest.approx(2.0, abs=0.05)
    recording, content_type = server.hub.devices.media.get(
        server.hub.owner.id, kept["media"].removeprefix("/media/")
    )
    assert content_type == "audio/wav" and read_wav(recording).seconds == pytest.approx(
        2.0, abs=0.05
    )


async def test_a_microphone_failing_mid_recording_keeps_nothing(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    failing = FakeSoundDevice(None, speed=20.0, fail_after_s=0.5)
    server = await start_hub(**microphone_on(failing))
    result = await use_tool(server, microphone_listen, seconds=2)
    assert result["status"] == "error", result
    assert server.hub.devices.media.keys(server.hub.owner.id) == []
    assert server.hub.transcripts.recent(server.hub.owner.id) == []
