"""The same turns through ``/v1/chat/completions`` and ``/api/chat``, side by side: the time to
the first token and the tokens per second a client reads, and what each token costs the hub.

The hub runs as its own ``tiny-hub serve`` process. The fake Ollama answers every turn alike: a
paced reply (a 200 ms prompt evaluation, then 150 tokens 10 ms apart, like a model decoding at
100 tokens/s), timed by the wall clock as a person waits for it; and a burst (3000 tokens at
once), for which the hub process's own CPU time is counted (``/proc/<pid>/task/*/schedstat``,
nanoseconds): on a shared machine a burst's wall time measures the neighbours, its CPU time
measures the hub's path. The two routes take turns within each run, the order swapped every
run, with one aiohttp client reading lines for both. Every timed turn must answer 200, end with
``[DONE]``, carry no error and deliver every token in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.bench_common import BenchmarkFailed, Figure, served_hub

PROMPT_EVAL_S = 0.2
PACED_TOKENS, PACED_GAP_S = 150, 0.01
BURST_TOKENS = 3000
WARM_UP = 2


@dataclass(frozen=True)
class Route:
    name: str
    path: str
    body: dict[str, Any]
    text_of: Callable[[dict[str, Any]], str]
    failed: Callable[[dict[str, Any]], bool]


def _contract_text(frame: dict[str, Any]) -> str:
    return str(frame.get("textDelta") or "")


def _chunk_text(frame: dict[str, Any]) -> str:
    choices = frame.get("choices") or [{}]
    return str((choices[0].get("delta") or {}).get("content") or "")


PROMPT = [{"role": "user", "content": "Tell me a long story."}]
ROUTES = (
    Route(
        "api_chat",
        "/api/chat",
        {"messages": PROMPT},
        _contract_text,
        lambda frame: frame.get("type") == "error",
    ),
    Route(
        "v1",
        "/v1/chat/completions",
        {"model": "tiny", "messages": PROMPT, "stream": True},
        _chunk_text,
        lambda frame: "error" in frame,
    ),
)


@dataclass(frozen=True)
class Timing:
    first_token_s: float
    tokens_per_s: float
    hub_cpu_s: float
    tokens: int


def bench_openai(runs: int) -> list[Figure]:
    return asyncio.run(_bench(runs))


async def _bench(runs: int) -> list[Figure]:
    import aiohttp

    from fakes.ollama import FakeOllama

    fake = FakeOllama()
    await fake.start()
    found: dict[tuple[str, str], list[Timing]] = {}
    try:
        async with served_hub(fake.url) as server, aiohttp.ClientSession() as http:
            for run in range(runs + WARM_UP):
                order = ROUTES if run % 2 == 0 else ROUTES[::-1]
                for case in ("paced", "burst"):
                    for route in order:
                        timing = await _turn(http, server, route, fake, case)
                        if run >= WARM_UP:
                            found.setdefault((route.name, case), []).append(timing)
    finally:
        await fake.stop()
    return _figures(found, runs)


def _reply(case: str) -> Any:
    from fakes.ollama import Reply

    if case == "paced":
        chunks = [f"w{i} " for i in range(PACED_TOKENS)]
        return Reply(chunks=chunks, first_delay_s=PROMPT_EVAL_S, delay_s=PACED_GAP_S)
    return Reply(chunks=[f"w{i} " for i in range(BURST_TOKENS)])


def hub_cpu_s(pid: int) -> float:
    """The CPU time every thread of process ``pid`` has run, from the kernel's scheduler."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


async def _turn(http: Any, server: Any, route: Route, fake: Any, case: str) -> Timing:
    reply = _reply(case)
    fake.script(reply)
    stamps: list[float] = []
    text: list[str] = []
    done = False
    cpu_before = hub_cpu_s(server.pid)
    sent = time.perf_counter()
    async with http.post(server.url + route.path, json=route.body, headers=server.auth) as response:
        if response.status != 200:
            raise BenchmarkFailed(
                f"{route.path} answered {response.status}: {await response.text()}"
            )
        async for raw in response.content:
            line = raw.decode().rstrip("\n")
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                frame = json.loads(line[6:])
                if route.failed(frame):
                    raise BenchmarkFailed(f"{route.path} failed: {frame}")
                if piece := route.text_of(frame):
                    stamps.append(time.perf_counter())
                    text.append(piece)
    if not done or "".join(text) != "".join(reply.chunks):
        raise BenchmarkFailed(f"{route.path}: the turn did not deliver every token and [DONE]")
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    return Timing(stamps[0] - sent, rate, hub_cpu_s(server.pid) - cpu_before, len(stamps))


def _figures(found: dict[tuple[str, str], list[Timing]], runs: int) -> list[Figure]:
    figures: list[Figure] = []
    paced_how = (
        f"fake Ollama: {PROMPT_EVAL_S * 1000:.0f} ms prompt evaluation, {PACED_TOKENS} tokens "
        f"{PACED_GAP_S * 1000:.0f} ms apart; {runs} turns per route, alternating, owner, loopback"
    )
    burst_how = (
        f"the hub process's CPU time over the turn ÷ its tokens; the fake Ollama sends "
        f"{BURST_TOKENS} at once; {runs} turns per route"
    )
    series: list[tuple[str, str, str, str, Callable[[Timing], float], str]] = [
        ("first_token", "paced", "ms", "request sent → first text", _ms, paced_how),
        ("tokens_per_s", "paced", "tokens/s", "first → last text", _rate, paced_how),
        ("hub_cpu_per_token", "burst", "µs", "CPU", _cpu_per_token, burst_how),
    ]
    for figure, case, unit, what, value, how in series:
        per_route = {r.name: [value(t) for t in found[(r.name, case)]] for r in ROUTES}
        for route in ROUTES:
            name = f"openai_{figure}_{route.name}"
            runs_of = per_route[route.name]
            figures.append(
                Figure(name, statistics.median(runs_of), unit, f"{what}; {how}", runs_of)
            )
        ratios = [v / a for v, a in zip(per_route["v1"], per_route["api_chat"], strict=True)]
        figures.append(
            Figure(
                f"openai_{figure}_ratio",
                statistics.median(ratios),
                "x",
                f"/v1 ÷ /api/chat, turn by turn ({what})",
                ratios,
            )
        )
    return figures


def _ms(timing: Timing) -> float:
    return timing.first_token_s * 1000


def _rate(timing: Timing) -> float:
    return timing.tokens_per_s


def _cpu_per_token(timing: Timing) -> float:
    return timing.hub_cpu_s / timing.tokens * 1e6
