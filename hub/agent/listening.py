"""Memory that listens: what the person states about themselves and the people in their life
is kept without the word "remember".

After a turn's reply is complete (never before it), when the turn ran on the embedded model
and called no tool, the model is asked beside the conversation which facts the person's
message stated, under a grammar that allows "none" or up to four lines that each begin "The
user". Each fact memory does not already hold is learned; when memory holds one it corrects
("the visit moved to Sunday" after "visiting on Saturday"), the model is asked whether the new
one replaces it, and a yes supersedes it. Each fact kept is published on the person's event ring
as a ``remembered`` event, which the TUI shows as "I'll remember: …" with an undo.

Questions, small talk and requests state nothing to keep: the examples say so, and the model
answers "none" for them. ``memory.listen = false`` turns this off.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from hub.agent.runner import protocol as p
from hub.agent.runner.process import Generation
from hub.agent.runner.supervisor import RunnerSupervisor
from hub.agent.small.calls import YES_OR_NO
from hub.agent.small.checks import Confirmation
from hub.agent.small.facts import FACT_LINES, FACT_TOKENS, asking, stated
from hub.agent.small.offer import words
from hub.memory.graph import Fact, MemoryRefused, MemoryStore

log = logging.getLogger(__name__)


class Publish(Protocol):
    """How a kept fact reaches the person's screens (``EventRing.publish``'s shape)."""

    def __call__(self, owner: str, kind: str, device_id: str | None, detail: Any, /) -> object: ...


REMEMBERED_KIND = "remembered"
# Listening waits until no turn has asked for this long, and tries this often: a try that a
# turn stopped cost that turn at most the message's few tokens read, and in a conversation of
# quick messages every try may be stopped until the person pauses.
QUIET_S = 1.0
TRIES = 40
GREEDY = {"temperature": 0.0, "top_p": 1.0, "repeat_penalty": 1.1}
REPLACES = Confirmation(
    "Does the new fact correct or replace the earlier one?",
    (
        (
            "Earlier: The user's dentist appointment is on Monday.\nNew: The user's dentist "
            "appointment moved to Thursday.",
            "",
            "yes",
        ),
        (
            "Earlier: The user's sister is called Ana.\nNew: The user's sister Ana is a nurse.",
            "",
            "no",
        ),
        ("Earlier: The user lives in Porto.\nNew: The user lives in Braga now.", "", "yes"),
    ),
    label="Facts",
)
# Of a new fact's words (besides "user"), how many an earlier fact must share to be asked about.
SHARED_FOR_REPLACING = 0.5


@dataclass(frozen=True)
class Kept:
    fact: Fact
    superseded: Fact | None = None

    def as_event(self) -> dict[str, object]:
        old = self.superseded
        return {
            "id": self.fact.id,
            "fact": self.fact.text,
            "supersedes": [old.id] if old else [],
            "supersededFact": old.text if old else "",
        }


class Listener:
    """Listens to one person's turns on one runner; the tasks it runs are its own."""

    def __init__(self, runner: RunnerSupervisor, memory: MemoryStore, publish: Publish) -> None:
        self.runner = runner
        self.memory = memory
        self.publish = publish

    async def heard(self, owner: str, message: str) -> list[Kept]:
        """The facts kept from ``message`` (published as they are kept). Listening gives way
        to turns: it begins once the person's next message has had a moment to come first,
        and a turn that asks meanwhile stops it (it tries again after)."""
        for _ in range(TRIES):
            await self.runner.quiet(QUIET_S)
            written = await self._generate(asking(message), FACT_LINES, FACT_TOKENS)
            if written is not None:
                break
        else:
            return []
        facts = stated(written)
        kept = []
        for text in facts:
            current = self.memory.recent(owner, 200)
            if any(words(text) <= words(f.text) for f in current):
                continue  # known already, perhaps in other words
            old = await self._replaced(owner, text)
            try:
                fact = self.memory.learn(owner, text, supersedes=[old.id] if old else [])
            except MemoryRefused as exc:
                log.info("listening kept nothing: %s", exc)
                break
            made = Kept(fact, old)
            self.publish(owner, REMEMBERED_KIND, None, made.as_event())
            kept.append(made)
        return kept

    async def _replaced(self, owner: str, text: str) -> Fact | None:
        """The fact ``text`` corrects, if the model says it does: the nearest one that shares
        enough of its words."""
        said = words(text) - {"user"}
        for candidate in self.memory.recall(owner, text, limit=3):
            shared = said & words(candidate.text)
            if len(shared) < SHARED_FOR_REPLACING * max(len(said), 1):
                continue
            pair = f"Earlier: {candidate.text}\nNew: {text}"
            verdict = await self._generate(REPLACES.chat(pair), YES_OR_NO, 2)
            return candidate if (verdict or "").strip().lower() == "yes" else None
        return None

    async def _generate(self, chat: list[dict[str, str]], grammar: str, tokens: int) -> str | None:
        """What the model wrote, or None when a turn stopped it."""
        usage = Generation()
        fields = {p.FIELD_GRAMMAR: grammar}
        pieces = self.runner.generate(chat, tokens, GREEDY, usage, fields, yields=True)
        text = "".join([piece async for piece in pieces])
        return None if usage.stop_reason == p.STOP_CANCELLED else text


_RUNNING: set[asyncio.Task[list[Kept]]] = set()


async def all_heard() -> None:
    """Return once every listening under way has ended (a benchmark scores memory after)."""
    while _RUNNING:
        await asyncio.gather(*list(_RUNNING), return_exceptions=True)


def listen_after(listener: Listener, owner: str, message: str) -> asyncio.Task[list[Kept]]:
    """Listen to ``message`` in the background; the task is kept until it ends."""
    task = asyncio.create_task(_quietly(listener, owner, message))
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    return task


async def _quietly(listener: Listener, owner: str, message: str) -> list[Kept]:
    try:
        return await listener.heard(owner, message)
    except Exception:  # a turn already answered never fails for what was heard after it
        log.warning("listening to a turn failed", exc_info=True)
        return []
