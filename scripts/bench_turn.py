"""What the hub adds to a chat turn: the time before the model sees the request, SSE framing,
the first token through the hub against straight from the model, and how fast a cancel reaches
the model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from scripts.bench_common import (
    BenchmarkFailed,
    Figure,
    owner_headers,
    percentile,
    running_hub,
)
from scripts.bench_embedded import PROMPT


def bench_turn_overhead(runs: int) -> list[Figure]:
    return asyncio.run(_turn_overhead(runs))


async def _turn_overhead(runs: int) -> list[Figure]:
    """Request sent to the hub → the fake Ollama receives the model request (same clock), as
    the owner (every built-in tool mounted). Every turn must answer 200 and end with [DONE]; a
    429 (the rate limit doing its job) is waited out and the turn sent again, never timed."""
    import aiohttp

    from fakes.ollama import FakeOllama

    fake = FakeOllama()
    arrivals: list[float] = []
    original = fake._chat

    async def stamped(request: Any) -> Any:
        arrivals.append(time.perf_counter())
        return await original(request)

    fake._chat = stamped  # type: ignore[method-assign]
    await fake.start()
    async with running_hub(ollama_host=fake.url) as server, aiohttp.ClientSession() as http:
        headers = owner_headers(server)
        gaps, tools = [], 0
        for _ in range(runs + 5):  # five warm-up turns
            gap = await _timed_turn(http, server.url, headers, fake, arrivals)
            gaps.append(gap * 1000)
            tools = len(fake.requests[-1].get("tools") or [])
            fake.requests.clear()  # the fake shares the hub's process: its log is not the hub's
    await fake.stop()
    gaps = gaps[5:]
    how = (
        f"POST /api/chat sent → fake Ollama receives /api/chat, {tools} tools mounted "
        f"(owner), {runs} turns, each checked 200 + [DONE], loopback"
    )
    return [
        Figure("turn_overhead_p50", percentile(gaps, 0.5), "ms", how, gaps),
        Figure("turn_overhead_p99", percentile(gaps, 0.99), "ms", how, gaps),
    ]


async def _timed_turn(
    http: Any, url: str, headers: dict[str, str], fake: Any, arrivals: list[float]
) -> float:
    from fakes.ollama import Reply

    while True:
        fake.script(Reply(chunks=["ok"]))
        before = len(arrivals)
        sent = time.perf_counter()
        async with http.post(f"{url}/api/chat", json=_body(), headers=headers) as response:
            text = await response.text()
            if response.status == 429:
                fake.replies.clear()
                await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
                continue
            if response.status != 200 or not text.rstrip().endswith("data: [DONE]"):
                raise BenchmarkFailed(f"a turn answered {response.status}: {text[-300:]}")
            if '"type":"error"' in text or len(arrivals) != before + 1:
                raise BenchmarkFailed(f"a turn failed or never reached the model: {text[-300:]}")
        return arrivals[-1] - sent


def bench_sse_frames(runs: int) -> list[Figure]:
    from hub.agent.stream import StreamNormaliser

    events = [{"event": {"contentBlockDelta": {"delta": {"text": f"w{i} "}}}} for i in range(20000)]
    rates = []
    for _ in range(runs):
        normaliser = StreamNormaliser(model_id="bench")
        started = time.perf_counter()
        seq = 0
        for event in events:
            for out in normaliser.feed(event):
                frame = json.dumps({**out, "seq": seq}, separators=(",", ":"), ensure_ascii=False)
                _ = f"data: {frame}\n\n".encode()
                seq += 1
        rates.append(seq / (time.perf_counter() - started))
    figures = [
        Figure(
            "sse_frames_per_s_normaliser",
            statistics.median(rates),
            "frames/s",
            "StreamNormaliser.feed + frame encoding of 20000 text deltas, in-process",
            rates,
        )
    ]
    figures.append(asyncio.run(_sse_end_to_end(runs)))
    return figures


async def _sse_end_to_end(runs: int) -> Figure:
    import aiohttp

    from fakes.ollama import FakeOllama, Reply

    fake = FakeOllama()
    await fake.start()
    rates = []
    async with _hub(ollama_host=fake.url) as url, aiohttp.ClientSession() as http:
        for _ in range(runs):
            fake.script(Reply(chunks=[f"w{i} " for i in range(3000)]))
            frames, started = 0, time.perf_counter()
            async with http.post(f"{url}/api/chat", json=_body()) as response:
                async for line in response.content:
                    frames += line.startswith(b"data: {")
            rates.append(frames / (time.perf_counter() - started))
    await fake.stop()
    return Figure(
        "sse_frames_per_s_hub",
        statistics.median(rates),
        "frames/s",
        "fake Ollama streams 3000 chunks at once → hub → SSE read by aiohttp",
        rates,
    )


def bench_first_token_ratio(runs: int) -> list[Figure]:
    return asyncio.run(_first_token_ratio(runs))


FAKE_PROMPT_EVAL_S = 0.2


async def _first_token_ratio(runs: int) -> list[Figure]:
    import aiohttp

    from fakes.ollama import FakeOllama, Reply

    fake = FakeOllama()
    await fake.start()
    direct, through = [], []
    chat = {
        "model": "qwen3:latest",
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": True,
    }
    async with _hub(ollama_host=fake.url) as url, aiohttp.ClientSession() as http:
        for _ in range(runs):
            fake.script(Reply(first_delay_s=FAKE_PROMPT_EVAL_S))
            started = time.perf_counter()
            async with http.post(f"{fake.url}/api/chat", json=chat) as response:
                await response.content.readline()
                direct.append(time.perf_counter() - started)
                await response.read()
            fake.script(Reply(first_delay_s=FAKE_PROMPT_EVAL_S))
            started = time.perf_counter()
            async with http.post(f"{url}/api/chat", json=_body()) as response:
                async for line in response.content:
                    if b'"textDelta"' in line:
                        through.append(time.perf_counter() - started)
                        break
                await response.read()
    await fake.stop()
    ratios = [t / d for t, d in zip(through, direct, strict=True)]
    how = (
        f"first text through the hub ÷ first chunk straight from the fake Ollama "
        f"(which waits {FAKE_PROMPT_EVAL_S * 1000:.0f} ms like a prompt evaluation)"
    )
    figures = [Figure("first_token_ratio_fake_ollama", statistics.median(ratios), "x", how, ratios)]
    from scripts.bench_embedded import _direct_and_hub

    embedded = {f.name: f for f in await _direct_and_hub(runs)}
    direct_ms = embedded["embedded_first_token_direct"]
    hub_ms = embedded["embedded_first_token_hub"]
    figures.append(
        Figure(
            "first_token_ratio_embedded",
            hub_ms.value / direct_ms.value,
            "x",
            "embedded_first_token_hub ÷ embedded_first_token_direct (medians)",
            [hub_ms.value / d for d in direct_ms.runs],
        )
    )
    return figures


def _body() -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": PROMPT}]}


@contextlib.asynccontextmanager
async def _hub(**overrides: Any) -> AsyncIterator[str]:
    async with running_hub(**overrides) as server:
        yield server.url


def bench_cancel(runs: int) -> list[Figure]:
    return asyncio.run(_cancel(runs))


async def _cancel(runs: int) -> list[Figure]:
    """Client closes its /api/chat stream → the (fake) model sees its connection closed."""
    import aiohttp

    from fakes.ollama import FakeOllama, Reply

    closes: dict[str, list[float]] = {"streaming": [], "prompt_eval": []}
    async with aiohttp.ClientSession() as http:
        for _ in range(runs):
            for case, reply in (
                ("streaming", Reply(chunks=["w "] * 2000, delay_s=0.01)),
                ("prompt_eval", Reply(first_delay_s=30.0)),
            ):
                fake = FakeOllama()
                await fake.start()
                fake.script(reply)
                async with _hub(ollama_host=fake.url) as url:
                    response = await http.post(f"{url}/api/chat", json=_body())
                    if case == "streaming":
                        async for line in response.content:
                            if b"textDelta" in line:
                                break
                    else:
                        await fake.chat_seen.wait()
                        await asyncio.sleep(0.2)
                    left = time.monotonic()
                    response.close()
                    await asyncio.wait_for(fake.disconnected.wait(), 30)
                    closes[case].append((fake.disconnected_at[0] - left) * 1000)
                await fake.stop()
    how = "client closes POST /api/chat → the fake Ollama's handler sees its connection closed"
    return [
        Figure(
            "cancel_close_ms_streaming",
            statistics.median(closes["streaming"]),
            "ms",
            how + ", mid-stream",
            closes["streaming"],
        ),
        Figure(
            "cancel_close_ms_prompt_eval",
            statistics.median(closes["prompt_eval"]),
            "ms",
            how + ", before the first token",
            closes["prompt_eval"],
        ),
    ]
