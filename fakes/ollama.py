"""A scripted, protocol-faithful Ollama server on 127.0.0.1 for tests and benchmarks.

It speaks what strands' OllamaModel and the hub's probe use: ``GET /api/tags``, ``POST
/api/show`` (with ``capabilities``) and ``POST /api/chat`` as NDJSON — one JSON object per line,
no blank lines, the final line carrying ``done_reason``, ``total_duration``,
``prompt_eval_count`` and ``eval_count`` (strands fails on a final line without them). Errors
are an HTTP status with ``{"error"}`` or, mid-stream, an ``{"error"}`` line with status 200.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    """One scripted answer to /api/chat."""

    chunks: list[str] = field(default_factory=lambda: ["Hello", " from", " fake", " Ollama."])
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    done_reason: str = "stop"
    error_after: int | None = None  # send {"error"} after this many chunks
    error: str = "model runner has unexpectedly stopped"
    http_status: int = 200
    delay_s: float = 0.0  # between chunks
    first_delay_s: float = 0.0  # before anything is sent: a long prompt evaluation
    held: asyncio.Event | None = None  # nothing is sent until it is set: a slow turn, on cue

    @classmethod
    def overflow(cls) -> Reply:
        """What Ollama answers when the prompt does not fit the model's context."""
        return cls(http_status=400, error="the input length exceeds the context length")


@dataclass
class FakeModel:
    name: str
    capabilities: tuple[str, ...] = ("completion", "tools")


# What Ollama's /api/show lists for a model that can see (llava, qwen2.5vl, gemma3).
SEEING = ("completion", "tools", "vision")


class FakeOllama:
    def __init__(self, models: list[FakeModel] | None = None) -> None:
        self.models = models if models is not None else [FakeModel("qwen3:latest")]
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.disconnects = 0
        self.disconnected_at: list[float] = []
        self.chunks_sent = 0  # across all replies: how far generation got
        self.chat_seen = asyncio.Event()
        self.disconnected = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    @staticmethod
    def images_in(request: dict[str, Any]) -> list[str]:
        """The images (base64, as Ollama receives them) in one recorded /api/chat request."""
        return [image for m in request["messages"] for image in m.get("images") or []]

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/api/tags", self._tags)
        app.router.add_post("/api/show", self._show)
        app.router.add_post("/api/chat", self._chat)
        app.router.add_get("/api/version", self._version)
        return app

    async def start(self) -> str:
        self._runner = web.AppRunner(self.app(), handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": "0.12.0"})

    async def _tags(self, request: web.Request) -> web.Response:
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
        return web.json_response(
            {
                "models": [
                    {
                        "name": m.name,
                        "model": m.name,
                        "modified_at": now,
                        "size": 1_000_000,
                        "digest": "0" * 64,
                        "details": {"format": "gguf", "family": "fake", "parameter_size": "1B"},
                    }
                    for m in self.models
                ]
            }
        )

    def _find(self, name: str) -> FakeModel | None:
        for model in self.models:
            if name in (model.name, model.name.removesuffix(":latest")):
                return model
        return None

    async def _show(self, request: web.Request) -> web.Response:
        body = await request.json()
        model = self._find(body.get("model") or body.get("name") or "")
        if model is None:
            return web.json_response(
                {"error": f"model '{body.get('model')}' not found"}, status=404
            )
        return web.json_response(
            {
                "modelfile": "",
                "parameters": "",
                "template": "{{ .Prompt }}",
                "details": {"format": "gguf", "family": "fake"},
                "model_info": {"general.architecture": "fake", "fake.context_length": 8192},
                "capabilities": list(model.capabilities),
            }
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.chat_seen.set()
        if self._find(body.get("model", "")) is None:
            return web.json_response(
                {"error": f"model '{body.get('model')}' not found"}, status=404
            )
        reply = self.replies.popleft() if self.replies else Reply()
        if reply.http_status != 200:
            return web.json_response({"error": reply.error}, status=reply.http_status)
        started = time.perf_counter_ns()
        try:
            if reply.first_delay_s:
                await asyncio.sleep(reply.first_delay_s)
            if reply.held is not None:
                await reply.held.wait()
            response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
            await response.prepare(request)
            for index, chunk in enumerate(reply.chunks):
                if reply.error_after is not None and index == reply.error_after:
                    await _line(response, {"error": reply.error})
                    return response
                await _line(response, _chunk(body["model"], chunk))
                self.chunks_sent += 1
                if reply.delay_s:
                    await asyncio.sleep(reply.delay_s)
            if reply.tool_calls:
                message = {"role": "assistant", "content": "", "tool_calls": reply.tool_calls}
                await _line(response, {**_chunk(body["model"], ""), "message": message})
            await _line(
                response,
                {
                    **_chunk(body["model"], ""),
                    "done": True,
                    "done_reason": reply.done_reason,
                    "total_duration": time.perf_counter_ns() - started,
                    "load_duration": 1000,
                    "prompt_eval_count": sum(
                        len(str(m.get("content", ""))) for m in body["messages"]
                    )
                    // 4
                    + 1,
                    "prompt_eval_duration": 1000,
                    "eval_count": len(reply.chunks),
                    "eval_duration": 1000,
                },
            )
        except (asyncio.CancelledError, ConnectionResetError):
            self.disconnects += 1
            self.disconnected_at.append(time.monotonic())
            self.disconnected.set()
            raise
        return response


def _chunk(model: str, content: str) -> dict[str, Any]:
    return {
        "model": model,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime()),
        "message": {"role": "assistant", "content": content},
        "done": False,
    }


async def _line(response: web.StreamResponse, obj: dict[str, Any]) -> None:
    await response.write((json.dumps(obj) + "\n").encode())
