"""The tinys a caller may chat with, as OpenAI models: ``tiny`` (the hub's default tiny) and
``tiny/<name>`` for each tiny the caller made.

The list is the caller's own, so a person's client shows their tinys and nobody else's; a public
tiny of someone else is not listed but answers when named, as it does on ``/api/chat``. Which
model runs underneath (Ollama's, the embedded one, a cloud provider) stays the hub's choice: the
person's saved one, else the hub's default.
"""

from __future__ import annotations

from typing import Any

from hub import contracts as c
from hub.people.identity import User
from hub.runtime.hub import Hub
from hub.tinys.records import Tiny

DEFAULT_MODEL = c.DEFAULT_TINY
PREFIX = f"{c.DEFAULT_TINY}/"
PAGE = 100


class UnknownModel(LookupError):
    """A ``model`` that names no tiny in either form."""


def tiny_of(model: str) -> str:
    """The tiny a model id names; UnknownModel for an id of another form."""
    if model == DEFAULT_MODEL:
        return c.DEFAULT_TINY
    name = model.removeprefix(PREFIX) if model.startswith(PREFIX) else ""
    if not name.strip():
        raise UnknownModel(
            f"no model {model!r}: this hub answers as {DEFAULT_MODEL!r} or {PREFIX}<name> "
            "(GET /v1/models lists yours)"
        )
    return name.strip()


def model_id(tiny: Tiny) -> str:
    return DEFAULT_MODEL if tiny.name == c.DEFAULT_TINY else PREFIX + tiny.name


def listed_tinys(hub: Hub, caller: User | None) -> list[Tiny]:
    """The hub's default tiny, then the caller's own, newest first."""
    listed = [t for t in [hub.tinys.get(c.DEFAULT_TINY)] if t is not None]
    if caller is None:
        return listed
    offset, total = 0, 1
    while offset < total:
        page, total = hub.tinys.list(caller, mine=True, limit=PAGE, offset=offset)
        listed += [t for t in page if t.name != c.DEFAULT_TINY]
        offset += PAGE
    return listed


def model_card(tiny: Tiny, owner: str) -> dict[str, Any]:
    """One entry of ``GET /v1/models`` in OpenAI's shape (``owned_by``: the maker's login)."""
    return {
        "id": model_id(tiny),
        "object": "model",
        "created": int(tiny.created_at),
        "owned_by": owner,
    }


def owner_login(hub: Hub, tiny: Tiny) -> str:
    try:
        return hub.identity.user(tiny.owner_id).login
    except LookupError:
        return "tiny-hub"
