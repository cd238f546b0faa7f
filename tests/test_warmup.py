"""The embedded model made ready as the hub starts: loaded, and what every turn begins with
already read, so the first message reads only itself."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from harness.waits import until
from hub import contracts as c
from hub.agent.warmup import READING_FAMILIES
from hub.api.server import RunningServer
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat


async def health(server: RunningServer) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{server.url}/api/health", headers=owner_headers(server)) as got,
    ):
        body: dict[str, Any] = await got.json()
        return body


@pytest.mark.slow
async def test_a_started_hub_reads_the_beginnings_before_the_first_message(
    start_hub: StartHub,
) -> None:
    """SmolLM2 with the tool protocol on, so the warm-up has tools to read; the first turn then
    reads only what is its own (the message and the template's words around it)."""
    server = await start_hub(
        model_provider=c.PROVIDER_EMBEDDED,
        embedded_model="smollm2",
        embedded_tools="on",
        embedded_warm_at_start=True,
    )

    def warmed() -> bool:
        # The beginnings read and the warm-up past them (the families' offers may still be under
        # way); the cache counts an entry a moment before the warm-up moves its status on.
        embedded = server.hub.models.embedded_status()
        cache = embedded.get("promptCache") or {}
        past_beginnings = str(embedded.get("preparing") or READING_FAMILIES).startswith(
            READING_FAMILIES
        )
        return int(cache.get("entries", 0)) >= 4 and past_beginnings

    await until(warmed, within_s=240, what="the embedded model warmed up")
    said = (await health(server))["embedded"]
    assert said["promptCache"]["usedBytes"] <= said["promptCache"]["capacityBytes"]
    transcript = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "hi"}]}, owner_headers(server)
    )
    assert transcript.done and not transcript.of_type(c.EV_ERROR)
    [first, *_] = transcript.of_type(c.EV_METADATA)
    read, prompt = first["metrics"]["promptTokensRead"], first["usage"]["inputTokens"]
    assert prompt > 300, "the system prompt and the tools"
    assert read < prompt // 5, f"read {read} of {prompt} prompt tokens"


async def test_a_hub_told_not_to_warm_up_starts_no_runner(start_hub: StartHub) -> None:
    server = await start_hub(model_provider=c.PROVIDER_EMBEDDED, embedded_model="smollm2")
    embedded = (await health(server))["embedded"]
    assert embedded["state"] == "stopped" and embedded["pid"] is None


async def test_reading_ahead_gives_way_to_a_turn_that_asked_a_moment_ago() -> None:
    """The families read after the model is ready wait until no turn has asked for a while."""
    import asyncio
    import sys
    from pathlib import Path

    from hub.agent.runner.process import RunnerSpec
    from hub.agent.runner.supervisor import RunnerSupervisor

    runner = RunnerSupervisor(RunnerSpec(Path(sys.executable), 512, 1))
    runner.last_asked = asyncio.get_running_loop().time()
    waited = asyncio.create_task(runner.quiet(3600.0))
    await asyncio.sleep(0.3)
    assert not waited.done(), "a turn asked within the hour"
    runner.last_asked, runner.waiting = float("-inf"), 1  # long ago, but one waits now
    await asyncio.sleep(0.3)
    assert not waited.done(), "a turn still waits"
    runner.waiting = 0
    await asyncio.wait_for(waited, 60)
