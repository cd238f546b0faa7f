"""Read a hub SSE response strictly: every frame is ``data: <json>`` + blank line, or a comment,
and nothing follows ``data: [DONE]``. Stricter than the TUI's client on purpose: the tests
check the hub's stream with it, and a benchmark reads the whole transcript (whether
``[DONE]`` came, every event) rather than events as they arrive."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp


@dataclass
class SseTranscript:
    events: list[dict[str, Any]] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    done: bool = False

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def text(self) -> str:
        return "".join(e.get("textDelta", "") for e in self.of_type("modelContentBlockDeltaEvent"))


async def read_sse(response: aiohttp.ClientResponse) -> SseTranscript:
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    raw = (await response.read()).decode("utf-8")
    transcript = SseTranscript()
    assert raw.endswith("\n\n"), "the stream must end with a blank line"
    for frame in raw.split("\n\n")[:-1]:
        assert not transcript.done, "nothing may follow data: [DONE]"
        if frame.startswith(":"):
            transcript.comments.append(frame)
            continue
        assert frame.startswith("data: ") and "\n" not in frame, f"bad frame {frame!r}"
        payload = frame[len("data: ") :]
        if payload == "[DONE]":
            transcript.done = True
        else:
            transcript.events.append(json.loads(payload))
    return transcript
