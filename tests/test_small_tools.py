"""The small-model tool protocol: lenient reading, strict checks, the tools offered."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from strands.types.content import Messages
from strands.types.tools import ToolSpec

from drivers.base import SmallModelHints
from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState
from harness.waits import until
from hub import contracts as c
from hub.agent import compose
from hub.agent.embedded import EmbeddedModel, cached_embed
from hub.agent.prompt import MATCHED_HEADER, REMEMBERED_HEADER
from hub.agent.runner.process import RunnerSpec
from hub.agent.runner.supervisor import RunnerSupervisor
from hub.agent.small import calls, checks, facts, wording
from hub.agent.small import offer as offering
from hub.agent.small.context import SmallTurn, declared_hints
from hub.agent.small.history import flatten_messages
from hub.agent.tools import memory as memory_tools
from hub.api.server import RunningServer
from hub.memory.model import Fact
from tests.confirming import proposal
from tests.conftest import StartHub, owner_headers
from tests.sse import SseTranscript, post_chat


def spec(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"name": name, "description": description, "inputSchema": {"json": schema}}


LEARN = spec(
    "learn",
    "Store one self-contained fact about the user, readable on its own later.",
    {"fact": {"type": "string"}, "supersedes": {"type": "array", "items": {"type": "integer"}}},
    ["fact"],
)
STATUS = spec("flipper_status", "The Flipper Zero attached to this hub: battery, firmware.", {}, [])
LISTEN = spec(
    "flipper_listen",
    "Listen with the Flipper for a while and report what it decoded.",
    {"kind": {"type": "string", "enum": ["ir", "subghz", "nfc"]}, "seconds": {"type": "integer"}},
    ["kind"],
)
OFFERED = {s["name"]: s for s in (LEARN, STATUS, LISTEN)}
# What the hub's own memory tools declare, and a device's tools of one family.
TURN = SmallTurn(
    hints={
        **declared_hints([memory_tools.learn, memory_tools.recall, memory_tools.unlearn]),
        "flipper_status": SmallModelHints(family="flipper"),
        "flipper_listen": SmallModelHints(family="flipper"),
    }
)


@pytest.mark.parametrize(
    "reply",
    [
        '<tool_call>\n{"name": "learn", "arguments": {"fact": "my sister is Ana"}}\n</tool_call>',
        '```json\n{"name": "learn", "arguments": {"fact": "my sister is Ana"}}\n```',
        '{"name": "learn", "arguments": {"fact": "my sister is Ana"}}',
        '{{"name": "learn", "arguments": {"fact": "my sister is Ana"}}}',
        '{"name": "learn", "arguments": "{\\"fact\\": \\"my sister is Ana\\"}"}',
        '{"function": {"name": "learn", "arguments": {"fact": "my sister is Ana"}}}',
        '<tool_call>\n{"name": "learn", "arguments": {"fact": "my sister is Ana"}}',
        'Sure.\n<tool_call>{"tool": "learn", "parameters": {"fact": "my sister is Ana"}}'
        "</tool_call>",
    ],
)
def test_a_call_is_read_in_any_of_its_shapes(reply: str) -> None:
    parsed = calls.parse_reply(reply, OFFERED)
    assert parsed.call == calls.Call("learn", {"fact": "my sister is Ana"})
    assert "{" not in parsed.text and "tool_call" not in parsed.text


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ('<tool_call>{"name": "joke", "arguments": {}}</tool_call>', "'joke' is not an offered"),
        ('{"name": "flipper_listen", "arguments": {"kind": "radio"}}', "not valid"),
        ('{"name": "flipper_listen", "arguments": {}}', "'kind' is a required property"),
        ('{"name": "learn", "arguments": ["my sister"]}', "not a JSON object"),
        ('{"arguments": {"fact": "x"}}', "no tool name"),
    ],
)
def test_a_call_outside_the_offer_or_its_schema_is_no_call(reply: str, why: str) -> None:
    parsed = calls.parse_reply(reply, OFFERED)
    assert parsed.call is None
    assert why in parsed.refused
    assert parsed.text == "", "the refused call is not shown as the answer"


def test_nulls_and_names_the_schema_does_not_list_are_dropped() -> None:
    reply = (
        '<tools>\n{"name": "flipper_listen", "arguments": {"kind": "ir", "seconds": null, '
        '"battery": null, "colour": "red"}}\n</tools>'
    )
    parsed = calls.parse_reply(reply, OFFERED)
    assert parsed.call == calls.Call("flipper_listen", {"kind": "ir"})
    assert parsed.text == ""


def test_plain_text_is_an_answer() -> None:
    parsed = calls.parse_reply("Your sister is called Ana.", OFFERED)
    assert parsed == calls.Parsed(None, "Your sister is called Ana.")
    assert not calls.looks_like_call("Your sister")
    assert calls.looks_like_call("  <tool")
    names = ["flipper_status", "learn"]
    assert calls.looks_like_call("flipper_st", names), "may be a tool's name: read on"
    assert calls.looks_like_call("flipper_status", names)
    assert not calls.looks_like_call("flipper is charged", names)
    assert not calls.looks_like_call("Fine", names)


def test_the_first_valid_call_wins_over_an_invented_one() -> None:
    reply = '{"name": "calculate", "arguments": {}}\n{"name": "flipper_status", "arguments": {}}'
    assert calls.parse_reply(reply, OFFERED).call == calls.Call("flipper_status", {})


def test_functions_and_the_fallback_prompt_carry_names_and_schemas() -> None:
    functions = [calls.as_function(s) for s in (LEARN, LISTEN)]
    assert functions[1]["function"]["parameters"]["required"] == ["kind"]
    prompt = calls.tools_prompt(functions)
    assert '"name": "learn"' in prompt and "<tool_call>" in prompt


def test_the_tools_block_begins_the_same_for_every_message() -> None:
    """The tools always offered first, the rest in mount order, ``answer`` last: offers for
    different messages share their beginning, which the runner keeps."""
    recall = spec("recall", "Search memory.", {}, [])
    ordered = [s["name"] for s in calls.with_answer([recall, LEARN, STATUS], TURN)]
    assert ordered == ["learn", "recall", "flipper_status", "answer"]
    assert [s["name"] for s in calls.with_answer([LEARN], TURN)] == ["learn", "answer"]


def test_a_memory_write_is_asked_about_and_a_tool_well_above_the_rest_is_not() -> None:
    learn = calls.Call("learn", {"fact": "The user's sister is called Ana."})
    asked = checks.confirmation(learn, "set the thermostat to 21 degrees", TURN, LEARN, True)
    assert asked and "set the thermostat" in asked[-1]["content"]
    assert memory_tools.learn.small_model_hints.confirm in asked[0]["content"], "its own question"
    forget = calls.Call("unlearn", {"about": "my bicycle"})
    asked = checks.confirmation(forget, "forget what you know about my bicycle", TURN, None, False)
    assert "forget something you know about them" in asked[0]["content"]
    sure = calls.Call("flipper_status", {})
    assert checks.confirmation(sure, "what firmware is my Flipper on?", TURN, STATUS, True) == []
    unsure = checks.confirmation(sure, "is my Flipper charged?", TURN, STATUS, False)
    assert unsure[-1]["content"] == checks.TOOL_CHECK.asked(
        "is my Flipper charged?", f"flipper_status — {offering.short_description(STATUS)}"
    )


def test_few_tools_are_all_offered_and_many_are_chosen_by_the_message() -> None:
    assert offering.choose([LEARN, STATUS], "hello", cached_embed, TURN).tools == [LEARN, STATUS]
    many = [
        LEARN,
        spec("recall", "Search everything learned about the user by meaning.", {}, []),
        STATUS,
        LISTEN,
        spec("camera_photo", "Take a photo with the webcam of this machine.", {}, []),
        spec("set_theme", "Change the chat's colours.", {}, []),
        spec("speak", "Say something aloud with the device's speech.", {}, []),
        spec("open_url", "Open a web page on the user's device.", {}, []),
    ]
    offer = offering.choose(many, "is my Flipper charged?", cached_embed, TURN)
    chosen = [s["name"] for s in offer.tools]
    assert len(chosen) <= offering.OFFERED_AT_MOST
    assert {"learn", "flipper_status"} <= set(chosen)
    assert not {"set_theme", "speak", "open_url", "recall"} & set(chosen), "unrelated stay out"
    small_talk = offering.choose(many, "good morning, how was your night?", cached_embed, TURN)
    assert [s["name"] for s in small_talk.tools] == ["learn"]
    asked = offering.choose(many, "search what you have learned about my job", cached_embed, TURN)
    assert "recall" in [s["name"] for s in asked.tools]
    assert "flipper_status" in offer.nearest and len(offer.nearest) == offering.NEAREST
    photo = offering.choose(many, "take a photo with the webcam", cached_embed, TURN, at_most=3)
    assert "camera_photo" in [s["name"] for s in photo.tools]
    assert photo.nearest[0] == "camera_photo"


def test_optional_arguments_that_take_objects_and_null_defaults_are_not_offered() -> None:
    schema = {
        "type": "object",
        "properties": {
            "fact": {"type": "string"},
            "supersedes": {"type": "array", "items": {"type": "string"}, "default": None},
            "links": {"type": "array", "items": {"type": "object"}, "default": None},
            "where": {"type": "object", "properties": {"x": {"type": "number"}}},
            "needed": {"type": "object", "properties": {}},
        },
        "required": ["fact", "needed"],
    }
    offered = calls.offered_schema(schema)
    assert list(offered["properties"]) == ["fact", "supersedes", "needed"]
    assert "default" not in offered["properties"]["supersedes"]
    assert offered["required"] == ["fact", "needed"]


def test_a_small_model_cannot_make_a_fact_public() -> None:
    sharing = spec(
        "learn",
        "Store one fact.",
        {"fact": {"type": "string"}, "visibility": {"type": "string", "default": "private"}},
        ["fact"],
    )
    offered = calls.as_function(sharing, TURN)["function"]["parameters"]
    assert list(offered["properties"]) == ["fact"]
    reply = '{"name": "learn", "arguments": {"fact": "The user likes tea", "visibility": "public"}}'
    call = calls.parse_reply(reply, {"learn": sharing}, TURN).call
    assert call == calls.Call("learn", {"fact": "The user likes tea"}), "it stays private"


@pytest.mark.parametrize(
    ("reply", "named"),
    [
        ("To make it beep, use the `flipper_find` function with signal true.", "flipper_find"),
        ('You can use the "nicla_status" tool.', "nicla_status"),
        ("call flipper_find(signal=true)", ""),  # not named as a tool
        ("Use the flipper_find function or the `nicla_status` one.", ""),  # two
        ("Try the learn function to keep it.", "learn"),
        ("I will learn that.", ""),
        ('```json\n{"name": "create_ai", "arguments": {"name": "Ch', "create_ai"),
    ],
)
def test_a_reply_that_describes_a_call_names_its_tool(reply: str, named: str) -> None:
    offered = ["learn", "flipper_find", "nicla_status", "create_ai"]
    assert calls.named_in_words(reply, offered) == named


def test_the_answer_turn_gives_the_result_as_plain_text() -> None:
    flat = flatten_messages(
        [
            {"role": "user", "content": [{"text": "is my Flipper charged?"}]},
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": "t1", "name": "flipper_status", "input": {}}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "status": "success",
                            "content": [{"text": "battery 87%"}, {"json": {"level": 87}}],
                        }
                    }
                ],
            },
        ],
        "be kind",
    )
    assert [m["role"] for m in flat] == ["system", "user"], "the result joins the question"
    assert flat[1]["content"].startswith("is my Flipper charged?\n\nWhat the tool flipper_status")
    assert "battery 87%" in flat[1]["content"] and "level" not in flat[1]["content"], (
        "the text the tool wrote for the model, not the JSON it wrote for clients"
    )


async def say(server: RunningServer, text: str) -> SseTranscript:
    """One message as the owner, in a fresh conversation; the whole transcript."""
    body = {"messages": [{"role": "user", "content": text}]}
    return await post_chat(server.url, body, owner_headers(server))


@dataclass(frozen=True)
class ScriptedSpec(RunnerSpec):
    """A runner spec whose process is the scripted runner."""

    script: Path = Path()

    def command(self) -> list[str]:
        return [sys.executable, "-m", "fakes.scripted_runner", str(self.script)]


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[FlipperEmulator]:
    device = FlipperEmulator(FlipperState(), link=tmp_path / "flipper")
    device.start()
    yield device
    device.stop()


async def scripted_hub(
    start_hub: StartHub,
    closed_port: int,
    tmp_path: Path,
    replies: list[str],
    *,
    listen: bool = False,
) -> tuple[RunningServer, Path]:
    """A hub on the embedded model with tools on, its runner scripted; the request log. Memory
    does not listen after a turn (a generation of its own) unless ``listen``."""
    server = await start_hub(
        ollama_host=f"http://127.0.0.1:{closed_port}",
        model_provider=c.PROVIDER_EMBEDDED,
        embedded_tools="on",
        drivers={"flipper": {"port": str(tmp_path / "flipper")}},
        memory_listen=listen,
    )
    records = server.hub.drivers.records
    await until(lambda: any(r["status"] == "online" for r in records()), what="flipper online")
    log, script = tmp_path / "requests.jsonl", tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies, "log": str(log)}))
    spec = ScriptedSpec(Path(sys.executable), 512, 1, script=script)
    server.hub.models._runner = RunnerSupervisor(spec)
    return server, log


def requests_sent(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def in_words(request: dict[str, Any]) -> bool:
    """An answer in words: the call's tools still in its prompt, a grammar that lets no call
    begin."""
    return request.get("grammar") == calls.IN_WORDS and bool(request.get("tools"))


async def test_a_fenced_call_runs_the_real_tool_and_the_answer_reads_only_what_is_new(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    call = '```json\n{"name": "flipper_status", "arguments": {}}\n```'
    server, log = await scripted_hub(
        start_hub, closed_port, tmp_path, [call, "yes", "Yes: your Flipper is at 87%."]
    )
    transcript = await say(server, "is my Flipper charged?")
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    [result] = [e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert (result["name"], result["status"]) == ("flipper_status", "success")
    assert "battery 87" in result["content"][0]["text"], (
        "the emulator's battery, through the driver"
    )
    assert transcript.text == "Yes: your Flipper is at 87%."
    first, checked, second = requests_sent(log)
    assert checked["grammar"] == calls.YES_OR_NO
    assert checked["messages"][-1]["content"].startswith(
        'Message: "is my Flipper charged?"\nTool: flipper_status — '
    )
    offered = [f["function"]["name"] for f in first["tools"]]
    assert "flipper_status" in offered and len(offered) <= offering.OFFERED_AT_MOST + 1
    assert offered[0] == "learn" and offered[-1] == "answer", "learn leads, answer ends"
    assert wording.TOOLS_GUIDE in first["messages"][0]["content"]
    assert second["tools"] == first["tools"], "the answer's prompt begins as the call's did"
    assert second["messages"][:-1] == first["messages"][:-1]
    assert second["grammar"] == calls.IN_WORDS, "but it may not call again"
    assert second["sampling"]["temperature"] == 0.0, "an answer from a result is read, not made"
    asked = second["messages"][-1]["content"]
    assert asked.startswith(first["messages"][-1]["content"])
    assert "What the tool flipper_status returned:" in asked and "battery 87" in asked


async def test_a_call_described_in_words_is_asked_again_as_that_call(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    """The model names the tool nearest the message instead of calling it: the hub asks the
    same prompt again for a call to that tool, and the tool runs."""
    described = "To check, you can use the `flipper_status` function."
    call = '<tool_call>\n{"name": "flipper_status", "arguments": {}}\n</tool_call>'
    server, log = await scripted_hub(
        start_hub, closed_port, tmp_path, [described, call, "yes", "It is at 87%."]
    )
    transcript = await say(server, "is my Flipper charged?")
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    [result] = [e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert (result["name"], result["status"]) == ("flipper_status", "success")
    first, again, _, answer = requests_sent(log)
    assert first["constrain"] is True and "must_call" not in first
    assert again["must_call"] == "flipper_status"
    assert again["messages"] == first["messages"] and again["tools"] == first["tools"]
    assert in_words(answer)


@pytest.mark.parametrize(
    ("message", "before", "described", "between"),
    [
        ("is my Flipper charged?", [], "I could use the `learn` tool later.", []),
        (
            "book me a flight to Paris",
            [],
            'To book a flight to Paris, you can use the "learn" function with the following '
            'arguments:\n```json\n{"name": "learn", "arguments": {"destination": "Paris"}}\n```',
            [],  # memory's tool is not among the nearest: not asked for as a call
        ),
    ],
)
async def test_words_that_name_a_tool_are_never_shown_and_the_model_answers_again(
    start_hub: StartHub,
    closed_port: int,
    tmp_path: Path,
    emulator: FlipperEmulator,
    message: str,
    before: list[str],
    described: str,
    between: list[str],
) -> None:
    """Words that name a tool but call nothing are not the answer: the model is asked again,
    told that no tool fits, and only that answer is shown."""
    plain = "I can't do that from here, sorry."
    replies = [*before, described, *between, plain, "no"]  # "no": it claims no act
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, replies)
    transcript = await say(server, message)
    assert transcript.done and not transcript.of_type(c.EV_BEFORE_TOOL)
    assert transcript.text == plain
    sent = requests_sent(log)
    first, again = sent[len(before)], sent[-2]
    assert len(sent) == len(replies)
    assert in_words(again)
    assert again["messages"][:-2] == first["messages"][:-1], "read only the note and message"
    assert again["messages"][-2] == {"role": "system", "content": wording.NO_TOOL_FITS}
    assert again["messages"][-1] == first["messages"][-1]


async def test_words_that_still_describe_a_call_become_a_plain_cannot(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    described = "To turn off the lights, use the `ceiling_light` function with on false."
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, [described, described])
    transcript = await say(server, "turn off the living room lights")
    assert transcript.done and not transcript.of_type(c.EV_BEFORE_TOOL)
    assert transcript.text == wording.CANNOT_DO
    assert len(requests_sent(log)) == 2


async def test_a_call_to_a_tool_not_made_for_the_request_is_not_run(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    """Asked for something the hub cannot do, a small model reaches for a tool that sounds
    alike; the model, asked whether that tool is made for the message, says no."""
    call = '<tool_call>\n{"name": "flipper_find", "arguments": {"signal": true}}\n</tool_call>'
    server, log = await scripted_hub(
        start_hub, closed_port, tmp_path, [call, "no", "I can't unlock doors.", "no"]
    )
    transcript = await say(server, "unlock the front door with my Flipper")
    assert transcript.done and not transcript.of_type(c.EV_BEFORE_TOOL)
    assert transcript.text == "I can't unlock doors."
    _, checked, answer, claimed = requests_sent(log)
    assert claimed["messages"][-1]["content"] == checks.CLAIM_CHECK.asked("I can't unlock doors.")
    told, *examples, question = checked["messages"]
    assert told["role"] == "system" and checks.TOOL_CHECK.question in told["content"]
    assert len(examples) == 2 * len(checks.TOOL_CHECK.examples)
    assert question["content"].startswith(
        'Message: "unlock the front door with my Flipper"\nTool: flipper_find'
    )
    assert in_words(answer)
    assert answer["messages"][-2] == {"role": "system", "content": wording.NO_TOOL_FITS}


LEARN_CALL = (
    '<tool_call>\n{"name": "learn", "arguments": {"fact": "The thermostat is at 21."}}\n'
    "</tool_call>"
)


@pytest.mark.parametrize(("verdict", "learned"), [("no", False), ("yes", True)])
async def test_a_memory_write_runs_only_when_the_model_confirms_it_was_asked_for(
    start_hub: StartHub,
    closed_port: int,
    tmp_path: Path,
    emulator: FlipperEmulator,
    verdict: str,
    learned: bool,
) -> None:
    server, log = await scripted_hub(
        start_hub, closed_port, tmp_path, [LEARN_CALL, verdict, "All right.", "no"]
    )  # the last "no": refused, the answer in words claims no act
    transcript = await say(server, "set the thermostat to 21 degrees")
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    ran = [e["toolResult"]["name"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert ran == (["learn"] if learned else [])
    facts = server.hub.memory.recent(server.hub.owner.id, 10)
    assert any("thermostat" in f.text for f in facts) is learned
    first, asked, last, *_ = requests_sent(log)
    assert asked["grammar"] == calls.YES_OR_NO and "tools" not in asked
    told, *examples, question = asked["messages"]  # the message alone, not the conversation
    assert told["role"] == "system", "the question, said once before the examples"
    examples_given = len(memory_tools.learn.small_model_hints.confirm_examples)
    assert [m["role"] for m in examples] == ["user", "assistant"] * examples_given
    assert question["content"] == 'Message: "set the thermostat to 21 degrees"'
    assert told["content"].startswith("Does the writer")
    assert first["messages"][-1]["content"] == "set the thermostat to 21 degrees"
    assert transcript.text.endswith("All right.")
    assert in_words(last)


ANSWERED = '<tool_call>\n{"name": "answer", "arguments": {"text": "Good morning, \\"Ada\\"!'


@pytest.mark.parametrize(
    "reply",
    [
        ANSWERED + '"}}\n</tool_call>',
        ANSWERED,  # cut off by the token limit
        "Good morning!\n" + ANSWERED + '"}}\n</tool_call>',  # after text that streamed
    ],
)
async def test_an_answer_given_as_a_call_is_the_reply_and_runs_nothing(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator, reply: str
) -> None:
    replies = [reply, "no", reply]  # "no": the words claim no act
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, replies)
    transcript = await say(server, "good morning")
    assert transcript.done and not transcript.of_type(c.EV_BEFORE_TOOL)
    assert not transcript.of_type(c.EV_ERROR)
    assert transcript.text.startswith("Good morning")
    assert "tool_call" not in transcript.text
    # Words before the call may stream (then written again) or be read whole with the call,
    # as the runner's pieces happen to arrive.
    assert len(requests_sent(log)) in ((2, 3) if reply.startswith("Good morning!") else (2,))


async def test_an_unreadable_call_is_never_shown_and_the_model_answers_again(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    cut = '<tool_call>\n{"name": "flipper_sta'
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, [cut, "Hello!", "no"])
    transcript = await say(server, "hi there")
    assert transcript.done and transcript.text == "Hello!"
    first, second, _ = requests_sent(log)
    assert first["constrain"] is True and in_words(second)


async def test_an_invented_tool_is_no_call_and_a_plain_answer_follows(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    invented = '<tool_call>\n{"name": "joke", "arguments": {}}\n</tool_call>'
    server, log = await scripted_hub(
        start_hub, closed_port, tmp_path, [invented, "Why did the robot nap? Low battery."]
    )
    transcript = await say(server, "tell me a joke")
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    assert not transcript.of_type(c.EV_AFTER_TOOL)
    assert transcript.text == "Why did the robot nap? Low battery."
    first, second = requests_sent(log)  # a joke is words alone: nothing to check it for
    assert first["constrain"] is True and in_words(second)


async def test_a_small_model_sees_its_facts_without_dates_or_ids_and_unlearns_by_what_they_say(
    start_hub: StartHub,
    closed_port: int,
    tmp_path: Path,
    emulator: FlipperEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Shown ids, a small model answered with where a fact is stored (and each id is new random
    text on every run), and copying one it may close another fact; shown dates, it copied them
    into new facts. ``unlearn`` is offered with ``about`` alone: the hub finds the facts about
    it by meaning and the person confirms them."""
    monkeypatch.setattr(compose, "RECENT_S", 0.0)  # the facts below count as lasting ones
    call = '<tool_call>\n{"name": "unlearn", "arguments": {"about": "my sister"}}\n</tool_call>'
    server, log = await scripted_hub(
        start_hub,
        closed_port,
        tmp_path,
        ["Her name is Ana.", "no", call, "yes", "It waits for your confirmation."],
    )
    me = server.hub.owner.id
    fact = server.hub.memory.learn(me, "The user's sister is called Ana.")
    other = server.hub.memory.learn(me, "The user is allergic to hazelnuts.")
    asked = await say(server, "what's my sister's name?")
    assert asked.text == "Her name is Ana."
    forget = await say(server, "forget what you know about my sister")
    assert forget.done and not forget.of_type(c.EV_ERROR)
    answering, _, forgetting, _, _ = requests_sent(log)
    facts = answering["messages"][1]["content"]
    assert facts == (
        f"{REMEMBERED_HEADER}\n- Your sister is called Ana.\n- You are allergic to hazelnuts."
    ), "oldest first, as said to the person"
    assert "[m_" not in facts and "since" not in facts
    assert answering["messages"][2]["content"] == f"{MATCHED_HEADER}\n- Your sister is called Ana."
    assert answering["messages"][3]["content"] == "what's my sister's name?", (
        "the fact that shares a word with the question is shown again right before it"
    )
    [offered] = [f for f in forgetting["tools"] if f["function"]["name"] == "unlearn"]
    parameters = offered["function"]["parameters"]
    assert list(parameters["properties"]) == ["about"] and parameters["required"] == ["about"]
    assert parameters["properties"]["about"]["minLength"] == 1, "never an empty about"
    assert "[m_" not in forgetting["messages"][1]["content"]
    [result] = [e["toolResult"] for e in forget.of_type(c.EV_AFTER_TOOL)]
    pending = proposal(result)
    assert [i["id"] for i in pending["items"]] == [fact.id]
    assert server.hub.memory.get(me, fact.id).current, "nothing is forgotten in the turn"
    assert server.hub.memory.get(me, other.id).current


