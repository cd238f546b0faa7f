"""One step of a small model with tools offered, as an explicit state machine.

    offer ─▶ write ─▶ read ─┬─▶ confirm ─┬─▶ call      (strands runs the tool)
                  │         │            └─▶ again ─┬─▶ speak
                  │         ├─▶ speak               └─▶ cannot
                  │         └─▶ again
                  └─▶ claimed ─▶ (a call to the nearest tool) ─▶ confirm, or again

- **write**: the model's reply under the call grammar. Words stream from their first sentence
  on, once that sentence neither begins a call nor names a tool, and says nothing that only a
  tool's result could back (a device's reading, an act done: :data:`checks.CLAIM_CHECK`).
  Anything that may be a call is read whole.
- **read**: the reply becomes a call (checked against the offered tools' schemas), the words
  of an ``answer`` call, words, or words that describe a call instead of making one.
- **claimed**: words that state what only a tool knows, or claim an act no tool did, are never
  shown: the nearest offered tool is asked for as a call (the same prompt, so the runner reads
  nothing again), and confirmed like any call; refused, the model answers *again*.
- **confirm**: the tool's own yes/no question about the message (a memory write), or whether
  the tool is made for it; a fact memory already holds is not written again.
- **again**: the model answers once more, told that no tool fits, read whole; words that still
  describe a call, or claim an act, become the hub's plain "cannot".
- **speak** / **cannot** / **call**: the end of the step: one answer, or one call.

Each state is a method that takes what the state before decided and returns the next decision
(small typed values below); :meth:`Step.events` runs them and turns the end into strands'
stream events. The layer names no tool: what is particular to one is in its declaration (see
``context.SmallTurn``).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from hub.agent.runner import protocol as p
from hub.agent.small import calls, checks, facts
from hub.agent.small.context import SmallTurn
from hub.agent.small.offer import Offer
from hub.agent.small.wording import CANNOT_DO, NO_TOOL_FITS

log = logging.getLogger(__name__)

# A call to a tool this related to the message needs no check that the tool is made for it.
# Measured on the offline agent's requests: the right device and tinys tools score 0.56 to
# 1.22 for their messages, the wrong calls the check is there to stop 0.6 to 0.63 ("switch on
# the kitchen lamp" → the phone's flashlight).
SURE_AT_LEAST = 0.75
# Enough for saying what cannot be done (the answer is read whole before it is shown).
AGAIN_TOKENS = 96
# A fact longer than this may hold several ("… is called Alex, dislikes mushrooms, and works
# as a nurse"): the message is asked for each fact it states.
ONE_FACT_CHARS = 60


class Runs(Protocol):
    """How the step reaches the model: a generation as it comes, and one read whole."""

    def pieces(
        self, chat: list[dict[str, str]], fields: dict[str, Any], max_tokens: int | None = None
    ) -> AsyncGenerator[str, None]: ...

    async def whole(
        self, chat: list[dict[str, str]], fields: dict[str, Any], max_tokens: int | None = None
    ) -> str: ...

    @property
    def cancelled(self) -> bool: ...


@dataclass(frozen=True)
class Written:
    """The reply as written; ``shown``: the part the person has already read."""

    reply: str
    shown: str = ""


@dataclass(frozen=True)
class Proposed:
    """A call read from the reply (or asked for), not yet confirmed; ``claimed``: asked for
    because the words claimed what only this tool could back."""

    call: calls.Call
    claimed: bool = False


@dataclass(frozen=True)
class Claimed:
    text: str


@dataclass(frozen=True)
class Again:
    """Answer again, told no tool fits."""


@dataclass(frozen=True)
class Speak:
    text: str  # what the person has not read yet


@dataclass(frozen=True)
class CallTool:
    call: calls.Call
    more: tuple[calls.Call, ...] = ()  # the same tool again: each fact a message stated

    @property
    def calls(self) -> tuple[calls.Call, ...]:
        return (self.call, *self.more)


@dataclass(frozen=True)
class Cannot:
    text: str = CANNOT_DO


Decision = Written | Proposed | Claimed | Again | Speak | CallTool | Cannot
Ended = Speak | CallTool | Cannot


def yes_or_no_fields() -> dict[str, Any]:
    return {p.FIELD_GRAMMAR: calls.YES_OR_NO}


class Step:
    """One model step with ``offer``'s tools, over ``chat`` (the last message is the
    person's, with this turn's note before it)."""

    def __init__(
        self,
        runs: Runs,
        chat: list[dict[str, str]],
        offer: Offer,
        turn: SmallTurn,
        fields: dict[str, Any],
        answer_fields: dict[str, Any],
    ) -> None:
        self.runs = runs
        self.chat = chat
        self.offer = offer
        self.turn = turn
        self.fields = fields
        self.answer_fields = answer_fields
        self.tools = calls.with_answer(offer.tools, turn)
        self.offered: Mapping[str, ToolSpec] = {spec["name"]: spec for spec in self.tools}
        self.message = chat[-1]["content"]
        self.shown = ""
        self.ended: Ended = Speak("")

    async def events(self) -> AsyncGenerator[StreamEvent, None]:
        """The step as strands' stream events: one block of words (shown as they come, then
        the rest), and a call's block when the step ends in one (see :attr:`ended`)."""
        yield {"contentBlockStart": {"start": {}}}
        decision: Decision = Written("")
        async for item in self.write():
            if isinstance(item, str):
                yield delta(item)
            else:
                decision = item
        self.ended = await self.settle(decision)
        log.debug("small-model step ended: %r", self.ended)
        cancelled = self.runs.cancelled
        if isinstance(self.ended, Speak | Cannot) and self.ended.text and not cancelled:
            yield delta(self.ended.text)
        yield {"contentBlockStop": {}}
        if isinstance(self.ended, CallTool) and not cancelled:
            for call in self.ended.calls:
                for event in tool_use_events(call):
                    yield event

    async def settle(self, decision: Decision) -> Ended:
        while not isinstance(decision, Speak | CallTool | Cannot):
            if self.runs.cancelled:
                return Speak("")
            decision = await self.next(decision)
        return decision

    async def next(self, decision: Decision) -> Decision:
        if isinstance(decision, Written):
            return await self.read(decision)
        if isinstance(decision, Claimed):
            return await self.claimed(decision)
        if isinstance(decision, Proposed):
            return await self.confirm(decision)
        return await self.again()

    async def write(self) -> AsyncGenerator[str | Written | Claimed, None]:
        """The reply; words stream from their first sentence once it is checked."""
        reply = ""
        pieces = self.runs.pieces(self.chat, self.fields)
        async for piece in pieces:
            reply += piece
            head = reply.strip()
            if len(head) < 2 or calls.looks_like_call(reply, self.offered):
                continue
            if calls.first_sentence_done(reply):
                break
        else:
            yield Written(reply)  # read whole: a call, or words that ended in one sentence
            return
        if calls.describes_a_call(reply, self.offered):
            async for piece in pieces:  # read whole: the call the words begin may follow
                reply += piece
            yield Written(reply)
            return
        await pieces.aclose()
        first = calls.first_sentence(reply)
        if await self.claims(first):
            yield Claimed(first)
            return
        async for item in self.stream_again(first):
            yield item

    async def stream_again(self, first: str) -> AsyncGenerator[str | Written | Claimed, None]:
        """The checked first sentence shown, and the rest as the model writes it again (the
        same prompt, decoded greedily: the runner reads nothing, and the words repeat). A call
        written after the words is never shown, nor made: the person has their answer."""
        self.shown = first
        yield first
        reply = ""
        async for piece in self.runs.pieces(self.chat, self.fields):
            reply += piece
            upto = calls.words_before_a_call(reply)
            if len(upto) > len(self.shown) and upto.startswith(self.shown):
                fresh = upto[len(self.shown) :]
                self.shown = upto
                yield fresh
        yield Written(reply, shown=self.shown)

    async def read(self, written: Written) -> Decision:
        parsed = calls.parse_reply(written.reply, self.offered, self.turn)
        if parsed.refused:
            log.info("embedded model's call not taken: %s", parsed.refused)
        log.debug("offered %s; the model wrote %r", self.offer.names, written.reply)
        if written.shown:
            return Speak(rest_of(written))
        answered = calls.answer_text(written.reply, parsed.call)
        if answered is not None:
            return await self.checked_words(answered)
        if parsed.call is not None:
            return Proposed(parsed.call)
        text = parsed.text
        if calls.looks_like_call(text, self.offered) or calls.describes_a_call(text, self.offered):
            return await self.described(text or written.reply)
        if not text:
            return Again()
        return await self.checked_words(text)

    async def checked_words(self, text: str) -> Decision:
        """Words read whole: shown unless they claim what only a tool could back."""
        if not text.strip():
            return Again()
        return Claimed(text) if await self.claims(text) else Speak(text)

    async def claims(self, text: str) -> bool:
        """Whether words say what only a tool's result could back. Words asked for (a poem, a
        recipe, an explanation) are not asked about: asked, the model took a poem's first
        line for an act done; nor are words that say back what memory holds."""
        known = [fact.text for fact in (*self.turn.remembered, *self.turn.matched)]
        if self.offer.for_words or checks.restates(text, known):
            return False
        verdict = await self.runs.whole(checks.CLAIM_CHECK.chat(text), yes_or_no_fields(), 2)
        log.debug("asked whether %r claims a tool's result: %r", text, verdict)
        return verdict.strip().lower() == "yes"

    async def described(self, text: str) -> Decision:
        """Words that name a tool near the message instead of calling it: asked again as a
        call to that tool (same prompt, so the runner reuses what it read)."""
        named = calls.named_in_words(text, self.offer.names)
        if not named or named not in self.offer.nearest:
            return Again()
        call = await self.forced(named)
        return Proposed(call) if call is not None else Again()

    async def claimed(self, claimed: Claimed) -> Decision:
        """Words that claimed a tool's result: the nearest offered tool, asked for as a call."""
        log.info("the model's words claim what no tool of this turn did: %r", claimed.text)
        nearest = sorted(
            (name for name in self.offer.names if name != calls.ANSWER),
            key=lambda name: -self.offer.scores.get(name, 0.0),
        )
        call = await self.forced(nearest[0]) if nearest else None
        return Proposed(call, claimed=True) if call is not None else Again()

    async def forced(self, name: str) -> calls.Call | None:
        text = await self.runs.whole(self.chat, {**self.fields, p.FIELD_MUST_CALL: name})
        return calls.parse_reply(text, self.offered, self.turn).call

    async def confirm(self, proposed: Proposed) -> Decision:
        call = proposed.call
        hints = self.turn.of(call.name)
        if hints.fact_argument and self.offer.for_words:
            return Again()  # a request for words states nothing to keep ("explain inflation")
        known = [fact.text for fact in self.turn.remembered]
        if checks.already_known(call, hints.fact_argument, known):
            log.debug("not written again: %r", call.arguments)
            return Again()
        sure = self.offer.scores.get(call.name, 0.0) >= SURE_AT_LEAST
        asking = checks.confirmation(
            call, self.message, self.turn, self.offered.get(call.name), sure
        )
        if asking:
            verdict = await self.runs.whole(asking, yes_or_no_fields(), 2)
            log.debug("asked whether %s was wanted: %r", call.name, verdict)
            if verdict.strip().lower() == "no":
                return Again()
        return await self.one_fact_each(call)

    async def one_fact_each(self, call: calls.Call) -> CallTool:
        """A call that writes a long fact, made once for each fact the message stated: three
        things said in one sentence are kept as three facts, each forgettable alone."""
        argument = self.turn.of(call.name).fact_argument
        if not argument or len(str(call.arguments.get(argument, ""))) <= ONE_FACT_CHARS:
            return CallTool(call)
        grammar = {p.FIELD_GRAMMAR: facts.FACT_LINES}
        found = facts.stated(
            await self.runs.whole(facts.asking(self.message), grammar, facts.FACT_TOKENS)
        )
        if len(found) < 2:
            return CallTool(call)
        each = [calls.Call(call.name, {**call.arguments, argument: fact}) for fact in found]
        return CallTool(each[0], tuple(each[1:]))

    async def again(self) -> Decision:
        """Asked again, told that no tool fits, and read whole."""
        chat = with_note_before_message(self.chat, NO_TOOL_FITS)
        text = (await self.runs.whole(chat, self.answer_fields, AGAIN_TOKENS)).strip()
        if not text or calls.describes_a_call(text, self.offered):
            return Cannot()
        return Cannot() if await self.claims(text) else Speak(text)


def rest_of(written: Written) -> str:
    """What the person has not read of a reply that streamed: nothing when it was written the
    same way again; when its words changed, what follows the part shown (never a call)."""
    words = calls.words_before_a_call(written.reply)
    if words.startswith(written.shown):
        return ""
    return words[len(written.shown) :]


def with_note_before_message(chat: list[dict[str, str]], note: str) -> list[dict[str, str]]:
    """``chat`` with a system message right before its last message (what came before stays
    the same, so the runner reads only the note and the message)."""
    return [*chat[:-1], {"role": "system", "content": note}, chat[-1]]


def delta(text: str) -> StreamEvent:
    return {"contentBlockDelta": {"delta": {"text": text}}}


def tool_use_events(call: calls.Call) -> list[StreamEvent]:
    """A checked call as strands' streamed tool use."""
    tool_use_id = f"tooluse_{uuid.uuid4().hex[:16]}"
    return [
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": tool_use_id, "name": call.name}}
            }
        },
        {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(call.arguments)}}}},
        {"contentBlockStop": {}},
    ]
