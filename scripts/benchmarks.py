"""Named benchmarks: each measures whole operations a person waits for, several times, and
reports the median with its spread. ``./scripts/bench [NAME ...]`` prints a table and writes
bench.json; ``--list`` names them. Figures are measured here, never asserted by tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from scripts.bench_cli import bench_cli
from scripts.bench_common import (
    BenchmarkFailed,
    Figure,
    hub_env,
    owner_headers,
    percentile,
    running_hub,
    served_hub,
)
from scripts.bench_embedded import bench_embedded, bench_embedded_busy

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).with_name("tiny-hub")
PROMPT = "Tell me three short facts about the moon."


def time_cold_start(home: Path) -> float:
    """Process start → first 200 from /api/health, on a port the process picks."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(SCRIPT), "serve", "--host", "127.0.0.1", "--port", "0"],
        env=hub_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        match = re.search(r":(\d+) \(model", process.stdout.readline())
        if not match:
            raise RuntimeError("the hub did not print its port")
        url = f"http://127.0.0.1:{match.group(1)}/api/health"
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        return time.perf_counter() - started
            except OSError:
                time.sleep(0.01)
    finally:
        process.terminate()
        process.wait(timeout=30)


def bench_cold_start(runs: int) -> list[Figure]:
    first, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            first.append(time_cold_start(Path(tmp) / "home"))
            warm.append(time_cold_start(Path(tmp) / "home"))
    how = "tiny-hub serve --port 0 spawned until GET /api/health answers 200 (no Ollama)"
    return [
        Figure(
            "cold_start_first_run",
            statistics.median(first),
            "s",
            how + "; empty data dir: migrations + owner creation",
            first,
        ),
        Figure("cold_start", statistics.median(warm), "s", how + "; existing data dir", warm),
    ]


def bench_turn_overhead(runs: int) -> list[Figure]:
    return asyncio.run(_turn_overhead(runs))


async def _turn_overhead(runs: int) -> list[Figure]:
    """Request sent to the hub → the fake Ollama receives the model request (same clock), as
    the owner (every built-in tool mounted). Every turn must answer 200 and end with [DONE]; a
    429 (the rate limit doing its job) is waited out and the turn sent again, never timed."""
    import aiohttp

    from tests.fakes.ollama import FakeOllama

    fake = FakeOllama()
    arrivals: list[float] = []
    original = fake._chat

    async def stamped(request: Any) -> Any:
        arrivals.append(time.perf_counter())
        return await original(request)

    fake._chat = stamped  # type: ignore[method-assign]
    await fake.start()
    async with _running_hub(ollama_host=fake.url) as server, aiohttp.ClientSession() as http:
        headers = owner_headers(server)
        gaps, tools = [], 0
        for _ in range(runs + 5):  # five warm-up turns
            gap = await _timed_turn(http, server.url, headers, fake, arrivals)
            gaps.append(gap * 1000)
            tools = len(fake.requests[-1].get("tools") or [])
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
    from tests.fakes.ollama import Reply

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

    from tests.fakes.ollama import FakeOllama, Reply

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


def bench_tui_stream(runs: int) -> list[Figure]:
    return asyncio.run(_tui_stream(runs))


async def _tui_stream(runs: int) -> list[Figure]:
    """The TUI's chat screen, headless, showing a long reply: does Markdown keep up?"""
    from tests.fakes.ollama import FakeOllama

    chunks = int(os.environ.get("TINY_HUB_BENCH_TUI_CHUNKS", "3000"))
    fake = FakeOllama()
    await fake.start()
    with tempfile.TemporaryDirectory() as tmp:
        async with _hub(ollama_host=fake.url) as url:
            rates = [
                await _tui_reply_rate(url, fake, Path(tmp) / f"p{run}", chunks, 40)
                for run in range(runs)
            ]
            one_block = [
                await _tui_reply_rate(url, fake, Path(tmp) / f"b{run}", chunks, 0)
                for run in range(runs)
            ]
    await fake.stop()
    how = (
        f"a {chunks}-word reply from the fake model through the hub into the TUI's chat screen "
        "(headless, 120x40), send → reply complete on screen"
    )
    return [
        Figure(
            "tui_stream_chunks_per_s",
            statistics.median(rates),
            "chunks/s",
            f"{how}; a paragraph every 40 words",
            rates,
        ),
        Figure(
            "tui_stream_chunks_per_s_one_paragraph",
            statistics.median(one_block),
            "chunks/s",
            f"{how}; all one paragraph (the worst case: the open block is re-parsed as it grows)",
            one_block,
        ),
    ]


