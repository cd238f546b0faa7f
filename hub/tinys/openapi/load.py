"""Loading a schema: fetched through the network guard, read as JSON or YAML, cached.

The schema is fetched through the network guard (``hub.tinys.guarded``) with a size and time
bound, and parsed off the event loop (a 2 MB document takes a while). Parsed schemas, and
failures, are cached per source for a few minutes, so a conversation does not refetch the
schema on every turn; a broken schema is retried sooner than a good one is refreshed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml  # type: ignore[import-untyped]

from hub.tinys.guarded import SendFailed, SendRefused, send
from hub.tinys.openapi.model import (
    CACHE_ENTRIES,
    CACHE_TTL_S,
    FAILURE_TTL_S,
    FETCH_TIMEOUT_S,
    MAX_SCHEMA_BYTES,
    OpenAPIError,
    Operation,
)
from hub.tinys.openapi.names import shorten
from hub.tinys.openapi.parse import parse_operations
from hub.tinys.records import is_inline_schema

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

__all__ = ["forget_cached_schemas", "load_operations"]

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml bounds nesting depth


@dataclass(frozen=True)
class _Cached:
    expires: float
    operations: tuple[Operation, ...]
    error: str | None


_cache: OrderedDict[tuple[str, tuple[str, ...]], _Cached] = OrderedDict()


def _cache_key(source: str, allow_hosts: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    if _is_url(source):
        return source, allow_hosts
    return "sha256:" + hashlib.sha256(source.encode()).hexdigest(), allow_hosts


def _remember(key: tuple[str, tuple[str, ...]], entry: _Cached) -> None:
    _cache[key] = entry
    _cache.move_to_end(key)
    while len(_cache) > CACHE_ENTRIES:
        _cache.popitem(last=False)


def forget_cached_schemas() -> None:
    """Drop every cached schema: the next load fetches again (tests; a changed schema)."""
    _cache.clear()


def _is_url(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


async def load_operations(hub: Hub, source: str) -> list[Operation]:
    """The operations of the schema at `source`: an http(s) URL, or the schema itself as JSON
    (starting with ``{``) or YAML (starting with ``openapi:`` or ``swagger:``).

    Raises OpenAPIError with a sentence for a person when the schema cannot be fetched or read.
    Results, failures included, are cached per source for a short while.
    """
    source = source.strip()
    allow_hosts = tuple(hub.settings.http_allow_hosts)
    key = _cache_key(source, allow_hosts)
    cached = _cache.get(key)
    if cached is not None and cached.expires > time.monotonic():
        if cached.error is not None:
            raise OpenAPIError(cached.error)
        return list(cached.operations)
    try:
        operations = await _load(source, allow_hosts)
    except OpenAPIError as exc:
        _remember(key, _Cached(time.monotonic() + FAILURE_TTL_S, (), str(exc)))
        raise
    _remember(key, _Cached(time.monotonic() + CACHE_TTL_S, tuple(operations), None))
    return operations


async def _load(source: str, allow_hosts: tuple[str, ...]) -> list[Operation]:
    if _is_url(source):
        text, base = await _fetch(source, allow_hosts), source
    elif is_inline_schema(source):
        text, base = source, None
    else:
        raise OpenAPIError(
            "the worker must be an OpenAPI URL (http or https) or the schema itself "
            "(JSON, or YAML starting with openapi:)"
        )
    # Parsing a 2 MB document takes a while; the event loop keeps serving meanwhile.
    document = await asyncio.to_thread(_parse_text, text)
    return await asyncio.to_thread(parse_operations, document, base, allow_hosts)


async def _fetch(url: str, allow_hosts: tuple[str, ...]) -> str:
    shown = shorten(url, 200)
    try:
        got = await send(
            "GET",
            url,
            allow_hosts=allow_hosts,
            headers={"Accept": "application/json, application/yaml;q=0.9, */*;q=0.5"},
            max_bytes=MAX_SCHEMA_BYTES,
            timeout_s=FETCH_TIMEOUT_S,
        )
    except (SendRefused, SendFailed) as exc:
        raise OpenAPIError(f"the OpenAPI schema at {shown} was not loaded: {exc}") from exc
    if got.status != 200:
        raise OpenAPIError(
            f"the OpenAPI schema at {shown} was not loaded: it answered HTTP {got.status} "
            f"{got.reason}".rstrip()
        )
    if got.truncated:
        raise OpenAPIError(
            f"the OpenAPI schema at {shown} is larger than {MAX_SCHEMA_BYTES // 1_000_000} MB"
        )
    return got.text()


def _parse_text(text: str) -> Any:
    text = text.lstrip("\ufeff \t\r\n")
    try:
        if text.startswith(("{", "[")):
            return json.loads(text)
        return yaml.load(text, Loader=_LOADER)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        kind = "JSON" if text.startswith(("{", "[")) else "YAML"
        why = shorten(" ".join(str(exc).split()), 200)
        raise OpenAPIError(f"the schema is not valid {kind} ({why})") from exc
