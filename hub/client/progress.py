"""What a turn is doing while a person waits, read from the chat stream's own events and timed
by the client's own clock: reading the prompt, calling a tool, reading its result, thinking,
writing the answer. The chat screen's status line and ``tiny-hub chat`` both show it.

The stream carries no progress events of its own (its event types are the contract's), so the
phase is what the last event implies: after a tool's result the model is reading it until the
answer's first token, and the line says so instead of looking finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hub import contracts as c

READING = "reading the prompt"
THINKING = "thinking"
WRITING = "writing the answer"
COMPACTED = "reading a shorter prompt (the context was full)"


def calling(tool: str) -> str:
    return f"calling {tool}"


def reading_result(tool: str) -> str:
    return f"reading {tool}'s result"


@dataclass
class TurnProgress:
    """One turn's phase and how long it has run; ``see`` each event of the stream in order."""

    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    doing: str = READING
    tools: dict[str, str] = field(default_factory=dict)
    """Tool names by toolUseId: a result names its tool, but a stream may leave it out."""
    finished: bool = False

    def __post_init__(self) -> None:
        self.started = self.started or self.clock()

    def see(self, event: Mapping[str, Any]) -> bool:
        """Take one event; True when the phase changed (the line should be shown again)."""
        before = self.doing
        kind = event.get("type")
        if kind == c.EV_BLOCK_DELTA:
            self._delta(event)
        elif kind == c.EV_BLOCK_START and isinstance(event.get("toolStart"), dict):
            self.doing = calling(self._name(event["toolStart"]))
        elif kind == c.EV_BEFORE_TOOL and isinstance(event.get("toolCall"), dict):
            self.doing = calling(self._name(event["toolCall"]))
        elif kind == c.EV_AFTER_TOOL and isinstance(event.get("toolResult"), dict):
            self.doing = reading_result(self._name(event["toolResult"]))
        elif kind == c.EV_CONTEXT_COMPACTED:
            self.doing = COMPACTED
        elif kind in (c.EV_AGENT_RESULT, c.EV_ERROR):
            self.finished = True
        return self.doing != before

    def _delta(self, event: Mapping[str, Any]) -> None:
        if event.get(c.DELTA_TEXT):
            self.doing = WRITING
        elif event.get(c.DELTA_REASONING):
            self.doing = THINKING

    def _name(self, call: Mapping[str, Any]) -> str:
        tool_use_id = str(call.get("toolUseId"))
        name = call.get("name") or self.tools.get(tool_use_id) or "a tool"
        self.tools[tool_use_id] = str(name)
        return str(name)

    @property
    def writing(self) -> bool:
        return self.doing == WRITING

    def elapsed_s(self) -> float:
        return max(0.0, self.clock() - self.started)

    def line(self) -> str:
        """``reading learn's result · 14 s``: the phase and the seconds since Enter."""
        return f"{self.doing} · {self.elapsed_s():.0f} s"
