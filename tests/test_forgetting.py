"""Forgetting: facts close as one act that can be undone (vectors included) until the grace
period ends, then they go for good; "the facts about X" by meaning; the third person.

Real SQLite, real Chroma, the real bundled embedding model; the routes on a real hub.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub.memory.forgetting import later
from hub.memory.graph import FactNotFound, Link, MemoryFull, MemoryRefused, now
from hub.memory.wording import second_person, third_person
from hub.process.housekeeping import delete_forgotten
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for


@pytest.fixture
def hub(home: Path) -> Iterator[Hub]:
    opened = Hub.open(settings_for(home))
    yield opened
    opened.close()


def current_texts(hub: Hub, owner: str) -> list[str]:
    return sorted(f.text for f in hub.memory.recent(owner, 100))


def test_forgetting_closes_facts_and_their_links_and_undo_brings_both_back(hub: Hub) -> None:
    me = hub.owner.id
    bike = hub.memory.learn(me, "The user's bicycle is a green Brompton.")
    lock = hub.memory.learn(me, "The bike lock code is 4411.", links=[Link("about", bike.id)])
    nuts = hub.memory.learn(me, "The user is allergic to hazelnuts.")

    made = hub.memory.forget(me, [bike.id, lock.id], scope="about", about="my bicycle")
    assert [f.id for f in made.facts] == [bike.id, lock.id]
    assert all(not f.current for f in made.facts), "closed, kept as history"
    assert current_texts(hub, me) == [nuts.text]
    assert [f.id for f in hub.memory.recall(me, "what bicycle do I ride?", limit=5)] == [nuts.id]
    assert made.describe().startswith("Forgot 2 facts about my bicycle: ")
    assert bike.text in made.describe() and lock.text in made.describe()
    assert [f.id for f in hub.memory.forgotten(me)] == [made.id]

    restored = hub.memory.restore(me, made.id)
    assert sorted(f.text for f in restored) == sorted([bike.text, lock.text])
    assert current_texts(hub, me) == sorted([bike.text, lock.text, nuts.text])
    found = hub.memory.recall(me, "what bicycle do I ride?", limit=1)
    assert [f.text for f in found] == [bike.text], "their vectors are back: recall finds them"
    new_bike = next(f for f in restored if f.text == bike.text)
    new_lock = next(f for f in restored if f.text == lock.text)
    _, edges = hub.memory.neighbors(me, new_lock.id, rels=["about"])
    assert [(e.src, e.rel, e.dst) for e in edges] == [(new_lock.id, "about", new_bike.id)]
    trail = [f.id for f in hub.memory.history(me, new_bike.id)]
    assert trail == [bike.id, new_bike.id], "the restored fact supersedes the closed one"
    assert hub.memory.forgotten(me) == []
    with pytest.raises(MemoryRefused, match="already undone"):
        hub.memory.restore(me, made.id)


def test_a_forgetting_is_the_owners_alone(hub: Hub) -> None:
    me, bea = hub.owner.id, hub.identity.add_user("bea").id
    made = hub.memory.forget(me, [hub.memory.learn(me, "The user likes jazz.").id])
    with pytest.raises(FactNotFound):
        hub.memory.restore(bea, made.id)
    assert hub.memory.forgotten(bea) == []
    with pytest.raises(MemoryRefused, match="forgetting"):
        hub.memory.restore(me, "")
    with pytest.raises(MemoryRefused, match="already closed"):
        hub.memory.forget(me, [made.facts[0].id])
    with pytest.raises(MemoryRefused, match="nothing to forget"):
        hub.memory.forget(me, [])


def test_after_the_grace_period_forgotten_facts_and_their_older_versions_go_for_good(
    hub: Hub,
) -> None:
    me = hub.owner.id
    old = hub.memory.learn(me, "The user lives in Paris.")
    new = hub.memory.learn(me, "The user lives in Lisbon.", supersedes=[old.id])
    kept = hub.memory.learn(me, "The user is allergic to hazelnuts.")
    superseded = hub.memory.learn(me, "The user drinks tea.")
    hub.memory.learn(me, "The user drinks coffee.", supersedes=[superseded.id])
    made = hub.memory.forget(me, [new.id])
    assert made.delete_after == later(made.forgotten_at, hub.memory.grace_s)

    assert hub.memory.delete_forgotten(now()) == 0, "within the grace period nothing goes"
    assert hub.memory.get(me, new.id).id == new.id
    assert hub.memory.delete_forgotten(later(made.delete_after, 1)) == 2
    for gone in (new.id, old.id):
        with pytest.raises(FactNotFound):
            hub.memory.get(me, gone)
    rows = hub.db.execute("SELECT COUNT(*) FROM edge WHERE src = ? OR dst = ?", [new.id, new.id])
    assert rows.fetchone()[0] == 0
    assert hub.memory.get(me, kept.id).current
    assert not hub.memory.get(me, superseded.id).current, "a correction's history stays"
    with pytest.raises(FactNotFound):
        hub.memory.restore(me, made.id)


def test_a_version_another_current_fact_also_replaced_is_kept(hub: Hub) -> None:
    """Two sides of a sync may each supersede one fact; forgetting one successor must not
    delete the history the other still has."""
    me = hub.owner.id
    old = hub.memory.learn(me, "The user works in Paris.")
    mine = hub.memory.learn(me, "The user works in Lyon.", supersedes=[old.id])
    hub.db.execute(  # the other side's successor, as a merge leaves it
        "INSERT INTO edge (owner, src, rel, dst, scope, valid_from, rev)"
        " VALUES (?, ?, 'supersedes', ?, '', ?, 1)",
        [me, hub.memory.learn(me, "The user works in Nice.").id, old.id, now()],
    )
    made = hub.memory.forget(me, [mine.id])
    assert hub.memory.delete_forgotten(later(made.delete_after, 1)) == 1
    assert hub.memory.get(me, old.id).valid_to is not None, "still the other one's history"


def test_an_undone_forgetting_leaves_its_history_when_its_time_is_up(hub: Hub) -> None:
    me = hub.owner.id
    fact = hub.memory.learn(me, "The user plays the cello.")
    made = hub.memory.forget(me, [fact.id])
    (back,) = hub.memory.restore(me, made.id)
    assert hub.memory.delete_forgotten(later(made.delete_after, 1)) == 0
    assert hub.memory.get(me, fact.id).valid_to is not None, "history of the restored fact"
    assert hub.memory.get(me, back.id).current


def test_forgetting_everything_and_its_undo(hub: Hub) -> None:
    me = hub.owner.id
    for i in range(3):
        hub.memory.learn(me, f"Fact number {i}.")
    every = [f.id for f in hub.memory.recent(me, 10)]
    made = hub.memory.forget(me, every, scope="all")
    assert made.scope == "all" and len(made.facts) == 3 and hub.memory.count(me) == 0
    hub.memory.learn(me, "A fact after the forgetting.")
    assert len(hub.memory.restore(me, made.id)) == 3
    assert hub.memory.count(me) == 4


def test_bringing_back_more_than_memory_has_room_for_is_refused(hub: Hub) -> None:
    me = hub.owner.id
    made = hub.memory.forget(me, [hub.memory.learn(me, "The user likes chess.").id])
    _fill(hub, me)
    with pytest.raises(MemoryFull, match="bringing back 1 fact"):
        hub.memory.restore(me, made.id)
    assert hub.memory.forgotten(me)[0].id == made.id, "still there to bring back later"


def _fill(hub: Hub, owner: str) -> None:
    """A full memory, written straight into SQLite (no vectors: none is searched here)."""
    stamp = now()
    hub.db.conn.executemany(
        "INSERT INTO entity (id, owner, kind, label, valid_from) VALUES (?, ?, 'fact', ?, ?)",
        [(f"m_{i:020x}", owner, f"filler {i}", stamp) for i in range(5000)],
    )


def test_the_facts_about_something_are_found_by_meaning_and_never_others(hub: Hub) -> None:
    me = hub.owner.id
    texts = [
        "The user's bicycle is a green Brompton.",
        "The user is allergic to hazelnuts.",
        "The user's sister is called Ana.",
        "The user rides a bike to work every day.",
        "The user prefers tea over coffee.",
        "The user works as a nurse.",
    ]
    facts = {t: hub.memory.learn(me, t) for t in texts}
    bikes = {f.text for f in hub.memory.about(me, third_person("my bicycle"))}
    assert bikes == {texts[0], texts[3]}
    assert [f.text for f in hub.memory.about(me, "hazelnuts")] == [texts[1]]
    assert [f.text for f in hub.memory.about(me, third_person("my sister"))] == [texts[2]]
    assert hub.memory.about(me, "quantum chromodynamics") == []
    assert hub.memory.about(me, "  ") == []
    bea = hub.identity.add_user("bea").id
    assert hub.memory.about(bea, "bicycle") == [], "only the person's own facts"
    assert facts[texts[0]].current


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("I'm allergic to hazelnuts.", "The user is allergic to hazelnuts."),
        ("My bicycle is a green Brompton.", "The user's bicycle is a green Brompton."),
        ("I like tea", "The user likes tea"),
        ("I really like jazz", "The user really likes jazz"),
        ("I study medicine", "The user studies medicine"),
        ("I watch football on Sundays", "The user watches football on Sundays"),
        ("I bought a car last year", "The user bought a car last year"),
        ("I don't eat meat", "The user doesn't eat meat"),
        ("I've got two cats", "The user has got two cats"),
        ("I can swim", "The user can swim"),
        ("Ana and I are friends", "Ana and the user are friends"),
        ("Ana is my sister", "Ana is the user's sister"),
        ("Yesterday I moved to Lisbon", "Yesterday the user moved to Lisbon"),
        ("The user is a nurse.", "The user is a nurse."),
        ("Lisbon is sunny.", "Lisbon is sunny."),
    ],
)
def test_facts_are_put_in_the_third_person(written: str, stored: str) -> None:
    assert third_person(written) == stored


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ("The user is allergic to hazelnuts.", "You are allergic to hazelnuts."),
        ("The user's bicycle is a green Brompton.", "Your bicycle is a green Brompton."),
        ("The user likes tea", "You like tea"),
        ("The user really likes jazz", "You really like jazz"),
        ("The user studies medicine", "You study medicine"),
        ("The user watches football on Sundays", "You watch football on Sundays"),
        ("The user misses Lisbon", "You miss Lisbon"),
        ("The user bought a car last year", "You bought a car last year"),
        ("The user doesn't eat meat", "You don't eat meat"),
        ("The user has got two cats", "You have got two cats"),
        ("The user was born in Porto", "You were born in Porto"),
        ("The user can swim", "You can swim"),
        ("Ana is the user's sister", "Ana is your sister"),
        ("Yesterday the user moved to Lisbon", "Yesterday you moved to Lisbon"),
        ("Lisbon is sunny.", "Lisbon is sunny."),
    ],
)
def test_facts_are_said_to_the_person(stored: str, said: str) -> None:
    assert second_person(stored) == said


async def test_the_routes_forget_list_and_undo(start_hub: StartHub) -> None:
    server = await start_hub()
    me, headers = server.hub.owner.id, owner_headers(server)
    fact = server.hub.memory.learn(me, "The user's favourite film is Alien.")
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.delete(f"{server.url}/learnings", params={"id": fact.id}) as response:
            body = await response.json()
        assert response.status == 200 and body["closed"]["id"] == fact.id
        forgetting = body["forgetting"]
        assert forgetting["facts"][0]["fact"] == fact.text and forgetting["scope"] == "fact"
        async with http.get(f"{server.url}/learnings/forgotten") as response:
            listed = (await response.json())["forgotten"]
        assert [f["id"] for f in listed] == [forgetting["id"]]
        assert listed[0]["delete_after"] > listed[0]["forgotten_at"]

        for bad in ([], {"id": 3}, {"id": "f_nope"}, {"id": forgetting["id"], "x": 1}):
            async with http.post(f"{server.url}/learnings/forgotten/undo", json=bad) as response:
                assert response.status in (400, 404), (bad, response.status)
                assert "error" in await response.json()
        async with http.post(
            f"{server.url}/learnings/forgotten/undo", json={"id": forgetting["id"]}
        ) as response:
            restored = (await response.json())["restored"]
        assert response.status == 200 and [f["fact"] for f in restored] == [fact.text]
        async with http.get(f"{server.url}/learnings", params={"q": "favourite film"}) as response:
            found = (await response.json())["learnings"]
        assert [f["id"] for f in found] == [restored[0]["id"]]

        bea = server.hub.identity.add_user("bea")
        bea_token = server.hub.identity.issue_token(bea, "test")
        made = server.hub.memory.forget(me, [restored[0]["id"]])
        async with http.post(
            f"{server.url}/learnings/forgotten/undo",
            json={"id": made.id},
            headers={"Authorization": f"Bearer {bea_token}"},
        ) as response:
            assert response.status == 404, "someone else's forgetting is not found"


async def test_the_housekeeping_deletes_what_is_past_its_grace_period(start_hub: StartHub) -> None:
    server = await start_hub(memory_forget_grace_days=0)
    me = server.hub.owner.id
    fact = server.hub.memory.learn(me, "The user's PIN is 1234.")
    server.hub.memory.forget(me, [fact.id])
    await delete_forgotten(server.hub)
    with pytest.raises(FactNotFound):
        server.hub.memory.get(me, fact.id)
    assert server.hub.memory.forgotten(me) == []


def test_after_a_crash_between_facts_and_vectors_search_finds_what_learnings_lists(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An undo commits its facts, then writes their vectors: a crash between the two (a SIGKILL
    mid-undo) leaves facts without a vector. That state is made here by a vector write that
    fails, as the crash would leave it; the next search must find them, not the re-index."""
    me = hub.owner.id
    hub.memory.learn(me, "I keep bees on the roof.")
    made = hub.memory.forget(me, [f.id for f in hub.memory.recent(me)])
    real_add = hub.memory.vectors.add

    def crash(items: Any) -> None:
        raise OSError("killed before the vectors were written")

    monkeypatch.setattr(hub.memory.vectors, "add", crash)
    back = hub.memory.restore(me, made.id)
    monkeypatch.setattr(hub.memory.vectors, "add", real_add)
    assert [f.text for f in hub.memory.listing(me, 10)] == [back[0].text]
    assert hub.memory.stats()[1] == 1, "the fact has no vector yet"
    found = hub.memory.listing(me, 10, "bees")
    assert [f.id for f in found] == [back[0].id]
    assert hub.memory.stats()[1] == 0
