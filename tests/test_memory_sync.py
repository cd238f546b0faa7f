"""Memory sync: the owner's facts follow them between this hub and the cloud.

A second hub on loopback plays the cloud: its ``/learnings/sync`` routes are the ones the hub
calls, with the cloud owner's user token. Real SQLite, real Chroma, real HTTP on both sides.
The bitemporal model makes sync a merge: ids kept, a close wins over an open, the earlier close
wins, supersedes trails survive — including when both sides changed while apart.
"""

from __future__ import annotations

import contextlib
import json
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from harness.waits import until
from hub.api.server import RunningServer, start_server
from hub.cloud.account import load_token, save_token
from hub.cloud.memory_sync import MemoryCloud, MemorySync
from hub.memory.graph import MemoryStore
from hub.memory.sync import SYNC_PAGE, Changes
from hub.runtime.hub import Hub
from tests.conftest import owner_headers, settings_for
from tests.daemon import enroll, send
from tests.test_cli import cli_env
from tests.test_cloud_cli import cli

FAST = {"interval_s": 0.2, "check_s": 0.05, "backoff_min_s": 0.02, "backoff_max_s": 0.1}


@dataclass
class Sides:
    cloud: RunningServer
    local: RunningServer
    http: aiohttp.ClientSession
    syncs: list[MemorySync] = field(default_factory=list)

    @property
    def cloud_owner(self) -> str:
        return self.cloud.hub.owner.id

    @property
    def local_owner(self) -> str:
        return self.local.hub.owner.id

    @property
    def cloud_token(self) -> str:
        return self.cloud.hub.settings.owner_token_path.read_text().strip()

    def sync(self, token: str | None = None, **options: Any) -> MemorySync:
        made = MemorySync(
            self.local.hub,
            MemoryCloud(self.cloud.url, token or self.cloud_token, timeout_s=5),
            **{**FAST, **options},
        )
        self.syncs.append(made)
        return made

    async def restart_cloud(self) -> None:
        self.cloud = await start_server(self.cloud.hub, "127.0.0.1", self.cloud.port)


@pytest.fixture
async def sides(tmp_path: Path) -> AsyncIterator[Sides]:
    cloud_hub = Hub.open(settings_for(tmp_path / "cloud"))
    local_hub = Hub.open(settings_for(tmp_path / "local"))
    cloud = await start_server(cloud_hub, "127.0.0.1", 0)
    local = await start_server(local_hub, "127.0.0.1", 0)
    async with aiohttp.ClientSession() as http:
        made = Sides(cloud, local, http)
        yield made
        for sync in made.syncs:
            await sync.stop()
    for server in (made.local, made.cloud):
        with contextlib.suppress(Exception):
            await server.stop()
    cloud_hub.close()
    local_hub.close()


def state(memory: MemoryStore, owner: str) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """Everything a store holds of one person, ids and windows included, comparable across
    stores (local edge row ids and revisions are left out: they mean nothing elsewhere)."""
    page = memory.changes(owner, 0, limit=10_000)
    facts = {(f.id, f.text, f.kind, f.visibility, f.valid_from, f.valid_to) for f in page.facts}
    edges = {(e.src, e.rel, e.dst, e.scope, e.valid_from, e.valid_to) for e in page.edges}
    return facts, edges


def same_memory(sides: Sides) -> bool:
    local = state(sides.local.hub.memory, sides.local_owner)
    cloud = state(sides.cloud.hub.memory, sides.cloud_owner)
    return local == cloud


# --- the store's half: changes and merge ----------------------------------------------------


async def test_changes_come_in_pages_that_never_split_a_write(sides: Sides) -> None:
    memory, owner = sides.local.hub.memory, sides.local_owner
    first = memory.learn(owner, "I live in Lisbon")
    memory.learn(owner, "I live in Porto", supersedes=[first.id])  # one write: 2 facts, 1 edge
    memory.learn(owner, "I like figs")
    page = memory.changes(owner, 0, limit=1)
    # a row travels in its latest state: Lisbon was closed by the supersede, so it comes with
    # that write — the new fact, the close and the edge share one revision and one page
    assert {(f.text, f.current) for f in page.facts} == {
        ("I live in Lisbon", False),
        ("I live in Porto", True),
    }
    assert [(e.rel, e.dst) for e in page.edges] == [("supersedes", first.id)] and page.more
    last = memory.changes(owner, page.upto, limit=1)
    assert [f.text for f in last.facts] == ["I like figs"] and not last.more
    assert memory.changes(owner, last.upto).facts == [] and memory.newest_rev(owner) == last.upto


