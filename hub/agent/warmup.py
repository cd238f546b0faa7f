"""The embedded model made ready as the hub starts, so the first message does not wait for it.

When the model that answers by default is the embedded one, the hub joins and checks its file,
loads it in the runner and has the runner read what every turn begins with — the owner's
default tiny's prompt and the tools offered for small talk, and the examples of the yes/no
checks — while the person is still opening the chat; then each family of tools as it is
offered (a message about a device meets that device's tools whole), so that later turns
read only what is new in them. What it read is kept on disk: the next start reads none of it
again. Each step shows in ``/api/health``
(``embedded.preparing``) and the log. A message sent meanwhile waits only for the step under
way, and takes what is ready; a step that fails is logged and the first turn tries again, as
it would have without this.
"""

from __future__ import annotations

import logging
import time

from hub.agent.compose import compose_turn
from hub.agent.embedded import EmbeddedModel
from hub.agent.runner.supervisor import RunnerSupervisor
from hub.agent.turn import ChatMessage
from hub.contracts import PROVIDER_EMBEDDED
from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

READING = "reading the system prompt and tools"
READING_FAMILIES = "reading each family of tools ahead"
# What the warm-up composes a turn for: the offer for small talk begins every offer.
SMALL_TALK = "hello"


async def warm_up(hub: Hub) -> None:
    """Join, load and warm the embedded model when it is the default; never raises."""
    try:
        choice = await hub.models.default()
        if choice.provider != PROVIDER_EMBEDDED:
            return
        runner = hub.models.embedded_runner()
        started = time.monotonic()
        await runner.start()
        if choice.tools:
            await _read_beginnings(hub, runner)
        log.info("embedded model ready in %.1f s", time.monotonic() - started)
    except Exception as exc:  # the first turn will try again and say why
        log.warning("could not get the embedded model ready at start: %s", exc)


async def _read_beginnings(hub: Hub, runner: RunnerSupervisor) -> None:
    turn = await compose_turn(hub, hub.owner, [ChatMessage("user", (SMALL_TALK,))], {})
    if not isinstance(turn.model, EmbeddedModel):
        return
    specs = [t.tool_spec for t in turn.tools]
    runner.preparing = READING
    try:
        warmed = await turn.model.warm(turn.system_prompt, specs)
        runner.preparing = READING_FAMILIES
        warmed += await turn.model.warm_families(turn.system_prompt, specs)
    finally:
        runner.preparing = ""
    read = sum(w.prompt_evaluated for w in warmed)
    log.info("embedded model read %d prompt tokens ahead of the turns", read)
