"""Memory sync's wire shapes: a page of changes out, a checked page of changes in.

Two stores of one person's memory (this hub and the cloud, or two hubs) exchange changes by
revision: "everything after revision N" (``MemoryStore.changes``), merged on the other side
(``MemoryStore.merge``). The bitemporal model makes the merge free of conflicts — facts keep
their ids, a fact's text never changes (a change is a new fact that supersedes the old), a
close wins over an open and the earlier of two closes wins, and links are identified by their
ends, relation, scope and start. Both sides therefore reach the same state whatever order the
pages arrive in, and a page merged twice changes nothing.

The person's part of the community travels in the same pages (``social``): their follows,
visits and messages, and the consults of their tinys, merged by the same rules
(``hub.community.sync``). Node ids are local to each store, so on the wire the person is
``self``, another person is ``@login`` and a tiny is ``tiny:<name>``.

Everything that arrives is checked here before the store sees it: the other side may be a
different program, a newer version, or broken.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from hub.memory.model import (
    KINDS,
    LINK_RELS,
    MAX_SCOPE_CHARS,
    SUPERSEDES,
    Fact,
    MemoryRefused,
    SyncedEdge,
    check_text,
)
from hub.people.identity import LOGIN
from hub.tinys.records import NAME_PATTERN
from hub.tinys.social import SOCIAL_RELS

SYNC_PAGE = 250  # facts per page: 250 facts of 2000 characters stay far under the body limit
MAX_SYNC_FACTS = 500
MAX_SYNC_EDGES = 2000
MAX_SYNC_SOCIAL = 2000
MAX_WEIGHT = 1e12
SELF = "self"
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,100}")


@dataclass(frozen=True)
class SyncedSocial:
    """A social edge as it travels: nodes in their wire form (``self``, ``@login``,
    ``tiny:<name>``), so they mean the same person and tiny on both sides."""

    src: str
    rel: str
    dst: str
    weight: float
    valid_from: str
    valid_to: str | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Changes:
    """One page: the facts and links changed after a revision, up to ``upto`` (the cursor to
    ask from next); ``more`` when later changes wait for another page."""

    facts: list[Fact]
    edges: list[SyncedEdge]
    upto: int
    more: bool
    social: list[SyncedSocial] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "facts": [fact.as_json() for fact in self.facts],
            "edges": [edge.as_json() for edge in self.edges],
            "social": [edge.as_json() for edge in self.social],
            "upto": self.upto,
            "more": self.more,
        }


@dataclass
class MergeReport:
    added: int = 0
    closed: int = 0
    edges: int = 0
    social: int = 0
    refused: list[dict[str, str]] = field(default_factory=list)
    rev: int | None = None  # the local revision the merge wrote under; None when nothing changed

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "added": self.added,
            "closed": self.closed,
            "edges": self.edges,
            "social": self.social,
            "refused": self.refused,
        }


@dataclass(frozen=True)
class Incoming:
    """A checked page from the other side, before the store merges it."""

    facts: list[Fact]
    edges: list[SyncedEdge]
    social: list[SyncedSocial]


def parse_changes(body: Any, owner: str) -> Incoming:
    """``{facts: [...], edges: [...], social: [...]}`` from the other side, or MemoryRefused
    naming the first thing wrong (nothing of a bad page is merged)."""
    if not isinstance(body, dict):
        raise MemoryRefused('body must be a JSON object: {"facts": [...], "edges": [...]}')
    unknown = sorted(set(body) - {"facts", "edges", "social", "upto", "more"})
    if unknown:
        raise MemoryRefused(f"unknown field(s): {', '.join(unknown)}")
    facts = _list(body.get("facts", []), "facts", MAX_SYNC_FACTS)
    edges = _list(body.get("edges", []), "edges", MAX_SYNC_EDGES)
    social = _list(body.get("social", []), "social", MAX_SYNC_SOCIAL)
    return Incoming(
        [_fact(item, owner, f"facts[{i}]") for i, item in enumerate(facts)],
        [_edge(item, f"edges[{i}]") for i, item in enumerate(edges)],
        [_social(item, f"social[{i}]") for i, item in enumerate(social)],
    )


def parse_page(body: Any, owner: str) -> Changes:
    """A page the other side served (``GET /learnings/sync``), checked like a pushed one."""
    incoming = parse_changes(body, owner)
    assert isinstance(body, dict)  # parse_changes refused anything else
    upto, more = body.get("upto"), body.get("more", False)
    if not isinstance(upto, int) or isinstance(upto, bool) or not isinstance(more, bool):
        raise MemoryRefused("a page needs upto (a whole number) and more (true or false)")
    return Changes(incoming.facts, incoming.edges, upto, more, incoming.social)


def canonical_time(value: Any, field_name: str) -> str:
    """Any ISO-8601 instant → this store's one format, so text order is time order."""
    if not isinstance(value, str) or len(value) > 40:
        raise MemoryRefused(f"{field_name} must be an ISO-8601 time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise MemoryRefused(f"{field_name} must be an ISO-8601 time, not {value[:40]!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _list(value: Any, name: str, most: int) -> list[Any]:
    if not isinstance(value, list):
        raise MemoryRefused(f"{name} must be a list")
    if len(value) > most:
        raise MemoryRefused(f"{name}: at most {most} per page, got {len(value)}")
    return value


def _object(value: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MemoryRefused(f"{where} must be an object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise MemoryRefused(f"{where}: unknown field(s): {', '.join(unknown)}")
    return value


def _id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise MemoryRefused(f"{where} must be an id of letters, digits and _.:- (1-100)")
    return value


def _window(item: dict[str, Any], where: str) -> tuple[str, str | None]:
    start = canonical_time(item.get("valid_from"), f"{where}.valid_from")
    raw_end = item.get("valid_to")
    end = None if raw_end is None else canonical_time(raw_end, f"{where}.valid_to")
    if end is not None and end < start:
        raise MemoryRefused(f"{where}: valid_to is before valid_from")
    return start, end


def _fact(value: Any, owner: str, where: str) -> Fact:
    allowed = {"id", "fact", "kind", "visibility", "valid_from", "valid_to"}
    item = _object(value, where, allowed)
    kind, visibility = item.get("kind", "fact"), item.get("visibility", "private")
    if kind not in KINDS:
        raise MemoryRefused(f"{where}.kind must be one of {', '.join(KINDS)}")
    if visibility not in ("private", "public"):
        raise MemoryRefused(f"{where}.visibility must be private or public")
    try:
        text = check_text(item.get("fact"))
    except MemoryRefused as exc:
        raise MemoryRefused(f"{where}: {exc}") from None
    start, end = _window(item, where)
    return Fact(_id(item.get("id"), f"{where}.id"), owner, kind, text, visibility, start, end)


def _edge(value: Any, where: str) -> SyncedEdge:
    allowed = {"src", "rel", "dst", "scope", "valid_from", "valid_to"}
    item = _object(value, where, allowed)
    rel, scope = item.get("rel"), item.get("scope", "")
    if rel not in (*LINK_RELS, SUPERSEDES):
        raise MemoryRefused(f"{where}.rel must be one of {', '.join((*LINK_RELS, SUPERSEDES))}")
    if not isinstance(scope, str) or len(scope) > MAX_SCOPE_CHARS:
        raise MemoryRefused(f"{where}.scope must be text of at most {MAX_SCOPE_CHARS} characters")
    start, end = _window(item, where)
    src, dst = _id(item.get("src"), f"{where}.src"), _id(item.get("dst"), f"{where}.dst")
    return SyncedEdge(src, str(rel), dst, scope, start, end)


def _social(value: Any, where: str) -> SyncedSocial:
    allowed = {"src", "rel", "dst", "weight", "valid_from", "valid_to"}
    item = _object(value, where, allowed)
    rel, weight = item.get("rel"), item.get("weight", 1.0)
    if rel not in SOCIAL_RELS:
        raise MemoryRefused(f"{where}.rel must be one of {', '.join(SOCIAL_RELS)}")
    if (
        not isinstance(weight, int | float)
        or isinstance(weight, bool)
        or not 0 < weight <= MAX_WEIGHT
    ):
        raise MemoryRefused(f"{where}.weight must be a number above 0")
    start, end = _window(item, where)
    src, dst = _node(item.get("src"), f"{where}.src"), _node(item.get("dst"), f"{where}.dst")
    return SyncedSocial(src, str(rel), dst, float(weight), start, end)


def _node(value: Any, where: str) -> str:
    """``self``, ``@login`` or ``tiny:<name>``."""
    if value == SELF:
        return SELF
    if isinstance(value, str) and value.startswith("@") and LOGIN.fullmatch(value[1:]):
        return value
    if isinstance(value, str) and value.startswith("tiny:") and NAME_PATTERN.fullmatch(value[5:]):
        return value
    raise MemoryRefused(f"{where} must be self, @login or tiny:<name>")
