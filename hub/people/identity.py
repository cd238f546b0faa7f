"""Who is calling: users, their tokens, and the owner's token file.

Tokens are 256 random bits, so a plain SHA-256 is enough to store them (no salt or slow hash is
needed against guessing); the database never holds a token that would work if it were copied.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hub.store.db import Database

log = logging.getLogger(__name__)

TOKEN_PREFIX = "th_"
Role = Literal["owner", "member"]
LOGIN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,38}$")


class LoginError(ValueError):
    """A @login that is malformed or already someone's."""


@dataclass(frozen=True)
class User:
    id: str
    name: str
    role: Role
    login: str = ""  # unique on this hub; how other people name this one (``@login``)

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Identity:
    """Users and tokens in the hub's database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def owner(self) -> User | None:
        rows = list(self._db["users"].rows_where("role = 'owner'", limit=1))
        return _user(rows[0]) if rows else None

    def user(self, user_id: str) -> User:
        rows = list(self._db["users"].rows_where("id = ?", [user_id], limit=1))
        if not rows:
            raise KeyError(user_id)
        return _user(rows[0])

    def by_login(self, login: str) -> User | None:
        """The person ``@login`` names (the ``@`` is optional), or None."""
        rows = list(self._db["users"].rows_where("login = ?", [login.lstrip("@").lower()], limit=1))
        return _user(rows[0]) if rows else None

    def add_user(self, name: str, role: Role = "member", login: str | None = None) -> User:
        """Add a person. A given ``login`` must be free (LoginError); without one, a free login
        is made from the name (``Bea Smith`` → ``bea-smith``, then ``bea-smith-2``)."""
        chosen = check_login(login) if login is not None else self._free_login(name)
        if login is not None and self.by_login(chosen) is not None:
            raise LoginError(f"@{chosen} is taken")
        user = User(id=uuid.uuid4().hex, name=name, role=role, login=chosen)
        self._db.table("users").insert(
            {
                "id": user.id,
                "name": user.name,
                "role": role,
                "login": chosen,
                "created_at": time.time(),
            }
        )
        return user

    def _free_login(self, name: str) -> str:
        base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:32] or "person"
        if not base[0].isalnum():
            base = "p" + base
        candidate, n = base, 1
        while self.by_login(candidate) is not None:
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def issue_token(self, user: User, label: str, device_id: str | None = None) -> str:
        """Mint a token; the caller shows it once, only its hash stays here. ``device_id``:
        the paired phone it was given to, whose removal ends it too."""
        token = new_token()
        self._db.table("tokens").insert(
            {
                "id": uuid.uuid4().hex,
                "user_id": user.id,
                "token_hash": hash_token(token),
                "label": label,
                "created_at": time.time(),
                "device_id": device_id,
            }
        )
        return token

    def resolve(self, token: str) -> User | None:
        row = self._db.execute(
            "SELECT users.id, users.name, users.role, tokens.id, users.login FROM tokens"
            " JOIN users ON users.id = tokens.user_id"
            " WHERE tokens.token_hash = ? AND users.removed_at IS NULL",
            (hash_token(token),),
        ).fetchone()
        if row is None:
            return None
        self._db.execute("UPDATE tokens SET last_used_at = ? WHERE id = ?", (time.time(), row[3]))
        return User(id=row[0], name=row[1], role=row[2], login=row[4] or "")

    def ensure_owner(self, token_path: Path, name: str = "owner") -> User:
        """Create the owner on first start and keep a working token in ``token_path`` (0600).

        A missing or stale token file (a restored database, a deleted file) gets a fresh token,
        so local clients always find one that works.
        """
        owner = self.owner()
        if owner is None:
            owner = self.add_user(name, role="owner")
            log.info("created the owner of this hub")
        current = _read_token(token_path)
        if current is not None and self.resolve(current) == owner:
            _restrict(token_path)
            return owner
        _write_secret(token_path, self.issue_token(owner, label=token_path.name))
        log.info("wrote the owner's token to %s (readable by this user only)", token_path)
        return owner


def check_login(login: str) -> str:
    """``login`` without its ``@``, lower-cased, if it is 1-39 letters, digits, ``-`` or ``_``."""
    cleaned = login.strip().lstrip("@").lower()
    if not LOGIN.match(cleaned):
        raise LoginError("a login is 1-39 letters, digits, - or _, starting with a letter or digit")
    return cleaned


def _user(row: dict[str, str]) -> User:
    role: Role = "owner" if row["role"] == "owner" else "member"
    return User(id=row["id"], name=row["name"], role=role, login=row.get("login") or "")


def _read_token(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def _restrict(path: Path) -> None:
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)


def _write_secret(path: Path, secret: str) -> None:
    """Write through a 0600 temporary file and rename, so the secret is never world-readable
    and a crash never leaves half a token."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (secret + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
