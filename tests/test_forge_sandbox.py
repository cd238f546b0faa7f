"""The forged-tool sandbox: V8 in a child process, every escape and runaway a tool error.

Each case runs a real source in a real child; after each, the same sandbox still answers.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from harness.waits import until
from hub.forge import protocol as p
from hub.forge.sandbox import FetchPolicy, Limits, Sandbox, ToolStopped, child_env

LIMITS = Limits(cpu_s=0.5, heap_bytes=32 * 1024 * 1024, wall_s=5.0)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(LIMITS, size=1)
    yield box
    box.close()


async def stopped(box: Sandbox, source: str, input: Any = None) -> ToolStopped:
    with pytest.raises(ToolStopped) as caught:
        await box.run(source, input if input is not None else {})
    assert await box.run("(x) => x.n * 2", {"n": 21}) == 42  # the sandbox still answers
    return caught.value


async def test_a_tool_gets_its_input_and_returns_json(sandbox: Sandbox) -> None:
    assert await sandbox.run("(x) => ({ hello: x.name.toUpperCase() })", {"name": "bea"}) == {
        "hello": "BEA"
    }
    assert await sandbox.run("async ({ a, b }) => [a + b, typeof fetch]", {"a": 1, "b": 2}) == [
        3,
        "function",
    ]


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("() => require('fs')", "require is not defined"),
        ("() => process.env", "process is not defined"),
        ("() => globalThis", "globalThis is not defined"),
        ("() => eval('1 + 1')", "eval is not defined"),
        ("() => Function('return this')()", "Function is not defined"),
        ("() => (() => 1).constructor('return this')()", "Code generation from strings"),
        ("() => { throw new Error('boom') }", "Error: boom"),
    ],
)
async def test_escapes_are_tool_errors(sandbox: Sandbox, source: str, says: str) -> None:
    stop = await stopped(sandbox, source)
    assert stop.kind == p.KIND_THROWN
    assert says in str(stop)


async def test_this_is_never_the_global_object(sandbox: Sandbox) -> None:
    assert await sandbox.run("() => typeof this", {}) == "undefined"


@pytest.mark.parametrize(
    "source",
    [
        "function (x) { return x }",
        "async function (x) { return x }",
        "(x) => x); (function () { return this })().leak = (1",
        "class A {}",
        "42",
    ],
)
async def test_only_one_arrow_function_is_a_tool(sandbox: Sandbox, source: str) -> None:
    with pytest.raises(ToolStopped) as caught:
        await sandbox.check(source)
    assert caught.value.kind == p.KIND_SOURCE
    await sandbox.check("(x) => x")


# Closes the wrapper's arrow function early and runs code outside it, in sloppy mode, at the
# moment the tool is created; it names the global object's properties if it ever runs.
ESCAPE = (
    "0); }).call(undefined), (function(){ throw new Error('ran: ' + Object.getOwnPropertyNames("
    "(function(){ return this })()).join(',')) })(), (function () { return (x => x"
)


@pytest.mark.parametrize("op", ["check", "run"])
async def test_source_that_closes_the_wrapper_never_runs(sandbox: Sandbox, op: str) -> None:
    with pytest.raises(ToolStopped) as caught:
        if op == "check":
            await sandbox.check(ESCAPE)
        else:
            await sandbox.run(ESCAPE, {})
    assert caught.value.kind == p.KIND_SOURCE, str(caught.value)
    assert "ran:" not in str(caught.value) and "fetch" not in str(caught.value)
    assert await sandbox.run("(x) => x.n * 2", {"n": 21}) == 42


@pytest.mark.parametrize(
    "source",
    [
        "(() => { while (true) {} })()",
        "(x) => x, (() => { while (true) {} })()",
        "x => x, (() => { while (true) {} })()",
        "[0].map(() => { while (true) {} })",
        "(x = (() => { while (true) {} })()) => x",
    ],
)
@pytest.mark.parametrize("op", ["check", "run"])
async def test_code_that_is_not_one_arrow_is_refused_before_it_runs(
    sandbox: Sandbox, source: str, op: str
) -> None:
    """Each loops forever when evaluated: run, it would meet the CPU limit (KIND_TIME); its
    shape is refused first (KIND_SOURCE)."""
    with pytest.raises(ToolStopped) as caught:
        if op == "check":
            await sandbox.check(source)
        else:
            await sandbox.run(source, {})
    assert caught.value.kind == p.KIND_SOURCE, str(caught.value)
    assert await sandbox.run("async (x) => x.n * 2", {"n": 21}) == 42
    assert await sandbox.run('({ a = "(" }) => a', {}) == "("


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("() => { let v = []; for (let i = 0; i < 5000; i++) v = [v]; return v; }", "nested"),
        ("() => ({ lone: String.fromCharCode(0xd800) })", "surrogate"),
    ],
)
async def test_a_result_json_cannot_read_is_a_tool_error(
    sandbox: Sandbox, source: str, says: str
) -> None:
    stop = await stopped(sandbox, source)
    assert stop.kind == p.KIND_RESULT and says in str(stop), str(stop)


async def test_a_syntax_error_is_named_before_anything_runs(sandbox: Sandbox) -> None:
    with pytest.raises(ToolStopped) as caught:
        await sandbox.check("(x) => { return x +; }")
    assert caught.value.kind == p.KIND_SOURCE
    assert "SyntaxError" in str(caught.value)


async def test_an_infinite_loop_hits_the_cpu_limit(sandbox: Sandbox) -> None:
    stop = await stopped(sandbox, "() => { while (true) {} }")
    assert stop.kind == p.KIND_TIME and "CPU-time limit" in str(stop)


async def test_a_loop_after_an_await_hits_the_cpu_limit_too(sandbox: Sandbox) -> None:
    stop = await stopped(sandbox, "async () => { await null; while (true) {} }")
    assert stop.kind == p.KIND_TIME


async def test_a_heap_allocation_hits_the_memory_limit(sandbox: Sandbox) -> None:
    source = "() => { const a = []; while (true) a.push({ n: a.length }); }"
    stop = await stopped(sandbox, source)
    assert stop.kind == p.KIND_MEMORY


async def test_a_1_gb_buffer_hits_the_memory_limit(sandbox: Sandbox) -> None:
    stop = await stopped(sandbox, "() => new Uint8Array(1024 ** 3).fill(1).length")
    assert stop.kind == p.KIND_MEMORY


async def test_a_v8_fatal_error_costs_the_call_not_the_hub() -> None:
    # V8 ends its process on this allocation (a fatal out-of-memory, not an exception); the
    # CPU limit is generous so that the engine, not the limit, ends the call.
    box = Sandbox(Limits(cpu_s=30.0, heap_bytes=32 * 1024 * 1024, wall_s=50.0), size=1)
    try:
        stop = await stopped(box, "() => new Array(2 ** 28).fill(0).length")
        assert stop.kind == p.KIND_CRASH and "crashed" in str(stop)
        assert box.starts == 2  # a fresh child answered the call after
    finally:
        box.close()


def in_a_call(box: Sandbox) -> bool:
    """Whether the sandbox's one child has been taken for a call (it is no longer idle)."""
    return box.child_pids() == []


