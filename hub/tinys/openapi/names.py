"""Names as strands takes them, and texts cut to what the model should read.

Operation ids and parameter names come from a stranger's schema; strands accepts only
``[a-zA-Z0-9_-]{1,64}`` and refuses two tools whose names differ only by '-' and '_'. So every
name is sanitised and made unique here, the same way for operations and for their inputs.
"""

from __future__ import annotations

import re

from hub.tinys.openapi.model import NAME_LIMIT

__all__ = ["name_key", "shorten", "tool_name", "unique_name"]

_UNSAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


def tool_name(raw: str) -> str:
    """Strands tool names are ``[a-zA-Z0-9_-]{1,64}``; anything else becomes ``_``."""
    name = _UNSAFE_NAME.sub("_", raw).strip("_")
    return (name or "operation")[:NAME_LIMIT]


def name_key(name: str) -> str:
    # strands' registry refuses two names that differ only by '-' and '_'.
    return name.replace("-", "_")


def unique_name(name: str, taken: set[str], limit: int = NAME_LIMIT) -> str:
    """`name`, or `name_2`, `name_3`... cut to `limit`, whichever is not in `taken` (compared
    with '-' read as '_'); the result is added to `taken`."""
    candidate, number = name[:limit], 1
    while name_key(candidate) in taken:
        number += 1
        suffix = f"_{number}"
        candidate = name[: limit - len(suffix)] + suffix
    taken.add(name_key(candidate))
    return candidate


def shorten(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a word where one is near, with "…"."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"
