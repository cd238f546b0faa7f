"""Read a hub SSE response strictly: every frame is ``data: <json>`` + blank line, or a comment."""

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


async def post_chat(url: str, body: object, headers: dict[str, str] | None = None) -> SseTranscript:
    """POST /api/chat to a hub at ``url`` and read the whole stream strictly."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/api/chat", json=body, headers=headers or {}) as response,
    ):
        return await read_sse(response)


async def tool_in_a_turn(
    server: Any, fake_ollama: Any, name: str, arguments: dict[str, Any] | None = None
) -> tuple[dict[str, Any], SseTranscript]:
    """A chat turn, as the owner, in which the fake model calls ``name`` once and then says
    "Done."; the tool's result as the SSE stream carried it, and the whole transcript."""
    from fakes.ollama import Reply
    from hub import contracts as c
    from tests.conftest import owner_headers

    call = {"function": {"name": name, "arguments": arguments or {}}}
    fake_ollama.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Done."]))
    transcript = await post_chat(
        server.url,
        {"messages": [{"role": "user", "content": f"use {name}"}]},
        owner_headers(server),
    )
    return transcript.of_type(c.EV_AFTER_TOOL)[0]["toolResult"], transcript
