"""The fact graph: real SQLite, real Chroma, the real bundled embedding model."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from hub.api.server import RunningServer
from hub.contracts import MAX_ENTRIES
from hub.memory.graph import FactNotFound, Link, MemoryFull, MemoryRefused, now
from hub.memory.vectors import VectorIndex
from hub.people.identity import User
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for
from tests.sse import post_chat


@pytest.fixture
def hub(home: Path) -> Iterator[Hub]:
    opened = Hub.open(settings_for(home))
    yield opened
    opened.close()


def member(hub: Hub, name: str = "bea") -> User:
    return hub.identity.add_user(name)


def test_learn_and_recall_by_meaning(hub: Hub) -> None:
    me = hub.owner.id
    hub.memory.learn(me, "My sister Mia lives in Lyon and teaches piano.")
    cat = hub.memory.learn(me, "My cat is called Miso and is allergic to chicken.")
    hub.memory.learn(me, "I run 5 km every Sunday morning.")
    found = hub.memory.recall(me, "what is my pet allergic to?", limit=1)
    assert [f.id for f in found] == [cat.id]
    assert found[0].as_json()["fact"].startswith("My cat is called Miso")


def test_supersedes_closes_links_and_history_is_oldest_first(hub: Hub) -> None:
    me = hub.owner.id
    first = hub.memory.learn(me, "I live in Paris.")
    second = hub.memory.learn(me, "I live in Berlin now.", supersedes=[first.id])
    third = hub.memory.learn(me, "I moved to Lisbon.", supersedes=[second.id])
    assert not hub.memory.get(me, first.id).current
    assert [f.id for f in hub.memory.recall(me, "where do I live?", limit=3)] == [third.id]
    trail = [f.id for f in hub.memory.history(me, second.id)]
    assert trail == [first.id, second.id, third.id]
    assert hub.memory.get(me, first.id).valid_to is not None
    with pytest.raises(MemoryRefused, match="already closed"):
        hub.memory.learn(me, "I live in Rome.", supersedes=[first.id])


def test_unlearn_leaves_history_intact(hub: Hub) -> None:
    me = hub.owner.id
    old = hub.memory.learn(me, "My favourite colour is green.")
    new = hub.memory.learn(me, "My favourite colour is blue.", supersedes=[old.id])
    closed = hub.memory.unlearn(me, new.id)
    assert closed.valid_to is not None
    assert hub.memory.recent(me) == []
    assert hub.memory.recall(me, "favourite colour") == []
    assert [f.text for f in hub.memory.history(me, new.id)] == [old.text, new.text]
    with pytest.raises(MemoryRefused, match="already closed"):
        hub.memory.unlearn(me, new.id)


def test_clear_all_purges_rows_and_vectors_of_that_person_only(hub: Hub) -> None:
    me, bea = hub.owner.id, member(hub).id
    for i in range(3):
        hub.memory.learn(me, f"Fact number {i} about me.")
    hub.memory.learn(bea, "Bea keeps bees.")
    assert hub.memory.vectors.count(me) == 3
    assert hub.memory.clear_all(me) == 3
    assert hub.memory.vectors.count(me) == 0
    assert hub.db.execute("SELECT COUNT(*) FROM entity WHERE owner = ?", [me]).fetchone()[0] == 0
    assert [f.text for f in hub.memory.recall(bea, "bees")] == ["Bea keeps bees."]


def test_the_5001st_fact_is_refused_and_nothing_is_evicted(hub: Hub) -> None:
    me = hub.owner.id
    stamp = now()
    hub.db.conn.executemany(
        "INSERT INTO entity (id, owner, kind, label, attrs_json, vec_id, visibility, valid_from)"
        " VALUES (?, ?, 'fact', ?, '{}', ?, 'private', ?)",
        [(f"bulk{i}", me, f"bulk fact {i}", f"bulk{i}", stamp) for i in range(MAX_ENTRIES - 1)],
    )
    last = hub.memory.learn(me, "The five thousandth fact.")
    assert hub.memory.count(me) == MAX_ENTRIES
    with pytest.raises(MemoryFull, match=r"memory full \(5000/5000\)"):
        hub.memory.learn(me, "One too many.")
    assert hub.memory.count(me) == MAX_ENTRIES
    assert hub.memory.get(me, "bulk0").current, "the oldest fact is still there"
    replaced = hub.memory.learn(me, "A replacement, not an addition.", supersedes=[last.id])
    assert replaced.current and hub.memory.count(me) == MAX_ENTRIES


def test_fact_length_limit(hub: Hub) -> None:
    me = hub.owner.id
    assert hub.memory.learn(me, "x" * 2000).current
    with pytest.raises(MemoryRefused, match="fact is 2001 characters; the limit is 2000"):
        hub.memory.learn(me, "y" * 2001)
    for bad in ("", "   ", None, 5, ["a"]):
        with pytest.raises(MemoryRefused, match="non-empty string"):
            hub.memory.learn(me, bad)


def test_a_fact_of_one_person_never_reaches_another(hub: Hub) -> None:
    me, bea = hub.owner.id, member(hub).id
    secret = hub.memory.learn(me, "My bank PIN hint is the year my dog was born.")
    hub.memory.learn(bea, "Bea's favourite fruit is quince.")
    crafted = [secret.text, "bank PIN hint dog", f"{secret.id}", "' OR 1=1 --"]
    for query in crafted:
        assert all(f.owner == bea for f in hub.memory.recall(bea, query, limit=10, hops=1))
    for attempt in (hub.memory.unlearn, hub.memory.history, hub.memory.get):
        with pytest.raises(FactNotFound):
            attempt(bea, secret.id)
    with pytest.raises(FactNotFound):
        hub.memory.learn(bea, "mine now", supersedes=[secret.id])
    with pytest.raises(FactNotFound):
        hub.memory.learn(bea, "linked", links=[Link("about", secret.id)])


def test_the_sql_owner_check_holds_when_the_vector_filter_is_wrong(hub: Hub) -> None:
    """The vector store's person only narrows; even a vector filed under the wrong person (a
    recycled id, a shared Chroma server) is dropped by the SQL owner check."""
    me, bea = hub.owner.id, member(hub).id
    secret = hub.memory.learn(me, "My passport number ends in 4471.")
    store = hub.memory.vectors.store
    ids, vectors = store.person(me)
    store.put(ids, [bea] * len(ids), vectors)
    assert hub.memory.vectors.query(bea, "passport number", 5)[0][0] == secret.id
    assert hub.memory.recall(bea, "passport number") == []


def test_conflicts_within_a_scope_and_never_across_scopes(hub: Hub) -> None:
    me = hub.owner.id
    mia = hub.memory.learn(me, "Mia is my sister.", kind="person")
    lyon = hub.memory.learn(me, "Mia lives in Lyon.", links=[Link("about", mia.id, "home")])
    nice = hub.memory.learn(me, "Mia lives in Nice.", links=[Link("about", mia.id, "home")])
    hub.memory.learn(me, "Mia works in Geneva.", links=[Link("about", mia.id, "work")])
    groups = hub.memory.conflicts(me)
    assert len(groups) == 1
    group = groups[0]
    assert (group["subject"], group["rel"], group["scope"]) == (mia.id, "about", "home")
    assert {e["fact"]["id"] for e in group["edges"]} == {lyon.id, nice.id}
    keep = next(e["id"] for e in group["edges"] if e["fact"]["id"] == nice.id)
    closed = hub.memory.resolve_conflict(me, keep)
    assert len(closed) == 1
    assert hub.memory.conflicts(me) == []
    with pytest.raises(FactNotFound):
        hub.memory.resolve_conflict(member(hub, "cid").id, keep)


def test_neighbors_and_recall_hops(hub: Hub) -> None:
    me = hub.owner.id
    trip = hub.memory.learn(me, "Planning a trip to Japan in April.", kind="project")
    flights = hub.memory.learn(
        me, "Flights to Osaka are booked for April 3.", links=[Link("part_of", trip.id)]
    )
    hotel = hub.memory.learn(
        me, "The Kyoto ryokan is reserved for two nights.", links=[Link("part_of", trip.id)]
    )
    facts, edges = hub.memory.neighbors(me, trip.id, depth=1)
    assert {f.id for f in facts} == {trip.id, flights.id, hotel.id}
    assert {(e.src, e.rel, e.dst) for e in edges} == {
        (flights.id, "part_of", trip.id),
        (hotel.id, "part_of", trip.id),
    }
    facts, _ = hub.memory.neighbors(me, flights.id, depth=2)
    assert hotel.id in {f.id for f in facts}
    facts, _ = hub.memory.neighbors(me, flights.id, depth=1, rels=["about"])
    assert [f.id for f in facts] == [flights.id]
    with pytest.raises(MemoryRefused, match="depth"):
        hub.memory.neighbors(me, trip.id, depth=3)
    found = hub.memory.recall(me, "when is my flight to Osaka?", limit=1, hops=1)
    assert found[0].id == flights.id
    assert trip.id in {f.id for f in found[1:]}


def test_a_crash_between_the_sqlite_and_chroma_writes_is_repaired(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = hub.owner.id

    def crashed(items: Any) -> None:
        raise RuntimeError("killed between the two writes")

    with monkeypatch.context() as patch:
        patch.setattr(hub.memory.vectors, "add", crashed)
        orphan = hub.memory.learn(me, "My allotment plot is number 17.")
    assert hub.memory.get(me, orphan.id).vec_id is None
    # The start-up repair gives it its vector...
    assert hub.memory.index_missing() == 1
    assert hub.memory.get(me, orphan.id).vec_id == orphan.id
    assert [f.id for f in hub.memory.recall(me, "allotment plot")] == [orphan.id]
    # ...and a search before the repair does not wait for it: it indexes what is missing first.
    with monkeypatch.context() as patch:
        patch.setattr(hub.memory.vectors, "add", crashed)
        another = hub.memory.learn(me, "My shed's padlock is brass.")
    assert [f.id for f in hub.memory.recall(me, "padlock on the shed", limit=1)] == [another.id]
    assert hub.memory.index_missing() == 0


def test_reindex_rebuilds_the_collection_from_sqlite(home: Path, closed_port: int) -> None:
    hub = Hub.open(settings_for(home))
    fact = hub.memory.learn(hub.owner.id, "The spare key is under the blue pot.")
    hub.memory.vectors.delete([fact.id])  # the collection lost it
    hub.close()
    result = subprocess.run(
        [str(Path(sys.executable).with_name("tiny-hub")), "memory", "reindex", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "OLLAMA_HOST": f"http://127.0.0.1:{closed_port}"},
    )
    assert result.returncode == 0, result.stderr
    assert "indexed 1 current fact" in result.stdout
    hub = Hub.open(settings_for(home))
    assert [f.id for f in hub.memory.recall(hub.owner.id, "where is the spare key?")] == [fact.id]
    hub.close()


def test_memory_never_touches_the_network(home: Path, no_network: list[str]) -> None:
    hub = Hub.open(settings_for(home))
    fact = hub.memory.learn(hub.owner.id, "I am learning Portuguese.")
    assert hub.memory.recall(hub.owner.id, "which language am I learning?")[0].id == fact.id
    hub.close()
    reopened = Hub.open(settings_for(home))
    assert reopened.memory.recall(reopened.owner.id, "language")[0].id == fact.id
    reopened.close()
    assert no_network == []


# --- HTTP -------------------------------------------------------------------------------------


@pytest.fixture
async def server(start_hub: StartHub, closed_port: int) -> RunningServer:
    return await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")


async def call(
    http: aiohttp.ClientSession, method: str, url: str, headers: dict[str, str], **kw: Any
) -> tuple[int, Any]:
    async with http.request(method, url, headers=headers, **kw) as response:
        return response.status, await response.json()


async def test_learnings_routes_round_trip(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    auth, base = owner_headers(server), f"{server.url}/learnings"
    status, body = await call(http, "POST", base, auth, json={"fact": "I like green tea."})
    assert (status, body["ok"]) == (200, True)
    first = body["id"]
    status, body = await call(
        http, "POST", base, auth, json={"fact": "I like jasmine tea best.", "supersedes": [first]}
    )
    second = body["id"]
    await call(http, "POST", base, auth, json={"fact": "My bike is red."})
    status, body = await call(http, "GET", f"{base}?limit=10", auth)
    assert [item["fact"] for item in body["learnings"]] == [
        "My bike is red.",
        "I like jasmine tea best.",
    ]
    assert set(body["learnings"][0]) >= {
        "id",
        "fact",
        "kind",
        "visibility",
        "valid_from",
        "valid_to",
    }
    status, body = await call(http, "GET", f"{base}?q=which+drink+do+I+like&limit=1", auth)
    assert [item["id"] for item in body["learnings"]] == [second]
    status, body = await call(http, "GET", f"{base}/history?id={second}", auth)
    assert [item["id"] for item in body["history"]] == [first, second]
    assert body["history"][0]["valid_to"] is not None
    status, body = await call(http, "DELETE", f"{base}?id={second}", auth)
    assert status == 200 and body["closed"]["valid_to"]
    status, body = await call(http, "DELETE", base, auth)
    assert status == 400 and "scope=all" in body["error"]
    status, body = await call(http, "DELETE", f"{base}?scope=all", auth)
    assert (status, body["cleared"]) == (200, 3)
    status, body = await call(http, "GET", base, auth)
    assert body["learnings"] == []
    assert server.hub.memory.vectors.count(server.hub.owner.id) == 0


@pytest.mark.parametrize(
    ("method", "path", "payload", "status", "problem"),
    [
        ("POST", "", {"fact": 5}, 400, "non-empty string"),
        ("POST", "", {"fact": "x" * 2001}, 400, "2001 characters"),
        ("POST", "", {"fact": "ok", "supersedes": "m_1"}, 400, "supersedes must be an array"),
        ("POST", "", {"fact": "ok", "supersedes": ["m_nope"]}, 404, "no fact m_nope"),
        ("POST", "", {"fact": "ok", "links": [{"rel": "loves", "dst": "x"}]}, 400, "rel"),
        ("POST", "", {"fact": "ok", "visibility": "everyone"}, 400, "visibility"),
        ("POST", "", {"fact": "ok", "kind": "animal"}, 400, "kind"),
        ("POST", "", {"fact": "ok", "extra": 1}, 400, "unknown field"),
        ("POST", "", ["fact"], 400, "JSON object"),
        ("GET", "?limit=0", None, 400, "limit"),
        ("GET", "?limit=5001", None, 400, "limit"),
        ("GET", "?limit=ten", None, 400, "limit"),
        ("DELETE", "?id=m_nope", None, 404, "no fact"),
        ("GET", "/history", None, 400, "?id="),
        ("GET", "/history?id=m_nope", None, 404, "no fact"),
    ],
)
async def test_bad_learnings_requests_change_nothing(
    server: RunningServer,
    http: aiohttp.ClientSession,
    method: str,
    path: str,
    payload: Any,
    status: int,
    problem: str,
) -> None:
    auth = owner_headers(server)
    kwargs = {"json": payload} if payload is not None else {}
    got, body = await call(http, method, f"{server.url}/learnings{path}", auth, **kwargs)
    assert got == status
    assert problem in body["error"]
    assert server.hub.memory.count(server.hub.owner.id) == 0


async def test_learnings_belong_to_the_caller(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    hub = server.hub
    bea = hub.identity.add_user("bea")
    bea_auth = {"Authorization": f"Bearer {hub.identity.issue_token(bea, 'test')}"}
    owner_fact = hub.memory.learn(hub.owner.id, "The owner's wifi password hint: pelican.")
    status, body = await call(
        http, "GET", f"{server.url}/learnings?userId={hub.owner.id}", bea_auth
    )
    assert status == 403
    status, body = await call(http, "GET", f"{server.url}/learnings?q=wifi+password", bea_auth)
    assert body["learnings"] == []
    status, _ = await call(http, "DELETE", f"{server.url}/learnings?id={owner_fact.id}", bea_auth)
    assert status == 404
    status, _ = await call(
        http, "GET", f"{server.url}/learnings/history?id={owner_fact.id}", bea_auth
    )
    assert status == 404
    assert hub.memory.get(hub.owner.id, owner_fact.id).current
    async with http.get(f"{server.url}/learnings") as response:
        assert response.status == 401


async def test_chat_preloads_the_callers_facts_into_the_prompt(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    me = server.hub.owner.id
    facts = [server.hub.memory.learn(me, f"Routine fact {i}.") for i in range(35)]
    server.hub.memory.unlearn(me, facts[1].id)
    old = server.hub.memory.learn(me, "My cat Miso is allergic to chicken.")
    server.hub.db.execute(
        "UPDATE entity SET valid_from = '2020-01-01T00:00:00.000000Z' WHERE id = ?", [old.id]
    )
    fake_ollama.script(Reply(chunks=["Noted."]))
    await post_chat(
        server.url,
        {"messages": [{"role": "user", "content": "What can't my cat eat?"}]},
        owner_headers(server),
    )
    system = fake_ollama.requests[-1]["messages"][0]["content"]
    assert f"[{facts[-1].id}] Routine fact 34." in system
    assert f"[{old.id}] My cat Miso is allergic to chicken." in system, "the semantic match"
    assert f"[{facts[1].id}]" not in system, "closed facts are not pre-loaded"
    recent_block = system.split("## What you remember about the user")[1]
    assert recent_block.index(facts[-1].id) < recent_block.index(old.id), "newest first"
    fake_ollama.script(Reply(chunks=["Hi."]))
    await post_chat(server.url, {"messages": [{"role": "user", "content": "hello"}]})
    assert "Routine fact" not in fake_ollama.requests[-1]["messages"][0]["content"]


async def test_learn_tool_through_a_chat_turn(start_hub: StartHub, fake_ollama: FakeOllama) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    call_learn = {"function": {"name": "learn", "arguments": {"fact": "I am vegetarian."}}}
    fake_ollama.script(Reply(chunks=[], tool_calls=[call_learn]), Reply(chunks=["Got it."]))
    transcript = await post_chat(
        server.url,
        {"messages": [{"role": "user", "content": "remember I'm vegetarian"}]},
        owner_headers(server),
    )
    after = transcript.of_type("afterToolCallEvent")[0]["toolResult"]
    assert after["status"] == "success"
    stored = [f.text for f in server.hub.memory.recent(server.hub.owner.id)]
    assert stored == ["The user is vegetarian."], "in the third person, whatever the model wrote"
    fake_ollama.script(Reply(chunks=[], tool_calls=[call_learn]), Reply(chunks=["?"]))
    transcript = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "remember I'm vegetarian"}]}
    )
    assert transcript.of_type("afterToolCallEvent")[0]["toolResult"]["error"] == "Login required"


# --- a Chroma server, as a household would share one -------------------------------------------


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = tmp_path_factory.mktemp("chroma-server")
    process = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("chroma")),
            "run",
            "--path",
            str(data),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "ANONYMIZED_TELEMETRY": "False"},
    )
    url = f"http://127.0.0.1:{port}"
    import urllib.request

    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("chroma run did not answer its heartbeat")
    yield url
    process.terminate()
    process.wait(timeout=30)


def test_a_chroma_server_holds_the_vectors_of_two_hubs(chroma_server: str, tmp_path: Path) -> None:
    first = Hub.open(settings_for(tmp_path / "a", memory_chroma_url=chroma_server))
    second = Hub.open(settings_for(tmp_path / "b", memory_chroma_url=chroma_server))
    assert first.memory.vectors.where == chroma_server
    fact = first.memory.learn(first.owner.id, "The boiler service is due in March.")
    assert [f.id for f in first.memory.recall(first.owner.id, "when is the boiler due?")] == [
        fact.id
    ]
    assert second.memory.recall(second.owner.id, "boiler") == [], "another hub's people"
    assert not (tmp_path / "a" / "chroma").exists(), "no embedded Chroma when a server is set"
    index = VectorIndex(url=chroma_server)
    assert index.count(first.owner.id) == 1
    first.close()
    second.close()


def test_learnings_json_shape_is_stable(hub: Hub) -> None:
    fact = hub.memory.learn(hub.owner.id, "Shape check.")
    assert json.loads(json.dumps(fact.as_json())) == {
        "id": fact.id,
        "fact": "Shape check.",
        "kind": "fact",
        "visibility": "private",
        "valid_from": fact.valid_from,
        "valid_to": None,
    }
