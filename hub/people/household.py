"""The household on one hub: the owner adds, renames and removes people.

Each person's memory, tinys, devices, archives, media and model choice are theirs already (every
store keys them by the caller); this module only makes and ends people. Removing someone
revokes every token they hold at once — account tokens and their devices' dial-in tokens — and
either keeps their data (the row stays, marked removed, so nothing that references it breaks)
or purges it. The caller must say which: data is never dropped, or kept, by default.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hub.core.errors import Refused
from hub.people.identity import LoginError, User, check_login

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

DataChoice = Literal["keep", "purge"]
MAX_NAME = 64
# No control character (C0 or DEL), and at least one character that is not a space: in a
# regular expression that Python and JSON Schema read alike.
NAME_PATTERN = "^[^\\x00-\\x1f\\x7f]*[^\\x00-\\x20\\x7f][^\\x00-\\x1f\\x7f]*$"
#: The platform's row of the social graph: a user row that is nobody, never listed.
PLATFORM_ID = "platform"


class PeopleError(Refused):
    """A request about people that cannot be done; ``status`` is its HTTP answer."""

    status = 400


class PersonNotFound(PeopleError):
    status = 404


class PersonTaken(PeopleError):
    status = 409


class PersonRemoved(PeopleError):
    """The person was removed: what is asked of them conflicts with that, not a bad request."""

    status = 409


class PurgeRefused(PeopleError):
    """The database kept a purged person's rows (something still points at them)."""

    status = 409


@dataclass(frozen=True)
class Person:
    user: User
    created_at: float
    removed_at: float | None
    tokens: int
    devices: int

    def as_json(self) -> dict[str, Any]:
        return {
            "login": self.user.login,
            "name": self.user.name,
            "role": self.user.role,
            "createdAt": self.created_at,
            "removedAt": self.removed_at,
            "tokens": self.tokens,
            "devices": self.devices,
        }


@dataclass(frozen=True)
class Removal:
    login: str
    data: DataChoice
    tokens_revoked: int
    devices_revoked: int

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "login": self.login,
            "data": self.data,
            "tokensRevoked": self.tokens_revoked,
            "devicesRevoked": self.devices_revoked,
        }


def check_name(name: Any) -> str:
    """A person's display name: at most 64 characters, none a control character, one not a
    space (:data:`NAME_PATTERN`, the rule /api/openapi.json states); kept without the spaces
    around it."""
    if not isinstance(name, str) or not name.strip(" "):
        raise PeopleError("name must be a non-empty string")
    if len(name) > MAX_NAME or re.fullmatch(NAME_PATTERN, name) is None:
        raise PeopleError(f"name must be at most {MAX_NAME} characters, with no control characters")
    return name.strip(" ")


def check_data_choice(value: Any) -> DataChoice:
    """``keep`` or ``purge``, said explicitly; anything else is a 400 that says both."""
    if value == "keep":
        return "keep"
    if value == "purge":
        return "purge"
    raise PeopleError(
        'say what happens to their data: "data": "keep" (memory, tinys, archives stay on this '
        'hub) or "data": "purge" (all of it is deleted); their tokens are revoked either way'
    )


