"""Pictures and sound in: image and audio blocks in a chat body, and a device's ask with media.

A real hub, the fake Ollama (one model that sees, one that does not) and the hub's own
speech-to-text on the committed speech recording.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from fakes.ollama import SEEING, FakeModel, FakeOllama, Reply
from hub import contracts as c
from hub.agent.models import OllamaModelInfo, OllamaProbe, choose_from_probe
from hub.api.server import RunningServer
from hub.people.preferences import SavedModel, save_model
from media.audio import Pcm, wav_bytes
from media.video import frames_to_mp4
from tests.conftest import StartHub, owner_headers, settings_for
from tests.daemon import enroll, send
from tests.sse import post_chat

FIXTURES = Path(__file__).parent / "fixtures"
PHOTO = (FIXTURES / "phone" / "photo.jpg").read_bytes()
CLIP = (FIXTURES / "phone" / "clip.mp4").read_bytes()
SPEECH = (FIXTURES / "speech" / "kitchen.wav").read_bytes()
BLIND, SIGHTED = "qwen3:latest", "llava:latest"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
async def two_models() -> AsyncIterator[FakeOllama]:
    fake = FakeOllama([FakeModel(BLIND), FakeModel(SIGHTED, SEEING)])
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def hub(start_hub: StartHub, two_models: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=two_models.url)


def with_model(server: RunningServer, model: str) -> dict[str, str]:
    return {**owner_headers(server), c.H_MODEL_PROVIDER: "ollama", c.H_MODEL_ID: model}


def user_says(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(blocks)}]}


def last_user_text(fake: FakeOllama) -> str:
    said = [m for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    return "\n".join(str(m.get("content", "")) for m in said)


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "image": b64(PHOTO), "mimeType": "image/jpeg"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/jpeg", "data": b64(PHOTO)},
        },
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{b64(PHOTO)}"}},
        {"type": "file", "mediaType": "image/jpeg", "data": b64(PHOTO)},
    ],
)
async def test_an_image_reaches_a_model_that_sees(
    hub: RunningServer, two_models: FakeOllama, block: dict[str, Any]
) -> None:
    two_models.script(Reply(chunks=["A red mug."]))
    body = user_says({"type": "text", "text": "What is on my desk?"}, block)
    transcript = await post_chat(hub.url, body, with_model(hub, SIGHTED))
    assert transcript.text == "A red mug."
    assert two_models.images_in(two_models.requests[-1]) == [b64(PHOTO)]
    assert transcript.of_type(c.EV_NOTICE) == []


async def test_an_image_to_a_model_that_cannot_see_is_a_notice_not_a_drop(
    hub: RunningServer, two_models: FakeOllama
) -> None:
    two_models.script(Reply(chunks=["I cannot see it."]))
    body = user_says(
        {"type": "text", "text": "What is this?"}, {"type": "image", "image": b64(PHOTO)}
    )
    transcript = await post_chat(hub.url, body, with_model(hub, BLIND))
    [notice] = transcript.of_type(c.EV_NOTICE)
    said = f"{BLIND} cannot see images, so the image you sent was not shown to it"
    assert notice["message"].startswith(said)
    assert two_models.images_in(two_models.requests[-1]) == []
    assert "an image the user sent, which this model cannot see" in last_user_text(two_models)


async def test_an_audio_block_is_transcribed_into_the_users_text(
    hub: RunningServer, two_models: FakeOllama
) -> None:
    body = user_says({"type": "input_audio", "input_audio": {"data": b64(SPEECH), "format": "wav"}})
    transcript = await post_chat(hub.url, body, with_model(hub, BLIND))
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    assert "(voice message) turn on the kitchen light" in last_user_text(two_models).lower()


async def test_audio_that_is_not_audio_is_a_notice(
    hub: RunningServer, two_models: FakeOllama
) -> None:
    body = user_says({"type": "text", "text": "hi"}, {"type": "audio", "audio": b64(b"not a wav")})
    transcript = await post_chat(hub.url, body, with_model(hub, BLIND))
    [notice] = transcript.of_type(c.EV_NOTICE)
    assert notice["message"].startswith("The audio you sent could not be transcribed")
    assert "could not be transcribed" in last_user_text(two_models)


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ({"type": "image", "image": "https://example.com/cat.jpg"}, "does not fetch URLs"),
        ({"type": "image", "image": "%%%"}, "not valid base64"),
        ({"type": "image", "image": b64(b"GIF? no, text")}, "not a JPEG, PNG, GIF or WebP"),
        ({"type": "image_url", "image_url": {"url": "data:image/png,raw"}}, "base64 data: URL"),
        ({"type": "audio", "audio": b64(SPEECH), "mimeType": "audio/flac"}, "not audio"),
        ({"type": "audio"}, "needs its bytes"),
    ],
)
async def test_bad_blocks_are_a_clear_400(
    hub: RunningServer, http: aiohttp.ClientSession, block: dict[str, Any], problem: str
) -> None:
    status, answer = await send(
        http, "POST", f"{hub.url}/api/chat", user_says(block), owner_headers(hub)
    )
    assert status == 400 and problem in answer["error"], answer
    assert "messages[0].content[0]" in answer["error"]


async def _upload(
    http: aiohttp.ClientSession,
    server: RunningServer,
    creds: dict[str, str],
    data: bytes,
    kind: str,
) -> str:
    status, uploaded = await send(
        http,
        "POST",
        f"{server.url}/api/media",
        {**creds, "data": b64(data), "contentType": kind},
    )
    assert status == 200, uploaded
    return str(uploaded["key"])


async def _device(http: aiohttp.ClientSession, server: RunningServer) -> dict[str, str]:
    enrolled = await enroll(http, server, name="e-ink")
    return {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}


async def test_a_device_asks_with_a_recording_and_gets_text_and_a_card(
    hub: RunningServer, two_models: FakeOllama, http: aiohttp.ClientSession
) -> None:
    creds = await _device(http, hub)
    key = await _upload(http, hub, creds, SPEECH, "audio/wav")
    two_models.script(Reply(chunks=["**Done**: the kitchen light is on."]))
    status, answer = await send(
        http, "POST", f"{hub.url}/api/devices/ask", {**creds, "mediaId": key}
    )
    assert status == 200, answer
    assert "turn on the kitchen light" in answer["heard"].lower()
    assert (
        "(from your device e-ink) turn on the kitchen light" in last_user_text(two_models).lower()
    )
    assert answer["text"] == "**Done**: the kitchen light is on."
    assert answer["card"]["body"] == "Done: the kitchen light is on."
    assert answer["card"]["title"].lower().startswith("turn on the kitchen light")
    [kept] = hub.hub.transcripts.recent(hub.hub.owner.id)
    assert kept.media_key == key and kept.device_id == creds["deviceId"]


async def test_a_device_asks_about_a_clips_sound(
    hub: RunningServer, two_models: FakeOllama, http: aiohttp.ClientSession
) -> None:
    creds = await _device(http, hub)
    key = await _upload(http, hub, creds, CLIP, "video/mp4")
    status, answer = await send(
        http, "POST", f"{hub.url}/api/devices/ask", {**creds, "mediaId": key}
    )
    assert status == 200, answer
    assert "kitchen light" in answer["heard"].lower()


async def test_a_device_shows_a_photo_to_a_model_that_sees(
    hub: RunningServer, two_models: FakeOllama, http: aiohttp.ClientSession
) -> None:
    creds = await _device(http, hub)
    key = await _upload(http, hub, creds, PHOTO, "image/jpeg")
    save_model(hub.hub.db, hub.hub.owner, SavedModel(c.PROVIDER_OLLAMA, SIGHTED))
    two_models.script(Reply(chunks=["A red mug and a plant."]))
    body = {**creds, "mediaId": key, "text": "What is this?"}
    status, answer = await send(http, "POST", f"{hub.url}/api/devices/ask", body)
    assert (status, answer["text"]) == (200, "A red mug and a plant."), answer
    assert two_models.requests[-1]["model"] == SIGHTED
    assert two_models.images_in(two_models.requests[-1]) == [b64(PHOTO)]
    assert "notices" not in answer


async def test_a_photo_for_a_model_that_cannot_see_comes_back_with_a_notice(
    hub: RunningServer, two_models: FakeOllama, http: aiohttp.ClientSession
) -> None:
    creds = await _device(http, hub)
    key = await _upload(http, hub, creds, PHOTO, "image/jpeg")
    status, answer = await send(
        http, "POST", f"{hub.url}/api/devices/ask", {**creds, "mediaId": key}
    )
    assert status == 200, answer
    assert two_models.requests[-1]["model"] == BLIND  # the default: the first that calls tools
    assert two_models.images_in(two_models.requests[-1]) == []
    assert answer["notices"][0].startswith(f"{BLIND} cannot see images")


@pytest.mark.parametrize(
    ("media", "kind", "status", "problem"),
    [
        (b"\x00" * 64, "audio/wav", 400, "not a PCM WAV"),
        (b"\x00" * 64, "image/png", 400, "not a readable image"),
        (frames_to_mp4([np.zeros((48, 64, 3), np.uint8)] * 4, 2), "video/mp4", 400, "no sound"),
        (b"ID3" + b"\x00" * 64, "audio/mpeg", 400, "not a recording this hub can decode"),
        (wav_bytes(Pcm(b"\x00\x00" * 16_000, 16_000)), "audio/wav", 400, "no speech was heard"),
    ],
)
async def test_a_device_ask_with_unreadable_media_is_a_clear_error(
    hub: RunningServer,
    http: aiohttp.ClientSession,
    media: bytes,
    kind: str,
    status: int,
    problem: str,
) -> None:
    creds = await _device(http, hub)
    key = await _upload(http, hub, creds, media, kind)
    got, answer = await send(http, "POST", f"{hub.url}/api/devices/ask", {**creds, "mediaId": key})
    assert got == status and problem in answer["error"], answer
    got, answer = await send(
        http, "POST", f"{hub.url}/api/devices/ask", {**creds, "mediaId": "nope"}
    )
    assert got == 404, answer


def test_the_default_model_sees_when_ollama_says_it_has_vision() -> None:
    settings = settings_for(Path("/nonexistent"), model_id="")
    seeing = OllamaProbe("http://o", True, (OllamaModelInfo(SIGHTED, SEEING),))
    blind = OllamaProbe("http://o", True, (OllamaModelInfo(BLIND, ("completion", "tools")),))
    assert choose_from_probe(settings, seeing).vision is True
    assert choose_from_probe(settings, blind).vision is False
