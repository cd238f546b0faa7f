"""What the client of a turn says it can do (docs/page-tools.md, what a client can do).

The hub cannot see the client: a browser, a phone or the TUI. Two optional request headers let a
client say what it is and which device actions it carries out: ``x-tiny-client: terminal`` and
``x-tiny-client-can: map, sound``. A client that says nothing is trusted with every action (the
contract's apps); one that lists its actions gets an honest refusal for the others, in its own
words: "this terminal has no flashlight". Words the hub does not know are ignored, so a newer
client can list more than an older hub checks; a malformed header is refused with a clear
reason, never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hub import contracts as c

KIND_MAX = 40
CAN_MAX = 200
_KIND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _-]*$")
_WORD = re.compile(r"^[a-z][a-z0-9_-]*$")

# What the model is told when the client lacks the capability: "{noun} has no flashlight".
MISSING: Mapping[str, str] = {
    c.CAN_MAP: "shows no map",
    c.CAN_SOUND: "cannot play sounds",
    c.CAN_VIBRATE: "cannot vibrate",
    c.CAN_FLASHLIGHT: "has no flashlight",
    c.CAN_BRIGHTNESS: "cannot change its screen brightness",
}


class ClientHeaderInvalid(ValueError):
    """A client header that cannot be read; the request is refused with this reason."""


@dataclass(frozen=True)
class ClientCaps:
    kind: str = ""
    """What the client calls itself ("terminal"); empty when it did not say."""
    can: frozenset[str] | None = None
    """The device actions it listed; None when it did not list any (then all are sent)."""
    app_tools: bool = True
    """Whether it carries out the hub's app tools at all (the theme, notes, follow-up chips,
    the map, device actions: tools/client.py, followups.py, page.py). A client of the OpenAI
    API does not: it sees no hub tool calls, so those tools are not mounted for it."""

    @property
    def noun(self) -> str:
        return f"this {self.kind}" if self.kind else "this client"

    def refusal(self, capability: str) -> str | None:
        """The sentence for the model when this client cannot do ``capability``, else None."""
        if self.can is None or capability in self.can:
            return None
        return f"{self.noun} {MISSING[capability]}; nothing was done"


SILENT = ClientCaps()
"""A client that said nothing: every action is sent to it."""


def client_caps(headers: Mapping[str, str]) -> ClientCaps:
    """Read ``x-tiny-client`` and ``x-tiny-client-can``; raises ClientHeaderInvalid."""
    return ClientCaps(_kind(headers.get(c.H_CLIENT, "")), _can(headers.get(c.H_CLIENT_CAN)))


def _kind(raw: str) -> str:
    kind = raw.strip()
    if kind and (len(kind) > KIND_MAX or not _KIND.match(kind)):
        raise ClientHeaderInvalid(
            f"{c.H_CLIENT} must be 1 to {KIND_MAX} letters, digits, spaces, '-' or '_' "
            '(a noun such as "terminal")'
        )
    return kind


def _can(raw: str | None) -> frozenset[str] | None:
    if raw is None:
        return None
    if len(raw) > CAN_MAX:
        raise ClientHeaderInvalid(f"{c.H_CLIENT_CAN} is longer than {CAN_MAX} characters")
    words = [w.strip() for w in raw.split(",")]
    words = [w for w in words if w]
    bad = [w for w in words if not _WORD.match(w)]
    if bad:
        raise ClientHeaderInvalid(
            f"{c.H_CLIENT_CAN} is a comma-separated list of lowercase words such as "
            f"{', '.join(c.CLIENT_CAPABILITIES)}; cannot read {bad[0]!r}"
        )
    return frozenset(words)