async def test_merging_a_page_twice_changes_nothing(sides: Sides) -> None:
    source, target = sides.cloud.hub.memory, sides.local.hub.memory
    old = source.learn(sides.cloud_owner, "my bike is red")
    source.learn(sides.cloud_owner, "my bike is blue", supersedes=[old.id])
    page = source.changes(sides.cloud_owner, 0)
    first = target.merge(sides.local_owner, page.facts, page.edges)
    assert (first.added, first.closed, first.edges) == (2, 0, 1) and first.rev is not None
    again = target.merge(sides.local_owner, page.facts, page.edges)
    assert (again.added, again.closed, again.edges, again.rev) == (0, 0, 0, None)
    found = target.recall(sides.local_owner, "what colour is my bike", limit=3)
    assert [f.text for f in found] == ["my bike is blue"]  # the closed fact is not recalled


async def test_a_fact_id_of_another_person_is_never_touched(sides: Sides) -> None:
    hub = sides.local.hub
    other = hub.identity.add_user("guest")
    theirs = hub.memory.learn(other.id, "the guest's secret")
    mine = sides.cloud.hub.memory.learn(sides.cloud_owner, "a fact of mine")
    forged = [mine, replace(mine, id=theirs.id, valid_to="2030-01-01T00:00:00.000000Z")]
    report = hub.memory.merge(sides.local_owner, forged, [])
    assert report.added == 1 and report.refused == [
        {"id": theirs.id, "error": "the id is taken by another fact"}
    ]
    assert hub.memory.get(other.id, theirs.id).current  # still open, still theirs


# --- the loop against a cloud ---------------------------------------------------------------


async def test_facts_learned_on_either_side_reach_the_other_with_their_ids(sides: Sides) -> None:
    here = sides.local.hub.memory.learn(sides.local_owner, "I play the cello")
    there = sides.cloud.hub.memory.learn(sides.cloud_owner, "my sister is called Ana")
    done = await sides.sync().sync_once()
    assert (done.pushed, done.pulled) >= (1, 1)
    assert sides.cloud.hub.memory.get(sides.cloud_owner, here.id).text == "I play the cello"
    assert sides.local.hub.memory.get(sides.local_owner, there.id).text == there.text
    assert same_memory(sides)
    # what came from the cloud is not sent back, and an idle round moves nothing
    again = await sides.syncs[0].sync_once()
    assert (again.pushed, again.pulled) == (0, 0)


async def test_a_fact_superseded_at_the_cloud_while_the_hub_was_offline(sides: Sides) -> None:
    local, cloud = sides.local.hub.memory, sides.cloud.hub.memory
    old = local.learn(sides.local_owner, "I work at Acme")
    sync = sides.sync()
    await sync.sync_once()
    await sides.cloud.stop()  # the cloud goes away; both sides keep changing
    learned_here = local.learn(sides.local_owner, "I started running")
    newer = cloud.learn(sides.cloud_owner, "I work at Globex", supersedes=[old.id])
    await sync.start()
    await until(lambda: sync.state == "offline", what="the sync to notice the outage")
    assert "cannot reach the cloud" in sync.status()["detail"]
    await sides.restart_cloud()
    await until(lambda: same_memory(sides), what="both sides to agree after the outage")
    await until(lambda: sync.state == "online", what="the sync to say it is back")
    trail = local.history(sides.local_owner, newer.id)
    assert [f.text for f in trail] == ["I work at Acme", "I work at Globex"]
    closed_here = local.get(sides.local_owner, old.id).valid_to
    assert closed_here == cloud.get(sides.cloud_owner, old.id).valid_to
    assert cloud.get(sides.cloud_owner, learned_here.id).current


async def test_both_sides_superseding_one_fact_while_apart_keep_both_trails(sides: Sides) -> None:
    local, cloud = sides.local.hub.memory, sides.cloud.hub.memory
    old = local.learn(sides.local_owner, "my phone is a Pixel 6")
    sync = sides.sync()
    await sync.sync_once()
    there = cloud.learn(sides.cloud_owner, "my phone is a Pixel 9", supersedes=[old.id])
    here = local.learn(sides.local_owner, "my phone is an iPhone", supersedes=[old.id])
    await sync.sync_once()
    await sync.sync_once()  # the cloud's close came back earlier than ours: settle both ways
    assert same_memory(sides)
    # each side closed the old fact when it superseded it; the earlier close wins, on both
    closed_at = local.get(sides.local_owner, old.id).valid_to
    assert closed_at == min(there.valid_from, here.valid_from)
    current = {f.text for f in local.recent(sides.local_owner)}
    assert current == {"my phone is a Pixel 9", "my phone is an iPhone"}