async def test_a_child_that_dies_mid_call_is_a_tool_error() -> None:
    box = Sandbox(Limits(cpu_s=30.0, wall_s=50.0), size=1)
    try:
        await asyncio.to_thread(box.warm)
        [pid] = box.child_pids()
        call = asyncio.ensure_future(box.run("() => { while (true) {} }", {}))
        await until(lambda: in_a_call(box), what="the call is in the child")
        os.kill(pid, signal.SIGSEGV)  # what a crash in native code looks like from outside
        with pytest.raises(ToolStopped) as caught:
            await call
        assert caught.value.kind == p.KIND_CRASH
        assert await box.run("(x) => x", {"after": 1}) == {"after": 1}
    finally:
        box.close()


async def test_a_result_that_is_not_json_is_a_tool_error(sandbox: Sandbox) -> None:
    assert (await stopped(sandbox, "() => 1n")).kind == p.KIND_THROWN
    assert (await stopped(sandbox, "() => 'x'.repeat(70000)")).kind == p.KIND_RESULT


async def test_each_call_gets_a_fresh_context(sandbox: Sandbox) -> None:
    await sandbox.run("() => { Array.prototype.leak = 'yes'; return 1 }", {})
    assert await sandbox.run("() => typeof [].leak", {}) == "undefined"


