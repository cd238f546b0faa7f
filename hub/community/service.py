"""The community as the hub holds it: one object over the database, the people, the tinys and
the event rings, for the HTTP routes, the tools and the TUI."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hub.community import follows, trust
from hub.community.allowance import ChatAllowance
from hub.community.feed import FeedItem, feed
from hub.community.follows import CommunityRefused, FollowState, NotFound, Target
from hub.community.profile import profile
from hub.community.reputation import Standing, standing
from hub.devices.notify import Notice, push_notice
from hub.devices.service import Devices
from hub.people.identity import Identity, User
from hub.store.db import Database
from hub.tinys.records import TinyStore
from hub.tinys.social import (
    CONSULTED,
    FOLLOWS,
    PLATFORM,
    TINY_PREFIX,
    USER_PREFIX,
    VISITED,
    SocialEdge,
    record_social,
    tiny_node,
    user_node,
)

# The owner hears "someone is on your tiny's page" at most this often per tiny: a visit is a
# nudge, and a busy page must not become a stream of notifications.
VISIT_NOTICE_EVERY_S = 300.0
PUBLIC_RELS = (FOLLOWS, CONSULTED)  # who visits or messages whom is nobody else's business
MAX_AROUND = 200


@dataclass(frozen=True)
class Visit:
    tiny: str
    notified: bool

    def as_json(self) -> dict[str, Any]:
        return {"ok": True, "tiny": self.tiny, "notified": self.notified}


class Community:
    def __init__(
        self,
        db: Database,
        identity: Identity,
        tinys: TinyStore,
        devices: Devices,
        allowance: ChatAllowance,
        clock: Callable[[], float],
    ) -> None:
        self.db, self.identity, self.tinys, self.devices = db, identity, tinys, devices
        self.allowance = allowance
        self.clock = clock  # a seam: tests let the visit throttle's window pass at once
        self._last_notice: dict[str, float] = {}
        self._notice_lock = threading.Lock()
        self._ranked: tuple[tuple[Any, ...], list[trust.Ranked]] | None = None

    # --- follows ----------------------------------------------------------------------------

    def target(self, viewer: User | None, *, login: Any = None, tiny: Any = None) -> Target:
        return follows.resolve_target(self.identity, self.tinys, viewer, login=login, tiny=tiny)

    def follow(self, user: User, action: str, target: Target) -> FollowState:
        if action == "follow":
            return follows.follow(self.db, user, target)
        if action == "unfollow":
            return follows.unfollow(self.db, user, target)
        if action == "check":
            return follows.check(self.db, user, target)
        raise CommunityRefused(f"action must be one of {', '.join(follows.ACTIONS)}")

    def following(self, user: User) -> list[dict[str, Any]]:
        """What ``user`` follows, as ``{target, kind}``, newest follow first."""
        return [self._described(node) for node in follows.following(self.db, user.id)]

    # --- visits -----------------------------------------------------------------------------

    def visit(self, visitor: User | None, tiny_name: Any, key: str | None) -> Visit:
        if not isinstance(tiny_name, str) or not tiny_name.strip():
            raise CommunityRefused("tiny must be a tiny's name")
        tiny = self.tinys.get(tiny_name.strip())
        if tiny is None or not self.tinys.can_read(tiny, visitor, key):
            raise NotFound(f"no tiny named {tiny_name.strip()[:60]}")
        if visitor is not None:
            record_social(self.db, user_node(visitor.id), VISITED, tiny_node(tiny.name))
        if visitor is not None and visitor.id == tiny.owner_id:
            return Visit(tiny.name, False)
        return Visit(tiny.name, self._tell_owner(tiny.name, tiny.owner_id))

    def _tell_owner(self, tiny: str, owner_id: str) -> bool:
        now = self.clock()
        with self._notice_lock:
            last = self._last_notice.get(tiny)
            if last is not None and now - last < VISIT_NOTICE_EVERY_S:
                return False
            self._last_notice[tiny] = now
        notice = Notice(
            f"Someone is on {tiny}'s page",
            f"Someone is on your tiny {tiny}'s page right now.",
            tag=f"visit:{tiny}",
        )
        push_notice(self.devices, owner_id, notice)
        return True

    # --- standing, trust, pages -------------------------------------------------------------

    def standing(self, user: User) -> Standing:
        return standing(self.db, user.id)

    def person(self, login: Any) -> User:
        if not isinstance(login, str) or not login.strip():
            raise CommunityRefused("login must be a @login")
        found = self.identity.by_login(login.strip())
        if found is None:
            raise NotFound(f"nobody is {login.strip()[:60]}")
        return found

    def profile(self, login: Any) -> dict[str, Any]:
        return profile(self.db, self.person(login))

    def ranking(self, limit: int = 50) -> list[dict[str, Any]]:
        logins = self._logins()
        return [r.as_json(logins.get(r.owner_id, "")) for r in self._ranking()[:limit]]

    def _ranking(self) -> list[trust.Ranked]:
        """The whole ranking, computed again only when a consult or a tiny changed: PageRank
        walks every consulted edge, and /community is read far more often than it changes."""
        # every write of an edge takes a new revision, and every change of a tiny a new stamp
        version = self.db.execute(
            "SELECT (SELECT MAX(rev) FROM edge WHERE owner = ? AND rel = ?),"
            " (SELECT MAX(updated_at) FROM tinys), (SELECT COUNT(*) FROM tinys)",
            [PLATFORM, CONSULTED],
        ).fetchone()
        cached = self._ranked
        if cached is not None and cached[0] == tuple(version):
            return cached[1]
        ranked = trust.ranking(self.db, trust.MAX_RANKED)
        self._ranked = (tuple(version), ranked)
        return ranked

    def builders(self) -> list[dict[str, Any]]:
        """Everyone with a public tiny, with their tinys and their reputation score."""
        rows = self.db.execute(
            "SELECT u.id, u.login, u.name, t.name FROM users u JOIN tinys t ON t.owner_id = u.id"
            " WHERE t.visibility = 'public' AND u.id != ? ORDER BY u.login, t.name",
            [PLATFORM],
        ).fetchall()
        found: dict[str, dict[str, Any]] = {}
        for user_id, login, name, tiny in rows:
            entry = found.setdefault(
                user_id,
                {
                    "login": f"@{login}",
                    "name": name,
                    "reputation": standing(self.db, user_id).score,
                    "tinys": [],
                },
            )
            entry["tinys"].append(tiny)
        return sorted(found.values(), key=lambda b: (-b["reputation"], b["login"]))

    def feed(self, user: User, limit: int) -> list[FeedItem]:
        return feed(self.db, user.id, limit)

    def around(self, node: str) -> list[SocialEdge]:
        """The public graph around ``node`` (``user:<id>``, ``@login`` or ``tiny:<name>``):
        its current follows and consults, both ways."""
        resolved = self._node(node)
        marks = ",".join("?" * len(PUBLIC_RELS))
        rows = self.db.execute(
            "SELECT id, src, rel, dst, weight, valid_from, valid_to FROM edge WHERE owner = ?"
            f" AND rel IN ({marks}) AND valid_to IS NULL AND (src = ? OR dst = ?)"
            " ORDER BY weight DESC, id LIMIT ?",
            [PLATFORM, *PUBLIC_RELS, resolved, resolved, MAX_AROUND],
        ).fetchall()
        return [
            SocialEdge(src, rel, dst, float(w), int(i), start, end)
            for i, src, rel, dst, w, start, end in rows
        ]

    def label(self, node: str) -> str:
        """``@login`` for a person's node, the node itself for a tiny."""
        if node.startswith(USER_PREFIX):
            login = self._logins().get(node.removeprefix(USER_PREFIX))
            return f"@{login}" if login else node
        return node

    def _node(self, node: str) -> str:
        if node.startswith("@"):
            return user_node(self.person(node).id)
        if node.startswith(TINY_PREFIX) or node.startswith(USER_PREFIX):
            return node
        raise CommunityRefused("a node is @login, user:<id> or tiny:<name>")

    def _described(self, node: str) -> dict[str, Any]:
        kind = "person" if node.startswith(USER_PREFIX) else "tiny"
        return {"target": self.label(node), "kind": kind}

    def _logins(self) -> dict[str, str]:
        rows = self.db.execute("SELECT id, login FROM users WHERE login IS NOT NULL").fetchall()
        return {str(i): str(login) for i, login in rows}
