"""Meta glasses through a paired phone, end to end: a real hub, the fake Ollama, and the
emulated phone (its class, and ``tiny-hub emulate phone`` as a process) paired by a code.

The phone answers with the committed photo, the committed speech recording and the committed
clip whose sound track is that recording; the hub's own speech-to-text (the bundled tiny.en)
transcribes them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama
from firmware_bridges.emulators.phone import CLIP, PHOTO, EmulatedPhone, Glasses
from harness.waits import until
from hub import contracts as c
from hub.agent.tools import mount_tools
from hub.agent.tools.context import ToolContext
from hub.api.server import RunningServer
from tests.conftest import StartHub, owner_headers
from tests.daemon import PythonDaemon, enroll, send
from tests.sse import tool_in_a_turn
from tests.test_scheduler import recording_notify_send

SCRIPT = Path(sys.executable).with_name("tiny-hub")
GLASSES_TOOLS = {"meta_take_photo", "meta_record_video", "meta_listen", "meta_glasses_status"}


async def pairing_code(server: RunningServer) -> str:
    async with aiohttp.ClientSession() as http:
        status, made = await send(
            http, "POST", f"{server.url}/api/pair/offer", None, owner_headers(server)
        )
    assert status == 200, made
    return str(made["code"])


@pytest.fixture
async def hub(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url)


@pytest.fixture
async def phone(hub: RunningServer) -> AsyncIterator[EmulatedPhone]:
    emulated = EmulatedPhone(
        hub.url, code=await pairing_code(hub), glasses=Glasses(), say=lambda _: None
    )
    await emulated.start()
    yield emulated
    await emulated.stop()


def mounted_names(server: RunningServer, session: str = "") -> set[str]:
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    return set(mount_tools(ToolContext(server.hub, server.hub.owner, tiny, session)).names)


def images_seen(fake: FakeOllama) -> list[bytes]:
    """Every image the model was shown in its last request."""
    return [base64.b64decode(i) for i in fake.images_in(fake.requests[-1])]


def tool_texts(fake: FakeOllama) -> str:
    """What the tools said to the model, in its last request."""
    return "\n".join(
        str(m.get("content", "")) for m in fake.requests[-1]["messages"] if m["role"] == "tool"
    )


async def test_a_photo_from_the_glasses_reaches_the_model(
    hub: RunningServer, fake_ollama: FakeOllama, phone: EmulatedPhone
) -> None:
    result, _ = await tool_in_a_turn(hub, fake_ollama, "meta_take_photo")
    assert result["status"] == "success", result
    assert phone.received == [{"type": "meta_take_photo"}]
    assert images_seen(fake_ollama) == [PHOTO.read_bytes()]
    [kept] = result["content"][1]["json"]["images"]
    data, content_type = hub.hub.devices.media.get(hub.hub.owner.id, kept.removeprefix("/media/"))
    assert (data, content_type) == (PHOTO.read_bytes(), "image/jpeg")


async def test_what_the_glasses_hear_is_transcribed_for_the_model(
    hub: RunningServer, fake_ollama: FakeOllama, phone: EmulatedPhone
) -> None:
    result, _ = await tool_in_a_turn(hub, fake_ollama, "meta_listen", {"seconds": 5})
    assert result["status"] == "success", result
    assert phone.received == [{"type": "meta_listen", "seconds": 5}]
    assert "kitchen light" in tool_texts(fake_ollama).lower()
    [transcript] = result["content"][1]["json"]["transcripts"]
    assert transcript["device_id"] == phone.device_id and transcript["media_key"]


async def test_a_video_is_kept_and_its_sound_track_transcribed(
    hub: RunningServer, fake_ollama: FakeOllama, phone: EmulatedPhone
) -> None:
    result, _ = await tool_in_a_turn(hub, fake_ollama, "meta_record_video", {"seconds": 3})
    assert result["status"] == "success", result
    [clip] = result["content"][1]["json"]["media"]
    owner = hub.hub.owner.id
    assert hub.hub.devices.media.get(owner, clip.removeprefix("/media/"))[0] == CLIP.read_bytes()
    assert "kitchen light" in tool_texts(fake_ollama).lower()


async def test_the_glasses_status_is_the_phones_answer(
    hub: RunningServer, fake_ollama: FakeOllama, phone: EmulatedPhone
) -> None:
    assert phone.glasses is not None
    phone.glasses.battery = 37
    result, _ = await tool_in_a_turn(hub, fake_ollama, "meta_glasses_status")
    assert result["status"] == "success", result
    assert json.loads(result["content"][0]["text"])["battery"] == 37


async def test_an_offline_phone_is_a_clear_tool_error(
    hub: RunningServer, fake_ollama: FakeOllama, phone: EmulatedPhone
) -> None:
    # The phone always holds a pull open; once the hub holds it, nothing of the phone's is in
    # flight that could count as a sighting after the clock moves on.
    await until(lambda: hub.hub.devices.mailbox.holding(phone.device_id), what="a held pull")
    await phone.stop()
    hub.hub.devices.clock.advance(c.PRESENCE_WINDOW_S + 240)
    result, _ = await tool_in_a_turn(hub, fake_ollama, "meta_take_photo")
    assert result["status"] == "error"
    text = result["content"][0]["text"]
    assert "Emulated phone is not reachable, last seen 5 min ago" in text
    assert hub.hub.devices.mailbox.unread(hub.hub.devices.registry.list(hub.hub.owner.id)[0]) == 0


async def test_glasses_unpaired_from_the_phone_take_their_tools_with_them(
    hub: RunningServer, phone: EmulatedPhone
) -> None:
    assert mounted_names(hub) >= GLASSES_TOOLS
    phone.glasses = None
    await phone.heartbeat()  # its capabilities no longer list meta_glasses
    assert not GLASSES_TOOLS & mounted_names(hub)
    assert "screenshot" in mounted_names(hub)
    assert mounted_names(hub, c.SESSION_ANDROID) >= GLASSES_TOOLS, "the app runs them itself"


async def test_disconnected_glasses_say_so_and_a_photo_is_the_phones_error(
    hub: RunningServer, fake_ollama: FakeOllama, phone: EmulatedPhone
) -> None:
    assert phone.glasses is not None
    phone.glasses.connected = False
    status, _ = await tool_in_a_turn(hub, fake_ollama, "meta_glasses_status")
    assert json.loads(status["content"][0]["text"])["connected"] is False
    result, _ = await tool_in_a_turn(hub, fake_ollama, "meta_take_photo")
    assert result["status"] == "error"
    text = result["content"][0]["text"]
    assert text == "Emulated phone: the Meta glasses are not connected to the phone"


async def test_the_screen_and_generated_images_come_back_as_images(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    phone = EmulatedPhone(
        hub.url,
        code=await pairing_code(hub),
        platform="ios",
        extra_capabilities=("screenshot", "generate_image"),
        say=lambda _: None,
    )
    await phone.start()
    try:
        assert mounted_names(hub) >= {"screenshot", "generate_image"}
        assert not GLASSES_TOOLS & mounted_names(hub)
        for tool, arguments in (("screenshot", {}), ("generate_image", {"prompt": "a red mug"})):
            result, _ = await tool_in_a_turn(hub, fake_ollama, tool, arguments)
            assert result["status"] == "success", result
            assert images_seen(fake_ollama) == [PHOTO.read_bytes()]
        assert phone.received == [
            {"type": "screenshot"},
            {"type": "generate_image", "prompt": "a red mug"},
        ]
    finally:
        await phone.stop()


async def test_a_reply_pointing_outside_the_hubs_media_is_not_fetched(
    hub: RunningServer, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    enrolled = await enroll(http, hub, name="odd phone", capabilities=["meta_glasses"])

    async def handle(envelope: dict[str, Any]) -> dict[str, Any]:
        outside = [{"url": "http://169.254.169.254/media/x", "format": "jpeg"}]
        return {"result": "here", "images": outside, "media": [{"url": "/media/none"}]}

    daemon = PythonDaemon(
        hub.url, enrolled["device_id"], enrolled["device_token"], handle, ("meta_glasses",)
    )
    with daemon:
        await until(lambda: mounted_names(hub) >= GLASSES_TOOLS, what="the heartbeat")
        result, _ = await tool_in_a_turn(hub, fake_ollama, "meta_take_photo")
    assert result["status"] == "success", result
    assert "(ignored 2 item(s) not on this hub's media store)" in result["content"][0]["text"]
    assert images_seen(fake_ollama) == []


async def test_a_finished_task_reaches_the_phone_and_the_desktop_once(
    hub: RunningServer, phone: EmulatedPhone, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    assert hub.parts.scheduler is not None
    hub.parts.scheduler.desktop, shown = recording_notify_send(tmp_path)
    daemon = await _enroll_daemon(hub, http)
    task = {**daemon, "taskId": "backup-1", "summary": "Backup finished", "idempotencyKey": "k1"}
    for _ in range(2):  # a resend of the same report is not a second push
        status, _answer = await send(http, "POST", f"{hub.url}/api/devices/task-result", task)
        assert status == 200
    # both reports are answered, so whatever the hub queued for the phone is queued now: once
    queued = hub.hub.db.execute(
        "SELECT COUNT(*) FROM relay WHERE device_id = ?", [phone.device_id]
    ).fetchone()[0]
    assert queued == 1
    await until(lambda: len(phone.notices) == 1, what="the notification on the phone")
    [notice] = phone.notices
    assert notice["title"] == "laptop finished a task" and notice["body"] == "Backup finished"
    assert notice["tag"] == "task:backup-1"
    assert len(phone.notices) == 1
    await until(lambda: shown.exists() and shown.read_text().count("\n") >= 1, what="desktop")
    assert shown.read_text().splitlines() == [
        "--app-name=tiny-hub|--|laptop finished a task|Backup finished|"
    ]


async def _enroll_daemon(server: RunningServer, http: aiohttp.ClientSession) -> dict[str, Any]:
    body = {"name": "laptop", "kind": "daemon", "capabilities": ["shell"]}
    status, enrolled = await send(
        http, "POST", f"{server.url}/api/devices", body, owner_headers(server)
    )
    assert status == 200, enrolled
    return {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}


async def test_the_emulate_phone_command_pairs_and_prints_what_it_is_asked(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    code = await pairing_code(hub)
    process = await asyncio.create_subprocess_exec(
        *(str(SCRIPT), "emulate", "phone", "--code", code, "--glasses", "--hub", hub.url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    try:
        lines = [(await process.stdout.readline()).decode() for _ in range(2)]
        assert "with Meta glasses" in lines[0] and "paired as Emulated phone" in lines[1]
        await until(lambda: mounted_names(hub) >= GLASSES_TOOLS, what="the phone's heartbeat")
        result, _ = await tool_in_a_turn(hub, fake_ollama, "meta_take_photo")
        assert result["status"] == "success", result
        assert images_seen(fake_ollama) == [PHOTO.read_bytes()], "the photo reached the model"
        said = (await process.stdout.readline()).decode()
        assert said.startswith("action: meta_take_photo")
    finally:
        process.terminate()
        await process.wait()


async def _run_cli(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(SCRIPT), *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode()


async def test_the_emulate_phone_command_says_what_is_wrong(
    hub: RunningServer, closed_port: int
) -> None:
    code, said = await _run_cli("emulate", "phone", "--hub", hub.url)
    assert code == 2 and "emulate phone needs --code" in said
    right = await pairing_code(hub)
    wrong = f"{(int(right) + 1) % 10**6:06d}"
    code, said = await _run_cli("emulate", "phone", "--code", wrong, "--hub", hub.url)
    assert code == 1 and "POST /api/pair: 403" in said, said
    nobody = f"http://127.0.0.1:{closed_port}"
    code, said = await _run_cli("emulate", "phone", "--code", right, "--hub", nobody)
    assert code == 1 and f"cannot reach the hub at {nobody}" in said, said
