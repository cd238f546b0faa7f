"""The system prompt of one turn: the tiny's prompt (or the request's override), its knowledge
and data, the person's pre-loaded memory, and what the client said about itself.

The pre-load is what makes the embedded model personal although it cannot call tools."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hub.memory.graph import Fact
from hub.memory.model import FACT_ID_PATTERN
from hub.memory.wording import second_person
from hub.tinys.records import DEFAULT_PROMPT, Tiny
from hub.tinys.universe import tiny_url

METADATA_CHARS = 2000
MEMORY_HEADER = (
    "## What you remember about the user\n"
    "Facts you learned earlier, newest first, each with its id. Use them; to correct one, "
    "learn the new fact with supersedes: [id]; to drop one, unlearn it by id."
)

# A fact's id in brackets, as the memory section and the memory tools' results write it.
FACT_ID = re.compile(rf" ?\[{FACT_ID_PATTERN}\]")
# Oldest first, so a fact learned later joins the end and the runner keeps what it read of the
# others (see EmbeddedModel). Told only this, not to answer from these facts: told that, the
# 1.5B answered requests for its tools from them too ("what's the battery of my board?"). The
# facts are written as said to the person (see ``second_person``): the model answers in them.
REMEMBERED_HEADER = (
    "## What you know about the person you are talking to, as you would say it to them\n"
    "Oldest first; where two disagree, the later one holds."
)
MATCHED_HEADER = "## Also in your memory, related to this message"


def memory_section(facts: Sequence[Fact]) -> str:
    lines = [f"- [{f.id}] {f.text} (since {f.valid_from[:10]})" for f in facts]
    return MEMORY_HEADER + "\n" + "\n".join(lines)


def remembered_note(facts: Sequence[Fact], header: str = REMEMBERED_HEADER) -> str:
    """The pre-load for a small on-device model: no dates (the 1.5B copied them into new
    facts) and no ids (no tool a small model is offered takes one; shown ids, it answered
    "what's my sister's name?" with where the fact is stored, and each id is new random text
    in the prompt, so the same question met a different prompt on every run)."""
    return header + "\n" + "\n".join(f"- {second_person(f.text)}" for f in facts)


def oldest_first(facts: Sequence[Fact]) -> list[Fact]:
    return sorted(facts, key=lambda f: f.valid_from)


def for_the_answer(text: str) -> str:
    """A tool's result as a small model's answer turn reads it: without the ids of facts (see
    :func:`remembered_note`), its facts as said to the person."""
    return second_person(FACT_ID.sub("", text))


RELATED_HEADER = (
    "## Related tinys\n"
    "Other tinys on this hub that know about what the user said. Ask one with ask_tiny; "
    "their skills are tools you can call."
)


def related_section(tinys: Sequence[Tiny], hub_url: str = "") -> str:
    """Compact summaries (docs/protocol.md, turn step 3): name, URL, the first 300 characters of
    prompt and of data, skill names. Their full skills are tools, not prompt text."""
    lines = [RELATED_HEADER]
    for tiny in tinys:
        summary = tiny.summary()
        lines.append(f"- {tiny.name} ({tiny_url(tiny.name, hub_url)})")
        for label, key in (("prompt", "prompt"), ("data", "data")):
            text = " ".join(str(summary[key]).split())
            if text:
                lines.append(f"  {label}: {text}")
        if summary["skills"]:
            lines.append(f"  skills: {', '.join(summary['skills'])}")
    return "\n".join(lines)


def system_prompt(
    tiny: Tiny,
    *,
    override: str = "",
    metadata: str = "",
    memory: Sequence[Fact] = (),
    related: Sequence[Tiny] = (),
    hub_url: str = "",
) -> str:
    """The whole system prompt: what stays the same for the tiny first, then what this turn
    brings (:func:`lasting_prompt`, :func:`turn_sections`)."""
    sections = turn_sections(metadata=metadata, memory=memory, related=related, hub_url=hub_url)
    return "\n\n".join(p for p in (lasting_prompt(tiny, override=override), sections) if p)


def lasting_prompt(tiny: Tiny, *, override: str = "") -> str:
    """What the system prompt says on every turn with this tiny: its prompt, knowledge and
    data. A model that keeps what it read (the embedded runner) reads it once."""
    parts = [override.strip() or tiny.system_prompt.strip() or DEFAULT_PROMPT]
    if tiny.system_knowledge.strip():
        parts.append("## What you know\n" + tiny.system_knowledge.strip())
    if tiny.data.strip():
        parts.append("## Reference data\n" + tiny.data.strip())
    return "\n\n".join(parts)


def turn_sections(
    *,
    metadata: str = "",
    memory: Sequence[Fact] = (),
    related: Sequence[Tiny] = (),
    hub_url: str = "",
) -> str:
    """What the system prompt says about this turn: the person's pre-loaded memory, the tinys
    related to their message, what their device said about itself."""
    parts = []
    if memory:
        parts.append(memory_section(memory))
    if related:
        parts.append(related_section(related, hub_url))
    if metadata.strip():
        parts.append(
            "## About the user's device (client metadata)\n" + metadata.strip()[:METADATA_CHARS]
        )
    return "\n\n".join(parts)
