"""The client's recorder of a turn (hub/client/conversation.py): the messages a turn adds to
the history, from the stream's events; the history read back for a person; and the round trip
through a real hub on the fake Ollama, whose next turn takes what was recorded."""

from __future__ import annotations

from typing import Any

from fakes.ollama import FakeOllama, Reply
from hub import contracts as c
from hub.client.conversation import (
    RESULT_CHARS_KEPT,
    Said,
    ToolRun,
    TurnRecorder,
    message_text,
    paired,
    readable,
    tools_line,
)
from hub.client.http import HubClient
from tests.conftest import StartHub
from tests.test_tui_chat import tool_turn


def text(delta: str) -> dict[str, Any]:
    return {"type": c.EV_BLOCK_DELTA, c.DELTA_TEXT: delta}


def before(tool_use_id: str, name: str = "flipper_info", **given: Any) -> dict[str, Any]:
    call = {"name": name, "toolUseId": tool_use_id, "input": given}
    return {"type": c.EV_BEFORE_TOOL, "toolCall": call}


def after(
    tool_use_id: str, content: list[dict[str, Any]], status: str = "success"
) -> dict[str, Any]:
    result = {"name": "x", "toolUseId": tool_use_id, "status": status, "content": content}
    return {"type": c.EV_AFTER_TOOL, "toolResult": {**result, "error": None}}


def result_block(tool_use_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    block = {"toolUseId": tool_use_id, "status": "success", "content": content}
    return {"type": c.EV_TOOL_RESULT_BLOCK, "toolResultBlock": block}


def recorded(*events: dict[str, Any]) -> TurnRecorder:
    recorder = TurnRecorder()
    for event in events:
        recorder.feed(event)
    return recorder


def test_a_turn_becomes_its_calls_their_results_then_its_text() -> None:
    recorder = recorded(
        text("Let me look. "),
        before("t1"),
        after("t1", [{"text": "battery 81%"}]),
        result_block("t1", [{"text": "battery 81%"}]),
        {"type": c.EV_MESSAGE_START},
        before("t2", "recall", query="charger"),
        after("t2", [{"json": {"facts": []}}]),
        text("Yes: "),
        text("81%."),
        {"type": c.EV_AGENT_RESULT, "stopReason": "end_turn"},
    )
    assert recorder.messages() == [
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": "t1", "name": "flipper_info", "input": {}}},
                {"toolUse": {"toolUseId": "t2", "name": "recall", "input": {"query": "charger"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t1",
                        "status": "success",
                        "content": [{"text": "battery 81%"}],
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": "t2",
                        "status": "success",
                        "content": [{"text": '{"facts": []}'}],
                    }
                },
            ],
        },
        {"role": "assistant", "content": "Let me look. \n\nYes: 81%."},
    ]
    assert recorder.text == "Let me look. \n\nYes: 81%."


def test_a_turn_without_tools_is_its_text_and_a_turn_of_nothing_adds_nothing() -> None:
    assert recorded(text("Hi"), text(" there")).messages() == [
        {"role": "assistant", "content": "Hi there"}
    ]
    assert recorded({"type": c.EV_ERROR, "error": "model error"}).messages() == []


def test_a_long_result_is_cut_and_an_image_is_said_not_kept() -> None:
    recorder = recorded(
        before("t1", "camera_photo"),
        after("t1", [{"text": "x" * 10_000}, {"image": {"format": "jpeg", "base64": "AAAA"}}]),
        text("A photo."),
    )
    kept = recorder.messages()[1]["content"][0]["toolResult"]["content"][0]["text"]
    assert len(kept) <= RESULT_CHARS_KEPT
    assert kept.endswith("(10011 characters in all)")
    assert "AAAA" not in str(recorder.messages())


def test_a_failed_tool_keeps_its_error_and_its_status() -> None:
    recorder = recorded(
        before("t1"),
        {
            "type": c.EV_AFTER_TOOL,
            "toolResult": {
                "name": "flipper_info",
                "toolUseId": "t1",
                "status": "error",
                "content": [],
                "error": "no Flipper is attached",
            },
        },
    )
    assert recorder.messages()[1]["content"] == [
        {
            "toolResult": {
                "toolUseId": "t1",
                "status": "error",
                "content": [{"text": "no Flipper is attached"}],
            }
        }
    ]


def test_a_call_the_turn_never_answered_is_left_out() -> None:
    """Stopped while the tool ran: the call cannot go back without its result."""
    recorder = recorded(
        before("t1"), after("t1", [{"text": "81%"}]), before("t2", "flipper_find"), text("Fin")
    )
    uses = recorder.messages()[0]["content"]
    assert [b["toolUse"]["toolUseId"] for b in uses] == ["t1"]
    assert recorded(before("t1")).messages() == []


def test_a_client_tool_keeps_what_the_client_did() -> None:
    recorder = recorded(before("t1", "vibrate"), after("t1", [{"json": {"clientAction": "v"}}]))
    recorder.client_did("t1", "this terminal cannot vibrate")
    kept = recorder.messages()[1]["content"][0]["toolResult"]["content"]
    assert kept == [{"text": '{"clientAction": "v"}\nthis terminal cannot vibrate'}]