class People:
    """People of one hub, over its database and stores."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._db = hub.db

    def list(self) -> list[Person]:
        """Everyone but the platform, the owner first, then by when they were added."""
        rows = self._db.execute(
            "SELECT id FROM users WHERE id != ? ORDER BY role = 'owner' DESC, created_at",
            [PLATFORM_ID],
        ).fetchall()
        return [self._person(str(row[0])) for row in rows]

    def get(self, login: str) -> Person:
        user = self._hub.identity.by_login(login) if isinstance(login, str) else None
        if user is None or user.id == PLATFORM_ID:
            raise PersonNotFound(f"no person @{str(login).lstrip('@')} on this hub")
        return self._person(user.id)

    def add(self, name: Any, login: Any = None) -> User:
        cleaned = check_name(name)
        chosen = self._free_login(login) if login is not None else None
        try:
            user = self._hub.identity.add_user(cleaned, role="member", login=chosen)
        except sqlite3.IntegrityError:  # taken by a request that ran in between
            raise PersonTaken(f"@{chosen} is taken") from None
        log.info("added person @%s", user.login)
        return user

    def _free_login(self, login: Any) -> str:
        if not isinstance(login, str):
            raise PeopleError("login must be a string")
        try:
            chosen = check_login(login)
        except LoginError as exc:
            raise PeopleError(f"login: {exc}") from None
        if self._hub.identity.by_login(chosen) is not None:
            raise PersonTaken(f"@{chosen} is taken: choose another login")
        return chosen

    def rename(self, login: str, name: Any) -> Person:
        person = self.get(login)
        cleaned = check_name(name)
        self._db.execute("UPDATE users SET name = ? WHERE id = ?", [cleaned, person.user.id])
        return self._person(person.user.id)

    def issue_token(self, login: str, label: str) -> str:
        """A token for a current person (shown once)."""
        return self._hub.identity.issue_token(self.active(login), label)

    def active(self, login: str) -> User:
        """A person who may still be given a pairing code or a token."""
        person = self.get(login)
        if person.removed_at is not None:
            raise PersonRemoved(f"@{person.user.login} was removed; add them again instead")
        return person.user

    def remove(self, login: str, data: Any) -> Removal:
        """Revoke every token the person holds at once, then keep or purge their data."""
        choice = check_data_choice(data)
        person = self.get(login)
        if person.user.is_owner:
            raise PeopleError("the hub's owner cannot be removed")
        user_id = person.user.id
        with self._db.atomic():
            tokens = self._db.execute("DELETE FROM tokens WHERE user_id = ?", [user_id]).rowcount
            devices = self._db.execute(
                "UPDATE devices SET token_hash = NULL WHERE owner = ? AND token_hash IS NOT NULL",
                [user_id],
            ).rowcount
            self._db.execute(
                "UPDATE pairing_offers SET voided_at = ?, void_reason = 'person removed'"
                " WHERE owner = ? AND used_at IS NULL AND voided_at IS NULL",
                [time.time(), user_id],
            )
            if person.removed_at is None:
                self._db.execute(
                    "UPDATE users SET removed_at = ? WHERE id = ?", [time.time(), user_id]
                )
        self._hub.devices.events.end_streams(user_id)
        if choice == "purge":
            self._purge(person.user)
        log.info("removed person @%s (data: %s)", person.user.login, choice)
        return Removal(person.user.login, choice, int(tokens), int(devices))

    def _purge(self, user: User) -> None:
        """Everything the person had, in one transaction: facts and links, tinys, transcripts,
        follows and the row itself (the rest goes with it through foreign keys). Only once that
        committed do their vectors, media files and universe entries go, so a refusal (a row
        elsewhere still pointing at them) leaves them removed with their data kept."""
        media = self._hub.devices.media.keys(user.id)
        tinys = [
            str(row[0])
            for row in self._db.execute(
                "SELECT name FROM tinys WHERE owner_id = ?", [user.id]
            ).fetchall()
        ]
        node = f"user:{user.id}"
        try:
            with self._db.atomic():
                self._db.execute("DELETE FROM edge WHERE owner = ?", [user.id])
                self._db.execute("DELETE FROM entity WHERE owner = ?", [user.id])
                self._db.execute("DELETE FROM tinys WHERE owner_id = ?", [user.id])
                self._db.execute("DELETE FROM transcripts WHERE owner = ?", [user.id])
                self._db.execute(
                    "DELETE FROM edge WHERE owner = ? AND (src = ? OR dst = ?)",
                    [PLATFORM_ID, node, node],
                )
                self._db.execute("DELETE FROM users WHERE id = ?", [user.id])
        except sqlite3.IntegrityError as exc:
            log.warning("purging @%s was refused by the database: %s", user.login, exc)
            raise PurgeRefused(
                f"@{user.login} is removed and their tokens are revoked, but their data could "
                "not be purged (other records still point at it); it is kept"
            ) from None
        self._hub.memory.vectors.delete_user(user.id)
        self._hub.devices.media.delete_files(media)
        for name in tinys:
            self._hub.tinys.forget(name)

    def _person(self, user_id: str) -> Person:
        row = self._db.execute(
            "SELECT created_at, removed_at,"
            " (SELECT COUNT(*) FROM tokens WHERE user_id = users.id),"
            " (SELECT COUNT(*) FROM devices WHERE owner = users.id)"
            " FROM users WHERE id = ?",
            [user_id],
        ).fetchone()
        return Person(
            user=self._hub.identity.user(user_id),
            created_at=float(row[0]),
            removed_at=None if row[1] is None else float(row[1]),
            tokens=int(row[2]),
            devices=int(row[3]),
        )
