"""What the hub does by itself while it runs: the start-up repairs (vectors a crash left
unwritten, the universe's drift) and the housekeeping every minute (the relay's dead letters,
the audit log's length, forgotten facts past their grace period, old proposals)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hub.confirmations.actions import pending_of
from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

SWEEP_EVERY_S = 60.0


@dataclass
class Repairs:
    """The start-up repairs (vectors a crash left unwritten, the universe's drift), for
    /api/health: a client can say why the first minutes are slower."""

    state: str = "pending"
    doing: str = ""
    fixed: int = 0

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "doing": self.doing, "fixed": self.fixed}


async def housekeeping(hub: Hub) -> None:
    """Every minute: dead-letter envelopes nobody pulled within an hour and drop replies after
    a day, trim the audit log, delete for good what was forgotten past its grace period, and
    drop old answered proposals."""
    while True:
        try:
            dead, forgotten = hub.devices.mailbox.sweep()
            hub.audit.trim()
            if dead or forgotten:
                log.info("relay sweep: %d dead-lettered, %d old replies dropped", dead, forgotten)
        except Exception:
            log.warning("relay sweep failed", exc_info=True)
        await delete_forgotten(hub)
        await asyncio.sleep(SWEEP_EVERY_S)


async def delete_forgotten(hub: Hub) -> None:
    """Forgotten facts past the grace period go for good; old proposals are dropped."""
    try:
        deleted = await asyncio.to_thread(hub.memory.delete_forgotten)
        pending_of(hub).sweep()
        if deleted:
            log.info("deleted %d forgotten fact(s) for good: their grace period ended", deleted)
    except Exception:
        log.warning("deleting forgotten facts failed (the next round tries again)", exc_info=True)


async def repair_at_start(hub: Hub, repairs: Repairs) -> None:
    """Public tinys missing from the universe get their vector, and private or deleted ones
    leave it; facts whose vector was never written (a crash between the two writes) get one.

    They wait ``repairs_after_s`` first: opening Chroma and loading the embedder take a second
    or more on a small machine, which the first requests of a starting hub (or a hub started
    for one command) should not queue behind. A universe search meanwhile catches up itself.
    """
    await asyncio.sleep(hub.settings.repairs_after_s)
    repairs.state = "running"
    await catch_up(
        repairs,
        hub.universe.index_missing,
        "bring the universe in step with the tinys",
        "universe: %d tiny(s) indexed or removed",
    )
    await catch_up(
        repairs,
        hub.memory.index_missing,
        "index facts missing from Chroma",
        "indexed %d fact(s) that had no vector",
    )
    repairs.state, repairs.doing = "done", ""


async def catch_up(repairs: Repairs, work: Callable[[], int], what: str, done: str) -> None:
    """One start-up repair in a thread; a failure is logged (the next start tries again)."""
    repairs.doing = what
    try:
        count = await asyncio.to_thread(work)
    except Exception:
        log.warning("could not %s", what, exc_info=True)
        return
    repairs.fixed += count
    if count:
        log.info(done, count)
