"""Memory sync: the owner's facts follow them between this hub and the cloud (docs/cloud.md).

Memory is the person's, not the device's, so it is reached with a *user* token at the cloud
(``cloud-user.token`` in the data dir, mode 0600, set by ``tiny-hub cloud memory``); the device
token cannot read anyone's memory. The routes are the cloud's ``/learnings/sync`` pair, which
this hub also serves, so another hub is a faithful cloud in tests.

One round pushes every local change after the pushed cursor, page by page, then pulls the
cloud's changes after the pulled cursor and merges them (``MemoryStore.merge``: ids kept, a close
wins, a repeat is a no-op). A cursor moves only after its page was accepted or merged, so an
outage or a crash at any point repeats a page at worst, which changes nothing. The cursors live
in SQLite per cloud and person.

Rounds run every ``interval_s``, and within ``check_s`` of a local change, so a fact learned on
the hub reaches the cloud in seconds while the link costs one cheap SQL read when idle. The loop
never ends on a cloud failure (backoff, like the device link) except a refused token, which
no retry can fix: it stops and says what to do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from hub.cloud.client import (
    CALL_TIMEOUT_S,
    CloudAuthError,
    CloudError,
    CloudUnavailable,
    backoff_s,
    read_answer,
)
from hub.cloud.rounds import LinkState, rounds
from hub.core.tasks import cancel_all
from hub.memory.graph import MemoryRefused
from hub.memory.sync import SYNC_PAGE, Changes, parse_page
from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

SYNC_PATH = "/learnings/sync"
REFUSED_DETAIL = (
    "The cloud refused the user token memory sync uses (it was revoked, or it is not a user's "
    "token). Run `tiny-hub cloud memory --token-file <file>` with a fresh one; memory keeps "
    "working locally meanwhile."
)


class MemoryCloud:
    """The cloud's two memory-sync routes, called as the person (a bearer user token)."""

    def __init__(self, url: str, token: str, *, timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)

    async def page(self, after: int, limit: int = SYNC_PAGE) -> dict[str, Any]:
        """GET /learnings/sync: the cloud's changes after its revision ``after``."""
        query = {"after": str(after), "limit": str(limit)}
        return await self._call("GET", SYNC_PATH, params=query)

    async def push(self, changes: Changes) -> dict[str, Any]:
        """POST /learnings/sync: the cloud merges a page of this hub's changes."""
        body = changes.as_json()
        page = {"facts": body["facts"], "edges": body["edges"]}
        if changes.social:  # only then: a cloud that predates the community still takes facts
            page["social"] = body["social"]
        return await self._call("POST", SYNC_PATH, json=page)

    async def _call(self, method: str, path: str, **request: Any) -> dict[str, Any]:
        try:
            async with (
                aiohttp.ClientSession(timeout=self._timeout, headers=self._headers) as http,
                http.request(method, f"{self.url}{path}", **request) as response,
            ):
                text, status = await response.text(), response.status
        except (aiohttp.ClientError, TimeoutError, UnicodeDecodeError) as exc:
            raise CloudUnavailable(f"cannot reach the cloud at {self.url}: {exc}") from None
        return read_answer(status, text, f"{method} {path}")


@dataclass(frozen=True)
class SyncRound:
    pushed: int  # facts and links sent
    pulled: int  # facts and links received


