"""A small model in a conversation, end to end through a scripted runner: a device question
asked again after it was answered calls the tool again; words that state a reading with no
result behind them are asked again as the call; a reminder becomes a job; a sum is worked out
by the hub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from firmware_bridges.emulators.flipper import FlipperEmulator
from harness.waits import until
from hub import contracts as c
from hub.agent import compose
from hub.agent.small import checks, history
from hub.agent.small.history import HISTORY_HEADER
from tests.conftest import StartHub, owner_headers
from tests.sse import SseTranscript, post_chat
from tests.test_small_tools import emulator, requests_sent, scripted_hub

__all__ = ["emulator"]  # the fixture, shared

STATUS_CALL = '<tool_call>\n{"name": "flipper_status", "arguments": {}}\n</tool_call>'


async def said(server: Any, messages: list[dict[str, Any]]) -> SseTranscript:
    return await post_chat(server.url, {"messages": messages}, owner_headers(server))


async def test_a_reading_asked_again_is_read_again_not_repeated(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    """The history holds an answered battery question, as a client sends it back in words; the
    model answers the next one from it ("It is at 80%. "), the check says that states a reading,
    and the tool is called for this turn's result."""
    replies = ["It is still at 80%. ", "yes", STATUS_CALL, "yes", "Your Flipper is at 87%."]
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, replies)
    history = [
        {"role": "user", "content": "Is my Flipper charged?"},
        {"role": "assistant", "content": "Your Flipper's battery is at 80%."},
        {"role": "user", "content": "And now, is it still charged?"},
    ]
    transcript = await said(server, history)
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    [result] = [e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert result["name"] == "flipper_status" and "battery 87" in result["content"][0]["text"]
    assert "80%" not in transcript.text, "the old reading is never shown"
    assert transcript.text == "Your Flipper is at 87%."
    first, claimed, forced, *_ = requests_sent(log)
    earlier = [m["content"] for m in first["messages"] if m["content"].startswith(HISTORY_HEADER)]
    assert earlier and "Your Flipper's battery is at 80%." in earlier[0], "the history, as a note"
    assert first["messages"][-1]["content"] == "And now, is it still charged?"
    assert claimed["messages"][-1]["content"] == checks.CLAIM_CHECK.asked("It is still at 80%. ")
    assert forced["must_call"] == "flipper_status"


async def test_a_reminder_becomes_a_job(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    call = (
        '<tool_call>\n{"name": "schedule", "arguments": {"action": "create", "prompt": '
        '"Remind me to call the plumber", "run_in_minutes": 45, "title": "Call the plumber"}}'
        "\n</tool_call>"
    )
    replies = [call, "yes", "I'll remind you in 45 minutes to call the plumber."]
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, replies)
    asked = "Set a reminder in 45 minutes to call the plumber."
    transcript = await said(server, [{"role": "user", "content": asked}])
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    [result] = [e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert result["name"] == "schedule" and result["status"] == "success"
    [offered] = [r for r in requests_sent(log) if r.get("tools")][:1]
    assert "schedule" in [f["function"]["name"] for f in offered["tools"]], "offered for it"
    jobs_url = f"{server.url}/api/jobs"
    async with (
        aiohttp.ClientSession() as http,
        http.get(jobs_url, headers=owner_headers(server)) as answer,
    ):
        listed = await answer.json()
    jobs = listed["jobs"] if isinstance(listed, dict) else listed
    assert [j["title"] for j in jobs if j.get("kind", "job") == "job"] == ["Call the plumber"]
    assert "local" in result["content"][0]["text"], "the time as the person reads it"


async def test_a_sum_is_worked_out_by_the_hub(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    call = '<tool_call>\n{"name": "calculate", "arguments": {"expression": "17% of 240"}}'
    replies = [call + "\n</tool_call>", "yes", "17% of 240 is 40.8."]
    server, _ = await scripted_hub(start_hub, closed_port, tmp_path, replies)
    transcript = await said(server, [{"role": "user", "content": "What is 17% of 240?"}])
    [result] = [e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert result["content"][0]["text"] == "17% of 240 = 40.8"
    assert transcript.text == "17% of 240 is 40.8."


async def test_memory_listens_and_a_correction_supersedes_what_it_corrects(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    """What the person says about the people in their life is kept after the reply, without
    "remember"; a later correction replaces the fact it corrects; each is on the ring."""
    replies = [
        "How lovely.",
        "no",  # the reply claims no act
        "The user's niece Carolina is visiting on Saturday.",  # heard after the reply
        "Noted, Sunday then.",
        "no",
        "The user's niece Carolina's visit moved to Sunday.",
        "yes",  # it replaces the Saturday fact
    ]
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, replies, listen=True)
    me = server.hub.owner.id
    first = "My niece Carolina is visiting on Saturday."
    transcript = await said(server, [{"role": "user", "content": first}])
    assert transcript.text == "How lovely." and not transcript.of_type(c.EV_BEFORE_TOOL)
    await until(lambda: bool(server.hub.memory.recent(me, 10)), what="the fact heard")
    [saturday] = server.hub.memory.recent(me, 10)
    assert saturday.text == "The user's niece Carolina is visiting on Saturday."
    history = [
        {"role": "user", "content": first},
        {"role": "assistant", "content": "How lovely."},
        {"role": "user", "content": "Actually, her visit moved to Sunday."},
    ]
    await said(server, history)
    await until(lambda: not server.hub.memory.get(me, saturday.id).current, what="superseded")
    [sunday] = server.hub.memory.recent(me, 10)
    assert sunday.text == "The user's niece Carolina's visit moved to Sunday."
    events = server.hub.devices.events.recent(me)
    heard = [e.detail for e in events if e.kind == "remembered"]
    assert [h["fact"] for h in heard] == [saturday.text, sunday.text]
    assert heard[1]["supersedes"] == [saturday.id] and heard[1]["supersededFact"] == saturday.text
    listened = requests_sent(log)[2]
    assert listened["grammar"].startswith('root ::= "none"'), "none, or lines of facts"
    assert listened["messages"][-1]["content"].startswith(f"Message: {json.dumps(first)}")


async def test_a_question_or_a_memory_tool_turn_is_not_listened_to(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, ["Rex.", "no"], listen=True)
    await said(server, [{"role": "user", "content": "what's my dog called?"}])
    assert len(requests_sent(log)) == 2, "the reply and its check; nothing heard after it"


async def test_a_turn_a_tool_served_is_not_listened_to(
    start_hub: StartHub,
    closed_port: int,
    tmp_path: Path,
    emulator: FlipperEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reminder is a request, not a fact about the person: kept as one, "each morning at 7
    remind me to stretch" became "The user sets a reminder to stretch at 7 AM every morning."."""
    heard: list[str] = []
    monkeypatch.setattr(compose, "listen_after", lambda _listener, _owner, said: heard.append(said))
    call = (
        '<tool_call>\n{"name": "schedule_alert", "arguments": {"title": "Stretch", '
        '"in_minutes": 30}}\n</tool_call>'
    )
    replies = [call, "yes", "I'll remind you in 30 minutes to stretch.", "How lovely.", "no"]
    server, _ = await scripted_hub(start_hub, closed_port, tmp_path, replies, listen=True)
    reminded = await said(
        server, [{"role": "user", "content": "in 30 minutes remind me to stretch"}]
    )
    assert [e["toolCall"]["name"] for e in reminded.of_type(c.EV_BEFORE_TOOL)] == ["schedule_alert"]
    assert heard == [], "a tool served the message"
    stated = "my niece Carolina is visiting on Saturday"
    await said(server, [{"role": "user", "content": stated}])
    assert heard == [stated], "a statement no tool served is listened to"


WRONG_SCHEDULE = (
    '<tool_call>\n{"name": "schedule", "arguments": {"action": "create", "prompt": '
    '"Call the plumber", "every": "*/45"}}\n</tool_call>'
)


async def test_a_call_that_failed_for_its_arguments_is_made_again_once(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    """A small model fills every argument and mixes their forms; told why the call failed, it
    calls again, and a second failure is answered."""
    wrong = WRONG_SCHEDULE
    right = wrong.replace('"every": "*/45"', '"run_in_minutes": 45')
    replies = [wrong, "yes", right, "yes", "I'll remind you in 45 minutes."]
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, replies)
    asked = "Set a reminder in 45 minutes to call the plumber."
    transcript = await said(server, [{"role": "user", "content": asked}])
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    results = [e["toolResult"]["status"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert results == ["error", "success"]
    retried = requests_sent(log)[2]
    assert retried["messages"][-1]["content"].endswith(history.RETRY_AFTER_ERROR)
    assert retried.get("constrain") is True, "offered the tools again, as a call"
    assert transcript.text == "I'll remind you in 45 minutes."


async def test_a_call_that_failed_twice_is_answered(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    twice = [WRONG_SCHEDULE, "yes", WRONG_SCHEDULE, "yes", "It did not work."]
    server, _ = await scripted_hub(start_hub, closed_port, tmp_path, twice)
    asked = "Set a reminder in 45 minutes to call the plumber."
    transcript = await said(server, [{"role": "user", "content": asked}])
    results = [e["toolResult"]["status"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert results == ["error", "error"] and transcript.text == "It did not work."
