"""spawn_agents: independent tasks run by sub-agents in parallel (docs/protocol.md, tools).

A task that needs several fetches ("compare these five pages") is slow as one agent's loop and
fills that agent's context with raw pages. Sub-agents work on the tasks side by side and hand
back only their answers. Each one is a fresh strands Agent on the turn's own model with the
`http` tool only, so a sub-agent cannot spawn more of them (no fan-out beyond one level) and can
reach nothing a turn's `http` could not. At most `MAX_CONCURRENT` run at once and the rest queue,
so one call cannot flood the model server; the number of tasks, each task's text and each
answer are bounded, so one call cannot blow up the parent's context either.

One failing task is reported in its place and the others still answer. Cancelling the turn (the
client went away) cancels this tool's coroutine, and with it every sub-agent still running or
queued: the task group below cancels its children, which closes their model streams.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from strands import Agent, tool
from strands.agent.conversation_manager import NullConversationManager
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, ok, turn_context
from hub.agent.tools.http import make_http_tool

MAX_CONCURRENT = 8
MAX_TASKS = 24
MAX_TASK_CHARS = 4000
MAX_ANSWER_CHARS = 4000
# Tool calls one sub-agent may make; past it each call answers that the budget is spent, so a
# model that keeps fetching must answer with what it has instead of looping.
MAX_TOOL_CALLS = 8
# A sub-agent that takes longer is reported as failed; the others are not held up by it.
TASK_TIMEOUT_S = 300.0

SUB_AGENT_PROMPT = (
    "You are a sub-agent: another assistant gave you one self-contained task. Do it and answer "
    "with the result only, concisely and completely; your answer goes back to that assistant, "
    "not to a person. You can fetch public web pages with the http tool."
)

Status = Literal["ok", "error"]


@dataclass(frozen=True)
class Outcome:
    """One task's answer or the reason it has none."""

    status: Status
    text: str

    def as_json(self, index: int) -> dict[str, Any]:
        return {"task": index, "status": self.status, "text": self.text}


class _ToolBudget(HookProvider):
    """Refuses a sub-agent's tool calls past MAX_TOOL_CALLS (strands has no such limit)."""

    def __init__(self) -> None:
        self.calls = 0

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self._before)

    def _before(self, event: BeforeToolCallEvent) -> None:
        self.calls += 1
        if self.calls > MAX_TOOL_CALLS:
            event.cancel_tool = (
                f"tool budget spent ({MAX_TOOL_CALLS} calls): answer with what you have"
            )


def _clip(text: str) -> str:
    if len(text) <= MAX_ANSWER_CHARS:
        return text
    return text[:MAX_ANSWER_CHARS] + f"\n[cut at {MAX_ANSWER_CHARS} characters]"


async def run_task(model: Any, http: AgentTool, task: str) -> Outcome:
    """One sub-agent, start to answer. Errors become an outcome; cancellation propagates."""
    agent = Agent(
        model=model,
        tools=[http],
        system_prompt=SUB_AGENT_PROMPT,
        callback_handler=None,
        conversation_manager=NullConversationManager(),
        hooks=[_ToolBudget()],
    )
    try:
        async with asyncio.timeout(TASK_TIMEOUT_S):
            result = await agent.invoke_async(task)
    except TimeoutError:
        return Outcome("error", f"the sub-agent took longer than {TASK_TIMEOUT_S:g} s")
    except Exception as exc:
        return Outcome("error", f"the sub-agent failed: {str(exc).strip() or type(exc).__name__}")
    text = str(result).strip()
    if not text:
        return Outcome("error", "the sub-agent answered with no text")
    return Outcome("ok", _clip(text))


async def run_tasks(model: Any, http: AgentTool, tasks: list[str]) -> list[Outcome]:
    """Every task, MAX_CONCURRENT at a time, the outcomes in the order of `tasks`."""
    gate = asyncio.Semaphore(MAX_CONCURRENT)

    async def queued(task: str) -> Outcome:
        async with gate:
            return await run_task(model, http, task)

    async with asyncio.TaskGroup() as group:
        running = [group.create_task(queued(task)) for task in tasks]
    return [r.result() for r in running]


def _refusal(tasks: list[str]) -> str | None:
    if not tasks:
        return "give at least one task"
    if len(tasks) > MAX_TASKS:
        return f"at most {MAX_TASKS} tasks per call, not {len(tasks)}: split them up"
    for number, task in enumerate(tasks, start=1):
        if not task.strip():
            return f"task {number} is empty"
        if len(task) > MAX_TASK_CHARS:
            return f"task {number} is longer than {MAX_TASK_CHARS} characters"
    return None


@tool(name="spawn_agents", context=True)
async def spawn_agents(tasks: list[str], tool_context: StrandsToolContext) -> dict[str, Any]:
    """Run independent tasks in parallel, each by a fresh sub-agent that can fetch web pages.

    Use it for work that splits into parts that do not depend on each other (read several
    pages, check several sources). Each sub-agent sees only its own task text, so make every
    task self-contained. Up to 8 run at once, the rest wait their turn. Results come back in
    the order of the tasks, each marked ok or error.

    Args:
        tasks: 1 to 24 self-contained task descriptions, each at most 4000 characters.
    """
    ctx: ToolContext = turn_context(tool_context)
    if ctx.model is None:
        return failed("spawn_agents is not available in this turn: it has no model to lend")
    if (refusal := _refusal(tasks)) is not None:
        return failed(refusal)
    http = make_http_tool(ctx.hub.settings.http_allow_hosts)
    outcomes = await run_tasks(ctx.model, http, [task.strip() for task in tasks])
    errors = sum(1 for o in outcomes if o.status == "error")
    summary = (
        f"{len(outcomes)} sub-agent task(s): {len(outcomes) - errors} ok, {errors} error. "
        "The results follow in task order."
    )
    return ok(summary, results=[o.as_json(i) for i, o in enumerate(outcomes, start=1)])


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [spawn_agents]


hinted("spawn", spawn_agents)
