"""Tools installed from GitHub: a raw URL pinned by commit, its owner allowed, its hash kept.

A tool file is JSON: ``{"name", "description", "inputSchema", "code"}`` (docs/forged-tools.md).
It is fetched from ``<raw base>/<owner>/<repo>/<40-hex commit>/<path>``; a branch or tag name is
refused, because what a branch points at changes under the person who installed it. The owner
must be in the hub's allowlist or trusted by the person. The file's SHA-256 is recorded the
first time the hub fetches that URL, and a different file at the same URL later is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from yarl import URL

from hub.core.netguard import is_localhost_name, literal_address
from hub.core.urls import UrlRefused, canonical_url
from hub.forge.store import ForgedDraft, ForgedTool, ForgeRefused, ForgeStore, sha256
from hub.tinys.guarded import SendFailed, SendRefused, send

MAX_FILE_BYTES = 16_384
FETCH_TIMEOUT_S = 10.0
USER_AGENT = "tiny-hub (install_tool)"
_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class RawLocation:
    owner: str  # lower case, as the allowlist compares it
    repo: str
    commit: str
    path: str  # decoded segments joined by /

    def url(self, base: str, ref: str | None = None) -> str:
        """The file's URL at ``ref`` (its pinned commit by default), percent-encoded."""
        segments = (self.owner, self.repo, ref or self.commit, *self.path.split("/"))
        return str(canonical_url(base).joinpath(*segments))


def is_loopback_base(base: str) -> bool:
    """True for a raw-content base on this machine (a mirror, or a test's fake)."""
    host = URL(base).host or ""
    address = literal_address(host)
    return is_localhost_name(host) or (address is not None and address.is_loopback)


def locate(url: str, base: str) -> RawLocation:
    """Where ``url`` points under ``base``; refuses anything but a file at a full commit SHA.

    Decided on the canonical URL (``hub.core.urls``), never on the text as given: the text a check
    reads and the URL a request fetches must be the same one. Fetch ``place.url(base)``."""
    shape = f"{base.rstrip('/')}/<owner>/<repo>/<commit>/<path>"
    try:
        target, root = canonical_url(url), canonical_url(base)
    except UrlRefused as exc:
        raise ForgeRefused(f"install_tool takes {shape} URLs: {exc}") from None
    if not target.absolute or (target.scheme, target.host, target.port) != (
        root.scheme,
        root.host,
        root.port,
    ):
        raise ForgeRefused(f"install_tool takes {shape} URLs")
    if target.raw_query_string or target.raw_fragment or "?" in url or "#" in url:
        raise ForgeRefused(f"{url} has a query or a fragment; give the file's URL")
    prefix = tuple(part for part in root.parts if part != "/")
    parts = tuple(part for part in target.parts if part != "/")
    if parts[: len(prefix)] != prefix:
        raise ForgeRefused(f"install_tool takes {shape} URLs")
    parts = parts[len(prefix) :]
    if len(parts) < 4 or not all(parts) or target.raw_path.endswith("/"):
        raise ForgeRefused(f"{url} is not {shape}")
    if any("/" in part or part in (".", "..") for part in parts):
        raise ForgeRefused(f"{url} has an encoded / or a dot segment; give the file's own URL")
    owner, repo, commit, path = parts[0], parts[1], parts[2], "/".join(parts[3:])
    if not _COMMIT.fullmatch(commit.lower()):
        raise ForgeRefused(
            f"{url} is not pinned: use the file's URL at a full 40-character commit SHA, "
            f"not {commit!r}"
        )
    return RawLocation(owner.lower(), repo, commit.lower(), path)


def check_owner(place: RawLocation, allowlist: Sequence[str], trusted: Sequence[str]) -> None:
    allowed = {o.lower() for o in allowlist} | {o.lower() for o in trusted}
    if place.owner not in allowed:
        raise ForgeRefused(
            f"{place.owner} is neither in the hub's tool allowlist nor trusted by you; "
            f"trust them first with manage_tools action trust name {place.owner}"
        )


async def fetch_file(url: str, base: str) -> bytes:
    """The file at `url`, at most MAX_FILE_BYTES, through the network guard (a loopback base
    is allowed by name: the owner configured it)."""
    allow = (URL(base).host or "",) if is_loopback_base(base) else ()
    try:
        got = await send(
            "GET",
            url,
            allow_hosts=allow,
            max_bytes=MAX_FILE_BYTES,
            timeout_s=FETCH_TIMEOUT_S,
            max_redirects=0,
            user_agent=USER_AGENT,
        )
    except (SendRefused, SendFailed) as exc:
        raise ForgeRefused(f"cannot fetch {url}: {exc}") from exc
    if got.status != 200:
        raise ForgeRefused(f"{url} answered HTTP {got.status}")
    if got.truncated:
        raise ForgeRefused(f"{url} is over {MAX_FILE_BYTES} bytes; a tool file is smaller")
    return got.body


def draft_of(body: bytes, url: str) -> ForgedDraft:
    try:
        found: Any = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ForgeRefused(f"{url} is not a JSON tool file: {exc}") from exc
    if not isinstance(found, dict):
        raise ForgeRefused(f"{url} is not a JSON object with name, description and code")
    return ForgedDraft.checked(
        str(found.get("name", "")),
        str(found.get("description", "")),
        found.get("inputSchema", found.get("input_schema")),
        str(found.get("code", "")),
    )


async def fetch_pinned(url: str, base: str, store: ForgeStore) -> ForgedDraft:
    """The tool file at `url` (already located and allowed), its hash checked against the
    one this hub recorded for that URL."""
    body = await fetch_file(url, base)
    store.pin_file(url, sha256(body))
    return draft_of(body, url)


def same_file(tool: ForgedTool, place: RawLocation, base: str) -> bool:
    """True when `tool` was installed from the file at `place`, at any commit: installing it
    again at another commit updates it."""
    if not tool.source_url:
        return False
    try:
        was = locate(tool.source_url, base)
    except ForgeRefused:
        return False
    return (was.owner, was.repo.lower(), was.path) == (place.owner, place.repo.lower(), place.path)


async def update_state(tool: ForgedTool, base: str, store: ForgeStore) -> dict[str, Any]:
    """Whether the file the tool was installed from differs at the repository's HEAD."""
    place = locate(tool.source_url, base)
    pinned = store.file_hash(tool.source_url)
    state: dict[str, Any] = {"name": tool.tool_name, "sourceUrl": tool.source_url}
    try:
        head = await fetch_file(place.url(base, "HEAD"), base)
    except ForgeRefused as exc:
        return {**state, "state": "unknown", "why": str(exc)}
    if sha256(head) == pinned:
        return {**state, "state": "current"}
    return {
        **state,
        "state": "changed",
        "why": "the file differs at HEAD; install it again from its URL at the new commit",
    }
