"""A generation no turn waits for (memory listening after a reply) gives way to a turn: one
that asks while it waits is served first, and it ends as cancelled."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from harness.waits import until
from hub.agent.runner import protocol as p
from hub.agent.runner.process import Generation
from hub.agent.runner.supervisor import RunnerSupervisor
from tests.test_small_tools import ScriptedSpec, requests_sent


def scripted_runner(tmp_path: Path, replies: list[str]) -> tuple[RunnerSupervisor, Path]:
    """A supervisor over the scripted runner, and the file that logs each request it read."""
    log, script = tmp_path / "requests.jsonl", tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies, "log": str(log)}))
    return RunnerSupervisor(ScriptedSpec(Path(sys.executable), 512, 1, script=script)), log


async def test_a_yielding_generation_waiting_for_the_runner_lets_a_turn_go_first(
    tmp_path: Path,
) -> None:
    runner, log = scripted_runner(tmp_path, ["first turn", "second turn"])
    chat = [{"role": "user", "content": "hi"}]
    try:
        holding = runner.generate(chat, 8, {}, Generation())
        first = await anext(holding)  # the first turn holds the runner
        heard = Generation()

        async def listen() -> str:
            pieces = runner.generate(chat, 8, {}, heard, yields=True)
            return "".join([piece async for piece in pieces])

        async def turn() -> str:
            return "".join([piece async for piece in runner.generate(chat, 8, {}, Generation())])

        listening = asyncio.create_task(listen())
        await asyncio.sleep(0)  # it waits for the runner
        turning = asyncio.create_task(turn())
        await until(lambda: runner.waiting == 2, what="both wait for the runner")
        rest = "".join([piece async for piece in holding])
        assert first + rest == "first turn"
        assert await turning == "second turn"
        assert await listening == "" and heard.stop_reason == p.STOP_CANCELLED
        assert len(requests_sent(log)) == 2, "the runner never read what listening asked"
    finally:
        await runner.close()


async def test_a_yielding_generation_that_gets_the_runner_between_a_turns_generations_gives_way(
    tmp_path: Path,
) -> None:
    """The runner comes free between a turn's generations (its offer, its tool's run): a
    listening that waited for it reads nothing then, so the turn's next generation never waits
    while it reads its prompt."""
    runner, log = scripted_runner(tmp_path, ["the call", "the answer"])
    chat = [{"role": "user", "content": "hi"}]
    try:
        holding = runner.generate(chat, 8, {}, Generation())
        first = await anext(holding)  # the turn's first generation holds the runner
        heard = Generation()

        async def listen() -> str:
            pieces = runner.generate(chat, 8, {}, heard, yields=True)
            return "".join([piece async for piece in pieces])

        listening = asyncio.create_task(listen())
        await until(lambda: runner.waiting == 1, what="listening waits for the runner")
        assert first + "".join([piece async for piece in holding]) == "the call"
        assert await listening == "" and heard.stop_reason == p.STOP_CANCELLED
        answer = "".join([piece async for piece in runner.generate(chat, 8, {}, Generation())])
        assert answer == "the answer"
        assert len(requests_sent(log)) == 2, "listening read nothing between the two"
    finally:
        await runner.close()


async def test_quiet_waits_while_a_turns_generation_runs(tmp_path: Path) -> None:
    """A long generation of a turn is not quiet, however long ago it asked."""
    runner, _ = scripted_runner(tmp_path, ["a long reply"])
    chat = [{"role": "user", "content": "hi"}]
    try:
        holding = runner.generate(chat, 8, {}, Generation())
        first = await anext(holding)
        runner.last_asked = float("-inf")  # as if it had asked long ago
        waited = asyncio.create_task(runner.quiet(0.0))
        await asyncio.sleep(0.3)
        assert not waited.done(), "a turn's generation is under way"
        assert runner.turns_running == 1
        assert first + "".join([piece async for piece in holding]) == "a long reply"
        assert runner.turns_running == 0
        runner.last_asked = float("-inf")
        await asyncio.wait_for(waited, 60)
    finally:
        await runner.close()
