"""One runner child process, seen from the hub: start it, stream a generation, stop it.

The pipes are read by an asyncio subprocess protocol that decodes whole lines into a queue, so
a consumer can take every event already waiting in one go: text that arrived while the hub was
busy leaves as one piece, and nothing waits for more text to come.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.agent.runner import protocol as p

log = logging.getLogger(__name__)

EXIT = "exit"  # the protocol's own end-of-events marker, never sent by the runner
STDERR_LINES_KEPT = 20
# A runner told to stop writes its prompt cache for up to 5 s (child.FLUSH_BUDGET_S) first.
STOP_WAIT_S = 8.0


class RunnerExited(Exception):
    """The runner process ended; ``what`` says how in words, ``fix`` what to do."""

    def __init__(self, what: str, fix: str = "") -> None:
        self.what, self.fix = what, fix
        text = f"{what}. Fix: {fix}" if fix else what
        super().__init__(f"{text}. The next message starts a fresh runner.")


class RunnerError(Exception):
    """The runner is alive but could not do what it was asked (the message says why)."""


@dataclass(frozen=True)
class RunnerSpec:
    """Everything a runner is started with; a change means a different runner."""

    model_path: Path
    context: int
    threads: int
    # The bundled model's key when the file is one the hub joins and checks before loading.
    bundled: str = ""
    # RAM for the prompt cache (see ``prefix_cache``); 0: none.
    cache_mb: int = 0
    # Where the prompt cache's entries outlive the runner; empty: in RAM only.
    cache_dir: str = ""

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "hub.agent.runner.child",
            "--model",
            str(self.model_path),
            "--context",
            str(self.context),
            "--threads",
            str(self.threads),
            "--cache-mb",
            str(self.cache_mb),
            "--cache-dir",
            self.cache_dir,
        ]


@dataclass
class Generation:
    """What generations cost, for usage and metrics: one, or the sum of those a model call
    made (a reply and the checks beside it)."""

    prompt_tokens: int = 0
    prompt_evaluated: int = 0  # of the prompt's tokens, those really read (not from the cache)
    completion_tokens: int = 0
    stop_reason: str = p.STOP_END
    seconds: float = 0.0


REBUILD = (
    "rebuild llama-cpp-python portably: rm .venv/.tiny-hub-installed && ./scripts/hub "
    "(or pip install --force-reinstall --no-cache-dir llama-cpp-python with "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF")'
)
DOCTOR = "run tiny-hub doctor"

# What each death means, and what a person can do about it.
SIGNAL_MEANINGS: dict[int, tuple[str, str]] = {
    signal.SIGILL: (
        "crashed on an illegal instruction (SIGILL): llama.cpp was built for a CPU feature "
        "this machine or its hypervisor does not allow",
        REBUILD,
    ),
    signal.SIGSEGV: (
        "crashed with a memory fault (SIGSEGV) inside llama.cpp",
        f"the model file may be damaged or the build broken; {DOCTOR}",
    ),
    signal.SIGBUS: (
        "crashed with a bus error (SIGBUS)",
        f"the model file may have changed or be on a disk that went away; {DOCTOR}",
    ),
    signal.SIGKILL: (
        "was killed (SIGKILL), usually because the machine ran out of memory",
        "close other programs or lower embedded.context_size",
    ),
    signal.SIGABRT: ("aborted (SIGABRT) on an internal error in llama.cpp", DOCTOR),
}


def describe_exit(returncode: int | None, stderr_tail: list[str]) -> RunnerExited:
    """How the runner ended, for a person: the signal's meaning and the fix."""
    what, fix = "the embedded model's runner", DOCTOR
    if returncode is not None and returncode < 0:
        number = -returncode
        meaning, fix = SIGNAL_MEANINGS.get(number, (f"was stopped by signal {number}", DOCTOR))
        what = f"{what} {meaning}"
    else:
        what = f"{what} exited with status {returncode}"
    last = next((line for line in reversed(stderr_tail) if line.strip()), "")
    if last and (returncode is None or returncode >= 0 or returncode == -signal.SIGABRT):
        what += f" ({last.strip()[:300]})"
    return RunnerExited(what, fix)


