"""Each state of the small model's step on its own, against a model whose replies are scripted
(no runner, no hub): what each state decides from what the model wrote."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any

import pytest
from strands.types.tools import ToolSpec

from drivers.base import SmallModelHints
from hub.agent.runner import protocol as p
from hub.agent.small import calls, checks, facts, step
from hub.agent.small.context import SmallTurn
from hub.agent.small.offer import Offer
from hub.agent.small.wording import CANNOT_DO, NO_TOOL_FITS
from hub.memory.model import Fact


def spec(name: str, description: str, properties: dict[str, Any] | None = None) -> ToolSpec:
    schema = {"type": "object", "properties": properties or {}, "required": []}
    return {"name": name, "description": description, "inputSchema": {"json": schema}}


NOTE = spec("keep_note", "Keep a note about the person.", {"note": {"type": "string"}})
GAUGE = spec("read_gauge", "Read the boiler's pressure gauge.")
TURN = SmallTurn(
    hints={
        "keep_note": SmallModelHints(
            family="notes",
            always_offered=True,
            confirm="Does the writer tell you something about themselves?",
            fact_argument="note",
        ),
        "read_gauge": SmallModelHints(family="boiler"),
    }
)
OFFER = Offer([NOTE, GAUGE], ("read_gauge", "keep_note"), {"read_gauge": 0.9, "keep_note": 0.2})
GAUGE_CALL = '<tool_call>{"name": "read_gauge", "arguments": {}}</tool_call>'
NOTE_CALL = '<tool_call>{"name": "keep_note", "arguments": {"note": "The user has a boiler"}}'


class Scripted:
    """A model whose generations answer in order; each request kept, for the test to read."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.asked: list[tuple[list[dict[str, str]], dict[str, Any]]] = []
        self.cancelled = False

    async def pieces(
        self, chat: list[dict[str, str]], fields: dict[str, Any], max_tokens: int | None = None
    ) -> AsyncGenerator[str, None]:
        self.asked.append((chat, fields))
        reply = self.replies.pop(0)
        for start in range(0, len(reply), 6):
            yield reply[start : start + 6]

    async def whole(
        self, chat: list[dict[str, str]], fields: dict[str, Any], max_tokens: int | None = None
    ) -> str:
        return "".join([piece async for piece in self.pieces(chat, fields)])


def made(
    model: Scripted, message: str = "what does the boiler gauge say?", **turn: Any
) -> step.Step:
    chat = [{"role": "system", "content": "be kind"}, {"role": "user", "content": message}]
    fields = {p.FIELD_TOOLS: ["…"], p.FIELD_CONSTRAIN: True}
    answer = {p.FIELD_TOOLS: ["…"], p.FIELD_GRAMMAR: calls.IN_WORDS}
    return step.Step(model, chat, OFFER, SmallTurn(**{"hints": TURN.hints, **turn}), fields, answer)


async def events_of(made_step: step.Step) -> tuple[str, list[str]]:
    text, used = "", []
    async for event in made_step.events():
        delta = event.get("contentBlockDelta", {}).get("delta", {})
        text += delta.get("text", "")
        start = event.get("contentBlockStart", {}).get("start", {})
        if "toolUse" in start:
            used.append(start["toolUse"]["name"])
    return text, used


async def test_write_streams_words_once_their_first_sentence_claims_nothing() -> None:
    model = Scripted(
        "Boilers heat water. They also heat rooms.",
        "no",
        "Boilers heat water. They also heat rooms.",
    )
    words: list[str] = []
    async for item in made(model).write():
        words.append(item if isinstance(item, str) else f"<{type(item).__name__}>")
    assert words[0] == "Boilers heat water. ", "the checked first sentence, shown at once"
    assert (
        "".join(w for w in words if not w.startswith("<"))
        == "Boilers heat water. They also heat rooms."
    )
    assert model.asked[1][1] == {p.FIELD_GRAMMAR: calls.YES_OR_NO}
    assert model.asked[1][0][-1]["content"] == checks.CLAIM_CHECK.asked("Boilers heat water. ")
    assert model.asked[2][0] == model.asked[0][0], "written again from the same prompt"


