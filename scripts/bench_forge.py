"""Forged tools in the sandbox: what a call costs, and what isolating V8 in a child costs.

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``forge_sandbox_start_ms``: a sandbox child spawned → it says it is ready (Python, the
  engine, its first context).
- ``forge_cold_call_ms``: a new sandbox's first call of a small tool, start included.
- ``forge_warm_call_ms``: a call on a warm child: the request over the pipe, a fresh V8 context
  with the prelude, the tool run, the JSON answer back.
- ``forge_in_process_call_ms``: the same call in this process (the child's own code, no pipe, no
  process): the difference to the warm call is what isolation costs per call.

Every call's result is checked. ``python -m scripts.bench_forge [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import io
import sys
import time
from typing import Any

from py_mini_racer import init_mini_racer

from hub.forge import child
from hub.forge import protocol as p
from hub.forge.sandbox import Limits, Sandbox
from scripts.bench_common import BenchmarkFailed, percentile
from scripts.bench_rows import run_alone

SOURCE = "({ text }) => ({ words: text.split(/\\s+/).filter(Boolean).length })"
INPUT = {"text": "the quick brown fox jumps over the lazy dog"}
EXPECTED = {"words": 9}


def _checked(value: Any) -> None:
    if value != EXPECTED:
        raise BenchmarkFailed(f"the forged tool answered {value!r}, not {EXPECTED!r}")


def _ms(seconds: float) -> float:
    return seconds * 1000


async def _cold_and_start(runs: int) -> tuple[list[float], list[float]]:
    starts, colds = [], []
    for _ in range(runs):
        box = Sandbox(Limits(), size=1)
        try:
            starts.append(_ms(await asyncio.to_thread(box.warm)))
        finally:
            box.close()
        box = Sandbox(Limits(), size=1)
        try:
            began = time.perf_counter()
            _checked(await box.run(SOURCE, INPUT))
            colds.append(_ms(time.perf_counter() - began))
        finally:
            box.close()
    return starts, colds


async def _warm(runs: int) -> list[float]:
    box = Sandbox(Limits(), size=1)
    try:
        _checked(await box.run(SOURCE, INPUT))
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            _checked(await box.run(SOURCE, INPUT))
            times.append(_ms(time.perf_counter() - began))
        return times
    finally:
        box.close()


async def _in_process(runs: int) -> list[float]:
    init_mini_racer(flags=child.V8_FLAGS, ignore_duplicate_init=True)
    outbox = child.Outbox(io.StringIO())
    request = p.request(p.OP_RUN, SOURCE, Limits(), INPUT)
    times = []
    for _ in range(runs + 1):
        began = time.perf_counter()
        answer = await child.answer(request, outbox)
        times.append(_ms(time.perf_counter() - began))
        _checked(answer.get("value"))
    return times[1:]


async def _measure(runs: int) -> dict[str, list[float]]:
    starts, colds = await _cold_and_start(max(1, runs // 4))
    return {
        "start": starts,
        "cold": colds,
        "warm": await _warm(runs),
        "in_process": await _in_process(runs),
    }


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    measured = asyncio.run(_measure(max(4, runs)))
    cold_runs = len(measured["cold"])
    return [
        (
            "forge_sandbox_start_ms",
            percentile(measured["start"], 0.5),
            "ms",
            f"python -m hub.forge.child spawned → ready (engine up); p50 of {cold_runs}",
        ),
        (
            "forge_cold_call_ms",
            percentile(measured["cold"], 0.5),
            "ms",
            f"a new sandbox's first call of a word-count tool, child start included; p50 of "
            f"{cold_runs}, each result checked",
        ),
        (
            "forge_warm_call_ms",
            percentile(measured["warm"], 0.5),
            "ms",
            f"the same call on a warm child (pipe, fresh V8 context, prelude, run, JSON); p50 "
            f"of {len(measured['warm'])}, each result checked",
        ),
        (
            "forge_in_process_call_ms",
            percentile(measured["in_process"], 0.5),
            "ms",
            "the same call in the benchmark's own process (no child, no pipe): warm minus this "
            f"is the per-call cost of isolation; p50 of {len(measured['in_process'])}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 40))
