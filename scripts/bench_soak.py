"""A soak: a real ``tiny-hub serve`` under mixed traffic on loopback for ``minutes`` (10 default).

Two clients chat back to back (strands' Ollama provider against the fake Ollama, which streams
each reply over about 0.2 s, as a small local model would), one client learns a fact every
0.5 s, one dial-in device heartbeats 4 times a second, pulls its relay mailbox twice a second
and posts an event every second, and one client holds the event stream open and reads it.
Every 5 s the hub process's RSS and open file descriptors are read from ``/proc``.

``bench(minutes)`` returns ``(name, value, unit, how)`` rows: requests answered, errors by
status, turns, facts, events streamed, RSS at the start and end and its growth per 1,000 turns
and per 1,000 facts, file descriptors. Any 5xx fails the run after the
figures are printed: the soak's claim is that the
hub answers everything. ``python -m scripts.bench_soak [minutes]`` prints them (Linux: /proc).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from fakes.ollama import FakeOllama, Reply
from scripts.bench_common import served_hub
from scripts.bench_rows import Row, run_alone

SAMPLE_EVERY_S = 5.0
WARM_UP_S = 30.0  # RSS growth is measured from the first sample after this (caches filled)
LEARN_EVERY_S = 0.5
BEAT_EVERY_S = 0.25
PULL_EVERY_S = 0.5
EVENT_EVERY_S = 1.0
CHAT_CLIENTS = 2
Action = Callable[[], Awaitable[None]]
Body = Callable[[], dict[str, Any]]
STREAMED_REPLY = Reply(chunks=["The", " moon", " is", " far."], delay_s=0.05)


@dataclass
class Tally:
    answered: Counter[str] = field(default_factory=Counter)  # "<kind> <status>"
    turns: int = 0
    streamed_events: int = 0
    last_event_id: int = 0
    stream_reconnects: int = 0
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (t, rss KiB, fds)
    done_at: list[tuple[int, int]] = field(default_factory=list)  # (turns, facts) per sample

    @property
    def facts(self) -> int:
        return self.answered["learn 200"]

    def status(self, kind: str, status: int) -> None:
        self.answered[f"{kind} {status}"] += 1

    def by_status(self) -> Counter[int]:
        counts: Counter[int] = Counter()
        for key, n in self.answered.items():
            counts[int(key.rsplit(" ", 1)[1])] += n
        return counts


def _sample(pid: int) -> tuple[int, int]:
    """(RSS in KiB, open file descriptors) of a process, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    if found is None:
        raise RuntimeError(f"no VmRSS for process {pid}")
    rss = int(found.group(1))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


async def _every(period_s: float, until: float, action: Action) -> None:
    while time.monotonic() < until:
        started = time.monotonic()
        await action()
        await asyncio.sleep(max(0.0, period_s - (time.monotonic() - started)))


async def _chatter(
    http: aiohttp.ClientSession, url: str, auth: dict[str, str], until: float, tally: Tally
) -> None:
    n = 0
    while time.monotonic() < until:
        n += 1
        body = {"messages": [{"role": "user", "content": f"tell me about the moon ({n})"}]}
        async with http.post(f"{url}/api/chat", json=body, headers=auth) as response:
            text = await response.text()
        tally.status("chat", response.status)
        if response.status == 200 and text.rstrip().endswith("data: [DONE]"):
            tally.turns += 1


async def _soak(minutes: float) -> Tally:
    fake = FakeOllama()
    fake.script(*[STREAMED_REPLY] * 1_000_000)
    await fake.start()
    tally = Tally()
    try:
        async with served_hub(fake.url) as served, aiohttp.ClientSession() as http:
            url, token, pid = served.url, served.token, served.pid
            auth = {"Authorization": f"Bearer {token}"}
            async with http.post(
                f"{url}/api/devices", headers=auth, json={"name": "soak", "kind": "daemon"}
            ) as response:
                enrolled = await response.json()
            device = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
            start = time.monotonic()
            until = start + minutes * 60
            await asyncio.gather(
                *(_chatter(http, url, auth, until, tally) for _ in range(CHAT_CLIENTS)),
                _every(
                    LEARN_EVERY_S,
                    until,
                    _call(http, "POST", f"{url}/learnings", auth, _facts(), tally, "learn"),
                ),
                _every(
                    BEAT_EVERY_S,
                    until,
                    _call(
                        http,
                        "POST",
                        f"{url}/api/devices/heartbeat",
                        {},
                        _same(device),
                        tally,
                        "heartbeat",
                    ),
                ),
                _every(
                    PULL_EVERY_S,
                    until,
                    _call(
                        http, "PUT", f"{url}/api/devices/relay", {}, _same(device), tally, "relay"
                    ),
                ),
                _every(
                    EVENT_EVERY_S,
                    until,
                    _call(
                        http,
                        "POST",
                        f"{url}/api/devices/event",
                        {},
                        _events(device),
                        tally,
                        "event",
                    ),
                ),
                _follow_events(http, url, auth, until, tally),
                _every(SAMPLE_EVERY_S, until, _sampler(pid, start, tally)),
            )
            tally.samples.append((time.monotonic() - start, *_sample(pid)))
            tally.done_at.append((tally.turns, tally.facts))
    finally:
        await fake.stop()
    return tally