class Listener:
    """A loopback HTTP server that counts the connections it accepts."""

    def __init__(self) -> None:
        self.connections = 0
        self.url = ""
        self._server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> Listener:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


async def test_fetch_to_loopback_is_refused_and_never_connects(sandbox: Sandbox) -> None:
    async with Listener() as listener:
        https = listener.url.replace("http://", "https://")
        for url in (listener.url, https):
            stop = await stopped(sandbox, f"async () => (await fetch('{url}')).status")
            assert stop.kind == p.KIND_THROWN and "fetch failed" in str(stop)
        assert listener.connections == 0


async def test_fetch_reads_an_allowed_host_within_the_size_bound() -> None:
    async def page(request: web.Request) -> web.Response:
        return web.json_response({"words": ["a"] * 2000, "q": request.query.get("q")})

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    policy = FetchPolicy(schemes=("http",), allow_hosts=("127.0.0.1",), max_bytes=64)
    box = Sandbox(Limits(cpu_s=1.0, wall_s=10.0, fetch=policy), size=1)
    try:
        source = (
            f"async (x) => {{ const r = await fetch('http://127.0.0.1:{port}/?q=' + x.q);"
            " return [r.status, r.truncated, (await r.text()).length] }"
        )
        assert await box.run(source, {"q": "hi"}) == [200, True, 64]
    finally:
        box.close()
        await runner.cleanup()


def test_children_start_with_none_of_the_hubs_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_HUB_MODEL_API_KEY", "sk-secret-123")
    monkeypatch.setenv("PATH", "/usr/bin")
    given = child_env()
    assert given["PATH"] == "/usr/bin"
    assert "sk-secret-123" not in given.values() and "TINY_HUB_MODEL_API_KEY" not in given


@pytest.mark.skipif(
    not Path("/proc/self/environ").exists(),
    reason="no /proc to read a running child's environment on this OS (the environment it is "
    "started with is checked above)",
)
async def test_the_child_gets_none_of_the_hubs_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_HUB_MODEL_API_KEY", "sk-secret-123")
    box = Sandbox(LIMITS, size=1)
    try:
        assert await box.run("() => 1", {}) == 1
        [pid] = box.child_pids()
        environ = await asyncio.to_thread(Path(f"/proc/{pid}/environ").read_bytes)
        assert b"PATH=" in environ and b"sk-secret-123" not in environ
    finally:
        box.close()


def gone(pid: int) -> bool:
    """Whether ``pid`` has exited and been reaped (signal 0 only asks whether it exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_a_child_that_goes_silent_is_stopped_at_the_deadline() -> None:
    box = Sandbox(Limits(cpu_s=0.5, wall_s=0.5), size=1)
    try:
        await asyncio.to_thread(box.warm)
        [pid] = box.child_pids()
        os.kill(pid, signal.SIGSTOP)  # its own watchdog cannot run either
        with pytest.raises(ToolStopped) as caught:
            await box.run("() => 1", {})
        assert caught.value.kind == p.KIND_TIME and "did not answer" in str(caught.value)
        assert gone(pid)  # stopped and reaped
        assert await box.run("(x) => x", {"after": 1}) == {"after": 1}
    finally:
        box.close()