class MemorySync:
    """Keeps the owner's memory the same here and at the cloud."""

    def __init__(
        self,
        hub: Hub,
        cloud: MemoryCloud,
        *,
        interval_s: float = 60.0,
        check_s: float = 5.0,
        backoff_min_s: float = 1.0,
        backoff_max_s: float = 300.0,
        page: int = SYNC_PAGE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.hub, self.cloud, self.page = hub, cloud, page
        self.interval_s, self.check_s = interval_s, check_s
        self.backoff_min_s, self.backoff_max_s = backoff_min_s, backoff_max_s
        self.clock = clock
        self.state: LinkState = "starting"
        self.since: float | None = None
        self.detail = "syncing memory with the cloud"
        self.synced_at: float | None = None
        self.rounds = 0
        self._task: asyncio.Task[None] | None = None

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None or self._task.done():
            self.state, self.since = "starting", None
            self._task = asyncio.create_task(self._loop(), name="cloud-memory-sync")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_all([task])

    def status(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "since": self.since,
            "detail": self.detail,
            "syncedAt": self.synced_at,
        }

    # --- one round -------------------------------------------------------------------------

    async def sync_once(self) -> SyncRound:
        """Push, then pull; raises CloudError (the cursors keep what was done)."""
        owner = self.hub.owner.id
        memory = self.hub.memory
        pushed, pulled = self._cursors(owner)
        sent = received = 0
        while True:
            page = await asyncio.to_thread(memory.changes, owner, pushed, self.page)
            if page.facts or page.edges or page.social:
                answer = await self.cloud.push(page)
                _log_refused("the cloud", answer.get("refused"))
                sent += len(page.facts) + len(page.edges) + len(page.social)
            pushed = page.upto
            self._save(owner, pushed=pushed)
            if not page.more:
                break
        while True:
            try:
                incoming = parse_page(await self.cloud.page(pulled, self.page), owner)
            except MemoryRefused as exc:
                said = f"the cloud sent a memory page this hub cannot use: {exc}"
                raise CloudUnavailable(said) from None
            report = await asyncio.to_thread(
                memory.merge, owner, incoming.facts, incoming.edges, incoming.social
            )
            _log_refused("this hub", report.refused)
            received += len(incoming.facts) + len(incoming.edges) + len(incoming.social)
            if report.rev is not None and report.rev == pushed + 1:
                pushed = report.rev  # only the cloud's own changes: no need to send them back
            pulled = incoming.upto
            self._save(owner, pushed=pushed, pulled=pulled)
            if not incoming.more:
                break
        self.synced_at = self.clock()
        self.rounds += 1
        return SyncRound(sent, received)

    # --- the loop --------------------------------------------------------------------------

    async def _loop(self) -> None:
        async for done in rounds(
            self.sync_once, self._failed, self._backoff, "memory sync round failed"
        ):
            self._online(done)
            await self._wait_for_work()

    async def _wait_for_work(self) -> None:
        """Until the interval is up, or sooner when something was learned or closed here."""
        owner, deadline = self.hub.owner.id, time.monotonic() + self.interval_s
        while time.monotonic() < deadline:
            await asyncio.sleep(min(self.check_s, max(0.0, deadline - time.monotonic())))
            newest = await asyncio.to_thread(self.hub.memory.newest_rev, owner)
            if newest > self._cursors(owner)[0]:
                return

    def _online(self, done: SyncRound) -> None:
        if self.state != "online":
            log.info("memory sync online (%s)", self.cloud.url)
            self.state, self.since = "online", self.clock()
        self.detail = f"in sync with {self.cloud.url}"
        if done.pushed or done.pulled:
            log.info("memory sync: sent %d, received %d", done.pushed, done.pulled)

    def _failed(self, exc: CloudError) -> bool:
        """Record a failure; False when the loop must end (the token was refused)."""
        if isinstance(exc, CloudAuthError):
            log.error("memory sync stopped: %s. %s", exc, REFUSED_DETAIL)
            self.state, self.since, self.detail = "refused", self.clock(), REFUSED_DETAIL
            return False
        self._offline(str(exc))
        return True

    def _offline(self, reason: str) -> None:
        if self.state != "offline":
            log.warning("memory sync offline: %s", reason)
            self.state, self.since = "offline", self.clock()
        self.detail = reason

    def _backoff(self, failures: int) -> float:
        return backoff_s(failures, self.backoff_min_s, self.backoff_max_s)

    # --- cursors ---------------------------------------------------------------------------

    def _cursors(self, owner: str) -> tuple[int, int]:
        row = self.hub.db.execute(
            "SELECT pushed, pulled FROM memory_sync_cursor WHERE cloud = ? AND owner = ?",
            [self.cloud.url, owner],
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def _save(self, owner: str, *, pushed: int, pulled: int | None = None) -> None:
        current = self._cursors(owner)
        self.hub.db.execute(
            "INSERT INTO memory_sync_cursor (cloud, owner, pushed, pulled, synced_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (cloud, owner) DO UPDATE SET"
            " pushed = excluded.pushed, pulled = excluded.pulled, synced_at = excluded.synced_at",
            [self.cloud.url, owner, pushed, current[1] if pulled is None else pulled, self.clock()],
        )


def _log_refused(side: str, refused: Any) -> None:
    if isinstance(refused, list) and refused:
        items = [r for r in refused[:5] if isinstance(r, dict)]
        shown = "; ".join(f"{r.get('id')}: {r.get('error')}" for r in items)
        log.warning("memory sync: %s kept out %d item(s): %s", side, len(refused), shown)