async def test_write_holds_words_that_claim_a_reading() -> None:
    model = Scripted("The gauge reads 1.5 bar. All is fine.", "yes")
    items = [item async for item in made(model).write()]
    assert items == [step.Claimed("The gauge reads 1.5 bar. ")], "nothing shown"


async def test_read_turns_a_call_into_a_proposal_and_an_answer_call_into_words() -> None:
    proposed = await made(Scripted()).read(step.Written(GAUGE_CALL))
    assert proposed == step.Proposed(calls.Call("read_gauge", {}))
    answer = '<tool_call>{"name": "answer", "arguments": {"text": "Hello!"}}</tool_call>'
    assert await made(Scripted("no")).read(step.Written(answer)) == step.Speak("Hello!")


async def test_read_sends_words_that_describe_a_call_to_the_named_tool() -> None:
    model = Scripted(GAUGE_CALL)
    decided = await made(model).read(step.Written("You could use the `read_gauge` tool."))
    assert decided == step.Proposed(calls.Call("read_gauge", {}))
    assert model.asked[0][1][p.FIELD_MUST_CALL] == "read_gauge"


async def test_claimed_asks_the_nearest_tool_for_a_call() -> None:
    model = Scripted(GAUGE_CALL)
    decided = await made(model).claimed(step.Claimed("It reads 2 bar."))
    assert decided == step.Proposed(calls.Call("read_gauge", {}), claimed=True)


@pytest.mark.parametrize(
    ("verdict", "claimed", "ends"),
    [
        ("yes", False, step.CallTool),
        ("no", False, step.Again),
        ("no", True, step.Again),
    ],
)
async def test_confirm_asks_the_tools_own_question(verdict: str, claimed: bool, ends: type) -> None:
    model = Scripted(verdict)
    call = calls.Call("keep_note", {"note": "The user has a new boiler"})
    decided = await made(model, "I got a new boiler").confirm(step.Proposed(call, claimed))
    assert isinstance(decided, ends)
    assert "Does the writer tell you something about themselves?" in model.asked[0][0][0]["content"]


async def test_confirm_runs_a_tool_well_above_the_rest_unasked_and_knows_a_known_fact() -> None:
    assert await made(Scripted()).confirm(step.Proposed(calls.Call("read_gauge", {}))) == (
        step.CallTool(calls.Call("read_gauge", {}))
    )
    known = (Fact("m_1", "me", "fact", "The user has a boiler.", "private", "2026-01-01", None),)
    call = calls.Call("keep_note", {"note": "The user has a boiler"})
    assert await made(Scripted(), remembered=known).confirm(step.Proposed(call)) == step.Again()


async def test_words_that_say_back_a_remembered_fact_are_no_claim() -> None:
    known = (Fact("m_1", "me", "fact", "The user drives an old Volvo.", "private", "2026", None),)
    model = Scripted()
    assert not await made(model, "what car do I drive?", remembered=known).claims(
        "You drive an old Volvo."
    )
    assert model.asked == [], "nothing asked of the model"
    asked = Scripted("yes")
    assert await made(asked, "is my car washed?", remembered=known).claims(
        "I washed your old Volvo."
    ), "a word memory does not hold: asked, and a claim"


async def test_a_request_for_words_writes_no_fact() -> None:
    """Asked to explain something, the 1.5B wrote the explanation into memory."""
    asked = made(Scripted(), "explain what inflation is")
    asked.offer = replace(OFFER, for_words=True)
    call = calls.Call("keep_note", {"note": "The user asks about inflation"})
    assert await asked.confirm(step.Proposed(call)) == step.Again()
    assert await asked.confirm(step.Proposed(calls.Call("read_gauge", {}))) == step.CallTool(
        calls.Call("read_gauge", {})
    ), "other tools still run"


