"""The TUI's chat screen, headless, showing a long reply: whether its Markdown keeps up."""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench_common import (
    Figure,
)
from scripts.bench_turn import _hub


def bench_tui_stream(runs: int) -> list[Figure]:
    return asyncio.run(_tui_stream(runs))


async def _tui_stream(runs: int) -> list[Figure]:
    """The TUI's chat screen, headless, showing a long reply: does Markdown keep up?"""
    from fakes.ollama import FakeOllama

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
    from fakes.ollama import Reply
    from harness.waits import until
    from hub.client.http import HubClient
    from tui.app import TinyApp
    from tui.chat import ChatScreen, ReplyMessage
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