async def _tui_reply_rate(
    url: str, fake: Any, data_dir: Path, chunks: int, paragraph_every: int
) -> float:
    from tests.fakes.ollama import Reply
    from tests.waits import until
    from tui.app import TinyApp
    from tui.chat import ChatScreen, ReplyMessage
    from tui.client import HubClient
    from tui.config import TuiConfig

    words = [
        f"word{i}"
        + ("\n\n" if paragraph_every and i % paragraph_every == paragraph_every - 1 else " ")
        for i in range(chunks)
    ]
    fake.script(Reply(chunks=words))
    app = TinyApp(HubClient(url, None), TuiConfig(data_dir))
    async with app.run_test(size=(120, 40)) as pilot:
        chat = app.screen
        assert isinstance(chat, ChatScreen)
        chat.query_one("#prompt").load_text("a long one")  # type: ignore[attr-defined]
        started = time.perf_counter()
        await pilot.press("enter")
        await until(lambda: not chat.busy and len(chat.history) >= 2, within_s=600)
        rate = chunks / (time.perf_counter() - started)
        assert chat.query(ReplyMessage).last().source.startswith("word0 word1")
    return rate


def bench_first_token_ratio(runs: int) -> list[Figure]:
    return asyncio.run(_first_token_ratio(runs))


FAKE_PROMPT_EVAL_S = 0.2


async def _first_token_ratio(runs: int) -> list[Figure]:
    import aiohttp

    from tests.fakes.ollama import FakeOllama, Reply

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
    async with _running_hub(**overrides) as server:
        yield server.url


_running_hub = running_hub


