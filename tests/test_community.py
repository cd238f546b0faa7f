"""The community on a running hub: follows and reputation, trust, the feed, visits, profiles,
the daily chat allowance, and the community travelling with memory sync.

Real HTTP on loopback, real SQLite; a second person is added with ``identity.add_user`` and a
token. PageRank is held to networkx's own Google matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
import networkx as nx
import numpy as np
import pytest

from fakes.ollama import FakeOllama, Reply
from hub.agent.tools.context import ToolContext
from hub.agent.tools.memory import memory_graph
from hub.api.server import RunningServer
from hub.community import profile as profiles
from hub.community.allowance import REQUESTS_PER_POINT
from hub.community.trust import DAMPING, ITERATIONS, pagerank
from hub.devices.notify import NOTIFY_KIND
from hub.devices.registry import AdjustableClock
from hub.people.identity import User
from hub.tinys.social import FOLLOWS, PLATFORM, record_consulted, user_node
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat
from tests.test_memory_sync import Sides, sides  # noqa: F401  (the fixture)
from tests.toolcall import OWNER, call_tool, result_text


@dataclass
class Person:
    user: User
    headers: dict[str, str]


def add_person(server: RunningServer, name: str, login: str) -> Person:
    identity = server.hub.identity
    user = identity.add_user(name, login=login)
    return Person(user, {"Authorization": f"Bearer {identity.issue_token(user, 'test')}"})


async def call(
    http: aiohttp.ClientSession,
    server: RunningServer,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    **request: Any,
) -> tuple[int, Any]:
    async with http.request(method, server.url + path, headers=headers, **request) as response:
        return response.status, await response.json()


def follow_edges(server: RunningServer, src: str, dst: str) -> list[tuple[str, str | None]]:
    rows = server.hub.db.execute(
        "SELECT valid_from, valid_to FROM edge WHERE owner = ? AND rel = ? AND src = ?"
        " AND dst = ? ORDER BY id",
        [PLATFORM, FOLLOWS, src, dst],
    )
    return [(start, end) for start, end in rows]


def graph_tool(server: RunningServer, caller: Any = OWNER, **arguments: Any) -> dict[str, Any]:
    """memory_graph as the model calls it, in a turn of ``caller`` (the owner by default)."""
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    who = server.hub.owner if caller == OWNER else caller
    return dict(call_tool(memory_graph, ToolContext(server.hub, who, tiny), **arguments))


@pytest.fixture
async def hub(start_hub: StartHub) -> RunningServer:
    return await start_hub()


# --- follows and reputation -----------------------------------------------------------------


async def test_follow_unfollow_refollow_pays_reputation_once(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = add_person(hub, "Bea", "bea")
    owner = owner_headers(hub)
    status, state = await call(http, hub, "POST", "/follow", owner, json={"login": "@bea"})
    assert status == 200 and (state["following"], state["changed"], state["followers"]) == (
        True,
        True,
        1,
    )
    _, again = await call(http, hub, "POST", "/follow", owner, json={"login": "@bea"})
    assert (again["following"], again["changed"]) == (True, False)
    _, off = await call(
        http, hub, "POST", "/follow", owner, json={"action": "unfollow", "login": "@bea"}
    )
    assert (off["following"], off["changed"], off["followers"]) == (False, True, 0)
    _, back = await call(http, hub, "POST", "/follow", owner, json={"login": "bea"})
    assert back["following"] and back["changed"]
    # the unfollow closed the first edge and the re-follow opened a fresh one
    edges = follow_edges(hub, user_node(hub.hub.owner.id), user_node(bea.user.id))
    assert len(edges) == 2 and edges[0][1] is not None and edges[1][1] is None
    status, rep = await call(http, hub, "GET", "/reputation?login=@bea")
    assert status == 200
    assert rep == {
        "login": "@bea",
        "score": 10,
        "breakdown": {"follow_received": 10, "mutual_follow": 0},
    }
    _, mine = await call(http, hub, "GET", "/reputation", owner)
    assert mine["score"] == 0  # following earns the follower nothing
    _, checked = await call(
        http, hub, "POST", "/follow", bea.headers, json={"action": "check", "login": "@owner"}
    )
    assert checked["following"] is False


async def test_a_mutual_follow_pays_both_sides_once(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = add_person(hub, "Bea", "bea")
    owner = owner_headers(hub)
    await call(http, hub, "POST", "/follow", owner, json={"login": "@bea"})
    await call(http, hub, "POST", "/follow", bea.headers, json={"login": "@owner"})
    for _ in range(2):  # farming: unfollow and follow again, both ways
        for who, login in ((owner, "@bea"), (bea.headers, "@owner")):
            await call(
                http, hub, "POST", "/follow", who, json={"action": "unfollow", "login": login}
            )
            await call(http, hub, "POST", "/follow", who, json={"login": login})
    for login in ("@bea", "@owner"):
        _, rep = await call(http, hub, "GET", f"/reputation?login={login}")
        assert rep["breakdown"] == {"follow_received": 10, "mutual_follow": 5}, login
        assert rep["score"] == 15


async def test_following_a_tiny_pays_its_builder_once_per_follower(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = add_person(hub, "Bea", "bea")
    hub.hub.tinys.create(bea.user, {"name": "chef"})
    hub.hub.tinys.create(bea.user, {"name": "baker"})
    owner = owner_headers(hub)
    for name in ("chef", "baker"):
        status, state = await call(http, hub, "POST", "/follow", owner, json={"tiny": name})
        assert status == 200 and state["target"] == f"tiny:{name}" and state["following"]
    await call(http, hub, "POST", "/follow", owner, json={"login": "@bea"})
    _, rep = await call(http, hub, "GET", "/reputation?login=bea")
    assert rep["score"] == 10  # one follower, one gesture's worth
    _, own = await call(http, hub, "POST", "/follow", bea.headers, json={"tiny": "chef"})
    assert own["following"]
    _, rep = await call(http, hub, "GET", "/reputation?login=bea")
    assert rep["score"] == 10  # following your own tiny pays nothing
    _, listed = await call(http, hub, "GET", "/community", owner)
    assert listed["following"] == [
        {"target": "@bea", "kind": "person"},
        {"target": "tiny:baker", "kind": "tiny"},
        {"target": "tiny:chef", "kind": "tiny"},
    ]


async def test_bad_follows_get_a_clear_error_and_change_nothing(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = add_person(hub, "Bea", "bea")
    hub.hub.tinys.create(bea.user, {"name": "secret", "visibility": "private"})
    owner = owner_headers(hub)
    cases: list[tuple[Any, int, str]] = [
        ({"login": "@nobody"}, 404, "nobody is @nobody"),
        ({"tiny": "secret"}, 404, "no tiny named secret"),  # private: not revealed
        ({"tiny": "ghost"}, 404, "no tiny named ghost"),
        ({"login": "@bea", "tiny": "tiny"}, 400, "exactly one"),
        ({}, 400, "exactly one"),
        ({"login": 7}, 400, "login must be"),
        ({"login": "@bea", "action": "like"}, 400, "action must be one of"),
        ({"login": "@bea", "why": "x"}, 400, "unknown field(s): why"),
        (["@bea"], 400, "JSON object"),
        ({"login": "@owner"}, 400, "cannot follow yourself"),
    ]
    for body, status, said in cases:
        got, answer = await call(http, hub, "POST", "/follow", owner, json=body)
        assert (got, said in answer["error"]) == (status, True), (body, answer)
    status, _ = await call(http, hub, "POST", "/follow", json={"login": "@bea"})
    assert status == 401
    status, answer = await call(http, hub, "GET", "/reputation")
    assert status == 400 and "login" in answer["error"]
    status, _ = await call(http, hub, "GET", "/profile?login=@ghost")
    assert status == 404
    count = hub.hub.db.execute("SELECT COUNT(*) FROM edge WHERE rel = 'follows'").fetchone()[0]
    assert count == 0


# --- trust ----------------------------------------------------------------------------------

CONSULTS = [
    ("a", "b", 1.0),
    ("a", "c", 3.0),
    ("b", "c", 1.0),
    ("c", "a", 2.0),
    ("d", "c", 1.0),
    ("e", "d", 5.0),
    ("c", "f", 1.0),  # f consults nobody: its rank is spread evenly
]


def networkx_ten_steps(edges: list[tuple[str, str, float]]) -> dict[str, float]:
    """Ten power steps on networkx's own Google matrix (its PageRank iterates to a tolerance
    and raises when ten steps do not converge)."""
    graph = nx.DiGraph()
    graph.add_weighted_edges_from(edges)
    nodes = list(graph)
    google = nx.google_matrix(graph, alpha=DAMPING, nodelist=nodes, weight="weight")
    rank = np.full(len(nodes), 1.0 / len(nodes))
    for _ in range(ITERATIONS):
        rank = rank @ google
    return dict(zip(nodes, rank.tolist(), strict=True))


def test_pagerank_equals_networkx_to_1e_9() -> None:
    ours, theirs = pagerank(CONSULTS), networkx_ten_steps(CONSULTS)
    assert set(ours) == set(theirs)
    for node, rank in theirs.items():
        assert abs(ours[node] - rank) < 1e-9, node
    assert abs(sum(ours.values()) - 1.0) < 1e-9
    assert max(ours, key=ours.__getitem__) == "c"


async def test_community_ranks_public_tinys_and_memory_graph_social_says_the_same(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = add_person(hub, "Bea", "bea")
    for name in "abcdef":
        hub.hub.tinys.create(bea.user if name in "ab" else hub.hub.owner, {"name": f"t{name}"})
    hub.hub.tinys.create(bea.user, {"name": "hidden", "visibility": "private"})
    for src, dst, weight in CONSULTS:
        for _ in range(int(weight)):
            record_consulted(hub.hub.db, f"t{src}", f"t{dst}")
    record_consulted(hub.hub.db, "hidden", "ta")  # private: not part of the public graph
    status, body = await call(http, hub, "GET", "/community")
    assert status == 200
    expected = networkx_ten_steps(CONSULTS)
    order = sorted(expected, key=lambda n: (-expected[n], n))
    assert [r["tiny"] for r in body["trust"]] == [f"t{n}" for n in order]
    for row in body["trust"]:
        assert abs(row["trust"] - expected[row["tiny"][1:]]) < 1e-6
    assert body["trust"][0]["builder"] == "@owner"
    builders = {b["login"]: b["tinys"] for b in body["builders"]}
    assert builders["@bea"] == ["ta", "tb"] and "hidden" not in builders["@bea"]
    assert "following" not in body  # anonymous
    result = graph_tool(hub, mode="social")
    assert result["status"] == "success"
    assert result["content"][1]["json"]["trust"] == body["trust"]
    assert result_text(result).splitlines()[0].startswith("tc @owner")


async def test_memory_graph_social_shows_follows_and_consults_around_a_node_not_visits(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = add_person(hub, "Bea", "bea")
    hub.hub.tinys.create(bea.user, {"name": "chef"})
    record_consulted(hub.hub.db, "tiny", "chef")
    await call(http, hub, "POST", "/follow", owner_headers(hub), json={"tiny": "chef"})
    await call(http, hub, "POST", "/visit", owner_headers(hub), json={"tiny": "chef"})
    result = graph_tool(hub, mode="social", id="tiny:chef")
    edges = {(e["src"], e["rel"], e["dst"]) for e in result["content"][1]["json"]["edges"]}
    assert edges == {("tiny:tiny", "consulted", "tiny:chef"), ("@owner", "follows", "tiny:chef")}
    around_me = graph_tool(hub, mode="social", id="@owner")
    assert "visited" not in result_text(around_me) and "follows" in result_text(around_me)
    refused = graph_tool(hub, mode="social", id="chef")
    assert refused["status"] == "error" and "@login" in result_text(refused)
    anonymous = graph_tool(hub, caller=None, mode="social")
    assert anonymous["status"] == "error" and "Login required" in result_text(anonymous)


# --- the feed -------------------------------------------------------------------------------


async def test_feed_shows_a_followed_persons_public_fact_and_new_tiny_not_a_private_fact(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = add_person(hub, "Bea", "bea")
    memory = hub.hub.memory
    memory.learn(bea.user.id, "Bea's sourdough recipe uses 70% water", visibility="public")
    memory.learn(bea.user.id, "Bea's door code is 4711")  # private
    closed = memory.learn(bea.user.id, "Bea likes rye", visibility="public")
    memory.unlearn(bea.user.id, closed.id)
    hub.hub.tinys.create(bea.user, {"name": "bakery", "tagline": "bread questions"})
    empty = graph_tool(hub, mode="feed")
    assert empty["status"] == "success" and "nothing new" in result_text(empty)
    await call(http, hub, "POST", "/follow", owner_headers(hub), json={"login": "@bea"})
    result = graph_tool(hub, mode="feed")
    items = result["content"][1]["json"]["feed"]
    assert [(i["kind"], i["by"], i["text"]) for i in items] == [
        ("tiny", "@bea", "bread questions"),
        ("fact", "@bea", "Bea's sourdough recipe uses 70% water"),
    ]
    assert "4711" not in result_text(result)
    unfollowed = await call(
        http,
        hub,
        "POST",
        "/follow",
        owner_headers(hub),
        json={"action": "unfollow", "login": "bea"},
    )
    assert unfollowed[1]["following"] is False
    after = graph_tool(hub, mode="feed")
    assert "nothing new" in result_text(after)


# --- visits ---------------------------------------------------------------------------------


async def test_a_visit_tells_the_owner_once_per_window(
    hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = add_person(hub, "Bea", "bea")
    hub.hub.tinys.create(bea.user, {"name": "chef"})
    _, key = hub.hub.tinys.create(bea.user, {"name": "vault", "visibility": "private"})
    clock = AdjustableClock()
    hub.hub.community.clock = clock
    events = hub.hub.devices.events

    def notices() -> list[str]:
        return [e.detail["body"] for e in events.recent(bea.user.id) if e.kind == NOTIFY_KIND]

    status, seen = await call(http, hub, "POST", "/visit", json={"tiny": "chef"})
    assert status == 200 and seen == {"ok": True, "tiny": "chef", "notified": True}
    assert notices() == ["Someone is on your tiny chef's page right now."]
    _, again = await call(http, hub, "POST", "/visit", owner_headers(hub), json={"tiny": "chef"})
    assert again["notified"] is False and len(notices()) == 1  # throttled
    clock.advance(301)
    _, later = await call(http, hub, "POST", "/visit", json={"tiny": "chef"})
    assert later["notified"] is True and len(notices()) == 2
    clock.advance(301)
    _, own = await call(http, hub, "POST", "/visit", bea.headers, json={"tiny": "chef"})
    assert own["notified"] is False and len(notices()) == 2  # the owner on their own page
    status, _ = await call(http, hub, "POST", "/visit", json={"tiny": "vault"})
    assert status == 404
    assert key is not None
    status, _ = await call(http, hub, "POST", "/visit", {"x-tiny-key": key}, json={"tiny": "vault"})
    assert status == 200
    for body in ({}, {"tiny": 3}, {"tiny": "chef", "x": 1}, "chef"):
        status, answer = await call(http, hub, "POST", "/visit", json=body)
        assert status == 400 and answer["error"], body
    visited = hub.hub.db.execute(
        "SELECT src, weight FROM edge WHERE rel = 'visited' AND dst = 'tiny:chef'"
    ).fetchall()
    # signed-in visitors leave a weighed edge; anonymous ones only tell the owner
    assert sorted(visited) == sorted(
        [(user_node(hub.hub.owner.id), 1.0), (user_node(bea.user.id), 1.0)]
    )


# --- profiles -------------------------------------------------------------------------------


async def test_a_profile_shows_public_tinys_standing_and_added_sections(
    hub: RunningServer, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    bea = add_person(hub, "Bea", "bea")
    hub.hub.tinys.create(bea.user, {"name": "chef", "tagline": "cooks"})
    hub.hub.tinys.create(bea.user, {"name": "diary", "visibility": "private"})
    await call(http, hub, "POST", "/follow", owner_headers(hub), json={"login": "@bea"})

    def tools(db: Any, user: User) -> tuple[str, Any]:
        return "tools", [f"{user.login}'s tool"]

    monkeypatch.setattr(profiles, "PROFILE_SECTIONS", [*profiles.PROFILE_SECTIONS, tools])
    status, page = await call(http, hub, "GET", "/profile?login=@bea")
    assert status == 200
    assert (page["login"], page["name"], page["followers"], page["following"]) == (
        "@bea",
        "Bea",
        1,
        0,
    )
    assert [t["name"] for t in page["tinys"]] == ["chef"]
    assert page["reputation"]["score"] == 10
    assert page["tools"] == ["bea's tool"]
    status, answer = await call(http, hub, "GET", "/profile")
    assert status == 400 and "login" in answer["error"]


# --- the daily curve ------------------------------------------------------------------------


async def test_the_daily_curve_adds_five_requests_a_point_then_429_until_midnight(
    start_hub: StartHub, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    base = 2
    hub = await start_hub(ollama_host=fake_ollama.url, member_daily_chats=base)
    bea = add_person(hub, "Bea", "bea")
    hub.hub.db.execute(  # two points, as a gesture of someone else would give them
        "INSERT INTO reputation (user_id, kind, ref, points, created_at)"
        " VALUES (?, 'follow_received', 'test', 2, 0)",
        [bea.user.id],
    )
    clock = AdjustableClock()
    clock.advance(_to_midday(clock()))
    hub.hub.community.allowance.clock = clock
    allowed = base + 2 * REQUESTS_PER_POINT
    fake_ollama.script(*[Reply(chunks=["ok"]) for _ in range(allowed + 1)])
    for n in range(allowed):
        status, body = await call(
            http, hub, "POST", "/api/chat", bea.headers, json={"prompt": "hi"}
        )
        assert (status, body) == (200, {"reply": "ok"}), n
    async with http.post(
        hub.url + "/api/chat", headers=bea.headers, json={"prompt": "hi"}
    ) as response:
        assert response.status == 429
        body = await response.json()
        retry = int(response.headers["Retry-After"])
    reset = datetime.fromisoformat(body["resetAt"])
    assert (body["limit"], body["used"], body["remaining"]) == (allowed, allowed, 0)
    assert reset.hour == reset.minute == 0 and reset.tzinfo is not None
    assert abs(reset.timestamp() - clock() - retry) <= 1
    assert body["resetAt"] in body["error"]
    clock.advance(retry)
    status, body = await call(http, hub, "POST", "/api/chat", bea.headers, json={"prompt": "hi"})
    assert (status, body) == (200, {"reply": "ok"})
    fake_ollama.script(*[Reply(chunks=["ok"]) for _ in range(allowed + 2)])
    for _ in range(allowed + 2):  # the owner has no limit
        status, _ = await call(
            http, hub, "POST", "/api/chat", owner_headers(hub), json={"prompt": "hi"}
        )
        assert status == 200


async def test_anonymous_callers_have_their_own_allowance_and_bad_bodies_cost_nothing(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    hub = await start_hub(ollama_host=fake_ollama.url, anonymous_daily_chats=1)
    fake_ollama.script(Reply(chunks=["hello"]))
    async with aiohttp.ClientSession() as http:
        for _ in range(3):
            status, _ = await call(http, hub, "POST", "/api/chat", json={"messages": []})
            assert status == 400
    first = await post_chat(hub.url, {"messages": [{"role": "user", "content": "hi"}]})
    assert first.text == "hello"
    async with aiohttp.ClientSession() as http:
        status, body = await call(
            http, hub, "POST", "/api/chat", json={"messages": [{"role": "user", "content": "hi"}]}
        )
    assert status == 429 and body["limit"] == 1 and "resets at" in body["error"]


def _to_midday(now: float) -> float:
    """Seconds from ``now`` to the next 12:00 UTC, so a test's day does not end under it."""
    moment = datetime.fromtimestamp(now, UTC)
    midday = moment.replace(hour=12, minute=0, second=0, microsecond=0)
    return (midday.timestamp() - now) % 86_400


