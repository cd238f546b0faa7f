"""Strands events → the contract's SSE events (docs/protocol.md, the stream).

Strands hands out dicts that also carry the agent, cycle ids and other objects that are not
JSON; this normaliser reads only the keys the contract names, so nothing else leaks to a client.
``seq`` is added by the writer, not here, so every frame of a response is numbered once. The
normaliser outlives an overflow retry: tool names it learned stay paired with their ids.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from hub import contracts as c

Event = dict[str, Any]


@dataclass
class StreamNormaliser:
    """Feed strands events in order; read back SSE events. Remembers what the model said, so
    an empty reply can be told apart from a short one."""

    model_id: str
    text_chars: int = 0
    tool_uses: int = 0
    stop_reason: str | None = None
    tool_names: dict[str, str] = field(default_factory=dict)

    @property
    def replied(self) -> bool:
        return self.text_chars > 0 or self.tool_uses > 0

    def feed(self, event: Mapping[str, Any]) -> Iterator[Event]:
        if "event" in event:
            yield from self._model_event(event["event"])
        elif event.get("type") == "tool_stream":
            yield self._tool_stream(event["tool_stream_event"])
        elif "message" in event:
            yield from self._tool_result_blocks(event["message"])
        elif "result" in event:
            result = event["result"]
            self.stop_reason = str(getattr(result, "stop_reason", "end_turn"))
            yield {"type": c.EV_AGENT_RESULT, "stopReason": self.stop_reason}

    def before_tool(self, tool_use: Mapping[str, Any]) -> Event:
        tool_id, name = str(tool_use.get("toolUseId")), str(tool_use.get("name"))
        self.tool_names[tool_id] = name
        return {
            "type": c.EV_BEFORE_TOOL,
            "toolCall": {
                "name": name,
                "toolUseId": tool_id,
                "input": json_safe(tool_use.get("input")),
            },
        }

    def after_tool(
        self, tool_use: Mapping[str, Any], result: Mapping[str, Any], error: BaseException | None
    ) -> Event:
        tool_id = str(tool_use.get("toolUseId"))
        status = str(result.get("status", "error"))
        content = _content(result.get("content") or [])
        message = str(error) if error else None
        if message is None and status == "error":
            message = " ".join(b["text"] for b in content if "text" in b) or "the tool failed"
        return {
            "type": c.EV_AFTER_TOOL,
            "toolResult": {
                "name": self.tool_names.get(tool_id, str(tool_use.get("name"))),
                "toolUseId": tool_id,
                "status": status,
                "content": content,
                "error": message,
            },
        }

    def _model_event(self, raw: Mapping[str, Any]) -> Iterator[Event]:
        if "messageStart" in raw:
            yield {"type": c.EV_MESSAGE_START}
        elif "contentBlockStart" in raw:
            start = raw["contentBlockStart"].get("start") or {}
            out: Event = {"type": c.EV_BLOCK_START}
            if "toolUse" in start:
                self.tool_uses += 1
                tool_id, name = (
                    str(start["toolUse"].get("toolUseId")),
                    str(start["toolUse"].get("name")),
                )
                self.tool_names[tool_id] = name
                out["toolStart"] = {"name": name, "toolUseId": tool_id}
            yield out
        elif "contentBlockDelta" in raw:
            yield from self._delta(raw["contentBlockDelta"].get("delta") or {})
        elif "contentBlockStop" in raw:
            yield {"type": c.EV_BLOCK_STOP}
        elif "messageStop" in raw:
            yield {"type": c.EV_MESSAGE_STOP, "stopReason": raw["messageStop"].get("stopReason")}
        elif "metadata" in raw:
            meta = raw["metadata"]
            yield {
                "type": c.EV_METADATA,
                "usage": _usage(meta.get("usage") or {}),
                "metrics": json_safe(meta.get("metrics") or {}),
                "modelId": self.model_id,
            }

    def _delta(self, delta: Mapping[str, Any]) -> Iterator[Event]:
        if delta.get("text"):
            self.text_chars += len(delta["text"])
            yield {"type": c.EV_BLOCK_DELTA, c.DELTA_TEXT: delta["text"]}
        elif "reasoningContent" in delta and delta["reasoningContent"].get("text"):
            yield {"type": c.EV_BLOCK_DELTA, c.DELTA_REASONING: delta["reasoningContent"]["text"]}
        elif "toolUse" in delta:
            yield {"type": c.EV_BLOCK_DELTA, c.DELTA_TOOL_INPUT: delta["toolUse"].get("input", "")}
        elif "citation" in delta:
            yield {"type": c.EV_BLOCK_DELTA, c.DELTA_CITATIONS: json_safe(delta["citation"])}

    def _tool_stream(self, stream: Mapping[str, Any]) -> Event:
        tool_use = stream.get("tool_use") or {}
        tool_id = str(tool_use.get("toolUseId"))
        return {
            "type": c.EV_TOOL_STREAM,
            "toolStream": {
                "toolUseId": tool_id,
                "name": self.tool_names.get(tool_id, str(tool_use.get("name"))),
                "data": json_safe(stream.get("data")),
            },
        }

    def _tool_result_blocks(self, message: Mapping[str, Any]) -> Iterator[Event]:
        for block in message.get("content") or []:
            if "toolResult" in block:
                result = block["toolResult"]
                yield {
                    "type": c.EV_TOOL_RESULT_BLOCK,
                    "toolResultBlock": {
                        "toolUseId": result.get("toolUseId"),
                        "status": result.get("status"),
                        "content": _content(result.get("content") or []),
                    },
                }


def _content(blocks: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool result content, JSON-safe: text and json as they are, images as base64."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if "text" in block:
            out.append({"text": str(block["text"])})
        elif "json" in block:
            out.append({"json": json_safe(block["json"])})
        elif "image" in block:
            image = block["image"]
            raw = (image.get("source") or {}).get("bytes", b"")
            encoded = base64.b64encode(raw).decode() if isinstance(raw, bytes) else str(raw)
            out.append({"image": {"format": image.get("format"), "base64": encoded}})
    return out


def json_safe(value: Any) -> Any:
    """A value that json.dumps accepts: anything unknown becomes its string form."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


def _usage(usage: Mapping[str, Any]) -> dict[str, int]:
    return {
        "inputTokens": int(usage.get("inputTokens") or 0),
        "outputTokens": int(usage.get("outputTokens") or 0),
        "totalTokens": int(usage.get("totalTokens") or 0),
    }


def error_event(message: str) -> Event:
    return {"type": c.EV_ERROR, "error": message}
