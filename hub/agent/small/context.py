"""What one turn hands the small-model layer, once, frozen: the person's facts, what this
message brings, and what each mounted tool declared about itself (``drivers.base.
SmallModelHints``), so the layer reads a tool's particulars without naming it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from drivers.base import SmallModelHints, hints_of
from hub.memory.model import Fact

NO_HINTS = SmallModelHints()


@dataclass(frozen=True)
class SmallTurn:
    """A turn's inputs for the small-model layer.

    ``remembered``: the person's pre-loaded facts, newest (shown oldest first, so a new one
    joins the end); ``recent_since``: from this time on (ISO-8601 UTC, as facts are stamped)
    a fact is recent, not among the lasting facts (the conversation says it; a fact learned
    mid-conversation would change the prompt before the conversation, and a small model's
    runner would read the whole conversation again); ``matched``:
    the memory's matches for this message, shown again right before it; ``note``: what else
    the system prompt would say about this turn (related tinys, the client's metadata);
    ``hints``: each mounted tool's declaration, its family filled in."""

    remembered: tuple[Fact, ...] = ()
    matched: tuple[Fact, ...] = ()
    note: str = ""
    hints: Mapping[str, SmallModelHints] = field(default_factory=dict)
    recent_since: str = ""

    def lasting(self) -> list[Fact]:
        """The remembered facts from before :attr:`recent_since`: the ones a conversation
        does not change, read once and kept by the runner."""
        return [f for f in self.remembered if not self.is_recent(f)]

    def is_recent(self, fact: Fact) -> bool:
        return bool(self.recent_since) and fact.valid_from >= self.recent_since

    def of(self, name: str) -> SmallModelHints:
        return self.hints.get(name, NO_HINTS)

    def family(self, name: str) -> str:
        return self.of(name).family or name


def declared_hints(tools: Iterable[Any]) -> dict[str, SmallModelHints]:
    """Each tool's declaration by name; a tool that declared no family is a family of its own
    (a forged tool, an MCP server's, an operation of a tiny's API)."""
    found = {}
    for tool in tools:
        hints = hints_of(tool)
        name = str(tool.tool_name)
        found[name] = hints if hints.family else replace(hints, family=name)
    return found
