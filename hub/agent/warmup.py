"""The embedded model made ready as the hub starts, so the first message does not wait for it.

When the model that answers by default is the embedded one, the hub joins and checks its file,
loads it in the runner and has the runner read what every turn begins with — the owner's
default tiny's prompt and the tools offered for small talk, and the examples of the yes/no
checks and of the facts question — while the person is still opening the chat. Then the model
is ready, and the families of tools are read one at a time (a message about a device meets
that device's tools whole), each once no turn has asked for a few seconds, so later turns read
only what is new in them: first those a person meets first — the devices online now, and the
families whose tools say so (memory, reminders, sums) — then the others. What it read is kept
on disk: the next start reads none of it again. Each step shows in ``/api/health``
(``embedded.preparing``) and the log. A message sent meanwhile waits only for the step under
way, and takes what is ready; a step that fails is logged and the first turn tries again, as
it would have without this.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from strands.types.tools import ToolSpec

from hub.agent.compose import compose_turn
from hub.agent.embedded import EmbeddedModel
from hub.agent.runner.process import Generation
from hub.agent.runner.supervisor import RunnerSupervisor
from hub.agent.turn import ChatMessage
from hub.contracts import PROVIDER_EMBEDDED
from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

READING = "reading the system prompt and tools"
READING_FAMILIES = "reading each family of tools ahead"
# What the warm-up composes a turn for: the offer for small talk begins every offer.
SMALL_TALK = "hello"
# Reading ahead waits until no turn has asked for this long (a turn's generations, and the
# person's next message, come within it).
QUIET_S = 5.0


async def warm_up(hub: Hub) -> None:
    """Join, load and warm the embedded model when it is the default, then read the other
    families ahead in idle time; never raises."""
    if await get_ready(hub):
        await read_ahead(hub)


async def get_ready(hub: Hub) -> bool:
    """Join, load and warm the model: what every offer shares and the yes/no checks. True when
    the embedded model answers with tools."""
    try:
        choice = await hub.models.default()
        if choice.provider != PROVIDER_EMBEDDED:
            return False
        runner = hub.models.embedded_runner()
        started = time.monotonic()
        await runner.start()
        if choice.tools:
            await _read_shared(hub, runner)
        log.info("embedded model ready in %.1f s", time.monotonic() - started)
        return choice.tools
    except Exception as exc:  # the first turn will try again and say why
        log.warning("could not get the embedded model ready at start: %s", exc)
        return False


async def read_ahead(hub: Hub) -> None:
    """The families, one at a time, each once no turn has asked for a while: those a person
    meets first (the devices online, and those declared ``read_first``), then the others."""
    try:
        await _read_families(hub, hub.models.embedded_runner())
    except Exception as exc:  # a turn reads the family it meets instead
        log.warning("could not read the tools ahead: %s", exc)


async def _read_shared(hub: Hub, runner: RunnerSupervisor) -> None:
    """What every offer shares (the system prompt and the tools always offered), the checks'
    examples and the facts question."""
    if (turn := await _small_talk(hub)) is None:
        return
    runner.preparing = READING
    try:
        warmed = await turn.model.warm(turn.system_prompt, turn.specs)
    finally:
        runner.preparing = ""
    _log_read(warmed)


async def _read_families(hub: Hub, runner: RunnerSupervisor) -> None:
    """Each family's offer once no turn has asked for a while, those met first first."""
    if (turn := await _small_talk(hub)) is None:
        return
    model, specs = turn.model, turn.specs
    online = {t.tool_name for t in hub.drivers.online_family_tools()}
    offers = model.family_offers(specs)
    wanted = sorted(offers, key=lambda tools: not _read_first(model, tools, online))
    warmed = []
    try:
        for number, tools in enumerate(wanted, 1):
            await runner.quiet(QUIET_S)
            runner.preparing = f"{READING_FAMILIES} ({number} of {len(wanted)})"
            warmed.append(await model.warm_family(turn.system_prompt, specs, tools))
    finally:
        runner.preparing = ""
    _log_read(warmed)


@dataclass(frozen=True)
class SmallTalk:
    """A turn composed for small talk: the model with its turn's context, and what it offers."""

    model: EmbeddedModel
    system_prompt: str
    specs: list[ToolSpec]


async def _small_talk(hub: Hub) -> SmallTalk | None:
    turn = await compose_turn(hub, hub.owner, [ChatMessage("user", (SMALL_TALK,))], {})
    if not isinstance(turn.model, EmbeddedModel):
        return None
    return SmallTalk(turn.model, turn.system_prompt, [t.tool_spec for t in turn.tools])


def _log_read(warmed: list[Generation]) -> None:
    read = sum(w.prompt_evaluated for w in warmed)
    log.info("embedded model read %d prompt tokens ahead of the turns", read)


def _read_first(model: EmbeddedModel, tools: list[ToolSpec], online: set[str]) -> bool:
    names = [spec["name"] for spec in tools]
    return any(n in online or model.turn.of(n).read_first for n in names)