async def test_again_answers_told_no_tool_fits_and_never_claims() -> None:
    model = Scripted("I can't see the gauge from here.", "no")
    assert await made(model).again() == step.Speak("I can't see the gauge from here.")
    assert model.asked[0][0][-2] == {"role": "system", "content": NO_TOOL_FITS}
    claims = Scripted("The gauge is fine now.", "yes")
    assert await made(claims).again() == step.Cannot(CANNOT_DO)


async def test_the_step_ends_in_one_answer_or_one_call() -> None:
    text, used = await events_of(made(Scripted(GAUGE_CALL)))
    assert (text, used) == ("", ["read_gauge"])
    claimed = Scripted("The gauge reads 3 bar. ", "yes", GAUGE_CALL)
    text, used = await events_of(made(claimed))
    assert (text, used) == ("", ["read_gauge"]), "a claimed reading becomes the tool's call"
    refused = Scripted("I saved that. ", "yes", NOTE_CALL + "</tool_call>", "no", "Hi!", "no")
    text, used = await events_of(made(refused, "good morning"))
    assert (text, used) == ("Hi!", []), "refused, the model answers again"
    again = Scripted("I saved that. ", "yes", NOTE_CALL + "</tool_call>", "no", "Saved.", "yes")
    text, used = await events_of(made(again, "good morning"))
    assert (text, used) == (CANNOT_DO, []), "and an answer that claims again is the hub's cannot"


async def test_a_long_fact_is_kept_as_each_fact_the_message_stated() -> None:
    said = "my partner is Alex, he hates mushrooms and he works as a nurse"
    long_fact = "The user's partner is Alex, who hates mushrooms and works as a nurse."
    lines = (
        "The user's partner is called Alex.\nThe user's partner Alex dislikes mushrooms.\n"
        "The user's partner Alex works as a nurse."
    )
    model = Scripted("yes", lines)
    decided = await made(model, said).confirm(
        step.Proposed(calls.Call("keep_note", {"note": long_fact}))
    )
    assert isinstance(decided, step.CallTool)
    assert [c.arguments["note"] for c in decided.calls] == lines.splitlines()
    assert model.asked[1][1] == {p.FIELD_GRAMMAR: facts.FACT_LINES}
    short = calls.Call("keep_note", {"note": "The user's partner is called Alex."})
    assert await made(Scripted("yes"), said).confirm(step.Proposed(short)) == step.CallTool(short)


def test_only_lines_that_state_a_fact_about_the_user_are_facts() -> None:
    assert facts.stated("none") == []
    assert facts.stated("The user likes tea.\nDone.\nThe user's cat is Miso.") == [
        "The user likes tea.",
        "The user's cat is Miso.",
    ]


async def test_a_call_written_after_streamed_words_is_never_shown() -> None:
    reply = "Boilers heat water. " + GAUGE_CALL
    text, used = await events_of(made(Scripted(reply, "no", reply)))
    assert (text, used) == ("Boilers heat water. ", []), "one answer, and no call text"


class Split(Scripted):
    """A model whose first reply arrives in two pieces, split at ``at``."""

    def __init__(self, at: int, *replies: str) -> None:
        super().__init__(*replies)
        self.at = at

    async def pieces(
        self, chat: list[dict[str, str]], fields: dict[str, Any], max_tokens: int | None = None
    ) -> AsyncGenerator[str, None]:
        self.asked.append((chat, fields))
        reply = self.replies.pop(0)
        first, self.at = self.at, 0
        for piece in (reply[:first], reply[first:]) if first else (reply,):
            yield piece


async def test_an_answer_call_after_words_is_the_reply_however_its_pieces_arrive() -> None:
    """Words, then an ``answer`` call: read whole once the words name a tool, wherever the
    runner's pieces split it (cut where the call began, it was taken for words describing one
    and answered again)."""
    answer = '{"name": "answer", "arguments": {"text": "Good morning, Ada!"}}'
    reply = f"Good morning!\n<tool_call>{answer}</tool_call>"
    for at in range(len(reply)):
        text, used = await events_of(made(Split(at, reply, "no", reply), "good morning"))
        assert text.startswith("Good morning") and "tool_call" not in text, (at, text)
        assert used == []
