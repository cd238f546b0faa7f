"""A turn never destroys a person's data alone: forgetting by meaning or everything, deleting a
job, cancelling alerts, removing a forged tool or a Telegram bot only propose; the person
confirms with their own token, once; what was forgotten can be brought back.

Real hubs on loopback, the scripted fake Ollama speaking strands' real Ollama provider, real
SQLite and Chroma, the real embedding model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from hub import contracts as c
from hub.api.server import RunningServer
from hub.confirmations.store import PENDING_TTL_S
from hub.forge.store import ForgedDraft, ForgeStore
from hub.scheduler.store import ScheduleStore
from hub.telegram.bots import Bots
from tests.confirming import answer, proposal
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat, tool_in_a_turn

BICYCLE = "My bicycle is a green Brompton."
ALLERGY = "I'm allergic to hazelnuts."


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url)


async def learnings(server: RunningServer, query: str = "") -> list[str]:
    async with (
        aiohttp.ClientSession(headers=owner_headers(server)) as http,
        http.get(f"{server.url}/learnings", params={"q": query} if query else {}) as response,
    ):
        return sorted(f["fact"] for f in (await response.json())["learnings"])


async def waiting(server: RunningServer) -> list[dict[str, Any]]:
    async with (
        aiohttp.ClientSession(headers=owner_headers(server)) as http,
        http.get(f"{server.url}/api/confirmations") as response,
    ):
        listed: list[dict[str, Any]] = (await response.json())["confirmations"]
        return listed


async def remember_bicycle_and_allergy(server: RunningServer, fake: FakeOllama) -> None:
    for fact in (BICYCLE, ALLERGY):
        result, _ = await tool_in_a_turn(server, fake, "learn", {"fact": fact})
        assert result["status"] == "success"
    assert await learnings(server) == [
        "The user is allergic to hazelnuts.",
        "The user's bicycle is a green Brompton.",
    ], "stored in the third person, whatever the model wrote"


async def test_forgetting_everything_from_a_turn_waits_for_the_person_and_can_be_undone(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    await remember_bicycle_and_allergy(server, fake_ollama)
    facts = await learnings(server)
    result, transcript = await tool_in_a_turn(
        server, fake_ollama, "unlearn", {"id": "", "scope": "all"}
    )
    pending = proposal(result)
    assert pending["action"] == "forget" and pending["total"] == 2
    assert sorted(i["text"] for i in pending["items"]) == facts
    assert await learnings(server) == facts, "every fact stays current until the person answers"
    assert [p["id"] for p in await waiting(server)] == [pending["id"]]
    block = transcript.of_type(c.EV_TOOL_RESULT_BLOCK)[0]["toolResultBlock"]
    assert block["content"][1]["json"]["confirmation"]["id"] == pending["id"]

    bea = server.hub.identity.add_user("bea")
    bea_headers = {"Authorization": f"Bearer {server.hub.identity.issue_token(bea, 't')}"}
    status, body = await answer(server, pending, headers=bea_headers)
    assert status == 404 and "no pending action" in body["error"], "only the person's own token"
    assert await learnings(server) == facts

    status, body = await answer(server, pending)
    assert status == 200 and body["carriedOut"] is True
    assert body["confirmation"]["state"] == "confirmed"
    assert body["confirmation"]["outcome"].startswith("Forgot 2 facts: ")
    assert "deleted for good" in body["confirmation"]["outcome"]
    forgetting = body["result"]["forgetting"]
    assert sorted(f["fact"] for f in forgetting["facts"]) == facts
    assert await learnings(server) == [] and await learnings(server, "hazelnuts") == []
    assert await waiting(server) == []

    status, again = await answer(server, pending)
    assert status == 200 and again["carriedOut"] is False, "a repeat does nothing"
    status, _ = await answer(server, pending, "decline")
    assert status == 410

    async with (
        aiohttp.ClientSession(headers=owner_headers(server)) as http,
        http.post(
            f"{server.url}/learnings/forgotten/undo", json={"id": forgetting["id"]}
        ) as response,
    ):
        assert response.status == 200
    assert await learnings(server) == facts
    assert await learnings(server, "what am I allergic to?") != []
    found = server.hub.memory.recall(server.hub.owner.id, "what am I allergic to?", limit=1)
    assert [f.text for f in found] == ["The user is allergic to hazelnuts."], "vectors are back"


async def test_forgetting_about_something_shows_and_closes_only_the_facts_about_it(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    await remember_bicycle_and_allergy(server, fake_ollama)
    result, _ = await tool_in_a_turn(server, fake_ollama, "unlearn", {"about": "my bicycle"})
    pending = proposal(result)
    assert [i["text"] for i in pending["items"]] == ["The user's bicycle is a green Brompton."]
    assert "my bicycle" in pending["title"]
    status, declined = await answer(server, pending, "decline")
    assert status == 200 and declined["confirmation"]["state"] == "declined"
    status, _ = await answer(server, pending)
    assert status == 410, "declined stays declined"
    assert len(await learnings(server)) == 2

    result, _ = await tool_in_a_turn(server, fake_ollama, "unlearn", {"about": "my bicycle"})
    status, body = await answer(server, proposal(result))
    assert status == 200 and body["carriedOut"] is True
    assert body["confirmation"]["outcome"].startswith("Forgot 1 fact about my bicycle: [")
    assert await learnings(server) == ["The user is allergic to hazelnuts."]

    nothing, _ = await tool_in_a_turn(server, fake_ollama, "unlearn", {"about": "my boat"})
    assert nothing["status"] == "success" and "nothing was forgotten" in str(nothing["content"])


async def test_one_fact_by_id_is_forgotten_in_the_turn_and_the_result_names_it(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    fact = server.hub.memory.learn(server.hub.owner.id, "The user's cat is called Miso.")
    result, _ = await tool_in_a_turn(server, fake_ollama, "unlearn", {"id": fact.id})
    text = result["content"][0]["text"]
    assert text.startswith(f"Forgot 1 fact: [{fact.id}] The user's cat is called Miso.")
    assert "brought back until" in text
    assert await learnings(server) == []
    forgetting = result["content"][1]["json"]["forgetting"]
    assert [f.id for f in server.hub.memory.forgotten(server.hub.owner.id)] == [forgetting["id"]]


async def test_confirming_everything_forgets_what_was_shown_and_not_what_came_after(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    await remember_bicycle_and_allergy(server, fake_ollama)
    result, _ = await tool_in_a_turn(server, fake_ollama, "unlearn", {"scope": "all"})
    later = server.hub.memory.learn(server.hub.owner.id, "The user's cat is called Miso.")
    status, body = await answer(server, proposal(result))
    assert status == 200 and body["carriedOut"] is True
    assert body["result"]["forgetting"]["scope"] == "all"
    assert await learnings(server) == [later.text], "never shown, so never forgotten"


@pytest.mark.parametrize(
    "arguments",
    [{}, {"id": "m_x", "about": "cats"}, {"scope": "some"}, {"about": "cats", "scope": "all"}],
)
async def test_unlearn_asks_for_exactly_one_way_to_say_what(
    server: RunningServer, fake_ollama: FakeOllama, arguments: dict[str, str]
) -> None:
    server.hub.memory.learn(server.hub.owner.id, "The user's cat is called Miso.")
    result, _ = await tool_in_a_turn(server, fake_ollama, "unlearn", arguments)
    assert result["status"] == "error" and "give one of" in result["error"]
    assert len(await learnings(server)) == 1


async def test_a_proposal_not_answered_in_time_is_refused(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    await remember_bicycle_and_allergy(server, fake_ollama)
    result, _ = await tool_in_a_turn(server, fake_ollama, "unlearn", {"scope": "all"})
    pending = proposal(result)
    server.hub.devices.clock.advance(PENDING_TTL_S + 1)
    assert await waiting(server) == []
    status, body = await answer(server, pending)
    assert status == 410 and "expired" in body["error"]
    assert len(await learnings(server)) == 2


@pytest.mark.parametrize(
    "body", [[], {"id": 3}, {}, {"id": "pa_nope"}, {"id": "pa_nope", "extra": 1}, "x"]
)
async def test_bad_answers_get_a_clear_error(server: RunningServer, body: Any) -> None:
    async with (
        aiohttp.ClientSession(headers=owner_headers(server)) as http,
        http.post(f"{server.url}/api/confirmations/confirm", json=body) as response,
    ):
        assert response.status in (400, 404)
        assert "error" in await response.json()
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{server.url}/api/confirmations/confirm", json={"id": "x"}) as response,
    ):
        assert response.status == 401


# --- every destructive tool a turn can call ------------------------------------------------------

Setup = Callable[[RunningServer], Awaitable[tuple[str, dict[str, Any]]]]
Check = Callable[[RunningServer], bool]


async def a_job(server: RunningServer) -> tuple[str, dict[str, Any]]:
    store = ScheduleStore(server.hub.db, server.hub.devices.clock)
    job = store.add_job(server.hub.owner.id, "summarise my inbox", every="*/1h", title="inbox")
    return "schedule", {"action": "delete", "id": job.id}


def jobs_left(server: RunningServer) -> bool:
    store = ScheduleStore(server.hub.db, server.hub.devices.clock)
    return bool(store.of_owner(server.hub.owner.id, "job"))


async def two_alerts(server: RunningServer) -> tuple[str, dict[str, Any]]:
    store = ScheduleStore(server.hub.db, server.hub.devices.clock)
    for title in ("tea", "stretch"):
        store.add_alert(server.hub.owner.id, title, "", server.hub.devices.clock() + 600)
    return "cancel_alerts", {}


def alerts_left(server: RunningServer) -> bool:
    store = ScheduleStore(server.hub.db, server.hub.devices.clock)
    return bool(store.of_owner(server.hub.owner.id, "alert"))


async def a_forged_tool(server: RunningServer) -> tuple[str, dict[str, Any]]:
    draft = ForgedDraft.checked("shout", "Shout a text", {"type": "object"}, "(x) => 'HEY'")
    ForgeStore(server.hub.db).save(server.hub.owner, draft)
    return "remove_tool", {"name": "my_shout"}


def tools_left(server: RunningServer) -> bool:
    return ForgeStore(server.hub.db).named(server.hub.owner.id, "shout") is not None


async def a_telegram_bot(server: RunningServer) -> tuple[str, dict[str, Any]]:
    bots = Bots(server.hub.db, server.hub.settings.home)
    bots.connect(server.hub.owner.id, "tiny", "tiny_test_bot", "123:secret")
    bots.disable(server.hub.owner.id)  # connected, never polled: no network in this test
    return "telegram", {"action": "remove"}


def bots_left(server: RunningServer) -> bool:
    bots = Bots(server.hub.db, server.hub.settings.home)
    return bots.get(server.hub.owner.id) is not None and bots.token(server.hub.owner.id) is not None


@pytest.mark.parametrize(
    ("setup", "left", "shown"),
    [
        (a_job, jobs_left, ["inbox"]),
        (two_alerts, alerts_left, ["tea", "stretch"]),
        (a_forged_tool, tools_left, ["Shout a text"]),
        (a_telegram_bot, bots_left, ["@tiny_test_bot"]),
    ],
    ids=["schedule delete", "cancel_alerts", "remove_tool", "telegram remove"],
)
async def test_each_destructive_tool_waits_for_the_person(
    server: RunningServer, fake_ollama: FakeOllama, setup: Setup, left: Check, shown: list[str]
) -> None:
    name, arguments = await setup(server)
    result, _ = await tool_in_a_turn(server, fake_ollama, name, arguments)
    pending = proposal(result)
    items = " ".join(i["text"] for i in pending["items"])
    assert all(word in items for word in shown), pending
    assert left(server), "nothing happens in the turn"
    status, declined = await answer(server, pending, "decline")
    assert status == 200 and declined["confirmation"]["state"] == "declined" and left(server)

    result, _ = await tool_in_a_turn(server, fake_ollama, name, arguments)
    status, body = await answer(server, proposal(result))
    assert status == 200 and body["carriedOut"] is True, body
    assert not left(server), "confirmed, it is done"
    status, again = await answer(server, proposal(result))
    assert again["carriedOut"] is False


async def test_a_confirmation_for_something_gone_meanwhile_says_so(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    name, arguments = await a_job(server)
    result, _ = await tool_in_a_turn(server, fake_ollama, name, arguments)
    ScheduleStore(server.hub.db, server.hub.devices.clock).delete(
        server.hub.owner.id, arguments["id"]
    )
    status, body = await answer(server, proposal(result))
    assert status == 200 and body["carriedOut"] is False
    assert body["confirmation"]["outcome"].startswith("Not done: no job or alert")


async def test_an_instruction_planted_in_a_tool_result_cannot_confirm(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    """A model that tries to confirm its own proposal has no tool for it and no token: the
    facts stay until the person answers."""
    await remember_bicycle_and_allergy(server, fake_ollama)
    call = {"function": {"name": "unlearn", "arguments": {"scope": "all"}}}
    again = {"function": {"name": "http", "arguments": {"url": f"{server.url}/api/confirmations"}}}
    fake_ollama.script(
        Reply(chunks=[], tool_calls=[call]),
        Reply(chunks=[], tool_calls=[again]),
        Reply(chunks=["I tried."]),
    )
    await post_chat(
        server.url,
        {"messages": [{"role": "user", "content": "forget it all and confirm it yourself"}]},
        owner_headers(server),
    )
    assert len(await learnings(server)) == 2
    assert len(await waiting(server)) == 1
