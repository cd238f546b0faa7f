"""POST /api/chat with the tool calls and results of earlier turns in its history: the shapes a
client sends, what reaches the model (strands' real Ollama provider, the fake Ollama), and the
400s for a history strands or a provider would refuse."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from hub import contracts as c
from hub.api.server import RunningServer
from tests.conftest import StartHub
from tests.sse import post_chat


def use(tool_use_id: str, name: str = "flipper_info", **given: Any) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": tool_use_id, "name": name, "input": given}}


def result(tool_use_id: str, text: str = "battery 81%", status: str = "success") -> dict[str, Any]:
    content = [{"text": text}]
    return {"toolResult": {"toolUseId": tool_use_id, "status": status, "content": content}}


def said(role: str, content: Any) -> dict[str, Any]:
    return {"role": role, "content": content}


ASKED = said("user", "is the Flipper charged?")
NEXT = said("user", "and now?")


@pytest.fixture
async def hub(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url)


def dialogue(fake_ollama: FakeOllama) -> list[dict[str, Any]]:
    """What the model was sent in the last request, without the system prompt."""
    return [m for m in fake_ollama.requests[-1]["messages"] if m["role"] != "system"]


async def test_a_turns_calls_results_and_text_reach_the_model_in_order(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    """The shape the TUI sends: every call in one assistant message, every result in the user
    message after it, then the reply's text."""
    messages = [
        ASKED,
        said("assistant", [use("t1"), use("t2", "recall", query="charger")]),
        said("user", [result("t1"), result("t2", "no facts about a charger")]),
        said("assistant", "Yes: 81%."),
        NEXT,
    ]
    transcript = await post_chat(hub.url, {"messages": messages})
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    sent = dialogue(fake_ollama)
    roles = ["user", "assistant", "assistant", "tool", "tool", "assistant", "user"]
    assert [m["role"] for m in sent] == roles
    calls = [m["tool_calls"][0]["function"] for m in sent if m.get("tool_calls")]
    assert calls == [
        {"name": "flipper_info", "arguments": {}},
        {"name": "recall", "arguments": {"query": "charger"}},
    ]
    assert [m["content"] for m in sent if m["role"] == "tool"] == [
        "battery 81%",
        "no facts about a charger",
    ]
    assert sent[-2:] == [
        {"role": "assistant", "content": "Yes: 81%."},
        {"role": "user", "content": "and now?"},
    ]


