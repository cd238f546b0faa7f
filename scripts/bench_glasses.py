"""Meta glasses through a paired phone, against a ``tiny-hub serve`` process on loopback.

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``glasses_photo_turn_p50``: a chat turn in which the model (the fake Ollama) calls
  ``meta_take_photo``: the hub sends the emulated phone (``EmulatedPhone``, holding its pull
  open) the envelope, the phone uploads the committed JPEG and replies, and the model's next
  request carries the photo; each turn is checked to end with ``[DONE]`` and the photo to have
  reached the model.
- ``glasses_listen_turn_p50``: the same for ``meta_listen``: the phone uploads the committed
  1.5 s speech WAV and the hub transcribes it (tiny.en) before the model's next request, which is
  checked to hold the words.
- ``device_ask_recording_p50``: ``POST /api/devices/ask {mediaId}`` for that WAV, uploaded once:
  transcription plus a one-shot turn; each answer is checked to have heard the words.

``python -m scripts.bench_glasses [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
from typing import Any

import aiohttp

from fakes.ollama import FakeOllama, Reply
from firmware_bridges.emulators.phone import PHOTO, SPEECH, EmulatedPhone, Glasses
from scripts.bench_common import BenchmarkFailed, percentile, served_hub
from scripts.bench_rows import run_alone

WORDS = "kitchen light"


async def _checked(response: aiohttp.ClientResponse) -> Any:
    body = await response.json(content_type=None)
    if response.status != 200:
        raise BenchmarkFailed(f"{response.method} {response.url.path}: {response.status} {body}")
    return body


async def _turn(
    http: aiohttp.ClientSession,
    url: str,
    auth: dict[str, str],
    fake: FakeOllama,
    tool: str,
    arguments: dict[str, Any],
) -> float:
    """One chat turn in which the model calls ``tool``; its time in ms, every part checked."""
    call = {"function": {"name": tool, "arguments": arguments}}
    fake.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Done."]))
    body = {"messages": [{"role": "user", "content": f"use {tool}"}]}
    started = time.perf_counter()
    async with http.post(f"{url}/api/chat", json=body, headers=auth) as response:
        raw = (await response.read()).decode()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status != 200 or not raw.endswith("data: [DONE]\n\n") or '"type":"error"' in raw:
        raise BenchmarkFailed(f"{tool} turn failed: {response.status} {raw[-300:]}")
    return elapsed


def _tool_text(fake: FakeOllama) -> str:
    return " ".join(str(m.get("content")) for m in fake.requests[-1]["messages"])


async def _measure(runs: int) -> dict[str, list[float]]:
    fake = FakeOllama()
    await fake.start()
    try:
        async with served_hub(fake.url) as served, aiohttp.ClientSession() as http:
            url, auth = served.url, served.auth
            async with http.post(f"{url}/api/pair/offer", headers=auth) as response:
                code = (await _checked(response))["code"]
            phone = EmulatedPhone(url, code=code, glasses=Glasses(), say=lambda _: None)
            await phone.start()
            try:
                return await _runs(http, url, auth, fake, phone, runs)
            finally:
                await phone.stop()
    finally:
        await fake.stop()


async def _runs(
    http: aiohttp.ClientSession,
    url: str,
    auth: dict[str, str],
    fake: FakeOllama,
    phone: EmulatedPhone,
    runs: int,
) -> dict[str, list[float]]:
    photo = base64.b64encode(PHOTO.read_bytes()).decode()
    measured: dict[str, list[float]] = {"photo": [], "listen": [], "ask": []}
    for _ in range(runs):
        measured["photo"].append(await _turn(http, url, auth, fake, "meta_take_photo", {}))
        if fake.images_in(fake.requests[-1]) != [photo]:
            raise BenchmarkFailed("the photo did not reach the model")
        measured["listen"].append(await _turn(http, url, auth, fake, "meta_listen", {"seconds": 2}))
        if WORDS not in _tool_text(fake).lower():
            raise BenchmarkFailed(f"the model was not told what was heard: {_tool_text(fake)}")
    creds = {"deviceId": phone.device_id, "token": phone.token}
    wav = base64.b64encode(SPEECH.read_bytes()).decode()
    body = {**creds, "data": wav, "contentType": "audio/wav"}
    async with http.post(f"{url}/api/media", json=body) as response:
        key = (await _checked(response))["key"]
    for _ in range(runs):
        started = time.perf_counter()
        async with http.post(f"{url}/api/devices/ask", json={**creds, "mediaId": key}) as response:
            answer = await _checked(response)
        measured["ask"].append((time.perf_counter() - started) * 1000)
        if WORDS not in str(answer.get("heard", "")).lower():
            raise BenchmarkFailed(f"ask did not hear the recording: {json.dumps(answer)}")
    return measured


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    measured = asyncio.run(_measure(max(1, runs)))
    return [
        (
            "glasses_photo_turn_p50",
            percentile(measured["photo"], 0.5),
            "ms",
            "chat turn: the model calls meta_take_photo → envelope to the emulated phone (held "
            f"pull) → JPEG uploaded → reply → the photo in the model's next request; p50 of {runs}",
        ),
        (
            "glasses_listen_turn_p50",
            percentile(measured["listen"], 0.5),
            "ms",
            "chat turn: meta_listen → the phone uploads a 1.5 s speech WAV → transcribed on the "
            f"hub (tiny.en) → the words in the model's next request; p50 of {runs}",
        ),
        (
            "device_ask_recording_p50",
            percentile(measured["ask"], 0.5),
            "ms",
            "POST /api/devices/ask {mediaId} of the 1.5 s WAV: transcription + one-shot turn "
            f"(fake Ollama), each answer checked to have heard it; p50 of {runs}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 10))
