"""Read a hub SSE response strictly: every frame is ``data: <json>`` + blank line, or a comment,
and nothing follows ``data: [DONE]``. Stricter than the TUI's client on purpose: the tests
check the hub's stream with it, and a benchmark reads the whole transcript (whether
``[DONE]`` came, every event); ``read_sse_timed`` also keeps when each event arrived, for a
benchmark that times what a person sees first."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp


@dataclass
class SseTranscript:
    events: list[dict[str, Any]] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    done: bool = False
    arrived: list[float] = field(default_factory=list)
    """``time.perf_counter()`` as each event was read (``read_sse_timed`` only)."""

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def text(self) -> str:
        return "".join(e.get("textDelta", "") for e in self.of_type("modelContentBlockDeltaEvent"))


async def read_sse(response: aiohttp.ClientResponse) -> SseTranscript:
    await _check_headers(response)
    raw = (await response.read()).decode("utf-8")
    transcript = SseTranscript()
    assert raw.endswith("\n\n"), "the stream must end with a blank line"
    for frame in raw.split("\n\n")[:-1]:
        _take(transcript, frame)
    return transcript


async def read_sse_timed(response: aiohttp.ClientResponse) -> SseTranscript:
    """``read_sse``, read as the bytes arrive: each event's arrival time is kept."""
    await _check_headers(response)
    transcript, pending = SseTranscript(), b""
    async for chunk in response.content.iter_any():
        pending += chunk
        *frames, rest = pending.split(b"\n\n")
        pending = rest
        now = time.perf_counter()
        for frame in frames:
            events = len(transcript.events)
            _take(transcript, frame.decode("utf-8"))
            transcript.arrived.extend([now] * (len(transcript.events) - events))
    assert not pending, "the stream must end with a blank line"
    return transcript


async def _check_headers(response: aiohttp.ClientResponse) -> None:
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")


def _take(transcript: SseTranscript, frame: str) -> None:
    assert not transcript.done, "nothing may follow data: [DONE]"
    if frame.startswith(":"):
        transcript.comments.append(frame)
        return
    assert frame.startswith("data: ") and "\n" not in frame, f"bad frame {frame!r}"
    payload = frame[len("data: ") :]
    if payload == "[DONE]":
        transcript.done = True
    else:
        transcript.events.append(json.loads(payload))