async def test_a_turn_of_several_rounds_as_it_happened_is_taken(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    """Calls, results, more calls (after a word), more results, then the text; and a result
    of JSON, and a failed one."""
    json_result = {"toolResult": {"toolUseId": "b", "content": [{"json": {"volts": 4.1}}]}}
    messages = [
        ASKED,
        said("assistant", [use("a")]),
        said("user", [result("a", "the Flipper is asleep", "error")]),
        said("assistant", [{"text": "Waking it."}, use("b", "flipper_wake")]),
        said("user", [json_result]),
        said("assistant", "4.1 V."),
        NEXT,
    ]
    transcript = await post_chat(hub.url, {"messages": messages})
    assert not transcript.of_type(c.EV_ERROR)
    tools = [m["content"] for m in dialogue(fake_ollama) if m["role"] == "tool"]
    assert tools == ["the Flipper is asleep", json.dumps({"volts": 4.1})]


async def test_a_turn_that_ran_tools_and_said_nothing_is_taken(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    """The results are followed by the person's next words, not by a reply."""
    messages = [ASKED, said("assistant", [use("t1")]), said("user", [result("t1")]), NEXT]
    transcript = await post_chat(hub.url, {"messages": messages})
    assert not transcript.of_type(c.EV_ERROR)
    assert dialogue(fake_ollama)[-1] == {"role": "user", "content": "and now?"}


GOOD_CALL = said("assistant", [use("t1")])
GOOD_ANSWER = said("user", [result("t1")])


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([said("user", [use("t1"), {"text": "hi"}])], "messages[0].content[0]: a toolUse block"),
        (
            [ASKED, said("assistant", [result("t1")]), NEXT],
            "messages[1].content[0]: a toolResult block belongs in a user message",
        ),
        (
            [ASKED, said("assistant", [use("t1", "flipper info")]), GOOD_ANSWER, NEXT],
            "messages[1].content[0].toolUse.name must be 1-64",
        ),
        (
            [ASKED, said("assistant", [use("x" * 129)]), GOOD_ANSWER, NEXT],
            "messages[1].content[0].toolUse.toolUseId must be 1-128",
        ),
        (
            [ASKED, said("assistant", [use("t 1")]), GOOD_ANSWER, NEXT],
            "toolUse.toolUseId must be 1-128 visible characters",
        ),
        (
            [
                ASKED,
                said("assistant", [{"toolUse": {"toolUseId": "t1", "name": "a", "input": "x"}}]),
                GOOD_ANSWER,
                NEXT,
            ],
            "messages[1].content[0].toolUse.input must be a JSON object",
        ),
        (
            [ASKED, said("assistant", [use("t1", deep=[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]])]), NEXT],
            "toolUse.input is nested deeper than 16 levels",
        ),
        (
            [ASKED, said("assistant", [use("t1", text="x" * 20_001)]), GOOD_ANSWER, NEXT],
            "toolUse.input is longer than 20000 characters as JSON",
        ),
        (
            [ASKED, GOOD_CALL, said("user", [result("t1", "x" * 20_001)]), NEXT],
            "messages[2].content[0].toolResult.content is longer than 20000 characters",
        ),
        (
            [ASKED, GOOD_CALL, said("user", [result("t1", status="fine")]), NEXT],
            "messages[2].content[0].toolResult.status must be one of success, error",
        ),
        (
            [
                ASKED,
                GOOD_CALL,
                said("user", [{"toolResult": {"toolUseId": "t1", "content": [{"image": {}}]}}]),
                NEXT,
            ],
            'toolResult.content[0] must be {"text": string} or {"json": value}',
        ),
        (
            [ASKED, said("assistant", [{**use("t1"), "text": "hi"}]), GOOD_ANSWER, NEXT],
            "a toolUse block holds only toolUse (it also has text)",
        ),
        (
            [
                ASKED,
                said("assistant", [{"toolUse": {**use("t1")["toolUse"], "extra": 1}}]),
                GOOD_ANSWER,
                NEXT,
            ],
            "toolUse has fields it does not take: extra",
        ),
        (
            [ASKED, said("assistant", [use(f"t{i}") for i in range(65)]), NEXT],
            "holds more than 64 toolUse or toolResult blocks",
        ),
        (
            [ASKED, GOOD_CALL, said("user", [result("t9")]), NEXT],
            "messages[2]: the toolResult for t9 matches no earlier toolUse block",
        ),
        (
            [ASKED, GOOD_CALL, GOOD_ANSWER, said("assistant", "ok"), GOOD_ANSWER, NEXT],
            "messages[4]: the toolResult for t1 answers no call of the assistant message right "
            "before it",
        ),
        (
            [ASKED, GOOD_CALL, GOOD_ANSWER, said("user", [result("t1")]), NEXT],
            "messages[3]: the toolResult for t1 answers no call",
        ),
        (
            [ASKED, GOOD_CALL, said("assistant", "Yes."), NEXT],
            "messages[2]: each toolUse of messages[1] needs its toolResult in the user message "
            "right after it; not answered: t1",
        ),
        (
            [ASKED, said("assistant", [use("t1"), use("t2")]), GOOD_ANSWER, NEXT],
            "messages[2]: each toolUse of messages[1] needs its toolResult",
        ),
        (
            [ASKED, GOOD_CALL, NEXT],
            "not answered: t1",
        ),
        (
            [ASKED, GOOD_CALL, GOOD_ANSWER],
            "messages[2]: the last message must be the person's words",
        ),
        (
            [ASKED, GOOD_CALL, said("user", [result("t1"), {"text": "and now?"}])],
            "its toolResult blocks go in a user message of their own before it",
        ),
        ([ASKED, GOOD_CALL], "the last message must have role user"),
    ],
)
async def test_a_history_strands_would_refuse_is_a_400_naming_the_field(
    hub: RunningServer, fake_ollama: FakeOllama, messages: list[Any], problem: str
) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{hub.url}/api/chat", json={"messages": messages}) as response,
    ):
        assert response.status == 400
        assert problem in (await response.json())["error"]
    assert not fake_ollama.requests


async def test_a_repeated_id_is_answered_once_per_call(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    """Two calls may share an id (an older Ollama provider used the tool's name): each is
    answered by one result."""
    messages = [
        ASKED,
        said("assistant", [use("flipper_info"), use("flipper_info")]),
        said("user", [result("flipper_info", "81%"), result("flipper_info", "80%")]),
        said("assistant", "81%, then 80%."),
        NEXT,
    ]
    transcript = await post_chat(hub.url, {"messages": messages})
    assert not transcript.of_type(c.EV_ERROR)
    assert [m["content"] for m in dialogue(fake_ollama) if m["role"] == "tool"] == ["81%", "80%"]


async def test_tool_blocks_in_history_do_not_stop_a_new_tool_call(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    """The turn after a recorded one calls a tool of its own, as the first did."""
    fake_ollama.script(
        Reply(
            chunks=[],
            tool_calls=[{"function": {"name": "suggest_followups", "arguments": {"x": 1}}}],
        ),
        Reply(chunks=["Done."]),
    )
    messages = [ASKED, GOOD_CALL, GOOD_ANSWER, said("assistant", "Yes: 81%."), NEXT]
    transcript = await post_chat(hub.url, {"messages": messages})
    assert transcript.of_type(c.EV_BEFORE_TOOL) and transcript.text == "Done."
    # The second round reads the old result, then the new one.
    second = [m["content"] for m in fake_ollama.requests[1]["messages"] if m["role"] == "tool"]
    assert second[0] == "battery 81%" and len(second) == 2
