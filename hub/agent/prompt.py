"""The system prompt of one turn: the tiny's prompt (or the request's override), its knowledge
and data, and what the client said about itself."""

from __future__ import annotations

from hub.tinys.records import DEFAULT_PROMPT, Tiny

METADATA_CHARS = 2000


def system_prompt(tiny: Tiny, *, override: str = "", metadata: str = "") -> str:
    parts = [override.strip() or tiny.system_prompt.strip() or DEFAULT_PROMPT]
    if tiny.system_knowledge.strip():
        parts.append("## What you know\n" + tiny.system_knowledge.strip())
    if tiny.data.strip():
        parts.append("## Reference data\n" + tiny.data.strip())
    if metadata.strip():
        parts.append(
            "## About the user's device (client metadata)\n" + metadata.strip()[:METADATA_CHARS]
        )
    return "\n\n".join(parts)
