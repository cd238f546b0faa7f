"""Tiny records: the prompt, knowledge, data, skills and looks of each companion.

The tools (create_ai, modify_ai, get_tiny, list_tiny) and the HTTP routes share this store and
its one validator, so a field means the same thing whichever way it arrives. A private tiny's key
is shown once and kept hashed, like a token.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hub.contracts import DEFAULT_TINY
from hub.core.errors import Refused
from hub.core.netguard import NOTHING_ALLOWED, Allowance, refused_by_spelling
from hub.people.identity import User, hash_token, new_token
from hub.store.db import Database

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{1,39}$")
DEFAULT_CHIPS = ("What can you do?", "Tell me something interesting", "Help me plan my day")
DEFAULT_PROMPT = (
    "You are tiny, a personal companion that runs on the user's own computer. "
    "Answer warmly, briefly and concretely. If you do not know something, say so."
)
SUMMARY_CHARS = 300
MAX_LIST = 50

# Text fields and their length limits; media and theme are cleared by an empty string.
TEXT_LIMITS: Mapping[str, int] = {
    "systemPrompt": 20_000,
    "systemKnowledge": 50_000,
    "data": 100_000,
    "worker": 100_000,  # an inline schema; a URL is held to MAX_URL_CHARS
    "hook": 500,
    "hero": 2_000,
    "logo": 2_000,
    "theme": 2_000,
    "tagline": 300,
    "intro_vibe": 500,
}
COLUMNS: Mapping[str, str] = {
    "systemPrompt": "system_prompt",
    "systemKnowledge": "system_knowledge",
    "data": "data",
    "worker": "worker",
    "hook": "hook",
    "hero": "hero",
    "logo": "logo",
    "theme": "theme",
    "tagline": "tagline",
    "intro_vibe": "intro_vibe",
}
URL_FIELDS = ("worker", "hero", "logo")
MAX_URL_CHARS = 2_000
_YAML_SCHEMA = re.compile(r"^(openapi|swagger):", re.MULTILINE)


def is_inline_schema(worker: str) -> bool:
    """A worker is an OpenAPI URL, or the schema itself written inline: a JSON object, or YAML
    with a top-level ``openapi:`` (or Swagger 2's ``swagger:``) key."""
    return worker.lstrip().startswith("{") or bool(_YAML_SCHEMA.search(worker))


class TinyError(Refused):
    """A request about a tiny that cannot be met; ``status`` is the HTTP answer."""

    status = 400


class TinyExists(TinyError):
    """The name is taken: a conflict with what exists, not a bad request."""

    status = 409


class TinyNotFound(TinyError):
    status = 404


class TinyForbidden(TinyError):
    status = 403


@dataclass(frozen=True)
class Skill:
    """An instruction set the model can load on demand (name, when to use it, the body)."""

    name: str
    description: str
    instructions: str


@dataclass(frozen=True)
class Tiny:
    name: str
    owner_id: str
    system_prompt: str
    system_knowledge: str
    data: str
    worker: str
    skills: tuple[Skill, ...]
    mcp_servers: tuple[dict[str, Any], ...]
    visibility: str
    hook: str
    hero: str
    logo: str
    theme: str
    tagline: str
    chips: tuple[str, ...]
    intro_vibe: str
    created_at: float
    updated_at: float

    @property
    def is_private(self) -> bool:
        return self.visibility == "private"

    def public_dict(self) -> dict[str, Any]:
        """The record as clients see it (the key never leaves)."""
        return {
            "name": self.name,
            "owner": self.owner_id,
            "systemPrompt": self.system_prompt,
            "systemKnowledge": self.system_knowledge,
            "data": self.data,
            "worker": self.worker,
            "skills": [vars(s) for s in self.skills],
            "mcpServers": list(self.mcp_servers),
            "visibility": self.visibility,
            "hook": self.hook,
            "hero": self.hero,
            "logo": self.logo,
            "theme": self.theme,
            "tagline": self.tagline,
            "chips": list(self.chips or DEFAULT_CHIPS),
            "intro_vibe": self.intro_vibe,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }

    def summary(self) -> dict[str, Any]:
        """Compact: what list_tiny and retrieved-tiny prompts carry (docs/protocol.md, turn step
        3)."""
        return {
            "name": self.name,
            "tagline": self.tagline,
            "visibility": self.visibility,
            "prompt": self.system_prompt[:SUMMARY_CHARS],
            "data": self.data[:SUMMARY_CHARS],
            "skills": [s.name for s in self.skills],
        }


def _check_url_field(field: str, value: str) -> None:
    if field not in URL_FIELDS or not value:
        return
    if field == "worker" and is_inline_schema(value):
        return
    if not value.startswith(("https://", "http://")):
        inline = " or an OpenAPI schema written inline (JSON or YAML)" if field == "worker" else ""
        raise TinyError(f"{field} must be an http(s) URL{inline}, or empty")
    if len(value) > MAX_URL_CHARS:
        raise TinyError(f"{field}: a URL of {len(value)} characters; the limit is {MAX_URL_CHARS}")


def validate_fields(fields: Mapping[str, Any], *, creating: bool) -> dict[str, Any]:
    """create_ai / modify_ai fields → column values; TinyError naming the bad field."""
    allowed = {"name", "chips", "skills", "mcpServers", "visibility", *TEXT_LIMITS}
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise TinyError(
            f"unknown field(s): {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )
    values: dict[str, Any] = {}
    if creating or "name" in fields:
        name = fields.get("name")
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise TinyError("name must be 2-40 characters: lowercase letters, digits and '-'")
        values["name"] = name
    for field, limit in TEXT_LIMITS.items():
        if field not in fields:
            continue
        value = fields[field]
        if not isinstance(value, str):
            raise TinyError(f"{field} must be a string")
        if len(value) > limit:
            raise TinyError(f"{field} is {len(value)} characters; the limit is {limit}")
        _check_url_field(field, value)
        values[COLUMNS[field]] = value
    if "chips" in fields:
        values["chips_json"] = json.dumps(_chips(fields["chips"]))
    if "skills" in fields:
        values["skills_json"] = json.dumps([vars(s) for s in _skills(fields["skills"])])
    if "mcpServers" in fields:
        servers = fields["mcpServers"]
        if not isinstance(servers, list) or not all(isinstance(s, dict) for s in servers):
            raise TinyError("mcpServers must be an array of objects")
        values["mcp_servers_json"] = json.dumps(servers[:20])
    if "visibility" in fields:
        if fields["visibility"] not in ("public", "private"):
            raise TinyError("visibility must be public or private")
        values["visibility"] = fields["visibility"]
    if creating and not values.get("system_prompt"):
        values.setdefault("system_prompt", DEFAULT_PROMPT)
    return values


def _chips(chips: Any) -> list[str]:
    if not isinstance(chips, list) or not all(isinstance(c, str) for c in chips):
        raise TinyError("chips must be an array of strings (empty restores the defaults)")
    if len(chips) > 6 or any(len(c) > 80 for c in chips):
        raise TinyError("chips: at most 6, each at most 80 characters")
    return [c for c in chips if c.strip()]


def _skills(skills: Any) -> list[Skill]:
    if not isinstance(skills, list) or len(skills) > 50:
        raise TinyError("skills must be an array of at most 50 objects")
    parsed = []
    for index, skill in enumerate(skills):
        if not isinstance(skill, dict) or not isinstance(skill.get("name"), str):
            raise TinyError(f"skills[{index}] needs a name")
        parsed.append(
            Skill(
                name=skill["name"][:64],
                description=str(skill.get("description", ""))[:1000],
                instructions=str(skill.get("instructions", ""))[:20_000],
            )
        )
    return parsed


class TinyStore:
    def __init__(self, db: Database, reach: Allowance = NOTHING_ALLOWED) -> None:
        """``reach``: what the owner allowed the hub to dial beyond public addresses
        (``http.allow_hosts``), held to a worker's and an MCP server's URL when it is saved."""
        self._reach = reach
        self._db = db
        # Told the name of every tiny created or changed, after the write (the universe keeps
        # its index in step this way). A listener must not raise and must return quickly.
        self.on_change: list[Callable[[str], None]] = []

    def _changed(self, name: str) -> None:
        for listener in self.on_change:
            listener(name)

    def ensure_default(self, owner: User) -> Tiny:
        """The tiny named ``tiny`` exists from the first start."""
        existing = self.get(DEFAULT_TINY)
        if existing is not None:
            return existing
        tiny, _ = self.create(owner, {"name": DEFAULT_TINY, "tagline": "your companion"})
        return tiny

    def forget(self, name: str) -> None:
        """Tell the listeners a tiny deleted elsewhere (a purged person's) is gone."""
        self._changed(name)

    def get(self, name: str) -> Tiny | None:
        rows = list(self._db["tinys"].rows_where("name = ?", [name.lower()], limit=1))
        return _tiny(rows[0]) if rows else None

    def create(self, owner: User, fields: Mapping[str, Any]) -> tuple[Tiny, str | None]:
        """Create; return the record and, for a private tiny, its key (shown once)."""
        values = validate_fields(fields, creating=True)
        self._check_reach(fields)
        if self.get(values["name"]) is not None:
            raise TinyExists(f"a tiny named {values['name']} already exists")
        key = new_token() if values.get("visibility") == "private" else None
        now = time.time()
        self._db.table("tinys").insert(
            {
                **values,
                "owner_id": owner.id,
                "key_hash": hash_token(key) if key else None,
                "created_at": now,
                "updated_at": now,
            }
        )
        tiny = self.get(values["name"])
        assert tiny is not None
        self._changed(tiny.name)
        return tiny, key

    def _check_reach(self, fields: Mapping[str, Any]) -> None:
        """The URLs a tiny makes the hub dial (its worker, its MCP servers), held to the
        address policy as far as their spelling tells (``hub.core.netguard``): an IP literal
        or a loopback name the owner did not allow is refused now; a name is judged again,
        after DNS, at every dial."""
        servers = fields.get("mcpServers") or []
        urls = [fields.get("worker")] + [s.get("url") for s in servers if isinstance(s, dict)]
        for url in urls:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                continue
            if (why := refused_by_spelling(url, self._reach)) is not None:
                raise TinyError(
                    f"{url[:200]} is refused: {why}; the hub's owner can allow a host "
                    "with http.allow_hosts"
                )

    def modify(self, user: User, name: str, fields: Mapping[str, Any]) -> tuple[Tiny, str | None]:
        """Change fields of a tiny the user owns (or any, for the hub's owner). Turning a tiny
        private mints its key, returned once."""
        tiny = self.get(name)
        if tiny is None:
            raise TinyNotFound(f"no tiny named {name}")
        if not (user.is_owner or user.id == tiny.owner_id):
            raise TinyForbidden(f"only the owner of {name} may change it")
        values = validate_fields(fields, creating=False)
        self._check_reach(fields)
        values.pop("name", None)
        key = None
        if values.get("visibility") == "private" and not tiny.is_private:
            key = new_token()
            values["key_hash"] = hash_token(key)
        if values.get("visibility") == "public":
            values["key_hash"] = None
        values["updated_at"] = time.time()
        self._db.table("tinys").update(tiny.name, values)
        updated = self.get(tiny.name)
        assert updated is not None
        self._changed(updated.name)
        return updated, key

    def public_named(self, names: Sequence[str]) -> dict[str, Tiny]:
        """The public tinys among ``names``: the universe's re-check in SQL (a vector only
        nominates a tiny; this decides, so a tiny made private a moment ago never slips out)."""
        if not names:
            return {}
        marks = ",".join("?" * len(names))
        rows = self._db["tinys"].rows_where(
            f"visibility = 'public' AND name IN ({marks})", list(names)
        )
        return {row["name"]: _tiny(row) for row in rows}

    def public_page(
        self, limit: int, *, offset: int = 0, after: str = ""
    ) -> tuple[list[Tiny], int]:
        """Public tinys by name, a page at a time: from ``offset``, or after the name ``after``
        (a cursor that neither skips nor repeats when tinys come and go between pages)."""
        total = self._db.execute("SELECT COUNT(*) FROM tinys WHERE visibility = 'public'")
        rows = self._db["tinys"].rows_where(
            "visibility = 'public' AND name > ?",
            [after],
            order_by="name",
            limit=limit,
            offset=0 if after else offset,
        )
        return [_tiny(row) for row in rows], int(total.fetchone()[0])

    def list(
        self,
        caller: User | None,
        *,
        query: str = "",
        mine: bool = False,
        limit: int = 20,
        offset: int = 0,
    ) -> tuple[list[Tiny], int]:
        """Public tinys and the caller's own, newest first; filter by text or ownership."""
        where, params = ["(visibility = 'public' OR owner_id = ?)"], [caller.id if caller else ""]
        if mine:
            where.append("owner_id = ?")
            params.append(caller.id if caller else "")
        if query:
            # instr, not LIKE: the text is searched for as it is, '%' and '_' included.
            where.append("(instr(lower(name || ' ' || tagline || ' ' || system_prompt), ?) > 0)")
            params.append(query.lower())
        clause = " AND ".join(where)
        total = self._db.execute(f"SELECT COUNT(*) FROM tinys WHERE {clause}", params).fetchone()[0]
        rows = self._db["tinys"].rows_where(
            clause, params, order_by="updated_at DESC, name", limit=limit, offset=offset
        )
        return [_tiny(row) for row in rows], int(total)

    def can_read(self, tiny: Tiny, caller: User | None, key: str | None) -> bool:
        if not tiny.is_private:
            return True
        if caller is not None and (caller.is_owner or caller.id == tiny.owner_id):
            return True
        row = self._db.execute("SELECT key_hash FROM tinys WHERE name = ?", [tiny.name]).fetchone()
        return bool(key) and row is not None and row[0] == hash_token(key or "")

    def resolve(self, name: str, caller: User | None, key: str | None) -> Tiny:
        """The tiny a chat or read names; TinyNotFound / TinyForbidden otherwise."""
        tiny = self.get(name)
        if tiny is None:
            raise TinyNotFound(f"no tiny named {name}")
        if not self.can_read(tiny, caller, key):
            raise TinyForbidden(f"{name} is private: send its key in x-tiny-key")
        return tiny


def _tiny(row: Mapping[str, Any]) -> Tiny:
    return Tiny(
        name=row["name"],
        owner_id=row["owner_id"],
        system_prompt=row["system_prompt"],
        system_knowledge=row["system_knowledge"],
        data=row["data"],
        worker=row["worker"],
        skills=tuple(Skill(**s) for s in json.loads(row["skills_json"])),
        mcp_servers=tuple(json.loads(row["mcp_servers_json"])),
        visibility=row["visibility"],
        hook=row["hook"],
        hero=row["hero"],
        logo=row["logo"],
        theme=row["theme"],
        tagline=row["tagline"],
        chips=tuple(json.loads(row["chips_json"])),
        intro_vibe=row["intro_vibe"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def clamp_limit(value: Any, default: int = 20) -> int:
    try:
        return max(1, min(MAX_LIST, int(value)))
    except (TypeError, ValueError):
        return default
