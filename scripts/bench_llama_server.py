"""The side-by-side peer of the offline agent's benchmark: llama-cpp-python's own
OpenAI-compatible server (``python -m llama_cpp.server``, its prompt cache on), replaying the
exact generation requests the hub's runner made for the same turns, in the same order.

The hub's runner is recorded while the benchmark's turns run (:func:`recording`); afterwards
the same GGUF is served with the same context size and threads, and each recorded request is
sent as the runner saw it: the same messages, the tools rendered by the model's own template,
the same grammar, sampling and token limit (requests that only read a prompt ahead are sent
with a limit of one token, untimed). Every reply must be a 200 with a choice, or the benchmark
fails. What it gives: the server's seconds per turn, to set beside the hub's whole turn (which
also runs the tools, the memory and the hub's HTTP).
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts.bench_common import BenchmarkFailed

REPO = Path(__file__).resolve().parents[1]
START_WAIT_S = 300.0
# How many entries' logits copies the peer's cache has room for beside the hub's budget.
PEER_ENTRIES = 16
# llama-cpp-python's default batch, the rows of the logits array each cache entry copies.
PEER_BATCH = 512


@dataclass
class Recorded:
    """What the runner was asked, turn by turn (the index of the turn each request served;
    -1 for what the hub read before the first turn)."""

    requests: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    turn: int = -1


@contextlib.contextmanager
def recording() -> Iterator[Recorded]:
    """Every request the hub sends a runner while the block runs."""
    from hub.agent.runner import process

    recorded = Recorded()
    original = process.RunnerProcess.request

    def request(self: Any, messages: Any, max_tokens: int, sampling: Any, offer: Any = None,
                op: str = "generate") -> int:  # fmt: skip
        sent = {"op": op, "messages": messages, "max_tokens": max_tokens, "sampling": sampling}
        recorded.requests.append((recorded.turn, {**sent, **(offer or {})}))
        return original(self, messages, max_tokens, sampling, offer, op)

    process.RunnerProcess.request = request  # type: ignore[method-assign]
    try:
        yield recorded
    finally:
        process.RunnerProcess.request = original  # type: ignore[method-assign]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def llama_server(model: Path, context: int, threads: int, cache_bytes: int) -> Iterator[str]:
    """The server on a free loopback port, its prompt cache in RAM; its base URL. The cache
    gets the hub's budget for llama.cpp's states plus room for the logits copies its entries
    also hold (:mod:`scripts.peer_llama_server`) of :data:`PEER_ENTRIES` entries."""
    cache_bytes += PEER_ENTRIES * logits_copy_bytes(model)
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "scripts.peer_llama_server",
        "--model",
        str(model),
        "--n_ctx",
        str(context),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--cache",
        "true",
        "--cache_type",
        "ram",
        "--cache_size",
        str(cache_bytes),
        "--verbose",
        "false",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_for(url, server, log)
            yield url
        finally:
            server.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(10)
            server.kill()


def wait_for(url: str, server: subprocess.Popen[bytes], log: Any) -> None:
    import urllib.request

    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise BenchmarkFailed(f"llama_cpp.server exited: {log.read()[-2000:]!r}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{url}/v1/models", timeout=5) as answer,
        ):
            if answer.status == 200:
                return
        time.sleep(0.5)
    raise BenchmarkFailed("llama_cpp.server did not answer within 5 minutes")


def body_of(request: dict[str, Any], renders_tools: bool) -> dict[str, Any]:
    """The chat-completions body that asks the server what the runner was asked."""
    from hub.agent.runner import call_grammar
    from hub.agent.runner import protocol as p
    from hub.agent.runner.child import requested_grammar, with_tools_prompt

    messages = request["messages"]
    body: dict[str, Any] = {"max_tokens": request["max_tokens"], "stream": False}
    if tools := request.get(p.FIELD_TOOLS):
        if renders_tools:
            body["tools"] = call_grammar.shown(tools)
        else:
            messages = with_tools_prompt(messages, str(request.get(p.FIELD_TOOLS_PROMPT, "")))
    if grammar := requested_grammar(request):
        body["grammar"] = grammar
    if request["op"] == p.OP_WARM:
        body["max_tokens"] = 1
    return {**body, "messages": messages, **request.get("sampling", {})}


def logits_copy_bytes(model: Path) -> int:
    from llama_cpp import Llama

    vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
    return PEER_BATCH * int(vocab.n_vocab()) * 4


def renders_tools(model: Path) -> bool:
    from llama_cpp import Llama

    vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
    return "tools" in str(vocab.metadata.get("tokenizer.chat_template", ""))


def replay(
    recorded: Recorded, model: Path, context: int, threads: int, cache_bytes: int
) -> dict[int, float]:
    """Send every recorded request to the server, in order; the seconds each turn's requests
    took (what was read before the first turn is sent, not counted)."""
    import urllib.request

    from hub.agent.runner import protocol as p

    tools_in_template = renders_tools(model)
    per_turn: dict[int, float] = {}
    with llama_server(model, context, threads, cache_bytes) as url:
        for turn, request in recorded.requests:
            data = json.dumps(body_of(request, tools_in_template)).encode()
            asked = urllib.request.Request(
                f"{url}/v1/chat/completions",
                data=data,
                headers={"Content-Type": "application/json"},
            )
            started = time.perf_counter()
            with urllib.request.urlopen(asked, timeout=900) as answer:
                reply = json.loads(answer.read())
                status = answer.status
            seconds = time.perf_counter() - started
            if status != 200 or not reply.get("choices"):
                raise BenchmarkFailed(f"llama_cpp.server answered {status}: {reply!r:.300}")
            if request["op"] != p.OP_WARM and turn >= 0:
                per_turn[turn] = per_turn.get(turn, 0.0) + seconds
    return per_turn


def threads_for_peer(hub_threads: int) -> int:
    """The hub's fixed count, or the most its runner takes on an idle machine (every usable
    core): the peer replays alone, on an idle machine."""
    from hub.agent.runner.idle_cores import usable_cpus

    return hub_threads or usable_cpus()
