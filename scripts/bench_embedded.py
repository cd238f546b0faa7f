"""The embedded model: llama.cpp on its own against the same model through the hub, and its
decode rate when another process holds a core.

- ``embedded_tokens_per_s_direct`` / ``embedded_first_token_direct``: llama-cpp-python in this
  process, streaming the very messages the hub gives its runner (system prompt included), with
  the thread count the hub's runner chose (the cores no other process uses);
- ``embedded_tokens_per_s_hub`` / ``embedded_first_token_hub``: ``POST /api/chat`` to an
  in-process hub whose runner child decodes, SSE read by aiohttp; every turn must answer 200,
  carry text and usage, end with ``[DONE]`` and hold no error event;
- direct and hub runs alternate, so a change in the machine's load touches both alike;
- ``embedded_tokens_per_s_busy``: direct decode rate with the runner's choice of threads while
  another process spins on one core; ``embedded_tokens_per_s_busy_<n>t`` for each fixed thread
  count (1, N-1, N) and ``embedded_busy_ratio`` = the runner's choice ÷ the best fixed count.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from scripts.bench_common import BenchmarkFailed, Figure, running_hub

PROMPT = "Tell me three short facts about the moon."
MAX_TOKENS = 128
SPIN = "while True: pass"


async def hub_chat_messages(prompt: str) -> list[dict[str, str]]:
    """What the hub hands its runner for an anonymous turn with ``prompt``."""
    from hub.agent.compose import compose_turn
    from hub.agent.small.history import flatten_messages
    from hub.agent.turn import ChatMessage, to_strands

    async with running_hub(model_max_tokens=MAX_TOKENS) as server:
        turn = await compose_turn(server.hub, None, [ChatMessage("user", (prompt,))], {})
    extra, history, blocks = to_strands(turn.messages)
    system = "\n\n".join(p for p in (turn.system_prompt, extra) if p)
    return flatten_messages([*history, {"role": "user", "content": blocks}], system)


def load_llama(threads: int) -> Any:
    """The bundled model in this process; ``threads`` 0: the runner's own llama (the idle
    cores, looked at again as it decodes)."""
    from llama_cpp import Llama

    from hub.agent.embedded import bundled_gguf
    from hub.agent.runner.child import load

    if threads == 0:
        return load(str(bundled_gguf()), 4096, 0)
    return Llama(
        model_path=str(bundled_gguf()),
        n_ctx=4096,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )


def direct_run(llama: Any, messages: list[dict[str, str]]) -> tuple[float, float]:
    """(tokens/s after the first token, seconds to the first token)."""
    from hub.agent.embedded import SAMPLING

    started = time.perf_counter()
    first = last = 0.0
    count = 0
    for chunk in llama.create_chat_completion(
        messages=messages, max_tokens=MAX_TOKENS, stream=True, **SAMPLING
    ):
        if chunk["choices"][0]["delta"].get("content"):
            count += 1
            last = time.perf_counter()
            first = first or last
    if count < 2:
        raise BenchmarkFailed(f"llama.cpp decoded {count} token(s)")
    return (count - 1) / (last - first), first - started


async def hub_run(http: Any, url: str) -> tuple[float, float]:
    """One turn through the hub, checked whole; (tokens/s after the first frame, seconds to
    the first text frame)."""
    body = {"messages": [{"role": "user", "content": PROMPT}]}
    started = time.perf_counter()
    first = last = 0.0
    tokens, done, errors = 0, False, []
    async with http.post(f"{url}/api/chat", json=body) as response:
        if response.status != 200:
            raise BenchmarkFailed(f"chat answered {response.status}: {await response.text()}")
        async for line in response.content:
            if not line.startswith(b"data: "):
                continue
            payload = line[6:].strip()
            if payload == b"[DONE]":
                done = True
                continue
            event = json.loads(payload)
            if event.get("type") == "modelContentBlockDeltaEvent" and event.get("textDelta"):
                last = time.perf_counter()
                first = first or last
            elif event.get("type") == "modelMetadataEvent":
                tokens = int(event["usage"]["outputTokens"])
            elif event.get("type") == "error":
                errors.append(event.get("error"))
    if errors or not done or tokens < 2 or not first:
        raise BenchmarkFailed(f"an incomplete turn: done={done} tokens={tokens} {errors}")
    return (tokens - 1) / (last - first), first - started


async def _direct_and_hub(runs: int) -> list[Figure]:
    import aiohttp

    messages = await hub_chat_messages(PROMPT)
    direct: list[tuple[float, float]] = []
    through: list[tuple[float, float]] = []
    async with (
        running_hub(model_max_tokens=MAX_TOKENS) as server,
        aiohttp.ClientSession() as http,
    ):
        await hub_run(http, server.url)  # starts the runner; not counted
        # llama.cpp alone decodes with the threads the hub's runner chose from the idle cores
        threads = server.hub.models.embedded_runner().threads
        llama = await asyncio.to_thread(load_llama, threads)
        direct_run(llama, messages)  # the same warm-up for llama.cpp alone
        for _ in range(runs):
            direct.append(await asyncio.to_thread(direct_run, llama, messages))
            through.append(await hub_run(http, server.url))
    del llama
    how = (
        f"SmolLM2-135M Q4_1, {threads} thread(s) (the runner's choice), {MAX_TOKENS} tokens "
        f"max, {runs} runs each"
    )
    return [
        _figure("embedded_tokens_per_s_direct", [r for r, _ in direct], "tok/s", how),
        _figure("embedded_first_token_direct", [f * 1e3 for _, f in direct], "ms", how),
        _figure("embedded_tokens_per_s_hub", [r for r, _ in through], "tok/s", how),
        _figure("embedded_first_token_hub", [f * 1e3 for _, f in through], "ms", how),
        Figure(
            "embedded_hub_speed_ratio",
            statistics.median(r for r, _ in through) / statistics.median(r for r, _ in direct),
            "x",
            "embedded_tokens_per_s_hub ÷ embedded_tokens_per_s_direct (medians, one run)",
            [t[0] / d[0] for t, d in zip(through, direct, strict=True)],
        ),
    ]


def _figure(name: str, values: list[float], unit: str, how: str) -> Figure:
    return Figure(name, statistics.median(values), unit, how, values)


def bench_embedded(runs: int) -> list[Figure]:
    return asyncio.run(_direct_and_hub(runs))


def bench_embedded_busy(runs: int) -> list[Figure]:
    from hub.agent.runner.idle_cores import usable_cpus

    messages = asyncio.run(hub_chat_messages(PROMPT))
    cpus = usable_cpus()
    counts = sorted({1, max(1, cpus - 1), cpus})
    rates: dict[int, list[float]] = {}
    spinner = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        for threads in [*counts, 0]:
            llama = load_llama(threads)
            direct_run(llama, messages)
            rates[threads] = [direct_run(llama, messages)[0] for _ in range(runs)]
            del llama
    finally:
        spinner.kill()
        spinner.wait()
    how = f"llama.cpp alone, {runs} runs, while another process spins on one of {cpus} core(s)"
    figures = [
        _figure(f"embedded_tokens_per_s_busy_{n}t", rates[n], "tok/s", f"{n} thread(s); {how}")
        for n in counts
    ]
    best = max(statistics.median(rates[n]) for n in counts)
    chosen = f"the runner's choice (the idle cores); {how}"
    figures.append(_figure("embedded_tokens_per_s_busy", rates[0], "tok/s", chosen))
    figures.append(
        Figure(
            "embedded_busy_ratio",
            statistics.median(rates[0]) / best,
            "x",
            "the runner's choice of threads: busy rate ÷ the best fixed count's (medians)",
            [r / best for r in rates[0]],
        )
    )
    return figures
