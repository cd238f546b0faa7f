"""spawn_agents in a real turn: sub-agents on the turn's model, at most 8 at once, in order.

The fake model answers by what it is asked (many sub-agents talk to it at once, in no fixed
order): the parent calls spawn_agents, each sub-agent fetches its own page with http and then
answers. The model counts the sub-agents between their first request and their answer, which
is how long each one runs, and the page holds every fetch until 8 sub-agents run at the same
time (or every task has begun), so a correct cap shows exactly 8 and a missing one more.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub import contracts as c
from hub.agent.tools.spawn import MAX_CONCURRENT, MAX_TASKS, SUB_AGENT_PROMPT
from hub.api.server import RunningServer
from tests.conftest import StartHub, owner_headers
from tests.sse import SseTranscript, post_chat

ASK = {"messages": [{"role": "user", "content": "research these for me"}]}
FAILING = "task 13"


def tool_call(name: str, **arguments: Any) -> Reply:
    return Reply(chunks=[], tool_calls=[{"function": {"name": name, "arguments": arguments}}])


class Pages:
    """The site sub-agents fetch: /page/<task> answers once enough sub-agents run together,
    or never (``hold``), recording arrivals and the fetches cancelled under it."""

    def __init__(self, model: SubAgentOllama, hold: bool = False) -> None:
        self.model, self.hold = model, hold
        self.arrived: list[str] = []
        self.waiting = 0
        self.cancelled = 0
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/page/{task}", self._page)
        self._runner = web.AppRunner(app, handler_cancellation=True)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _page(self, request: web.Request) -> web.Response:
        task = request.match_info["task"]
        self.arrived.append(task)
        self.waiting += 1
        try:
            if self.hold:
                await asyncio.sleep(3600)
            # A generous deadline, so a broken cap fails the assertions instead of hanging.
            for _ in range(200):
                if self.model.active >= MAX_CONCURRENT or self.model.started == self.model.total:
                    break
                await asyncio.sleep(0.05)
            return web.Response(text=f"the page of {task}")
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.waiting -= 1


class SubAgentOllama(FakeOllama):
    """Answers the parent and each sub-agent by what its request holds."""

    def __init__(self, tasks: list[str]) -> None:
        super().__init__()
        self.tasks, self.total = tasks, len(tasks)
        self.pages_url = ""
        self.started = 0
        self.active = 0
        self.peak = 0
        self.sub_agent_tools: list[list[str]] = []

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        # The body is cached once read, so the parent class reads the same one without waiting:
        # the reply queued here is the one it takes.
        self.replies.appendleft(self._route(await request.json()))
        return await super()._chat(request)

    def _route(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        answered = any(m["role"] == "tool" for m in messages)
        if not any(m["role"] == "system" and m["content"] == SUB_AGENT_PROMPT for m in messages):
            if answered:
                return Reply(chunks=["All done."])
            return tool_call("spawn_agents", tasks=self.tasks)
        task = next(m["content"] for m in messages if m["role"] == "user")
        if answered:  # the sub-agent's last request: it ends with this reply
            self.active -= 1
            return Reply(chunks=[f"answer to {task}"])
        self.sub_agent_tools.append([t["function"]["name"] for t in body.get("tools") or []])
        self.started += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        if task == FAILING:
            self.active -= 1
            return Reply(http_status=500, error="the model crashed on this one")
        return tool_call("http", url=f"{self.pages_url}/page/{task.replace(' ', '-')}")


@pytest.fixture
async def model() -> AsyncIterator[SubAgentOllama]:
    fake = SubAgentOllama([f"task {i}" for i in range(1, 21)])
    await fake.start()
    yield fake
    await fake.stop()


async def site(model: SubAgentOllama, hold: bool = False) -> Pages:
    pages = Pages(model, hold)
    await pages.start()
    model.pages_url = pages.url
    return pages


async def hub_on(start_hub: StartHub, model: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=model.url, http_allow_hosts=("127.0.0.1",))


def spawn_result(transcript: SseTranscript) -> dict[str, Any]:
    [after] = transcript.of_type(c.EV_AFTER_TOOL)
    result: dict[str, Any] = after["toolResult"]
    assert result["name"] == "spawn_agents"
    return result


async def test_twenty_tasks_run_eight_at_a_time_in_order_and_one_failure_stays_its_own(
    start_hub: StartHub, model: SubAgentOllama
) -> None:
    pages = await site(model)
    try:
        hub = await hub_on(start_hub, model)
        transcript = await post_chat(hub.url, ASK, owner_headers(hub))
    finally:
        await pages.stop()
    assert not transcript.of_type(c.EV_ERROR)
    assert transcript.text == "All done."
    assert model.started == 20
    assert model.peak == MAX_CONCURRENT, "never more than 8 at once, and 8 did run together"
    result = spawn_result(transcript)
    assert result["status"] == "success"
    assert "20 sub-agent task(s): 19 ok, 1 error" in result["content"][0]["text"]
    results = next(b["json"]["results"] for b in result["content"] if "json" in b)
    assert [r["task"] for r in results] == list(range(1, 21))
    for number, outcome in enumerate(results, start=1):
        if f"task {number}" == FAILING:
            assert outcome["status"] == "error"
            assert "the model crashed on this one" in outcome["text"]
        else:
            assert outcome == {"task": number, "status": "ok", "text": f"answer to task {number}"}
    # Each sub-agent had the http tool only (so none could spawn), and fetched its own page.
    assert all(tools == ["http"] for tools in model.sub_agent_tools)
    assert sorted(pages.arrived) == sorted(f"task-{i}" for i in range(1, 21) if i != 13)
    # The parent's model got the results back in its next request.
    parent_next = [m for m in model.requests if not _is_sub_agent(m)][-1]
    tool_messages = [m["content"] for m in parent_next["messages"] if m["role"] == "tool"]
    assert any("answer to task 20" in content for content in tool_messages)


def _is_sub_agent(body: dict[str, Any]) -> bool:
    return any(m["content"] == SUB_AGENT_PROMPT for m in body["messages"] if m["role"] == "system")


async def test_closing_the_stream_cancels_every_sub_agent(
    start_hub: StartHub, model: SubAgentOllama
) -> None:
    pages = await site(model, hold=True)
    try:
        hub = await hub_on(start_hub, model)
        async with aiohttp.ClientSession() as http:
            response = await http.post(f"{hub.url}/api/chat", json=ASK, headers=owner_headers(hub))
            await until(lambda: pages.waiting == MAX_CONCURRENT, what="8 sub-agents fetching")
            response.close()
        await until(lambda: pages.cancelled == MAX_CONCURRENT, what="every fetch was cancelled")
        await asyncio.sleep(0.3)  # room for a queued sub-agent to start, if one wrongly could
        assert model.started == MAX_CONCURRENT, "no queued task started after the cancel"
        assert len(pages.arrived) == MAX_CONCURRENT
    finally:
        await pages.stop()


@pytest.mark.parametrize(
    ("tasks", "says"),
    [
        ([], "at least one task"),
        ([f"t{i}" for i in range(MAX_TASKS + 1)], f"at most {MAX_TASKS} tasks"),
        (["fine", "  "], "task 2 is empty"),
        (["x" * 4001], "longer than 4000 characters"),
    ],
)
async def test_tasks_are_bounded(
    start_hub: StartHub, fake_ollama: FakeOllama, tasks: list[str], says: str
) -> None:
    hub = await hub_on(start_hub, fake_ollama)
    fake_ollama.script(tool_call("spawn_agents", tasks=tasks), Reply(chunks=["Sorry."]))
    transcript = await post_chat(hub.url, ASK, owner_headers(hub))
    result = spawn_result(transcript)
    assert result["status"] == "error"
    assert says in result["error"]
    assert len(fake_ollama.requests) == 2, "no sub-agent ran"
    assert json.dumps(transcript.events)  # the stream stayed JSON all along
