"""Strands events → the seed's SSE events (seed 000, "The stream").

Strands hands out dicts that also carry the agent, cycle ids and other objects that are not
JSON; this normaliser reads only the keys the contract names, so nothing else leaks to a client.
``seq`` is added by the writer, not here, so every frame of a response is numbered once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
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

    @property
    def replied(self) -> bool:
        return self.text_chars > 0 or self.tool_uses > 0

    def feed(self, event: dict[str, Any]) -> Iterator[Event]:
        if "event" in event:
            yield from self._model_event(event["event"])
        elif "result" in event:
            result = event["result"]
            self.stop_reason = str(getattr(result, "stop_reason", "end_turn"))
            yield {"type": c.EV_AGENT_RESULT, "stopReason": self.stop_reason}

    def _model_event(self, raw: dict[str, Any]) -> Iterator[Event]:
        if "messageStart" in raw:
            yield {"type": c.EV_MESSAGE_START}
        elif "contentBlockStart" in raw:
            start = raw["contentBlockStart"].get("start") or {}
            out: Event = {"type": c.EV_BLOCK_START}
            if "toolUse" in start:
                self.tool_uses += 1
                tool = start["toolUse"]
                out["toolStart"] = {"name": tool.get("name"), "toolUseId": tool.get("toolUseId")}
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
                "metrics": dict(meta.get("metrics") or {}),
                "modelId": self.model_id,
            }

    def _delta(self, delta: dict[str, Any]) -> Iterator[Event]:
        if delta.get("text"):
            self.text_chars += len(delta["text"])
            yield {"type": c.EV_BLOCK_DELTA, c.DELTA_TEXT: delta["text"]}
        elif "reasoningContent" in delta and delta["reasoningContent"].get("text"):
            yield {"type": c.EV_BLOCK_DELTA, c.DELTA_REASONING: delta["reasoningContent"]["text"]}
        elif "toolUse" in delta:
            yield {"type": c.EV_BLOCK_DELTA, c.DELTA_TOOL_INPUT: delta["toolUse"].get("input", "")}
        elif "citation" in delta:
            yield {"type": c.EV_BLOCK_DELTA, c.DELTA_CITATIONS: delta["citation"]}


def _usage(usage: dict[str, Any]) -> dict[str, int]:
    return {
        "inputTokens": int(usage.get("inputTokens") or 0),
        "outputTokens": int(usage.get("outputTokens") or 0),
        "totalTokens": int(usage.get("totalTokens") or 0),
    }


def error_event(message: str) -> Event:
    return {"type": c.EV_ERROR, "error": message}
