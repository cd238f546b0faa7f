"""Inbox reads with 10,000 messages in the database (docs/messages.md).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``messages_overview_p50`` / ``_p99``: ``GET /api/messages`` as a person with 10,000 messages
  across 19 conversations: one line per conversation with its unread count and last message.
- ``messages_conversation_p50`` / ``_p99``: ``GET /api/messages/<login>?limit=50``: the newest
  50 of the 2,500 messages with one person; the warm-up read marked them read, so this is the
  usual re-read, which takes no write lock.
- ``messages_overview_store_p50``: ``Inbox.overview`` in-process, the SQL share of the first.

The hub runs in this process on a loopback port (``running_hub``); every answer is checked
(200, the conversations or messages it must hold), with the rate limits lifted, as a person
reads far slower than this loop. ``runs`` requests each, after 20 warm-up ones.
``python -m scripts.bench_messages [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

import aiohttp

from hub.api.limits import GUARD, Limits
from hub.messages.store import Inbox
from hub.people.identity import User
from scripts.bench_common import BenchmarkFailed, percentile, running_hub
from scripts.bench_rows import Row, run_alone

MESSAGES = 10_000
PEOPLE = 20  # the reader and 19 others
WARM_UP = 20


def fill_inbox(hub: Any, reader: User, others: list[User]) -> None:
    """10,000 messages to and from ``reader``: a quarter with the first other person, the rest
    spread over everyone; a third sent by the reader; all but the newest 500 read."""
    now = time.time() - MESSAGES
    rows = []
    for n in range(MESSAGES):
        peer = others[0] if n % 4 == 0 else others[1 + n % (len(others) - 1)]
        sender, recipient = (reader, peer) if n % 3 == 0 else (peer, reader)
        read_at = None if n >= MESSAGES - 500 else now + n + 1
        rows.append(
            (sender.id, recipient.id, f"message {n}: see you at {n % 24}:00", now + n, read_at)
        )
    with hub.db.atomic():
        hub.db.conn.executemany(
            "INSERT INTO messages (sender_id, recipient_id, body, created_at, read_at)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )


async def timed_get(
    http: aiohttp.ClientSession, url: str, headers: dict[str, str], check: str, want: int
) -> float:
    started = time.perf_counter()
    async with http.get(url, headers=headers) as response:
        body = await response.json()
    elapsed = time.perf_counter() - started
    if response.status != 200 or len(body.get(check, [])) != want:
        raise BenchmarkFailed(f"GET {url}: {response.status}, {len(body.get(check, []))} {check}")
    return elapsed * 1000


def bench(runs: int) -> list[Row]:
    return asyncio.run(_bench(runs))


async def _bench(runs: int) -> list[Row]:
    async with running_hub() as server, aiohttp.ClientSession() as http:
        hub = server.hub
        # reads are measured here, not the rate limiter (a person reads far slower)
        server.runner.app[GUARD].limits = Limits(
            address_rate_per_s=1e6, address_burst=10**6, token_rate_per_s=1e6, token_burst=10**6
        )
        people = [hub.identity.add_user(f"Person {n}", login=f"p{n}") for n in range(PEOPLE)]
        reader, others = people[0], people[1:]
        headers = {"Authorization": f"Bearer {hub.identity.issue_token(reader, 'bench')}"}
        fill_inbox(hub, reader, others)
        overview_url = f"{server.url}/api/messages?limit=50"
        conversation_url = f"{server.url}/api/messages/{others[0].login}?limit=50"
        overview, conversation, store = [], [], []
        for n in range(runs + WARM_UP):
            o = await timed_get(http, overview_url, headers, "conversations", len(others))
            c = await timed_get(http, conversation_url, headers, "messages", 50)
            started = time.perf_counter()
            if len(Inbox(hub.db).overview(reader.id, 50)) != len(others):
                raise BenchmarkFailed("Inbox.overview lost a conversation")
            s = (time.perf_counter() - started) * 1000
            if n >= WARM_UP:
                overview.append(o)
                conversation.append(c)
                store.append(s)
    how = f"{MESSAGES:,} messages, {len(others)} conversations, {runs} requests"
    return [
        ("messages_overview_p50", statistics.median(overview), "ms", f"GET /api/messages; {how}"),
        ("messages_overview_p99", percentile(overview, 0.99), "ms", f"the same, p99; {how}"),
        (
            "messages_conversation_p50",
            statistics.median(conversation),
            "ms",
            f"GET /api/messages/<login>?limit=50 of 2,500 with that person (read already); {how}",
        ),
        (
            "messages_conversation_p99",
            percentile(conversation, 0.99),
            "ms",
            f"the same, p99; {how}",
        ),
        (
            "messages_overview_store_p50",
            statistics.median(store),
            "ms",
            f"Inbox.overview in-process (the SQL share); {how}",
        ),
    ]


if __name__ == "__main__":
    sys.exit(run_alone(bench, sys.argv[1:], 200))