# --- the community travels with memory sync -------------------------------------------------


async def test_sync_carries_a_follow_both_ways_and_an_unfollow_closes_it_there(
    sides: Sides,  # noqa: F811
) -> None:
    local, cloud = sides.local.hub, sides.cloud.hub
    for hub in (local, cloud):
        bea = hub.identity.add_user("Bea", login="bea")
        hub.tinys.create(bea, {"name": "chef"})
    local_bea, cloud_bea = local.identity.by_login("bea"), cloud.identity.by_login("bea")
    assert local_bea is not None and cloud_bea is not None
    here = local.community.target(local.owner, login="@bea")
    local.community.follow(local.owner, "follow", here)
    there = cloud.community.target(cloud.owner, tiny="chef")
    cloud.community.follow(cloud.owner, "follow", there)
    sync = sides.sync()
    await sync.sync_once()

    def follows(hub: Any) -> set[str]:
        return {c["target"] for c in hub.community.following(hub.owner)}

    assert follows(local) == follows(cloud) == {"@bea", "tiny:chef"}
    # the follow that arrived pays as one made there would: Bea's standing at the cloud
    assert cloud.community.standing(cloud_bea).score == 10
    local.community.follow(
        local.owner, "unfollow", local.community.target(local.owner, tiny="chef")
    )
    await sync.sync_once()
    assert follows(cloud) == {"@bea"}
    closed = cloud.db.execute(
        "SELECT COUNT(*) FROM edge WHERE rel = 'follows' AND dst = 'tiny:chef'"
        " AND valid_to IS NOT NULL"
    ).fetchone()[0]
    assert closed == 1
    again = await sync.sync_once()
    assert (again.pushed, again.pulled) == (0, 0)  # nothing left to carry either way
    # visits and the consults of one's own tinys travel too, with their weights
    local.community.visit(local.owner, "chef", None)
    for _ in range(2):
        record_consulted(local.db, "tiny", "chef")
    await sync.sync_once()
    arrived = cloud.db.execute(
        "SELECT src, rel, weight FROM edge WHERE owner = ? AND dst = 'tiny:chef'"
        " AND rel IN ('visited', 'consulted')",
        [PLATFORM],
    ).fetchall()
    assert sorted(arrived) == [
        ("tiny:tiny", "consulted", 2.0),
        (user_node(cloud.owner.id), "visited", 1.0),
    ]