def _facts() -> Body:
    n = 0

    def next_body() -> dict[str, Any]:
        nonlocal n
        n += 1
        return {"fact": f"soak fact number {n}"}

    return next_body


def _same(body: dict[str, str]) -> Body:
    return lambda: body


def _events(device: dict[str, str]) -> Body:
    return lambda: {**device, "kind": "device_note", "detail": {"note": "soak"}}


def _call(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    headers: dict[str, str],
    body: Body,
    tally: Tally,
    kind: str,
) -> Action:
    async def once() -> None:
        async with http.request(method, url, json=body(), headers=headers) as response:
            await response.read()
        tally.status(kind, response.status)

    return once


def _sampler(pid: int, start: float, tally: Tally) -> Action:
    async def once() -> None:
        tally.samples.append((time.monotonic() - start, *_sample(pid)))
        tally.done_at.append((tally.turns, tally.facts))

    return once


async def _follow_events(
    http: aiohttp.ClientSession, url: str, auth: dict[str, str], until: float, tally: Tally
) -> None:
    """The event stream, held open for the whole soak (no client time limit); its frames are
    counted, and a stream that ends early is counted as a reconnect and opened again."""
    with contextlib.suppress(asyncio.TimeoutError):
        async with asyncio.timeout(max(0.0, until - time.monotonic())):
            while True:
                async with http.get(
                    f"{url}/api/events?after={tally.last_event_id}",
                    headers=auth,
                    timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
                ) as response:
                    tally.status("events", response.status)
                    async for line in response.content:
                        if line.startswith(b"id: "):
                            tally.last_event_id = int(line[4:])
                        if line.startswith(b"data: "):
                            tally.streamed_events += 1
                tally.stream_reconnects += 1


def bench(minutes: int) -> list[Row]:
    tally = asyncio.run(_soak(float(minutes)))
    by_status = tally.by_status()
    requests = sum(by_status.values())
    _, rss_start, _ = tally.samples[0]
    warm = next((s for s in tally.samples if s[0] >= WARM_UP_S), tally.samples[0])
    _, rss_end, _ = tally.samples[-1]
    fds = [f for *_, f in tally.samples]
    warm_turns, warm_facts = tally.done_at[tally.samples.index(warm)]
    grown_mb = (rss_end - warm[1]) / 1024
    per_1k = grown_mb / max((tally.turns - warm_turns) / 1000, 1e-9)
    per_1k_facts = grown_mb / max((tally.facts - warm_facts) / 1000, 1e-9)
    errors = {status: n for status, n in sorted(by_status.items()) if status >= 300}
    how = f"{minutes} min of mixed loopback traffic; by kind and status: {dict(tally.answered)}"
    print(json.dumps({"answered": dict(tally.answered), "samples": tally.samples}), file=sys.stderr)
    rows: list[Row] = [
        ("soak_requests", float(requests), "count", how),
        ("soak_turns", float(tally.turns), "count", "chat turns streamed to [DONE]"),
        ("soak_errors", float(sum(errors.values())), "count", f"non-2xx by status: {errors}"),
        ("soak_5xx", float(sum(n for s, n in errors.items() if s >= 500)), "count", "must be 0"),
        (
            "soak_events_streamed",
            float(tally.streamed_events),
            "count",
            "frames read from /api/events",
        ),
        (
            "soak_stream_reconnects",
            float(tally.stream_reconnects),
            "count",
            "event streams that ended before the soak did",
        ),
        ("soak_rss_start", rss_start / 1024, "MB", "hub RSS at the first sample"),
        ("soak_rss_warm", warm[1] / 1024, "MB", f"hub RSS after {WARM_UP_S:g} s (models loaded)"),
        ("soak_rss_end", rss_end / 1024, "MB", "hub RSS at the end"),
        (
            "soak_facts",
            float(tally.facts),
            "count",
            f"facts learned, one every {LEARN_EVERY_S:g} s",
        ),
        (
            "soak_rss_per_1k_turns",
            per_1k,
            "MB",
            f"RSS growth after {WARM_UP_S:g} s of warm-up, per 1,000 turns (all of the growth "
            "counted against the turns: an upper bound)",
        ),
        (
            "soak_rss_per_1k_facts",
            per_1k_facts,
            "MB",
            "the same growth per 1,000 facts learned (all of it counted against the facts)",
        ),
        ("soak_fds_min", float(min(fds)), "count", "open descriptors of the hub, lowest sample"),
        ("soak_fds_max", float(max(fds)), "count", "open descriptors of the hub, highest sample"),
    ]
    if any(status >= 500 for status in by_status):
        raise AssertionError(f"the hub answered 5xx during the soak: {errors}")
    return rows


if __name__ == "__main__":
    sys.exit(run_alone(bench, sys.argv[1:], 10))
