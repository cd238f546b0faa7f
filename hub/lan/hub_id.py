"""This hub's stable id: made once, kept in ``<data dir>/hub.id``, broadcast in the mDNS TXT
record and said by ``/api/health``, so a phone (or ``tiny-hub doctor``) knows the same hub
again whatever its address."""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from pathlib import Path

HUB_ID_FILE = "hub.id"
_ID = re.compile(r"[0-9a-f]{32}")


def kept_hub_id(home: Path) -> str:
    """The id kept in ``home``, or "" when there is none yet (nothing is written)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        kept = (home / HUB_ID_FILE).read_text(encoding="ascii").strip()
        if _ID.fullmatch(kept):
            return kept
    return ""


def hub_id(home: Path) -> str:
    """This hub's stable id (32 hex digits), made once and kept in ``home/hub.id``.

    Not the owner's id or anything derived from a secret: it is broadcast to the whole LAN.
    """
    existing = kept_hub_id(home)
    if existing:
        return existing
    new = uuid.uuid4().hex
    path = home / HUB_ID_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{HUB_ID_FILE}.{os.getpid()}.tmp")
    temporary.write_text(new + "\n", encoding="ascii")
    os.replace(temporary, path)
    return new