async def test_unlearning_at_the_cloud_closes_the_fact_here(sides: Sides) -> None:
    local, cloud = sides.local.hub.memory, sides.cloud.hub.memory
    fact = local.learn(sides.local_owner, "my locker code is 4411")
    sync = sides.sync()
    await sync.sync_once()
    cloud.unlearn(sides.cloud_owner, fact.id)
    await sync.sync_once()
    assert not local.get(sides.local_owner, fact.id).current
    assert local.recall(sides.local_owner, "locker code") == []


class CountingCloud(MemoryCloud):
    """The real client, noting the number of facts in each page it pushes and pulls."""

    def __init__(self, url: str, token: str, *, timeout_s: float) -> None:
        super().__init__(url, token, timeout_s=timeout_s)
        self.pushed: list[int] = []
        self.pulled: list[int] = []

    async def push(self, changes: Changes) -> dict[str, Any]:
        self.pushed.append(len(changes.facts))
        return await super().push(changes)

    async def page(self, after: int, limit: int = SYNC_PAGE) -> dict[str, Any]:
        page = await super().page(after, limit)
        self.pulled.append(len(page.get("facts", [])))
        return page


async def test_many_facts_cross_in_several_pages(sides: Sides) -> None:
    for number in range(26):
        sides.local.hub.memory.learn(sides.local_owner, f"fact number {number}")
    cloud = CountingCloud(sides.cloud.url, sides.cloud_token, timeout_s=5)
    sync = MemorySync(sides.local.hub, cloud, page=10, **FAST)
    assert (await sync.sync_once()).pushed == 26
    assert cloud.pushed == [10, 10, 6]
    assert sides.cloud.hub.memory.count(sides.cloud_owner) == 26
    for number in range(26):
        sides.cloud.hub.memory.learn(sides.cloud_owner, f"cloud fact {number}")
    cloud.pulled.clear()
    assert (await sync.sync_once()).pulled == 26
    assert cloud.pulled == [10, 10, 6]
    assert same_memory(sides)


async def test_a_refused_user_token_stops_the_sync_and_says_what_to_do(sides: Sides) -> None:
    enrolled = await enroll(sides.http, sides.cloud, name="hub", capabilities=["chat"])
    sync = sides.sync(token=enrolled["device_token"])  # a device token reads no one's memory
    await sync.start()
    await until(lambda: sync.state == "refused", what="the sync to stop")
    assert "tiny-hub cloud memory" in sync.status()["detail"]
    rounds = sync.rounds
    await until(lambda: sync._task is not None and sync._task.done(), what="the loop to end")
    assert sync.rounds == rounds == 0


# --- the routes -----------------------------------------------------------------------------


async def post_sync(sides: Sides, body: Any, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token or sides.cloud_token}"}
    data = body if isinstance(body, str) else json.dumps(body)
    headers["Content-Type"] = "application/json"
    async with sides.http.post(
        f"{sides.cloud.url}/learnings/sync", data=data, headers=headers
    ) as response:
        return response.status, await response.json()


GOOD_FACT = {"id": "m_1", "fact": "I like tea", "valid_from": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("{not json", "not valid JSON"),
        ([], "must be a JSON object"),
        ({"facts": {}}, "facts must be a list"),
        ({"facts": [], "extra": 1}, "unknown field(s): extra"),
        ({"facts": [GOOD_FACT] * 501}, "at most 500 per page"),
        ({"facts": [{**GOOD_FACT, "id": "bad id!"}]}, "facts[0].id must be an id"),
        ({"facts": [{**GOOD_FACT, "fact": ""}]}, "facts[0]: fact must be a non-empty string"),
        ({"facts": [{**GOOD_FACT, "fact": "x" * 2001}]}, "the limit is 2000"),
        ({"facts": [{**GOOD_FACT, "kind": "secret"}]}, "facts[0].kind must be one of"),
        ({"facts": [{**GOOD_FACT, "valid_from": "yesterday"}]}, "must be an ISO-8601 time"),
        ({"facts": [{**GOOD_FACT, "valid_to": "2025-01-01T00:00:00Z"}]}, "before valid_from"),
        ({"facts": [GOOD_FACT, "x"]}, "facts[1] must be an object"),
        ({"edges": [{"src": "a", "rel": "hates", "dst": "b"}]}, "edges[0].rel must be one of"),
    ],
)
async def test_a_bad_page_is_refused_whole_with_the_reason(
    sides: Sides, body: Any, said: str
) -> None:
    status, answer = await post_sync(sides, body)
    assert status == 400 and said in answer["error"]
    assert sides.cloud.hub.memory.count(sides.cloud_owner) == 0  # nothing of it was merged


