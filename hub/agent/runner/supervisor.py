"""The embedded model's runner, kept: one process at a time, warm between turns, replaced when
it dies, released when idle, and switched off after it keeps dying.

Generations run one at a time (one llama.cpp context). A turn that stops early settles its
generation before the next may start: the runner is asked to stop, and killed if it does not
within :data:`CANCEL_GRACE_S`. Three deaths in a row with no finished generation between them
mark the runner failed: every turn then gets the reason at once instead of another crash, until
the hub restarts or its embedded settings change (which makes a new supervisor).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

from hub.agent.bundled_models import MODELS, VERIFIER, log_progress
from hub.agent.runner import protocol as p
from hub.agent.runner.process import (
    Generation,
    RunnerExited,
    RunnerProcess,
    RunnerSpec,
)

log = logging.getLogger(__name__)

# A runner asked to stop checks between tokens; one token takes ~70 ms on 2 busy cores, more
# under load. Killed sooner, a runner that was about to stop loses every prompt it kept in
# memory (the next turn reads them all again), and the step of a small model stops its own
# generations often (once a first sentence is checked).
CANCEL_GRACE_S = 1.0
START_TIMEOUT_S = 120.0
FAILURES_BEFORE_OFF = 3
# A generation that gives way (listening after a reply) begins only once no turn has asked for
# this long: a turn's generations come a moment apart (its offer, its tool's run), and one that
# began between them would make the turn wait while it reads its prompt.
GIVE_WAY_S = 1.0


class RunnerFailed(Exception):
    """The runner kept dying; the message is the last reason and what to do."""


class RunnerSupervisor:
    def __init__(
        self,
        spec: RunnerSpec,
        *,
        keep_alive_s: float = 300.0,
        start: Callable[[RunnerSpec], RunnerProcess] = RunnerProcess,
    ) -> None:
        self.spec = spec
        self.keep_alive_s = keep_alive_s
        self._make = start
        self._process: RunnerProcess | None = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._deaths = 0
        self._last_death: RunnerExited | None = None
        self._idle: asyncio.TimerHandle | None = None
        self._stopping: set[asyncio.Task[None]] = set()
        self.generations = 0
        self._join_log = log_progress(spec.model_path.name)
        # What the runner is being made ready for, while it is (joining, loading, reading).
        self.preparing = ""
        # When a generation other than a warm-up last asked (the loop's clock), and how many
        # wait for the runner now: reading ahead gives way to turns.
        self.last_asked = 0.0
        self.waiting = 0
        self.turns_running = 0  # turn generations under way (not warm-ups, not yielding ones)
        # The generation under way that gives way to a turn (listening after a reply): asked
        # to stop when a turn asks, it ends at its next token.
        self._yielding: tuple[RunnerProcess, int] | None = None

    @property
    def failure(self) -> str | None:
        death = self._last_death
        if self._deaths < FAILURES_BEFORE_OFF or death is None:
            return None
        return (
            f"{death.what} ({self._deaths} times in a row), so the embedded model is off until "
            f"the hub restarts or its settings change. Fix: {death.fix}"
        )

    @property
    def system_info(self) -> str:
        """llama.cpp's own account of the CPU features it uses (empty before a start)."""
        return str(self._process.ready.get("system_info", "")) if self._process else ""

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process and self._process.alive else None

    def status(self) -> dict[str, Any]:
        """For /api/health and doctor: failed (with why), busy, ready or stopped."""
        state = "stopped"
        if self.failure:
            state = "failed"
        elif self._process is not None and self._process.alive:
            state = "busy" if self._lock.locked() else "ready"
        status: dict[str, Any] = {
            "state": state,
            "model": self.spec.model_path.stem,
            "threads": self.threads,
            "pid": self.pid,
        }
        if not self.spec.threads:
            status["threadsChosen"] = "idle cores"
        if self.preparing:
            status["preparing"] = self.preparing
        if cache := self.cache:
            status["promptCache"] = cache
        if self.failure:
            status["reason"] = self.failure
        elif self._last_death is not None:
            status["lastCrash"] = self._last_death.what
        return status

    async def generate(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        sampling: dict[str, Any],
        usage: Generation,
        offer: Mapping[str, Any] | None = None,
        op: str = p.OP_GENERATE,
        *,
        yields: bool = False,
    ) -> AsyncGenerator[str, None]:
        """The reply's text as the runner decodes it. Leaving early (the turn was cancelled or
        the consumer stopped reading) stops the decoding. ``offer``: the tools (and grammar)
        this generation offers, in the protocol's fields; ``op`` warm reads the prompt into the
        runner's cache and decodes nothing; ``yields``: a generation no turn waits for, stopped
        (its stop reason "cancelled") when one asks."""
        if (failure := self.failure) is not None:
            raise RunnerFailed(failure)
        turn = op != p.OP_WARM and not yields
        if turn:
            self.asked()
        self.waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self.waiting -= 1
        self.turns_running += int(turn)  # counted in waiting until now, with no await between
        process: RunnerProcess | None = None
        rid = 0
        try:
            self._cancel_idle()
            process = await self._running()
            if yields and not self.is_quiet(GIVE_WAY_S):  # a turn goes first
                usage.stop_reason = p.STOP_CANCELLED
                return
            rid = process.request(messages, max_tokens, sampling, offer, op)
            if yields:
                self._yielding = (process, rid)
            async for piece in process.stream(rid, usage):
                yield piece
            self._deaths = 0
            self.generations += 1
        except RunnerExited as exc:
            self._died(process, exc)
            raise
        finally:
            if yields:
                self._yielding = None
            elif turn:
                self.last_asked = asyncio.get_running_loop().time()
                self.turns_running -= 1
            settle = asyncio.ensure_future(self._settle(process, rid))
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(settle)

    def asked(self) -> None:
        """A turn needs the runner now or in a moment (its first generation follows its offer):
        reading ahead and listening wait, and a generation that gives way is stopped."""
        self.last_asked = asyncio.get_running_loop().time()
        if self._yielding is not None:
            self._yielding[0].cancel(self._yielding[1])

    def is_quiet(self, for_s: float) -> bool:
        """No turn has asked for ``for_s`` seconds, and none waits or runs."""
        left = self.last_asked + for_s - asyncio.get_running_loop().time()
        return left <= 0 and not self.waiting and not self.turns_running

    async def quiet(self, for_s: float) -> None:
        """Return once no turn has asked for ``for_s`` seconds and none waits or runs: reading
        ahead gives way to a conversation going on (a turn's generations come a moment apart)."""
        loop = asyncio.get_running_loop()
        while not self.is_quiet(for_s):
            left = self.last_asked + for_s - loop.time()
            await asyncio.sleep(min(max(left, 0.1), 1.0))

    async def start(self) -> None:
        """Join and check the model file and load it now, not on the first message."""
        if (failure := self.failure) is not None:
            raise RunnerFailed(failure)
        async with self._lock:
            self._cancel_idle()
            try:
                await self._running()
            except RunnerExited as exc:
                self._died(None, exc)
                raise
            self._schedule_idle()

    async def warm(
        self, messages: list[dict[str, str]], offer: Mapping[str, Any] | None = None
    ) -> Generation:
        """Read a prompt that turns will begin with and keep its state in the runner's cache
        (a turn that asks meanwhile waits for this one prompt, not for the rest)."""
        usage = Generation()
        async for _ in self.generate(messages, 1, {}, usage, offer, p.OP_WARM):
            pass
        return usage

    @property
    def threads(self) -> int:
        """The fixed count, or the one the runner last decoded with (0 before it has run)."""
        if self.spec.threads or self._process is None:
            return self.spec.threads
        return self._process.threads

    @property
    def cache(self) -> dict[str, Any]:
        """The prompt cache as the runner last told it: capacity, bytes used, entries."""
        process = self._process
        if process is None:
            return {}
        return {"capacityBytes": process.ready.get("cache_bytes", 0), **process.cache}

    async def _running(self) -> RunnerProcess:
        if self._process is not None and self._process.alive:
            return self._process
        if self.spec.bundled:
            model = MODELS[self.spec.bundled]
            await asyncio.to_thread(VERIFIER.ready, model, self.spec.model_path, self._joining)
        process = self._make(self.spec)
        self._process = process
        self.preparing = f"loading {self.spec.model_path.name}"
        try:
            await process.start(START_TIMEOUT_S)
        finally:
            self.preparing = ""
        return process

    def _joining(self, done: int, total: int) -> None:
        """Progress of joining the model's parts, for the log and /api/health."""
        self._join_log(done, total)
        self.preparing = f"joining the model file: {done * 100 // max(total, 1)}%"

    async def _settle(self, process: RunnerProcess | None, rid: int) -> None:
        """Runs to its end even when the turn is cancelled: the lock is free only once the
        runner is idle again (or gone)."""
        try:
            if process is not None and rid and process.alive:
                await process.settle(rid, CANCEL_GRACE_S)
            if process is not None and process.alive:
                self._schedule_idle()
        finally:
            self._lock.release()

    def _died(self, process: RunnerProcess | None, death: RunnerExited) -> None:
        if process is not None and process.killed_by_us:
            return
        self._deaths += 1
        self._last_death = death
        if self.failure:
            log.error("embedded model off: %s", self.failure)

    def _schedule_idle(self) -> None:
        self._cancel_idle()
        if self.keep_alive_s >= 0:
            loop = asyncio.get_running_loop()
            self._idle = loop.call_later(self.keep_alive_s, self._release_if_idle)

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _release_if_idle(self) -> None:
        process = self._process
        if process is None or self._lock.locked() or not process.alive:
            return
        log.info("model runner %s idle for %.0f s: released", process.pid, self.keep_alive_s)
        self._process = None
        task = asyncio.ensure_future(process.stop())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def close(self) -> None:
        self._cancel_idle()
        process, self._process = self._process, None
        if process is not None:
            await process.stop()
        for task in list(self._stopping):
            await task
