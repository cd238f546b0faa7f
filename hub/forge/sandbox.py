"""Forged tools' JavaScript, run in V8 in child processes the hub can lose.

The engine is mini-racer (V8 from PyPI, one manylinux wheel, nothing downloaded at run time)
rather than quickjs: V8 is built for running strangers' code, mini-racer exposes a hard heap
limit and cancellation that terminates running JavaScript, and a bare context has no
``require``, ``process`` or I/O at all; what it has that could make code from text is removed
(see ``hub.forge.prelude``). V8 still ends its process on some allocations, so calls run in a
child (``hub.forge.child``), as the embedded model's llama.cpp does: a crash costs that call and
a restart, never the hub.

Children are started on demand (at most ``size`` at once), kept warm between calls, and
replaced when one dies or misses its deadline. Exchanges are blocking pipe reads in a worker
thread, so a sandbox serves any event loop (the server's, a test's, a benchmark's).
"""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any

from hub.forge import protocol as p
from hub.forge.protocol import FetchPolicy, Limits

__all__ = ["FetchPolicy", "Limits", "Sandbox", "ToolStopped"]

START_TIMEOUT_S = 30.0
DEADLINE_GRACE_S = 5.0  # the child enforces the limits; this is for a child that cannot


# What the child needs of the hub's environment to import its code and verify TLS; the hub's
# own variables (a model API key among them) stay out of a process that runs strangers' code.
CHILD_ENV_KEYS = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR")


def child_env() -> dict[str, str]:
    """The whole environment a sandbox child starts with."""
    kept = {key: os.environ[key] for key in CHILD_ENV_KEYS if key in os.environ}
    return {**kept, "PYTHONUNBUFFERED": "1"}


class ToolStopped(Exception):
    """A call did not give a result: the tool threw, ran over a limit, or is not one arrow
    function. The message is for the model and the person; ``kind`` names the cause."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Worker:
    process: subprocess.Popen[str]
    started_s: float  # seconds from start to ready

    @classmethod
    def start(cls) -> Worker:
        began = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "hub.forge.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # V8's crash reports are many lines of C stack
            text=True,
            encoding="utf-8",
            env=child_env(),
        )
        worker = cls(process, 0.0)
        try:
            ready = worker._read(START_TIMEOUT_S)
        except TimeoutError:
            ready = None
        if ready is None or not ready.get("ready"):
            worker.stop()
            raise ToolStopped(p.KIND_CRASH, "the tool sandbox did not start")
        worker.started_s = time.perf_counter() - began
        return worker

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def exchange(self, request: dict[str, Any], deadline_s: float) -> dict[str, Any]:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError):
            self.stop()
            raise ToolStopped(p.KIND_CRASH, "the tool sandbox had stopped; try again") from None
        try:
            answer = self._read(deadline_s)
        except TimeoutError:
            self.stop()
            raise ToolStopped(
                p.KIND_TIME, f"the tool did not answer within {deadline_s:g} s"
            ) from None
        if answer is None:
            self.stop()
            raise ToolStopped(p.KIND_CRASH, "the tool crashed its sandbox (out of memory?)")
        return answer

    def _read(self, timeout_s: float) -> dict[str, Any] | None:
        """The child's next message, or None when it ended; TimeoutError when it said nothing
        for `timeout_s`."""
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            if not selector.select(timeout_s):
                raise TimeoutError
        line = stdout.readline()
        if not line.endswith("\n"):  # it ended, maybe halfway through a line
            return None
        try:
            found: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            return None
        return found

    def stop(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


class Sandbox:
    """Runs and checks tool sources under `limits`; at most `size` children at once."""

    def __init__(self, limits: Limits | None = None, size: int = 2) -> None:
        self.limits = limits or Limits()
        self._idle: list[Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        # Calls wait their turn in this pool's queue, not in the loop's default executor,
        # which the rest of the hub shares.
        self._threads = ThreadPoolExecutor(size, thread_name_prefix="forge-sandbox")
        self.starts = 0  # children started, for tests and benchmarks

    async def run(self, source: str, input: Any) -> Any:
        """The tool's result for `input` (JSON values). Raises ToolStopped."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._call, p.OP_RUN, source, input)

    async def check(self, source: str) -> None:
        """Raises ToolStopped unless `source` is exactly one arrow function that compiles."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._threads, self._call, p.OP_CHECK, source, None)

    def warm(self) -> float:
        """Start a child ahead of the first call; the seconds its start took."""
        worker = self._start()
        self._give_back(worker)
        return worker.started_s

    def _call(self, op: str, source: str, input: Any) -> Any:
        request = p.request(op, source, self.limits, input)
        deadline = self.limits.wall_s + DEADLINE_GRACE_S
        worker = self._take()
        answer = worker.exchange(request, deadline)
        if answer.get("ending"):  # it ends itself after a runaway it could not stop
            worker.stop()
        else:
            self._give_back(worker)
        if answer.get("ok"):
            return answer.get("value")
        raise ToolStopped(str(answer.get("kind")), str(answer.get("error")))

    def _take(self) -> Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                worker.stop()
        return self._start()

    def _start(self) -> Worker:
        worker = Worker.start()
        with self._lock:
            self.starts += 1
        return worker

    def _give_back(self, worker: Worker) -> None:
        with self._lock:
            if worker.alive and not self._closed:
                self._idle.append(worker)
                return
        worker.stop()

    def child_pids(self) -> list[int]:
        """The idle children's process ids."""
        with self._lock:
            return [worker.process.pid for worker in self._idle]

    def close(self) -> None:
        """Stop the idle children now; a child still in a call stops when the call ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        self._threads.shutdown(wait=False, cancel_futures=True)
        for worker in idle:
            worker.stop()
