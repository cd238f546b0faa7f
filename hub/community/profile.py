"""A builder's public page: who they are, their standing, their public tinys, and what other
parts of the hub add.

``PROFILE_SECTIONS`` is the seam for those parts: a section is a function of the database and
the person that returns ``(key, value)``, and its value appears under that key. Forged tools,
for one, add their public code this way; a section shows only what is already public.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hub.community.follows import followers, following
from hub.community.reputation import standing
from hub.people.identity import User
from hub.store.db import Database
from hub.tinys.social import user_node

ProfileSection = Callable[[Database, User], tuple[str, Any]]


def public_tinys(db: Database, user: User) -> tuple[str, Any]:
    rows = db.execute(
        "SELECT name, tagline, created_at FROM tinys WHERE owner_id = ?"
        " AND visibility = 'public' ORDER BY created_at DESC, name",
        [user.id],
    ).fetchall()
    return "tinys", [{"name": n, "tagline": t, "createdAt": c} for n, t, c in rows]


PROFILE_SECTIONS: list[ProfileSection] = [public_tinys]


def profile(db: Database, user: User) -> dict[str, Any]:
    page: dict[str, Any] = {
        "login": f"@{user.login}",
        "name": user.name,
        "reputation": standing(db, user.id).as_json(),
        "followers": len(followers(db, user_node(user.id))),
        "following": len(following(db, user.id)),
    }
    for section in PROFILE_SECTIONS:
        key, value = section(db, user)
        page[key] = value
    return page
