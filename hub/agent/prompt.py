"""The system prompt of one turn: the tiny's prompt (or the request's override), its knowledge
and data, the person's pre-loaded memory, and what the client said about itself.

The pre-load is what makes the embedded model personal although it cannot call tools."""

from __future__ import annotations

from collections.abc import Sequence

from hub.memory.graph import Fact
from hub.tinys.records import DEFAULT_PROMPT, Tiny

METADATA_CHARS = 2000
MEMORY_HEADER = (
    "## What you remember about the user\n"
    "Facts you learned earlier, newest first, each with its id. Use them; to correct one, "
    "learn the new fact with supersedes: [id]; to drop one, unlearn it by id."
)


def memory_section(facts: Sequence[Fact]) -> str:
    lines = [f"- [{f.id}] {f.text} (since {f.valid_from[:10]})" for f in facts]
    return MEMORY_HEADER + "\n" + "\n".join(lines)


def system_prompt(
    tiny: Tiny, *, override: str = "", metadata: str = "", memory: Sequence[Fact] = ()
) -> str:
    parts = [override.strip() or tiny.system_prompt.strip() or DEFAULT_PROMPT]
    if tiny.system_knowledge.strip():
        parts.append("## What you know\n" + tiny.system_knowledge.strip())
    if tiny.data.strip():
        parts.append("## Reference data\n" + tiny.data.strip())
    if memory:
        parts.append(memory_section(memory))
    if metadata.strip():
        parts.append(
            "## About the user's device (client metadata)\n" + metadata.strip()[:METADATA_CHARS]
        )
    return "\n\n".join(parts)