class _Pipes(asyncio.SubprocessProtocol):
    """Lines from the runner's stdout → decoded events on a queue; stderr → the log."""

    def __init__(self, events: asyncio.Queue[dict[str, Any]], stderr: collections.deque[str]):
        self._events = events
        self._stderr = stderr
        self._partial = {1: b"", 2: b""}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        *lines, self._partial[fd] = (self._partial[fd] + data).split(b"\n")
        for line in lines:
            if fd == 1:
                self._event(line)
            elif line.strip():
                text = line.decode(errors="replace")
                self._stderr.append(text)
                log.debug("runner: %s", text)

    def _event(self, line: bytes) -> None:
        try:
            self._events.put_nowait(p.decode(line))
        except ValueError:
            log.debug("runner wrote a line that is not an event: %r", line[:200])

    def connection_lost(self, exc: BaseException | None) -> None:
        self._events.put_nowait({"ev": EXIT})


class RunnerProcess:
    """A started runner: ``start()`` once, then one ``stream()`` at a time."""

    def __init__(self, spec: RunnerSpec) -> None:
        self.spec = spec
        self.ready: dict[str, Any] = {}
        self.killed_by_us = False
        self._events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES_KEPT)
        self._transport: asyncio.SubprocessTransport | None = None
        self._exited = False
        self._next_id = 0
        self.active: int | None = None  # the generation the runner is working on
        self.cache: dict[str, Any] = {}  # the prompt cache's stats, as the last ``done`` said
        self.threads = 0  # the threads it decoded with last (ready, then each ``done``)

    @property
    def pid(self) -> int | None:
        return self._transport.get_pid() if self._transport else None

    @property
    def alive(self) -> bool:
        return self._transport is not None and not self._exited

    async def start(self, timeout_s: float) -> dict[str, Any]:
        """Spawn the runner and wait for its ``ready``; RunnerExited if it dies first."""
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.subprocess_exec(
            lambda: _Pipes(self._events, self._stderr), *self.spec.command()
        )
        try:
            event = await asyncio.wait_for(self._events.get(), timeout_s)
        except TimeoutError:
            self.kill()
            raise RunnerExited(
                f"the embedded model's runner did not load {self.spec.model_path.name} "
                f"within {timeout_s:.0f} s",
                DOCTOR,
            ) from None
        if event.get("ev") != p.EV_READY:
            raise await self._exited_error()
        self.ready = event
        self.threads = int(event.get("threads", 0))
        log.info(
            "model runner %s: %s loaded in %.2f s, %d thread(s)",
            self.pid,
            event.get("model"),
            float(event.get("load_s", 0.0)),
            int(event.get("threads", 0)),
        )
        return event

    def request(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        sampling: Any,
        offer: Mapping[str, Any] | None = None,
        op: str = p.OP_GENERATE,
    ) -> int:
        """Send one generation (or, with ``op`` warm, a prompt to read and keep); ``offer`` adds
        the protocol's tool fields (see ``protocol``)."""
        self._next_id += 1
        self.active = self._next_id
        self._send(
            {
                "op": op,
                "id": self._next_id,
                "messages": messages,
                "max_tokens": max_tokens,
                "sampling": sampling,
                **(offer or {}),
            }
        )
        return self._next_id

    def cancel(self, rid: int) -> None:
        self._send({"op": p.OP_CANCEL, "id": rid})

    async def stream(self, rid: int, usage: Generation) -> AsyncIterator[str]:
        """The generation's text as it arrives (what is already waiting leaves as one piece);
        returns at its end, raises when it fails or the runner dies."""
        while True:
            batch = [await self._events.get()]
            while not self._events.empty():
                batch.append(self._events.get_nowait())
            text, outcome = self._read_batch(rid, batch, usage)
            if text:
                yield text
            if outcome == "done":
                return
            if outcome == EXIT:
                raise await self._exited_error()
            if isinstance(outcome, BaseException):
                raise outcome

    async def settle(self, rid: int, grace_s: float) -> bool:
        """Stop generation ``rid`` if it still runs: ask, and kill the runner when it does not
        stop within ``grace_s`` (it may be deep in a prompt, where no token checks). True when
        the runner is still usable afterwards."""
        if not self.alive:
            return False
        if self.active != rid:
            return True
        self.cancel(rid)
        try:
            async with asyncio.timeout(grace_s):
                while True:
                    event = await self._events.get()
                    if event.get("ev") == EXIT:
                        self._exited = True
                        return False
                    if event.get("id") == rid and event.get("ev") in (p.EV_DONE, p.EV_ERROR):
                        self.active = None
                        return True
        except TimeoutError:
            log.info("model runner %s did not stop within %.0f ms; killed", self.pid, grace_s * 1e3)
            self.kill()
            return False

    def _read_batch(
        self, rid: int, batch: list[dict[str, Any]], usage: Generation
    ) -> tuple[str, str | BaseException]:
        """The batch's text for ``rid`` and what follows it: "more", "done", EXIT or an error."""
        pieces: list[str] = []
        for event in batch:
            kind = event.get("ev")
            if kind == EXIT:
                self._exited = True
                return "".join(pieces), EXIT
            if event.get("id") != rid:
                continue  # the end of a generation given up on earlier
            if kind == p.EV_TEXT:
                pieces.append(str(event.get("text", "")))
                usage.completion_tokens += int(event.get("n", 1))
            elif kind == p.EV_DONE:
                self.active = None
                usage.stop_reason = str(event.get("stop", p.STOP_END))
                usage.prompt_tokens += int(event.get("prompt_tokens", 0))
                usage.prompt_evaluated += int(event.get("prompt_evaluated", 0))
                usage.seconds += float(event.get("seconds", 0.0))
                self.cache = dict(event.get("cache") or {})
                self.threads = int(event.get("threads", self.threads))
                log.debug(
                    "generation %d: %d prompt tokens, %d read, %d out, %.2f s, %d thread(s)",
                    rid,
                    int(event.get("prompt_tokens", 0)),
                    int(event.get("prompt_evaluated", 0)),
                    int(event.get("completion_tokens", 0)),
                    float(event.get("seconds", 0.0)),
                    self.threads,
                )
                return "".join(pieces), "done"
            elif kind == p.EV_ERROR:
                self.active = None
                message = str(event.get("message", "the runner failed"))
                if event.get("kind") == p.ERROR_CONTEXT_OVERFLOW:
                    # strands is imported here, not above: loading it takes a second, and
                    # `tiny-hub doctor` reads this module's neighbours without running a turn.
                    from strands.types.exceptions import ContextWindowOverflowException

                    return "".join(pieces), ContextWindowOverflowException(message)
                return "".join(pieces), RunnerError(message)
        return "".join(pieces), "more"

    async def _exited_error(self) -> RunnerExited:
        self._exited = True
        error = describe_exit(await self._returncode(), list(self._stderr))
        log.warning("model runner %s ended: %s", self.pid, error.what)
        return error

    async def _returncode(self) -> int | None:
        for _ in range(200):  # the exit status follows the closed pipes within milliseconds
            code = self._transport.get_returncode() if self._transport else None
            if code is not None:
                return code
            await asyncio.sleep(0.01)
        return None

    def _send(self, message: dict[str, Any]) -> None:
        if self._transport is None or self._exited:
            return
        pipe = self._transport.get_pipe_transport(0)
        if isinstance(pipe, asyncio.WriteTransport) and not pipe.is_closing():
            pipe.write(p.encode(message))

    def kill(self) -> None:
        if self._transport is not None and self._transport.get_returncode() is None:
            self.killed_by_us = True
            with contextlib.suppress(ProcessLookupError):
                self._transport.kill()
        self._exited = True

    async def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Close its stdin (the runner ends on EOF, once it has written what its prompt cache
        keeps); kill it if it lingers."""
        if self._transport is None:
            return
        self.killed_by_us = True
        pipe = self._transport.get_pipe_transport(0)
        if pipe is not None:
            pipe.close()
        for _ in range(int(wait_s / 0.02)):
            if self._transport.get_returncode() is not None:
                break
            await asyncio.sleep(0.02)
        self.kill()
        self._transport.close()
