"""Chat turns against a test hub, read with the strict SSE reader in ``harness/sse.py``."""

from __future__ import annotations

from typing import Any

import aiohttp

from harness.sse import SseTranscript, read_sse

__all__ = ["SseTranscript", "post_chat", "read_sse", "tool_in_a_turn"]


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
