"""A turn's events (hub/agent/stream.py) → OpenAI's answer shapes: ``chat.completion.chunk``
frames while it streams, one ``chat.completion`` when it does not.

What a client of OpenAI's API sees of a turn: the model's text (the texts of its several model
calls, a blank line apart), its reasoning as ``reasoning_content``, the calls of the client's own
tools as ``tool_calls``, and the tokens of all the turn's model calls as ``usage``. The hub's own
tool calls are not shown: the hub runs them, and their effect is in what the model says next.
A turn that fails says so as OpenAI's streams do, a ``data: {"error": {...}}`` frame, which the
``openai`` package raises as an ``APIError``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hub import contracts as c
from hub.agent.stream import Event

# OpenAI's error ``type`` for each status the hub answers on /v1.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    403: "permission_error",
    404: "not_found_error",
    408: "invalid_request_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def error_body(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object, which clients read ``error.message`` from."""
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, usage: dict[str, Any]) -> None:
        self.prompt_tokens += int(usage.get("inputTokens") or 0)
        self.completion_tokens += int(usage.get("outputTokens") or 0)

    def as_json(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@dataclass
class Completion:
    """One completion, built from the turn's events in order. :meth:`feed` answers the deltas
    an event adds (for a stream); the fields hold the whole answer (for a single reply)."""

    model: str
    client_tools: frozenset[str]
    id: str = field(default_factory=lambda: f"chatcmpl-{secrets.token_hex(12)}")
    created: int = field(default_factory=lambda: int(time.time()))
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cut_short: bool = False  # the model stopped at its token limit
    error: str | None = None
    _new_message: bool = False

    @property
    def finish_reason(self) -> str:
        if self.tool_calls:
            return "tool_calls"
        return "length" if self.cut_short else "stop"

    def feed(self, event: Event) -> list[dict[str, Any]]:
        kind = event.get("type")
        if kind == c.EV_MESSAGE_START:
            self._new_message = True
        elif kind == c.EV_BLOCK_DELTA:
            return self._delta(event)
        elif kind == c.EV_BEFORE_TOOL and event["toolCall"]["name"] in self.client_tools:
            return [{"tool_calls": [self._tool_call(event["toolCall"])]}]
        elif kind == c.EV_METADATA:
            self.usage.add(event.get("usage") or {})
        elif kind in (c.EV_MESSAGE_STOP, c.EV_AGENT_RESULT):
            self.cut_short |= event.get("stopReason") == "max_tokens"
        elif kind == c.EV_ERROR:
            self.error = str(event.get("error") or "the turn failed")
        return []

    def _delta(self, event: Event) -> list[dict[str, Any]]:
        if text := event.get(c.DELTA_TEXT):
            if self._new_message and self.text:
                text = "\n\n" + text  # the next model call of the turn: a new paragraph
            self._new_message = False
            self.text.append(text)
            return [{"content": text}]
        if reasoning := event.get(c.DELTA_REASONING):
            self.reasoning.append(reasoning)
            return [{"reasoning_content": reasoning}]
        return []

    def _tool_call(self, call: dict[str, Any]) -> dict[str, Any]:
        made = {
            "id": call["toolUseId"],
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": json.dumps(call.get("input") or {}, ensure_ascii=False),
            },
        }
        self.tool_calls.append(made)
        return {"index": len(self.tool_calls) - 1, **made}

    def chunk(
        self, delta: dict[str, Any], finish_reason: str | None = None, *, with_usage: bool = False
    ) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if with_usage:
            chunk["usage"] = None
        return chunk

    def response(self) -> dict[str, Any]:
        """The whole answer as one ``chat.completion``."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.text) or (None if self.tool_calls else ""),
            "refusal": None,
        }
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": self.usage.as_json(),
        }


class ChunkFrames:
    """The ``data:`` frames of a streamed completion (see ``hub.api.chat.Frames``): the role
    first, a chunk per delta, the finish reason last, then the usage when the client asked."""

    def __init__(self, completion: Completion, *, include_usage: bool) -> None:
        self.completion = completion
        self._include_usage = include_usage
        self._started = False
        # A chunk differs from the last only in its delta: its text around the delta is made
        # once (encoding whole chunks cost a stream a third of its frames per second).
        head, tail = _json(self._chunk({})).split('"delta":{}', 1)
        self._head, self._tail = head + '"delta":', tail

    def of(self, event: Event) -> Iterable[str]:
        deltas = self.completion.feed(event)
        if event.get("type") == c.EV_ERROR:
            return (_json(error_body(502, self.completion.error or "the turn failed")),)
        if not self._started and deltas:
            self._started = True
            deltas = [{"role": "assistant", "content": ""}, *deltas]
        return tuple(self._head + _json(delta) + self._tail for delta in deltas)

    def ending(self) -> Iterable[str]:
        if self.completion.error is not None:
            return ()
        frames = [_json(self._chunk({}, self.completion.finish_reason))]
        if self._include_usage:
            usage = {**self._chunk({}), "choices": [], "usage": self.completion.usage.as_json()}
            frames.append(_json(usage))
        return frames

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return self.completion.chunk(delta, finish_reason, with_usage=self._include_usage)


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