async def test_a_link_to_an_unknown_fact_is_kept_out_and_named(sides: Sides) -> None:
    edge = {"src": "m_1", "rel": "about", "dst": "m_nowhere", "valid_from": "2026-01-02T00:00:00Z"}
    status, answer = await post_sync(sides, {"facts": [GOOD_FACT], "edges": [edge]})
    assert status == 200 and answer["added"] == 1 and answer["edges"] == 0
    kept_out = {"id": "m_1 about m_nowhere", "error": "a link to an unknown fact"}
    assert answer["refused"] == [kept_out]


async def test_only_a_signed_in_user_may_sync(sides: Sides) -> None:
    async with sides.http.get(f"{sides.cloud.url}/learnings/sync") as response:
        assert response.status == 401
    url = f"{sides.cloud.url}/learnings/sync?after=x"
    status, answer = await send(sides.http, "GET", url, headers=owner_headers(sides.cloud))
    assert status == 400 and "after must be a whole number" in answer["error"]


# --- started by the hub, shown in health, set up from the CLI ------------------------------


async def test_a_hub_with_a_user_token_syncs_by_itself_and_says_so(
    sides: Sides, tmp_path: Path
) -> None:
    home = tmp_path / "joined"
    settings = settings_for(home, cloud_url=sides.cloud.url, cloud_memory_interval_s=0.2)
    save_token(settings.cloud_user_token_path, sides.cloud_token)
    hub = Hub.open(settings)
    server = await start_server(hub, "127.0.0.1", 0)
    try:
        status, _ = await send(
            sides.http,
            "POST",
            f"{server.url}/learnings",
            {"fact": "I keep bees"},
            headers=owner_headers(server),
        )
        assert status == 200
        cloud = sides.cloud.hub.memory
        await until(
            lambda: [f.text for f in cloud.recent(sides.cloud_owner)] == ["I keep bees"],
            within_s=20,
            what="the fact learned on the hub to reach the cloud",
        )
        # The cloud holds the fact before the hub has read its answer: the state follows.
        sync = server.parts.memory_sync
        assert sync is not None
        await until(lambda: sync.status()["state"] == "online", what=str(sync.status()))
        async with sides.http.get(
            f"{server.url}/api/health", headers=owner_headers(server)
        ) as response:
            memory = (await response.json())["cloud"]["memory"]
        assert memory["state"] == "online" and memory["syncedAt"] is not None
    finally:
        await server.stop()
        hub.close()


async def test_cloud_memory_saves_a_verified_user_token_only(
    sides: Sides, tmp_path: Path, closed_port: int
) -> None:
    home = tmp_path / "cli-hub"
    env = cli_env(home, closed_port)
    good, bad = tmp_path / "good.token", tmp_path / "bad.token"
    good.write_text(sides.cloud_token + "\n")
    enrolled = await enroll(sides.http, sides.cloud, name="hub", capabilities=["chat"])
    bad.write_text(enrolled["device_token"])
    path = settings_for(home).cloud_user_token_path
    memory = ["cloud", "memory", "--app", sides.cloud.url, "--token-file"]
    refused = await cli([*memory, str(bad)], env)
    assert refused.returncode != 0 and "a device token cannot read memory" in refused.stderr
    assert not path.exists()
    done = await cli([*memory, str(good)], env)
    assert done.returncode == 0, done.stderr
    assert load_token(path) == sides.cloud_token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sides.cloud_token not in done.stdout + done.stderr
    status = await cli(["cloud", "status"], env)
    assert "memory sync: on" in status.stdout
    off = await cli(["cloud", "memory", "--off"], env)
    assert off.returncode == 0 and not path.exists()
