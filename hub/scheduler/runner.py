"""The scheduler: a part of the running hub that runs what is due, every tick.

A tick claims every due job and alert (see ``store.claim``: one slot runs once, whatever
restarts or other ticks happen), fires the alerts at once and runs each job as a one-shot chat
turn as its owner, all of them side by side. Every outcome becomes a notice (the person's ring,
their phones' mailboxes) and, where the machine has one, a desktop notification. A failing job
is recorded with its error and waits for its next slot; it is never retried in a loop.

Time comes from the hub's clock (``Devices.clock``), so tests move it forward and call
``tick`` instead of sleeping; the loop only decides how often to look.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from hub import contracts as c
from hub.agent.compose import answer
from hub.core.tasks import cancel_all
from hub.devices.notify import Notice, push_notice
from hub.runtime.hub import Hub
from hub.scheduler.store import Scheduled, ScheduleStore

log = logging.getLogger(__name__)

TICK_S = 1.0
FORGET_EVERY_TICKS = 600  # finished one-shots older than a week go, now and then
STOPPED = "the hub stopped during this run"


class Desktop(Protocol):
    def show(self, title: str, body: str) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class Outcome:
    item: Scheduled
    text: str = ""
    error: str = ""


@dataclass
class Scheduler:
    hub: Hub
    desktop: Desktop | None = None
    tick_s: float = TICK_S
    ticks: int = 0
    ran: int = 0
    failed: int = 0
    _running: set[str] = field(default_factory=set)
    _ticking: set[asyncio.Task[None]] = field(default_factory=set)
    _task: asyncio.Task[None] | None = None

    @property
    def store(self) -> ScheduleStore:
        return ScheduleStore(self.hub.db, self.hub.devices.clock)

    async def start(self) -> None:
        """Run what was missed while the hub was off (once each), then keep looking."""
        self._task = asyncio.create_task(self._loop(), name="scheduler")

    async def stop(self) -> None:
        """Stop looking, and end the runs still going (each is recorded as cut short)."""
        await cancel_all([self._task, *self._ticking])
        if self.desktop is not None:
            await self.desktop.close()

    def status(self) -> dict[str, Any]:
        return {"ticks": self.ticks, "ran": self.ran, "failed": self.failed}

    async def _loop(self) -> None:
        """Look every ``tick_s``; a tick's runs go on in its own task, so a job's long turn
        never holds up an alert due meanwhile."""
        while True:
            ticking = asyncio.create_task(self._tick_logged(), name="scheduler-tick")
            self._ticking.add(ticking)  # a task nobody references may be collected mid-run
            ticking.add_done_callback(self._ticking.discard)
            await asyncio.sleep(self.tick_s)

    async def _tick_logged(self) -> None:
        try:
            await self.tick()
        except Exception:
            log.warning("scheduler tick failed", exc_info=True)

    async def tick(self) -> list[Outcome]:
        """Run everything due now and return how each ended."""
        self.ticks += 1
        store = self.store
        now = store.clock()
        claimed = [
            item
            for item in store.due(now)
            if item.id not in self._running and store.claim(item, now)
        ]
        self._running.update(item.id for item in claimed)
        if self.ticks % FORGET_EVERY_TICKS == 1:
            store.forget_done(now)
        if not claimed:
            return []
        return list(await asyncio.gather(*(self._run(item) for item in claimed)))

    async def _run(self, item: Scheduled) -> Outcome:
        try:
            outcome = await (self._job(item) if item.kind == "job" else self._alert(item))
        except asyncio.CancelledError:
            self.store.record(item.id, STOPPED)
            raise
        except Exception as exc:  # a run's failure is recorded, never the scheduler's
            log.warning("%s %s (%s) failed", item.kind, item.id, item.label, exc_info=True)
            outcome = Outcome(item, error=str(exc) or type(exc).__name__)
        finally:
            self._running.discard(item.id)
        self.store.record(item.id, outcome.error)
        self.ran += 1
        self.failed += bool(outcome.error)
        return outcome

    async def _alert(self, item: Scheduled) -> Outcome:
        self._tell(item.owner, Notice(item.title, item.text, tag=f"alert:{item.id}"))
        return Outcome(item, item.text)

    async def _job(self, item: Scheduled) -> Outcome:
        user = self.hub.identity.user(item.owner)
        headers = {c.H_NAME: item.tiny} if item.tiny else {}
        text = await answer(self.hub, user, item.text, headers)
        self._tell(item.owner, Notice(item.label, text or "(no answer)", tag=f"job:{item.id}"))
        return Outcome(item, text)

    def _tell(self, owner: str, notice: Notice) -> None:
        push_notice(self.hub.devices, owner, notice)
        if self.desktop is not None and owner == self.hub.owner.id:
            self.desktop.show(notice.title, notice.body)