async def test_sync_merges_only_the_persons_own_gestures(sides: Sides) -> None:  # noqa: F811
    local = sides.local.hub
    bea = local.identity.add_user("Bea", login="bea")
    local.tinys.create(bea, {"name": "chef"})
    stamp = "2026-01-01T00:00:00Z"
    page = {
        "social": [
            {"src": "@bea", "rel": "follows", "dst": "tiny:chef", "valid_from": stamp},
            {"src": "tiny:chef", "rel": "consulted", "dst": "tiny:tiny", "valid_from": stamp},
            {"src": "self", "rel": "follows", "dst": "@nobody", "valid_from": stamp},
            {"src": "self", "rel": "follows", "dst": "@owner", "valid_from": stamp},
            {"src": "self", "rel": "follows", "dst": "tiny:chef", "valid_from": stamp},
        ]
    }
    async with sides.http.post(
        f"{sides.local.url}/learnings/sync", json=page, headers=owner_headers(sides.local)
    ) as response:
        report = await response.json()
    assert response.status == 200 and report["social"] == 1
    assert [r["error"] for r in report["refused"]] == [
        "a follows edge must leave self",
        "a consult must come from one of your own tinys",
        "nobody here is @nobody",
        "an edge from self to self",
    ]
    assert local.community.following(local.owner) == [{"target": "tiny:chef", "kind": "tiny"}]
    bad = {"social": [{"src": "self", "rel": "likes", "dst": "tiny:chef", "valid_from": stamp}]}
    async with sides.http.post(
        f"{sides.local.url}/learnings/sync", json=bad, headers=owner_headers(sides.local)
    ) as response:
        assert response.status == 400
        assert "social[0].rel" in (await response.json())["error"]


async def test_the_kept_ranking_follows_new_consults_and_a_tiny_made_private(
    hub: RunningServer,
) -> None:
    owner = hub.hub.owner
    for name in ("alpha", "beta", "gamma"):
        hub.hub.tinys.create(owner, {"name": name})
    record_consulted(hub.hub.db, "alpha", "beta")
    community = hub.hub.community
    assert community.ranking()[0]["tiny"] == "beta"
    for _ in range(3):
        record_consulted(hub.hub.db, "beta", "gamma")
    assert community.ranking()[0]["tiny"] == "gamma"
    hub.hub.tinys.modify(owner, "gamma", {"visibility": "private"})
    assert [r["tiny"] for r in community.ranking()] == ["beta", "alpha"]
