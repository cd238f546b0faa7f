"""Follow, unfollow, check: the one gesture a person makes in the community.

A person follows another person (``@login``) or a tiny (by name). The edge is
``user:<follower> → follows → user:<id> | tiny:<name>`` in the social graph; unfollow closes it
and a later follow opens a fresh one. Being followed pays the followed person — for a tiny, its
builder — ``follow_received`` once per follower, and a follow that completes a mutual one
between two people pays both ``mutual_follow`` once (``hub.community.reputation``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hub.community import reputation
from hub.core.errors import Refused
from hub.people.identity import Identity, User
from hub.store.db import Database
from hub.tinys.records import TinyStore
from hub.tinys.social import (
    FOLLOWS,
    TINY_PREFIX,
    USER_PREFIX,
    close_social,
    current,
    edges_from,
    edges_to,
    open_social,
    tiny_node,
    user_node,
)

ACTIONS = ("follow", "unfollow", "check")


class CommunityRefused(Refused):
    status = 400


class NotFound(CommunityRefused):
    status = 404


@dataclass(frozen=True)
class Target:
    """What is followed: its graph node, and the person who builds it (or is it)."""

    node: str
    builder_id: str
    label: str  # ``@bea`` or ``tiny:chef``, as answers name it


@dataclass(frozen=True)
class FollowState:
    target: Target
    following: bool
    changed: bool
    followers: int

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "target": self.target.label,
            "following": self.following,
            "changed": self.changed,
            "followers": self.followers,
        }


def resolve_target(
    identity: Identity, tinys: TinyStore, viewer: User | None, *, login: Any, tiny: Any
) -> Target:
    """``login`` (``@bea``) or ``tiny`` (a name), exactly one; NotFound for nobody and for a
    private tiny the viewer may not see (its existence is not revealed)."""
    if (login is None) == (tiny is None):
        raise CommunityRefused('give exactly one of "login" (a person, @login) or "tiny" (a name)')
    if login is not None:
        if not isinstance(login, str) or not login.strip():
            raise CommunityRefused("login must be a @login")
        person = identity.by_login(login.strip())
        if person is None:
            raise NotFound(f"nobody is {login.strip()[:60]}")
        return Target(user_node(person.id), person.id, f"@{person.login}")
    if not isinstance(tiny, str) or not tiny.strip():
        raise CommunityRefused("tiny must be a tiny's name")
    found = tinys.get(tiny.strip())
    if found is None or (found.is_private and (viewer is None or viewer.id != found.owner_id)):
        raise NotFound(f"no tiny named {tiny.strip()[:60]}")
    return Target(tiny_node(found.name), found.owner_id, tiny_node(found.name))


def follow(db: Database, follower: User, target: Target) -> FollowState:
    if target.node == user_node(follower.id):
        raise CommunityRefused("you cannot follow yourself")
    me = user_node(follower.id)
    with db.atomic():
        opened = open_social(db, me, FOLLOWS, target.node)
        pay_for_follow(db, follower.id, target.node, target.builder_id)
    return _state(db, me, target, changed=opened)


def unfollow(db: Database, follower: User, target: Target) -> FollowState:
    me = user_node(follower.id)
    closed = close_social(db, me, FOLLOWS, target.node)
    return _state(db, me, target, changed=closed)


def check(db: Database, follower: User, target: Target) -> FollowState:
    return _state(db, user_node(follower.id), target, changed=False)


def pay_for_follow(db: Database, follower_id: str, node: str, builder_id: str) -> None:
    """The reputation a follow earns others; idempotent, so calling it for a follow that was
    paid already (a re-follow, a follow merged in by sync) changes nothing."""
    if builder_id == follower_id:
        return  # your own tiny: nobody else made a gesture
    reputation.award(db, builder_id, reputation.FOLLOW_RECEIVED, follower_id)
    if not node.startswith(USER_PREFIX):
        return
    if current(db, node, FOLLOWS, user_node(follower_id)) is not None:
        reputation.award(db, builder_id, reputation.MUTUAL_FOLLOW, follower_id)
        reputation.award(db, follower_id, reputation.MUTUAL_FOLLOW, builder_id)


def following(db: Database, user_id: str) -> list[str]:
    """The nodes ``user_id`` follows now, newest follow first."""
    edges = edges_from(db, user_node(user_id), FOLLOWS)
    return [e.dst for e in sorted(edges, key=lambda e: e.valid_from, reverse=True)]


def followers(db: Database, node: str) -> list[str]:
    return [e.src for e in edges_to(db, node, FOLLOWS)]


def followed_people(db: Database, user_id: str) -> list[str]:
    """The ids of the people whose artifacts reach ``user_id``'s feed: those followed, and
    the builders of the tinys followed."""
    nodes = following(db, user_id)
    people = [n.removeprefix(USER_PREFIX) for n in nodes if n.startswith(USER_PREFIX)]
    tinys = [n.removeprefix(TINY_PREFIX) for n in nodes if n.startswith(TINY_PREFIX)]
    if tinys:
        marks = ",".join("?" * len(tinys))
        rows = db.execute(f"SELECT DISTINCT owner_id FROM tinys WHERE name IN ({marks})", tinys)
        people += [str(r[0]) for r in rows]
    return list(dict.fromkeys(p for p in people if p != user_id))


def _state(db: Database, me: str, target: Target, *, changed: bool) -> FollowState:
    is_following = current(db, me, FOLLOWS, target.node) is not None
    return FollowState(target, is_following, changed, len(followers(db, target.node)))