async def test_a_fact_memory_already_holds_is_not_learned_again(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    """Asked about a fact it was shown, a small model learns it again in other words."""
    again = '<tool_call>\n{"name": "learn", "arguments": {"fact": "Ana is the user\'s sister."}}'
    server, log = await scripted_hub(
        start_hub, closed_port, tmp_path, [again + "\n</tool_call>", "She is your sister.", "no"]
    )
    server.hub.memory.learn(server.hub.owner.id, "The user's sister is called Ana.")
    transcript = await say(server, "who is Ana?")
    assert not transcript.of_type(c.EV_BEFORE_TOOL)
    assert transcript.text == "She is your sister."
    assert len(server.hub.memory.recent(server.hub.owner.id, 10)) == 1
    sent = requests_sent(log)
    assert [r.get("grammar") for r in sent] == [None, calls.IN_WORDS, calls.YES_OR_NO], (
        "no confirmation was asked, and the answer was written in words (and checked)"
    )


@pytest.mark.parametrize(
    ("fact", "known"),
    [
        ("Ana is the user's sister.", True),
        ("The user's sister Ana lives in Porto.", False),
        ("The user's dentist is on Monday.", False),
    ],
)
def test_a_fact_is_known_when_a_remembered_one_has_all_its_words(fact: str, known: bool) -> None:
    remembered = [
        "The user's sister is called Ana.",
        "The user's dentist appointment is on Friday.",
    ]
    call = calls.Call("learn", {"fact": fact})
    assert checks.already_known(call, "fact", remembered) is known


async def test_a_learned_fact_is_answered_without_its_id_and_learn_takes_no_ids(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    server, log = await scripted_hub(
        start_hub, closed_port, tmp_path, [LEARN_CALL, "yes", "Noted."]
    )
    transcript = await say(server, "remember that the thermostat is at 21")
    assert [e["toolResult"]["name"] for e in transcript.of_type(c.EV_AFTER_TOOL)] == ["learn"]
    first, _, answer = requests_sent(log)
    [learn] = [f["function"] for f in first["tools"] if f["function"]["name"] == "learn"]
    assert list(learn["parameters"]["properties"]) == ["fact"]
    assert (
        "What the tool learn returned: Saved to memory: The thermostat is at 21."
        in (answer["messages"][-1]["content"])
    )
    assert "[m_" not in answer["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("reply", "named"),
    [
        ("To check, you can use the `flipper_status` function.", "flipper_status"),
        ("flipper_status", "flipper_status"),
        ("`flipper_status()`.", "flipper_status"),
        ("Use flipper_status or flipper_listen.", ""),
        ("The status is fine.", ""),
    ],
)
def test_a_tool_named_instead_of_called_is_found(reply: str, named: str) -> None:
    assert calls.named_in_words(reply, ["flipper_status", "flipper_listen"]) == named


def test_whole_families_are_offered_so_offers_repeat() -> None:
    """With the tools' families known, a message about the Flipper meets all the Flipper's
    tools, in mount order, whatever it asks of it: the offer is the same from message to
    message (and read once)."""
    find = spec("flipper_find", "Make the Flipper beep and blink so it can be found.", {}, [])
    photo = spec("camera_photo", "Take a photo with the webcam of this machine.", {}, [])
    recall = spec("recall", "Search everything learned about the user by meaning.", {}, [])
    theme = spec("set_theme", "Change the chat's colours.", {}, [])
    speak = spec("speak", "Say something aloud with the device's speech.", {}, [])
    specs = [LEARN, recall, STATUS, LISTEN, find, photo, theme, speak]
    families = {
        "learn": "memory",
        "recall": "memory",
        "flipper_status": "flipper",
        "flipper_listen": "flipper",
        "flipper_find": "flipper",
        "camera_photo": "senses",
        "set_theme": "client",
        "speak": "client",
    }
    turn = SmallTurn(
        hints={
            name: replace(TURN.of(name), family=family)
            if name in TURN.hints
            else SmallModelHints(family=family)
            for name, family in families.items()
        }
    )
    offered = {}
    for message in ("is my Flipper charged?", "make my Flipper beep", "listen for IR"):
        offer = offering.choose(specs, message, cached_embed, turn, 5)
        offered[message] = [s["name"] for s in offer.tools]
    assert all(
        names == ["learn", "flipper_status", "flipper_listen", "flipper_find"]
        for names in offered.values()
    ), offered
    small_talk = offering.choose(specs, "good morning", cached_embed, turn, 5)
    assert [s["name"] for s in small_talk.tools] == ["learn"]
    ahead = [[s["name"] for s in tools] for tools in offering.family_offers(specs, turn)]
    assert ["learn", "flipper_status", "flipper_listen", "flipper_find"] in ahead
    assert ["learn", "recall"] in ahead and ["learn", "camera_photo"] in ahead


def test_a_tools_family_is_what_its_module_declares() -> None:
    from hub.agent.tools import memory

    hints = declared_hints([memory.learn, memory.recall])
    assert {name: h.family for name, h in hints.items()} == {"learn": "memory", "recall": "memory"}
    assert hints["learn"].always_offered and not hints["recall"].always_offered


def test_a_tool_that_declares_nothing_is_a_family_of_its_own() -> None:
    from strands import tool

    @tool(name="brew_coffee")
    def brew_coffee() -> str:
        """Brew a cup of coffee."""
        return "brewing"

    assert declared_hints([brew_coffee])["brew_coffee"].family == "brew_coffee"


@pytest.mark.parametrize(
    ("reply", "describes"),
    [
        ("To turn off the lights, you can call `flashlight()` with on false.", True),
        ("Call `set_light_level` with 40.", True),
        ('Try the "learn" tool.', True),
        ("Why did the tomato turn red? It saw the salad dressing!", False),
        ("I used my tools to check: your Flipper is at 87%.", False),
    ],
)
def test_words_that_speak_of_calling_a_function_describe_a_call(
    reply: str, describes: bool
) -> None:
    assert calls.describes_a_call(reply, ["learn", "answer"]) is describes


def test_a_small_model_writes_a_new_fact_about_the_user() -> None:
    """It is shown its facts as said to the person; the call grammar keeps new ones about "the
    user", on one line and without quotes it could not escape."""
    import jsonschema
    from llama_cpp.llama_grammar import LlamaGrammar

    from hub.agent.runner import call_grammar
    from hub.agent.tools.memory import learn

    function = calls.as_function(learn.tool_spec, TURN)
    fact = function["function"]["parameters"]["properties"]["fact"]
    check = jsonschema.Draft202012Validator(fact)
    assert check.is_valid("The user's sister is called Ana.")
    assert not check.is_valid("Your sister is called Ana.")
    assert not check.is_valid('The user says "hi"')
    grammar = call_grammar.grammar_for([function], only="learn")
    assert '"The use' in grammar, "the call must write the fact's first words"
    [shown] = call_grammar.shown([function])
    assert "pattern" not in shown["function"]["parameters"]["properties"]["fact"], (
        "the grammar holds the model to it; the prompt does not show it"
    )
    assert "pattern" in fact, "the offer itself is left as it was"
    LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp parses it


def test_a_small_model_makes_a_tiny_from_a_name_a_prompt_and_a_tagline() -> None:
    from hub.agent.tools.tinys import create_ai

    turn = SmallTurn(hints=declared_hints([create_ai]))
    parameters = calls.as_function(create_ai.tool_spec, turn)["function"]["parameters"]
    assert sorted(parameters["properties"]) == ["name", "systemPrompt", "tagline"]
    assert parameters["required"] == ["name", "systemPrompt"]


@pytest.mark.parametrize(
    ("message", "shared"),
    [
        ("what do I do for work?", ["The user works as a nurse."]),
        ("where do I live?", ["The user lives in Porto."]),
        ("what's the battery of my board?", []),  # "s" of "what's" meets "user's": no match
        ("don't you know?", []),
        ("", []),
    ],
)
def test_facts_that_share_a_word_with_the_message_are_found(
    message: str, shared: list[str]
) -> None:
    texts = (
        "The user's dog is called Rex.",
        "The user works as a nurse.",
        "The user lives in Porto.",
    )
    facts = [
        Fact(f"m_{i}", "me", "fact", text, "private", "2026-01-01T00:00:00Z", None)
        for i, text in enumerate(texts)
    ]
    assert [f.text for f in offering.sharing_words(message, facts)] == shared


@pytest.mark.parametrize(
    ("claims", "shown"),
    [("yes", wording.CANNOT_DO), ("no", "Here is what I would do. Ask them.")],
)
async def test_words_that_claim_an_act_no_tool_did_are_never_shown(
    start_hub: StartHub,
    closed_port: int,
    tmp_path: Path,
    emulator: FlipperEmulator,
    claims: str,
    shown: str,
) -> None:
    """Words are checked before they are shown: "The shed is unlocked." with no tool behind it
    is asked for as a call to the nearest tool (here only memory's), which its own check
    refuses, and the person reads that it cannot be done here."""
    reply = "The shed is unlocked. " if claims == "yes" else "Here is what I would do. Ask them."
    fact = '{"name": "learn", "arguments": {"fact": "The user wants the shed unlocked"}}'
    claimed = [reply, claims, fact, "no", "It is unlocked now.", "yes"]  # it claims it again
    replies = claimed if claims == "yes" else [reply, claims, reply]
    server, log = await scripted_hub(start_hub, closed_port, tmp_path, replies)
    transcript = await say(server, "unlock the shed")
    assert transcript.done and not transcript.of_type(c.EV_BEFORE_TOOL)
    assert transcript.text == shown
    sent = requests_sent(log)
    assert sent[1]["grammar"] == calls.YES_OR_NO
    assert sent[1]["messages"][-1]["content"] == checks.CLAIM_CHECK.asked(
        calls.first_sentence(reply)
    )
    if claims == "yes":
        assert sent[2]["must_call"] == "learn", "the nearest tool, asked for as a call"
        assert sent[3]["grammar"] == calls.YES_OR_NO, "and checked as any memory write is"
    else:
        assert sent[2]["messages"] == sent[0]["messages"], "written again, the words stream"
    assert len(sent) == len(replies)


def test_a_follow_up_meets_the_tools_of_the_message_before_it_but_is_checked_for_them() -> None:
    many = [
        LEARN,
        STATUS,
        LISTEN,
        *(spec(f"tool_{n}", f"Unrelated tool {n}.", {}, []) for n in range(6)),
    ]
    offer = offering.choose(many, "and now?", cached_embed, TURN, earlier="is my Flipper charged?")
    assert "flipper_status" in offer.names, "the subject of the message before"
    alone = offering.choose(many, "and now?", cached_embed, TURN)
    assert "flipper_status" not in alone.names
    assert offer.scores["flipper_status"] < 0.75, "its score is this message's own: checked"


@pytest.mark.parametrize(
    ("message", "for_words"),
    [
        ("write a haiku about the sea", True),
        ("give me a pasta recipe", True),
        ("unlock the front door", False),
        ("book me a flight to Paris", False),
    ],
)
def test_a_request_for_words_alone_is_told_by_the_embedder(message: str, for_words: bool) -> None:
    assert offering.asks_for_words(message, cached_embed) is for_words


def test_a_check_says_its_question_once_before_the_examples() -> None:
    """The examples are read ahead at every first start: the question is not repeated in each,
    and the message asked about is shown as they are."""
    for check in (checks.CLAIM_CHECK, checks.TOOL_CHECK):
        chat = check.chat("is it raining?")
        assert sum(m["content"].count(check.question) for m in chat) == 1
        assert chat[0]["role"] == "system" and check.question in chat[0]["content"]
        assert chat[-1]["content"] == check.asked("is it raining?")
    asking = facts.asking("my brother is called Tom")
    assert sum(m["content"].count(facts.QUESTION) for m in asking) == 1
    assert asking[-1]["content"] == 'Message: "my brother is called Tom"'


async def test_a_fact_learned_lately_is_not_among_the_lasting_ones_so_the_beginning_stays() -> None:
    """A fact learned mid-conversation is not added to the lasting facts: what comes before the
    conversation reads the same, and the runner keeps it. The message about it is shown it."""

    def fact(text: str, since: str) -> Fact:
        return Fact(f"m_{len(text)}", "me", "fact", text, "private", since, None)

    old = fact("The user's sister is called Ana.", "2026-01-01T00:00:00.000000Z")
    new = fact("The user's uncle arrives on Tuesday.", "2026-06-01T10:00:00.000000Z")
    cut = "2026-06-01T09:00:00.000000Z"
    model = EmbeddedModel(RunnerSupervisor(RunnerSpec(Path(sys.executable), 512, 1)))
    said: Messages = [
        {"role": "user", "content": [{"text": "hello"}]},
        {"role": "assistant", "content": [{"text": "Hi!"}]},
        {"role": "user", "content": [{"text": "how was your day?"}]},
    ]
    before = await model.for_turn(SmallTurn(remembered=(old,), recent_since=cut))._prepared(
        said, [], "system"
    )
    after = await model.for_turn(SmallTurn(remembered=(new, old), recent_since=cut))._prepared(
        said, [], "system"
    )
    assert after[1] == before[1], "the same prompt: the conversation says the new fact"
    asking: Messages = [{"role": "user", "content": [{"text": "when does my uncle arrive?"}]}]
    about = await model.for_turn(SmallTurn(remembered=(new, old), recent_since=cut))._prepared(
        asking, [], "system"
    )
    assert about[1][-2] == {
        "role": "system",
        "content": f"{MATCHED_HEADER}\n- Your uncle arrives on Tuesday.",
    }, "the message about it is shown it"
