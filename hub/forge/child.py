"""The sandbox child: runs forged tools' JavaScript in V8, one fresh context per call.

Started by ``hub.forge.sandbox`` as ``python -m hub.forge.child``; it reads one request per line
on stdin and answers one line on stdout (``hub.forge.protocol``). It is a process of its own
because V8 ends the whole process on some allocations (``new Array(2**28).fill(0)`` is a fatal
"invalid size" error, not an exception): here that ends this child, and the hub answers the
call with an error and starts another.

Each call gets a new V8 context, so one person's tool never sees what another's left behind.
The limits: the context's V8 heap is capped (``set_hard_memory_limit``); the process's data
segment is capped a fixed amount above what the warm engine uses (``RLIMIT_DATA``), which bounds
ArrayBuffers, whose bytes live outside the V8 heap; and a watchdog cancels the call, which
terminates the JavaScript, when the process has used more CPU time than allowed (or the wall
time ran out while the tool waited on fetches).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import secrets
import sys
import threading
import time
from typing import IO, Any

from py_mini_racer import (
    DEFAULT_V8_FLAGS,
    JSEvalException,
    JSOOMException,
    JSParseException,
    JSPromiseError,
    MiniRacer,
    init_mini_racer,
    mini_racer,
)

from hub.core.json_text import JsonRefused, parse_json_text
from hub.core.urls import canonical_url
from hub.forge import protocol as p
from hub.forge.prelude import PRELUDE

V8_FLAGS = (*DEFAULT_V8_FLAGS, "--disallow-code-generation-from-strings")
# Room for ArrayBuffers and the fetches' bodies above the warm engine's own data segment.
BUFFER_ROOM_BYTES = 256 * 1024 * 1024
FETCH_METHODS = ("GET", "HEAD", "POST")
USER_AGENT = "tiny-hub (forged tool)"
WATCH_EVERY_S = 0.02
RUNAWAY_GRACE_S = 0.5

# The engine's words before the thrown value: "<anonymous>:2: " or the rejected promise's.
_ENGINE_PREFIX = re.compile(r"^(<anonymous>:\d+: |JavaScript rejected promise with reason: )")


class Stopped(Exception):
    def __init__(self, kind: str, error: str) -> None:
        super().__init__(error)
        self.kind = kind


class Fetcher:
    """The Python side of a tool's ``fetch``: every request goes through the network guard,
    within the policy's schemes, hosts, size, time and count."""

    def __init__(self, policy: p.FetchPolicy) -> None:
        self.policy = policy
        self.calls = 0

    async def __call__(self, *args: Any) -> str:
        # aiohttp loads on a tool's first fetch: most tools never fetch, and it is most of
        # what a child's start costs.
        from hub.tinys.guarded import SendFailed, SendRefused

        try:
            return json.dumps(await self._fetch(*args))
        except (SendRefused, SendFailed, ValueError) as exc:
            return json.dumps({"error": f"fetch failed: {exc}"})

    async def _fetch(self, url: Any = "", options_json: Any = "{}", *_: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls > self.policy.max_calls:
            raise ValueError(f"a tool may fetch at most {self.policy.max_calls} times per call")
        options = json.loads(str(options_json))
        if not isinstance(options, dict):
            raise ValueError("fetch options must be an object")
        target = canonical_url(str(url))  # hub.core.urls: the URL checked is the URL fetched
        if target.scheme.lower() not in self.policy.schemes:
            allowed = ", ".join(f"{s}://" for s in self.policy.schemes)
            raise ValueError(f"{url} is refused: a tool may only fetch {allowed} URLs")
        method = str(options.get("method", "GET")).upper()
        if method not in FETCH_METHODS:
            raise ValueError(f"method {method} is refused: use GET, HEAD or POST")
        headers = options.get("headers") or {}
        if not isinstance(headers, dict):
            raise ValueError("fetch headers must be an object of strings")
        body = options.get("body")
        from hub.tinys.guarded import send

        got = await send(
            method,
            target,
            allow_hosts=self.policy.allow_hosts,
            headers={str(k): str(v) for k, v in headers.items()},
            body=None if body is None else str(body).encode(),
            max_bytes=self.policy.max_bytes,
            timeout_s=self.policy.timeout_s,
            max_redirects=0,  # a redirect is the tool's to follow, through this check again
            user_agent=USER_AGENT,
        )
        return {
            "status": got.status,
            "url": got.url,
            "headers": {"content-type": got.content_type},
            "body": got.text(),
            "truncated": got.truncated,
        }


def _wrapped(source: str) -> str:
    """The tool's source as the value of a strict function called without a receiver, so an
    arrow function's ``this`` is undefined, never the global object. Only ever evaluated once
    :func:`_parses_alone` has passed: text that closes the wrapper early is refused before
    it can run outside it."""
    return f'"use strict"; (function () {{ return (\n{source}\n); }}).call(undefined)'


def _parse_only(source: str, mark: str) -> str:
    """A script V8 compiles whole (a syntax error anywhere is found) and whose first statement
    throws ``mark``, so nothing in it ever runs. The source sits in parentheses at the top
    level: a ``)`` or ``}`` that would close :func:`_wrapped`'s function early has nothing to
    close here, and is a syntax error."""
    return f'"use strict"; throw "{mark}";\n(\n{source}\n);'


# An arrow function's head: ``async``, then one parameter name or parameters in parentheses with
# no parenthesis, slash or backtick inside (strings allowed), then ``=>``. With no call,
# comment, regular expression or template in it, where the head ends is plain from the text.
_ARROW_HEAD = re.compile(
    r"""(?:async(?:\s+|(?=\()))?"""
    r"""(?:(?:[^\W\d]|\$)[\w$]*|\((?:[^()"'`/]|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')*\))"""
    r"""\s*=>"""
)


def _arrow_head(source: str) -> None:
    """Stopped unless ``source`` begins as an arrow function does."""
    if _ARROW_HEAD.match(source) is None:
        raise Stopped(
            p.KIND_SOURCE,
            "the source must be exactly one arrow function, beginning with its parameters and "
            "=> (parameters with no call, regular expression or template in them)",
        )


def _one_expression(source: str, mark: str) -> str:
    """A script whose first statement throws ``mark`` (nothing runs) and which compiles only
    when the source up to the wrapper's closing parenthesis is one expression without a comma
    at its top: a ``for ... of`` head takes an AssignmentExpression, never a sequence."""
    return f'"use strict"; throw "{mark}";\nfor (const tool of\n{source}\n) ;'


async def _is_one_arrow_by_shape(mr: MiniRacer, source: str) -> None:
    """Stopped unless ``source`` is one arrow function by its text alone, before any of it runs.

    The head is an arrow's (:data:`_ARROW_HEAD`), and what :func:`_wrapped` returns — the
    source up to its first closing parenthesis at the top, or all of it — is one expression
    (:func:`_one_expression`) that begins with that head: an arrow function and nothing else, so
    evaluating it only makes the function. A call, a loop or a sequence is refused here, not run
    until the CPU limit stops it."""
    _arrow_head(source)
    await _compiles(mr, _one_expression(source, mark := _mark()), mark)


def _mark() -> str:
    return f"tiny-hub-parsed-{secrets.token_hex(8)}"


async def _compiles(mr: MiniRacer, script: str, mark: str) -> None:
    try:
        await mr.eval_cancelable(script)
    except JSParseException:
        raise Stopped(p.KIND_SOURCE, "the source must be exactly one arrow function") from None
    except JSEvalException as exc:
        if mark in str(exc).splitlines()[0]:
            return
        raise
    raise Stopped(p.KIND_SOURCE, "the source must be exactly one arrow function")


async def _parses_alone(mr: MiniRacer, source: str) -> None:
    """Stopped unless ``source`` parses, in strict mode, as expressions inside one pair of
    parentheses, before any of it runs (``isOneArrow`` then holds it to one arrow function)."""
    mark = f"tiny-hub-parsed-{secrets.token_hex(8)}"
    try:
        await mr.eval_cancelable(_parse_only(source, mark))
    except JSParseException as exc:
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else "a syntax error"
        raise Stopped(p.KIND_SOURCE, f"the source does not parse: {first}") from None
    except JSEvalException as exc:
        if mark in str(exc).splitlines()[0]:
            return
        raise
    raise Stopped(p.KIND_SOURCE, "the source must be exactly one arrow function")


async def _in_context(mr: MiniRacer, request: dict[str, Any], limits: p.Limits) -> Any:
    source = str(request["source"]).strip()
    fetcher = Fetcher(limits.fetch)
    async with mr.wrap_py_function(fetcher) as js_fetch:
        setup: Any = await mr.eval_cancelable(PRELUDE)
        helpers: Any = await setup.cancelable()(js_fetch)
        await _parses_alone(mr, source)
        await _is_one_arrow_by_shape(mr, source)
        tool = await mr.eval_cancelable(_wrapped(source))
        if not await helpers["isOneArrow"].cancelable()(tool, source):
            raise Stopped(p.KIND_SOURCE, "the source must be exactly one arrow function")
        if request["op"] == p.OP_CHECK:
            return None
        promise: Any = await helpers["run"].cancelable()(tool, json.dumps(request["input"]))
        text = await promise
    if not isinstance(text, str):
        raise Stopped(p.KIND_RESULT, "the tool's result cannot be turned into JSON")
    if len(text) > p.MAX_RESULT_CHARS:
        raise Stopped(p.KIND_RESULT, f"the result is over {p.MAX_RESULT_CHARS} characters")
    # JSON the tool wrote, read with a request body's limits: nesting too deep for the reader,
    # or a lone surrogate JavaScript strings may hold, is a tool error, never a crash.
    try:
        return parse_json_text(text, "the tool's result")
    except JsonRefused as exc:
        if "surrogate" in str(exc):  # JavaScript strings may hold one; no text can
            raise Stopped(
                p.KIND_RESULT, "the tool's result is not valid Unicode (a lone surrogate)"
            ) from None
        raise Stopped(p.KIND_RESULT, str(exc)) from None


def _thrown(exc: Exception, mr: MiniRacer) -> Stopped:
    text = str(exc).strip()
    if isinstance(exc, JSOOMException) or mr.was_hard_memory_limit_reached():
        return Stopped(p.KIND_MEMORY, "the tool used more memory than allowed")
    if "Array buffer allocation failed" in text:
        return Stopped(p.KIND_MEMORY, "the tool asked for more buffer memory than allowed")
    first = text.splitlines()[0] if text else type(exc).__name__
    return Stopped(p.KIND_THROWN, f"the tool threw: {_ENGINE_PREFIX.sub('', first).strip()}")


class Watchdog(threading.Thread):
    """Watches one call from a thread of its own, because JavaScript that runs from the
    microtask queue holds the event loop's thread: over a limit it cancels the call (which
    terminates the JavaScript); when that does not end it, it answers for the call and ends
    this process, and the hub starts a fresh one."""

    def __init__(self, task: asyncio.Future[Any], limits: p.Limits, outbox: Outbox) -> None:
        super().__init__(daemon=True)
        self.task, self.limits, self.outbox = task, limits, outbox
        self.loop = asyncio.get_running_loop()
        self.finished = threading.Event()
        self.stop: Stopped | None = None

    def run(self) -> None:
        cpu_start, wall_end = time.process_time(), time.monotonic() + self.limits.wall_s
        while not self.finished.wait(WATCH_EVERY_S):
            self.stop = self._over(cpu_start, wall_end)
            if self.stop is not None:
                break
        if self.stop is None:
            return
        self.loop.call_soon_threadsafe(self.task.cancel)
        if self.finished.wait(RUNAWAY_GRACE_S):
            return
        with self.outbox.lock:  # held to the end: no other answer follows this one
            if self.finished.is_set():
                return  # the call ended meanwhile and answers for itself
            self.outbox.write({**p.stopped(self.stop.kind, str(self.stop)), "ending": True})
            os._exit(0)

    def _over(self, cpu_start: float, wall_end: float) -> Stopped | None:
        if time.process_time() - cpu_start > self.limits.cpu_s:
            return Stopped(
                p.KIND_TIME, f"the tool ran over its {self.limits.cpu_s:g} s CPU-time limit"
            )
        if time.monotonic() > wall_end:
            return Stopped(
                p.KIND_TIME, f"the tool ran over its {self.limits.wall_s:g} s time limit"
            )
        return None


async def _limited(request: dict[str, Any], outbox: Outbox) -> Any:
    limits = p.limits_from(request["limits"])
    watchdog: Watchdog | None = None
    try:
        with mini_racer(asyncio.get_running_loop()) as mr:
            mr.set_hard_memory_limit(limits.heap_bytes)
            task = asyncio.ensure_future(_in_context(mr, request, limits))
            watchdog = Watchdog(task, limits, outbox)
            watchdog.start()
            try:
                return await task
            except asyncio.CancelledError:
                if watchdog.stop is None:
                    raise
                raise watchdog.stop from None
            except (JSEvalException, JSPromiseError) as exc:
                raise _thrown(exc, mr) from exc
    finally:
        # Only once the context is freed: freeing waits for JavaScript that cancelling did
        # not stop, and the watchdog keeps watching until then.
        if watchdog is not None:
            watchdog.finished.set()


async def answer(request: dict[str, Any], outbox: Outbox) -> dict[str, Any]:
    try:
        return p.succeeded(await _limited(request, outbox))
    except Stopped as exc:
        return p.stopped(exc.kind, str(exc))
    except (KeyError, TypeError, ValueError) as exc:
        return p.stopped(p.KIND_RESULT, f"bad request or result: {exc}")


class Outbox:
    """The protocol's stdout, written whole lines at a time from either thread."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.lock = threading.Lock()

    def say(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.write(message)

    def write(self, message: dict[str, Any]) -> None:
        """One line, for a caller that holds the lock."""
        self.stream.write(json.dumps(message) + "\n")
        self.stream.flush()


def _data_segment_bytes() -> int | None:
    try:
        status = open("/proc/self/status", encoding="ascii").read()  # noqa: SIM115
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmData:"):
            return int(line.split()[1]) * 1024
    return None


def _cap_data_segment() -> None:
    """Cap the data segment a fixed room above the warm engine's; where the OS has no
    /proc (macOS), the V8 heap limit alone applies."""
    used = _data_segment_bytes()
    if used is not None:
        cap = used + BUFFER_ROOM_BYTES
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))


async def serve(inbox: IO[str], outbox: Outbox) -> None:
    loop = asyncio.get_running_loop()
    with mini_racer(loop) as warm:  # the first context maps the engine's own memory
        version = warm.v8_version
    _cap_data_segment()
    outbox.say({"ready": True, "v8": version, "pid": os.getpid()})
    while line := await loop.run_in_executor(None, inbox.readline):
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            outbox.say(p.stopped(p.KIND_RESULT, f"not a JSON request: {exc}"))
            continue
        outbox.say(await answer(request, outbox))


def main() -> None:
    # The protocol owns the real stdout; anything else printed goes to stderr.
    outbox = Outbox(os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8"))
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    init_mini_racer(flags=V8_FLAGS)
    asyncio.run(serve(sys.stdin, outbox))


if __name__ == "__main__":
    main()
