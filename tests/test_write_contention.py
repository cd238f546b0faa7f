"""Writes under load: learning a fact never fails because another part of the hub is writing.

Chat turns read memory in worker threads, devices write their heartbeats on the event loop and
learns write in worker threads, all at once. SQLite refuses at once (whatever the busy timeout)
a connection that asks to write while it still has a read open and another connection holds the
write lock, so the hub writes through one connection; another program holding the database past
the busy timeout is a 503 with ``Retry-After``, and nothing is half-written.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama
from harness.waits import STEP_S
from hub.api.server import RunningServer
from hub.memory.graph import Fact
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for
from tests.daemon import enroll, send
from tests.sse import read_sse

LEARNERS, LEARNS_EACH = 2, 15
CHATTERS, TURNS_EACH = 2, 4
BEATS = 30
READS = 40
HOLD_STEPS = 10


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url)


async def learn_many(
    http: aiohttp.ClientSession, server: RunningServer, learner: int
) -> list[tuple[int, Any]]:
    answers = []
    for n in range(LEARNS_EACH):
        body = {"fact": f"learner {learner} fact {n}"}
        answer = await send(http, "POST", f"{server.url}/learnings", body, owner_headers(server))
        answers.append(answer)
    return answers


async def chat_many(http: aiohttp.ClientSession, server: RunningServer) -> list[bool]:
    done = []
    for n in range(TURNS_EACH):
        body = {"messages": [{"role": "user", "content": f"what do you know? ({n})"}]}
        async with http.post(
            f"{server.url}/api/chat", json=body, headers=owner_headers(server)
        ) as response:
            done.append((await read_sse(response)).done)
    return done


async def read_many(http: aiohttp.ClientSession, server: RunningServer) -> list[int]:
    """What the memory screen does: list the facts, again and again, while others write."""
    statuses = []
    for _ in range(READS):
        url = f"{server.url}/learnings?limit=100"
        status, _ = await send(http, "GET", url, None, owner_headers(server))
        statuses.append(status)
    return statuses


async def beat_many(http: aiohttp.ClientSession, server: RunningServer) -> list[int]:
    device = await enroll(http, server)
    creds = {"deviceId": device["device_id"], "token": device["device_token"]}
    statuses = []
    for _ in range(BEATS):
        status, _ = await send(http, "POST", f"{server.url}/api/devices/heartbeat", creds)
        statuses.append(status)
        await asyncio.sleep(0.02)  # a device's pace, not a flood (the rate limit is not tested)
    return statuses


async def test_concurrent_learns_while_turns_and_heartbeats_write(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    learned, chatted, beats, reads = await asyncio.gather(
        asyncio.gather(*(learn_many(http, server, n) for n in range(LEARNERS))),
        asyncio.gather(*(chat_many(http, server) for _ in range(CHATTERS))),
        beat_many(http, server),
        read_many(http, server),
    )
    answers = [answer for learner in learned for answer in learner]
    assert [status for status, _ in answers] == [200] * LEARNERS * LEARNS_EACH, answers
    assert all(all(turns) for turns in chatted), "every turn streams to [DONE]"
    assert beats == [200] * BEATS
    assert reads == [200] * READS
    kept = {fact.text for fact in server.hub.memory.recent(server.hub.owner.id, 100)}
    wanted = {f"learner {i} fact {n}" for i in range(LEARNERS) for n in range(LEARNS_EACH)}
    assert wanted <= kept


def learn_in_thread(hub: Hub, text: str) -> tuple[threading.Thread, list[Fact | BaseException]]:
    outcome: list[Fact | BaseException] = []

    def learn() -> None:
        try:
            outcome.append(hub.memory.learn(hub.owner.id, text))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=learn)
    worker.start()
    return worker, outcome


@pytest.fixture
def hub(home: Path) -> Iterator[Hub]:
    opened = Hub.open(settings_for(home))
    yield opened
    opened.close()


def test_a_learn_waits_for_a_write_in_flight_while_a_read_is_open(hub: Hub) -> None:
    """The exact race that refused learns: a read left open between rows (a turn's pre-load)
    and another writer's transaction in flight when the learn begins its own."""
    for n in range(3):
        hub.memory.learn(hub.owner.id, f"known fact {n}")
    reading = hub.memory.db.execute("SELECT id FROM entity")
    assert reading.fetchone() is not None  # rows remain: the read stays open
    with hub.db.atomic():
        hub.db.execute("UPDATE devices SET last_seen = last_seen")  # a heartbeat's write
        worker, outcome = learn_in_thread(hub, "learned while another write was in flight")
        for _ in range(HOLD_STEPS):  # hold the write while the learn begins (or is refused)
            if outcome:
                break
            time.sleep(STEP_S)
    worker.join()
    reading.fetchall()
    assert len(outcome) == 1 and isinstance(outcome[0], Fact), outcome
    assert hub.memory.get(hub.owner.id, outcome[0].id).text.startswith("learned while")


async def test_another_program_holding_the_database_gets_503_and_nothing_is_written(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    hub = server.hub
    device = await enroll(http, server)
    creds = {"deviceId": device["device_id"], "token": device["device_token"]}
    before = hub.memory.count(hub.owner.id)
    hub.db.execute("PRAGMA busy_timeout = 200")  # the wait is not under test, the answer is
    other = sqlite3.connect(hub.settings.db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        learn = f"{server.url}/learnings"
        async with http.post(
            learn, json={"fact": "while locked"}, headers=owner_headers(server)
        ) as response:
            assert response.status == 503
            assert response.headers["Retry-After"] == "1"
            assert "try again" in (await response.json())["error"]
        beat = await send(http, "POST", f"{server.url}/api/devices/heartbeat", creds)
        assert beat[0] == 503 and "busy" in beat[1]["error"]
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert hub.memory.count(hub.owner.id) == before
    assert not [f for f in hub.memory.recent(hub.owner.id) if f.text == "while locked"]
    status, answer = await send(
        http, "POST", learn, {"fact": "after the lock"}, owner_headers(server)
    )
    assert status == 200 and hub.memory.get(hub.owner.id, answer["id"]).text == "after the lock"