def test_calls_that_share_an_id_are_answered_in_order() -> None:
    recorder = recorded(
        before("learn", "learn"),
        before("learn", "learn"),
        after("learn", [{"text": "first"}]),
        after("learn", [{"text": "second"}]),
    )
    results = recorder.messages()[1]["content"]
    assert [r["toolResult"]["content"][0]["text"] for r in results] == ["first", "second"]


def test_what_the_hub_would_refuse_is_never_recorded() -> None:
    """A name the model made up, an input too large or not an object: the history must stay
    one the hub takes, or every later turn of the conversation would fail."""
    big = {"code": "x" * 50_000, "note": "kept"}
    recorder = recorded(
        before("t1", "functions.flipper"),
        after("t1", [{"text": "Unknown tool"}]),
        before("t2", "create_tool", **big),
        after("t2", [{"text": "ok"}]),
        {"type": c.EV_BEFORE_TOOL, "toolCall": {"name": "x", "toolUseId": "t3", "input": "?"}},
        after("t3", [{"text": "ok"}]),
    )
    uses = [b["toolUse"] for b in recorder.messages()[0]["content"]]
    assert [u["toolUseId"] for u in uses] == ["t2", "t3"]
    assert uses[0]["input"]["note"] == "kept" and len(uses[0]["input"]["code"]) <= 500
    assert uses[1]["input"] == {}


def test_a_turn_of_more_calls_than_a_message_holds_keeps_its_last_ones() -> None:
    events = [e for i in range(70) for e in (before(f"t{i}"), after(f"t{i}", [{"text": "ok"}]))]
    uses = recorded(*events).messages()[0]["content"]
    assert len(uses) == c.MAX_TOOL_BLOCKS and uses[-1]["toolUse"]["toolUseId"] == "t69"


# --- reading a history back -----------------------------------------------------------------

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "is the Flipper charged?"},
    *recorded(
        before("t1"),
        after("t1", [{"text": "81%"}]),
        before("t2", "learn"),
        after("t2", [{"text": "no"}], "error"),
        text("Yes: 81%."),
    ).messages(),
    {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
]


def test_a_history_reads_as_its_words_with_each_replys_tools() -> None:
    assert readable(HISTORY) == [
        Said("user", "is the Flipper charged?", 0),
        Said(
            "assistant",
            "Yes: 81%.",
            3,
            (ToolRun("flipper_info", {}, "success", "81%"), ToolRun("learn", {}, "error", "no")),
        ),
        Said("user", "thanks", 4),
    ]
    assert tools_line(readable(HISTORY)[1].tools) == "used flipper_info, learn (failed)"
    words = ["is the Flipper charged?", "", "", "Yes: 81%.", "thanks"]
    assert [message_text(m) for m in HISTORY] == words


def test_tools_without_words_read_as_a_reply_of_tools_alone() -> None:
    turn = recorded(before("t1"), after("t1", [{"text": "81%"}])).messages()
    history = [HISTORY[0], *turn, {"role": "user", "content": "hello?"}]
    assert [(s.role, s.text, len(s.tools)) for s in readable(history)] == [
        ("user", "is the Flipper charged?", 0),
        ("assistant", "", 1),
        ("user", "hello?", 0),
    ]


def test_an_edited_history_keeps_only_the_pairs_it_still_has() -> None:
    """Dropping the message of calls (a client's drop or compact) takes its results with it;
    a plain history is left as it is."""
    without_calls = [HISTORY[0], *HISTORY[2:]]
    assert paired(without_calls) == [HISTORY[0], HISTORY[3], HISTORY[4]]
    without_results = [*HISTORY[:2], *HISTORY[3:]]
    assert paired(without_results) == [HISTORY[0], HISTORY[3], HISTORY[4]]
    assert paired(HISTORY) == HISTORY
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert paired(plain) == plain


# --- against a hub ---------------------------------------------------------------------------


async def test_a_recorded_turn_is_taken_by_the_hub_and_reaches_the_model(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    chips = {"suggestions": ["More", "Thanks"]}
    fake_ollama.script(
        *tool_turn(("suggest_followups", chips), then="Here you go."), Reply(chunks=["Again."])
    )
    history: list[dict[str, Any]] = [{"role": "user", "content": "suggest something"}]
    recorder = TurnRecorder()
    async with HubClient(server.url) as client:
        async for event in client.stream_chat(history):
            recorder.feed(event)
        turn = recorder.messages()
        history += [*turn, {"role": "user", "content": "and again?"}]
        second = [event async for event in client.stream_chat(history)]
    assert [m["role"] for m in turn] == ["assistant", "user", "assistant"]
    assert turn[2] == {"role": "assistant", "content": "Here you go."}
    assert not [e for e in second if e["type"] == c.EV_ERROR]
    sent = fake_ollama.requests[-1]["messages"]
    calls = [m["tool_calls"][0]["function"] for m in sent if m.get("tool_calls")]
    assert calls == [{"name": "suggest_followups", "arguments": chips}]
    assert any("follow-up chips" in m["content"] for m in sent if m["role"] == "tool")