# A fact in other words: the question a person would ask, and the fact that answers it.
PARAPHRASES: list[tuple[str, list[str]]] = [
    (
        "My cat is called Miso and is allergic to chicken.",
        ["what is my pet allergic to?", "which food is bad for my cat?"],
    ),
    (
        "I keep the spare house key under the blue flower pot.",
        ["where is the spare key?", "how do I get in if I lose my keys?"],
    ),
    (
        "My passport expires in August 2027.",
        ["when do I need to renew my passport?", "until when is my passport valid?"],
    ),
    (
        "I am allergic to penicillin.",
        ["which antibiotic must I avoid?", "do I have any drug allergies?"],
    ),
    (
        "My sister Mia lives in Lyon and teaches piano.",
        ["where does my sister live?", "what does Mia do for a living?"],
    ),
    (
        "The wifi password hint is the name of our first boat.",
        ["how do I remember the wifi password?", "what is the clue for the wireless password?"],
    ),
    (
        "I take my blood pressure pill every morning at 8.",
        ["when do I take my medication?", "what time is my daily pill?"],
    ),
    (
        "Our landlord is called Mr. Okafor and prefers text messages.",
        ["how should I contact the landlord?", "who owns our flat?"],
    ),
    (
        "My bike lock code is the year my grandmother was born.",
        ["what is the combination for my bicycle lock?", "how do I unlock my bike?"],
    ),
    (
        "I am learning Portuguese for a move to Porto next year.",
        ["which language am I studying?", "where am I moving to?"],
    ),
    (
        "The boiler needs its annual service every March.",
        ["when is the heating system due for maintenance?", "what happens every March?"],
    ),
    (
        "My daughter's school pickup is at 3:15 on weekdays.",
        ["when do I collect my child from school?", "what time does school finish?"],
    ),
    (
        "I prefer window seats on long flights.",
        ["what seat do I like on planes?", "aisle or window?"],
    ),
    (
        "My dentist appointment is on the 14th at 10am.",
        ["when am I seeing the dentist?", "do I have any medical appointments soon?"],
    ),
    (
        "The car insurance renews on October 1st with Aviva.",
        ["when is my car insurance due?", "which company insures my car?"],
    ),
    (
        "I don't eat pork for religious reasons.",
        ["are there foods I avoid?", "what meat do I not eat?"],
    ),
    (
        "My best friend Tom's birthday is on June 9.",
        ["when is Tom's birthday?", "whose birthday is in June?"],
    ),
    (
        "We water the tomatoes every second evening in summer.",
        ["how often do the tomato plants get water?", "garden watering schedule?"],
    ),
    (
        "I wear contact lenses with a -2.5 prescription.",
        ["what is my eye prescription?", "do I need glasses?"],
    ),
    (
        "The recycling bins go out on Tuesday nights.",
        ["which night is bin day?", "when do I put the recycling out?"],
    ),
]
NAMES = ["Alice", "Bruno", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ines", "Jon"]
RELATIONS = ["sister", "colleague", "neighbour", "cousin", "friend", "coach", "uncle"]
ACTIVITIES = ["hiking", "chess", "baking", "cycling", "painting", "swimming", "gardening"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def filler_fact(i: int) -> str:
    """Near-identical facts: the hard case for approximate search (one outlier among many)."""
    return (
        f"{NAMES[i % 10]}, the user's {RELATIONS[i % 7]}, likes {ACTIVITIES[i % 7]} "
        f"on {DAYS[(i // 7) % 7]}s (fact {i})."
    )


def bench_memory(runs: int) -> list[Figure]:
    from hub.config import load_settings
    from hub.memory.graph import now
    from hub.runtime import Hub

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        hub = Hub.open(load_settings(home=home, environ=hub_env(home)))
        me = hub.owner.id
        others = [hub.identity.add_user(f"person{i}").id for i in range(4)]
        learn_later = 200
        rows: list[tuple[str, str, str]] = []
        for i in range(5000 - len(PARAPHRASES) - learn_later):
            rows.append((f"f{i}", me, filler_fact(i)))
        for n, other in enumerate(others):
            rows += [(f"o{n}_{i}", other, filler_fact(i + 7 * n)) for i in range(5000)]
        stamp = now()
        hub.db.conn.executemany(
            "INSERT INTO entity (id, owner, kind, label, attrs_json, visibility, valid_from)"
            " VALUES (?, ?, 'fact', ?, '{}', 'private', ?)",
            [(*r, stamp) for r in rows],
        )
        started = time.perf_counter()
        hub.memory.index_missing()
        index_s = time.perf_counter() - started
        targets = [hub.memory.learn(me, fact).id for fact, _ in PARAPHRASES]
        learns = []
        for i in range(learn_later):
            started = time.perf_counter()
            hub.memory.learn(me, f"Note {i}: the parcel for flat {i} arrived on a weekday.")
            learns.append((time.perf_counter() - started) * 1000)
        recalls, hits, questions = [], 0, 0
        for target, (_, asks) in zip(targets, PARAPHRASES, strict=True):
            for question in asks:
                started = time.perf_counter()
                found = hub.memory.recall(me, question, limit=5)
                recalls.append((time.perf_counter() - started) * 1000)
                hits += target in [f.id for f in found]
                questions += 1
        preloads = []
        for _, asks in PARAPHRASES:
            started = time.perf_counter()
            hub.memory.preload(me, asks[0])
            preloads.append((time.perf_counter() - started) * 1000)
        exact_hits, default_hits = _compare_search(hub, me, targets)
        hub.close()
    scale = "5000 facts for one person, 20000 for four others"
    return [
        Figure(
            "memory_index_25000",
            index_s,
            "s",
            f"embed + index {len(rows)} facts from SQLite (batches of 256)",
            [index_s],
        ),
        Figure(
            "memory_learn_p50",
            percentile(learns, 0.5),
            "ms",
            f"learn (embed + SQLite + Chroma), {scale}",
            learns,
        ),
        Figure("memory_learn_p99", percentile(learns, 0.99), "ms", "the same", learns),
        Figure(
            "memory_recall_p50",
            percentile(recalls, 0.5),
            "ms",
            f"recall top 5, embedding included, SQL owner check, {scale}",
            recalls,
        ),
        Figure(
            "memory_recall_p99",
            percentile(recalls, 0.99),
            "ms",
            "the same; the first recall of a person loads their vectors from Chroma once",
            recalls,
        ),
        Figure(
            "memory_preload_p50", percentile(preloads, 0.5), "ms", "30 newest + 5 matches", preloads
        ),
        Figure(
            "memory_recall_at_5",
            hits / questions,
            "ratio",
            f"{questions} paraphrased "
            f"questions for {len(PARAPHRASES)} facts among 5000; the hub's recall (exact search "
            "over the person's cached vectors, then the SQL owner check)",
            [hits / questions],
        ),
        Figure(
            "memory_recall_at_5_exact",
            exact_hits / questions,
            "ratio",
            "the same questions, reference: exact cosine search in numpy on the vectors read "
            "back from Chroma",
            [exact_hits / questions],
        ),
        Figure(
            "memory_recall_at_5_hnsw_default",
            default_hits / questions,
            "ratio",
            "the same questions, Chroma's default HNSW (ef 100, M 16), same vectors",
            [default_hits / questions],
        ),
    ]


def _compare_search(hub: Any, me: str, targets: list[str]) -> tuple[int, int]:
    """Recall@5 of exact search and of Chroma's default HNSW on the same vectors."""
    import numpy as np

    from hub.memory.embedder import shared_embedder

    collection = hub.memory.vectors.collection
    everything = collection.get(include=["embeddings", "metadatas"])
    mine = [i for i, m in enumerate(everything["metadatas"]) if m["userId"] == me]
    ids = [everything["ids"][i] for i in mine]
    matrix = np.asarray([everything["embeddings"][i] for i in mine], dtype=np.float32)
    default = hub.memory.vectors.client.create_collection(
        "bench_default_hnsw", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
    )
    for start in range(0, len(everything["ids"]), 4000):
        default.add(
            ids=everything["ids"][start : start + 4000],
            embeddings=everything["embeddings"][start : start + 4000],
            metadatas=everything["metadatas"][start : start + 4000],
        )
    exact = approx = 0
    for target, (_, asks) in zip(targets, PARAPHRASES, strict=True):
        for question in asks:
            vector = shared_embedder().embed([question])
            top = np.argsort(-(matrix @ vector[0]))[:5]
            exact += target in {ids[i] for i in top}
            found = default.query(query_embeddings=vector, n_results=5, where={"userId": me})
            approx += target in found["ids"][0]
    return exact, approx


def bench_devices(runs: int) -> list[Figure]:
    return asyncio.run(_devices(runs))


async def _devices(runs: int) -> list[Figure]:
    import aiohttp

    async with served_hub() as served, aiohttp.ClientSession() as http:
        url, auth = served.url, served.auth
        devices = []
        for i in range(100):
            async with http.post(
                f"{url}/api/devices", headers=auth, json={"name": f"d{i}", "kind": "daemon"}
            ) as response:
                enrolled = await response.json()
            devices.append({"deviceId": enrolled["device_id"], "token": enrolled["device_token"]})
        rate = await _heartbeat_rate(http, url, devices)
        alone = await _round_trips(http, url, auth, devices[:1], runs)
        crowd = await _round_trips(http, url, auth, devices, runs)
    how = (
        "POST /api/devices/invoke (use_device's path): envelope queued → the target daemon "
        "(polling every 0.1 s when idle) pulls and replies → the answer returned"
    )
    return [
        Figure("invoke_round_trip_p50_1_device", percentile(alone, 0.5), "ms", how, alone),
        Figure(
            "invoke_round_trip_p50_100_devices",
            percentile(crowd, 0.5),
            "ms",
            how + "; 99 other daemons heartbeat every 20 s and poll every 3 s",
            crowd,
        ),
        Figure(
            "heartbeats_per_s",
            rate,
            "/s",
            "POST /api/devices/heartbeat from 16 concurrent "
            "clients for 5 s against a tiny-hub serve process",
            [rate],
        ),
    ]


async def _heartbeat_rate(http: Any, url: str, devices: list[dict[str, str]]) -> float:
    done, deadline = 0, time.perf_counter() + 5.0

    async def worker(index: int) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            async with http.post(
                f"{url}/api/devices/heartbeat", json=devices[index % len(devices)]
            ) as response:
                await response.read()
            done += 1

    await asyncio.gather(*(worker(i) for i in range(16)))
    return done / 5.0


async def _round_trips(
    http: Any, url: str, auth: dict[str, str], devices: list[dict[str, str]], runs: int
) -> list[float]:
    """Invoke the first device ``runs`` times; the others behave like the contract's daemon."""
    stop = asyncio.Event()

    async def daemon(creds: dict[str, str], idle_s: float) -> None:
        beat_at = 0.0
        while not stop.is_set():
            if time.perf_counter() >= beat_at:
                async with http.post(f"{url}/api/devices/heartbeat", json=creds) as response:
                    await response.read()
                beat_at = time.perf_counter() + 20
            async with http.put(f"{url}/api/devices/relay", json=creds) as response:
                messages = (await response.json())["messages"]
            for message in messages:
                async with http.patch(
                    f"{url}/api/devices/relay",
                    json={**creds, "inReplyTo": message["id"], "payload": '{"result":"ok"}'},
                ) as r:
                    await r.read()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0 if messages else idle_s)

    tasks = [
        asyncio.create_task(daemon(creds, 0.1 if i == 0 else 3.0))
        for i, creds in enumerate(devices)
    ]
    target = devices[0]["deviceId"]
    times = []
    for _ in range(runs):
        times.append(await _invoke_once(http, url, auth, target))
    stop.set()
    await asyncio.gather(*tasks)
    return times


async def _invoke_once(http: Any, url: str, auth: dict[str, str], target: str) -> float:
    started = time.perf_counter()
    async with http.post(
        f"{url}/api/devices/invoke", headers=auth, json={"deviceId": target, "prompt": "ping"}
    ) as response:
        answer = await response.json()
    if answer.get("result") != "ok":
        raise RuntimeError(f"unexpected answer {answer}")
    return (time.perf_counter() - started) * 1000


def bench_cancel(runs: int) -> list[Figure]:
    return asyncio.run(_cancel(runs))


async def _cancel(runs: int) -> list[Figure]:
    """Client closes its /api/chat stream → the (fake) model sees its connection closed."""
    import aiohttp

    from tests.fakes.ollama import FakeOllama, Reply

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


def bench_flipper_offline(runs: int) -> list[Figure]:
    return asyncio.run(_flipper_offline(runs))


async def _flipper_offline(runs: int) -> list[Figure]:
    """Unplug the emulated Flipper → its record shows offline; replug → online again."""
    from firmware_bridges.emulators.flipper import FlipperEmulator

    offline, online = [], []
    with tempfile.TemporaryDirectory() as tmp:
        link = Path(tmp) / "flipper"
        device = FlipperEmulator(link=link)
        device.start()
        async with _running_hub(flipper_port=str(link)) as server:
            hub = server.hub
            await _state(hub, "online")
            for _ in range(runs):
                started = time.monotonic()
                device.unplug()
                await _state(hub, "offline")
                offline.append(time.monotonic() - started)
                started = time.monotonic()
                device.replug()
                await _state(hub, "online")
                online.append(time.monotonic() - started)
        device.stop()
    how = "emulated Flipper on a pty behind a pinned symlink, driver manager scanning every 1 s"
    return [
        Figure(
            "flipper_offline_s",
            statistics.median(offline),
            "s",
            "unplug → /api/drivers says offline; " + how,
            offline,
        ),
        Figure(
            "flipper_back_online_s",
            statistics.median(online),
            "s",
            "replug → online again, no restart; " + how,
            online,
        ),
    ]


async def _state(hub: Any, wanted: str) -> None:
    """Poll the manager's records every 10 ms (it has no change event to wait on)."""
    for _ in range(6000):
        if any(r["status"] == wanted for r in hub.drivers.records() if r["driver"] == "flipper"):
            return
        await asyncio.sleep(0.01)
    raise RuntimeError(f"the Flipper never became {wanted}")


def rows_of(module: str) -> Callable[[int], list[Figure]]:
    """A benchmark kept in its own module (``bench(runs)`` → (name, value, unit, how) rows)."""

    def run(runs: int) -> list[Figure]:
        bench = importlib.import_module(module).bench
        return [Figure(name, value, unit, how, [value]) for name, value, unit, how in bench(runs)]

    return run


BENCHMARKS: dict[str, tuple[Callable[[int], list[Figure]], int]] = {
    "cold_start": (bench_cold_start, 5),
    "cli": (bench_cli, 10),
    "embedded": (bench_embedded, 7),
    "embedded_busy": (bench_embedded_busy, 5),
    "turn_overhead": (bench_turn_overhead, 200),
    "sse_frames": (bench_sse_frames, 5),
    "first_token_ratio": (bench_first_token_ratio, 10),
    "memory": (bench_memory, 1),
    "devices": (bench_devices, 30),
    "flipper": (rows_of("scripts.bench_flipper"), 10),
    "soak": (rows_of("scripts.bench_soak"), 10),
    "tui_stream": (bench_tui_stream, 3),
    "cancel": (bench_cancel, 5),
    "flipper_offline": (bench_flipper_offline, 5),
    "speech": (rows_of("scripts.bench_speech"), 5),
    "nicla_vision": (rows_of("scripts.bench_nicla_vision"), 20),
    "nicla_voice": (rows_of("scripts.bench_nicla_voice"), 10),
    "cloud": (rows_of("scripts.bench_cloud"), 3),
    "universe": (rows_of("scripts.bench_universe"), 3),
    "memory_sync": (rows_of("scripts.bench_memory_sync"), 3),
    "mcp": (rows_of("scripts.bench_mcp"), 30),
    "people": (rows_of("scripts.bench_people"), 10),
    "offline_agent": (rows_of("scripts.bench_agent_eval"), 1),
}


def print_table(figures: list[Figure]) -> None:
    rows = [("benchmark", "median", "unit", "range", "how measured")]
    rows += [(f.name, f"{f.value:.3g}", f.unit, f.spread, f.how) for f in figures]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--list", action="store_true", help="name the benchmarks and stop")
    parser.add_argument("--runs", type=int, help="runs per benchmark (default: each its own)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench.json")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(BENCHMARKS))
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; see --list")
    figures: list[Figure] = []
    for name in args.names or list(BENCHMARKS):
        run, default_runs = BENCHMARKS[name]
        print(f"running {name} ...", file=sys.stderr, flush=True)
        figures.extend(run(args.runs or default_runs))
    print_table(figures)
    args.out.write_text(
        json.dumps(
            {
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "figures": [asdict(f) for f in figures],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
