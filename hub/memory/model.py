"""The memory's nouns: a fact, a link, the kinds and relations, and the refusals.

Kept apart from the store so the sync wire format (``hub.memory.sync``) and the store can both
use them without importing each other.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from hub.contracts import MAX_ENTRY_CHARS
from hub.core.errors import Refused

KINDS = ("fact", "person", "tiny", "project", "concept")
LINK_RELS = ("part_of", "authored", "relates_to", "about")
SUPERSEDES = "supersedes"
MAX_SCOPE_CHARS = 100


class MemoryRefused(Refused):
    """A memory request that cannot be met; ``status`` is its HTTP answer."""

    status = 400


class FactNotFound(MemoryRefused):
    status = 404


class MemoryFull(MemoryRefused):
    status = 409


@dataclass(frozen=True)
class Fact:
    id: str
    owner: str
    kind: str
    text: str
    visibility: str
    valid_from: str
    valid_to: str | None
    vec_id: str | None = None

    @property
    def current(self) -> bool:
        return self.valid_to is None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "fact": self.text,
            "kind": self.kind,
            "visibility": self.visibility,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
        }


@dataclass(frozen=True)
class Link:
    rel: str
    dst: str
    scope: str = ""


@dataclass(frozen=True)
class SyncedEdge:
    """A link as it travels: no local row id, which means nothing on the other side."""

    src: str
    rel: str
    dst: str
    scope: str
    valid_from: str
    valid_to: str | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Edge(SyncedEdge):
    """A link as this store holds it: the same, with its row id."""

    id: int


# A fact's id: "m_" and 20 hex digits; the pattern lets a prompt find ids in text.
FACT_ID_PATTERN = r"m_[0-9a-f]{20}"


def new_fact_id() -> str:
    return "m_" + uuid.uuid4().hex[:20]


def now() -> str:
    """ISO-8601 UTC with microseconds: sortable as text, readable in a response."""
    return stamp_of(datetime.now(UTC))


def stamp_of(moment: datetime) -> str:
    """``moment`` (aware) as facts are stamped (see :func:`now`)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_links(raw: Any) -> list[Link]:
    """``[{rel, dst, scope?}]`` from a tool or a request; MemoryRefused naming the bad item."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise MemoryRefused("links must be an array of {rel, dst, scope}")
    links = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise MemoryRefused(f"links[{index}] must be an object {{rel, dst, scope}}")
        rel, dst, scope = item.get("rel"), item.get("dst"), item.get("scope", "")
        if rel not in LINK_RELS:
            raise MemoryRefused(f"links[{index}].rel must be one of {', '.join(LINK_RELS)}")
        if not isinstance(dst, str) or not dst:
            raise MemoryRefused(f"links[{index}].dst must be a fact id")
        if not isinstance(scope, str) or len(scope) > MAX_SCOPE_CHARS:
            raise MemoryRefused(f"links[{index}].scope must be a string of at most 100 characters")
        links.append(Link(rel, dst, scope))
    return links


def parse_ids(raw: Any, field: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(i, str) and i for i in raw):
        raise MemoryRefused(f"{field} must be an array of fact ids")
    return list(dict.fromkeys(raw))


def check_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise MemoryRefused("fact must be a non-empty string")
    cleaned: str = text.strip()
    if len(cleaned) > MAX_ENTRY_CHARS:
        raise MemoryRefused(
            f"fact is {len(cleaned)} characters; the limit is {MAX_ENTRY_CHARS}: split it into "
            "self-contained facts"
        )
    return cleaned
