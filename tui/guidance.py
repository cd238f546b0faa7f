"""What the model that answers can and cannot do, in one or two sentences, where a newcomer
looks first: the empty chat, the empty memory screen and the model picker.

Built from /api/health's ``model`` (``provider`` and ``toolsCapable``), so it says what the hub
really runs. The one command that gets the full agent is the one ``tiny-hub doctor`` gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from hub import contracts as c

FULL_AGENT_COMMAND = "ollama pull qwen3"
GET_FULL_AGENT = (
    f"For the full agent, install Ollama and run `{FULL_AGENT_COMMAND}` (or another "
    "tool-capable model): the hub switches to it by itself."
)
WHAT_TOOLS_DO = "save memories, reach your devices or call other tools"


def can_call_tools(model: Mapping[str, Any]) -> bool:
    return model.get("provider") != c.PROVIDER_EMBEDDED and bool(model.get("toolsCapable"))


def model_guidance(model: Mapping[str, Any]) -> str:
    """What the model can and cannot do, and (when it cannot call tools) how to get one that
    can. Empty while the model is not known yet."""
    if not model:
        return ""
    name = str(model.get("id") or "the model")
    if model.get("provider") == c.PROVIDER_EMBEDDED:
        return (
            f"You are talking to the small embedded model ({name}): it chats offline but "
            f"cannot {WHAT_TOOLS_DO}. {GET_FULL_AGENT}"
        )
    if not model.get("toolsCapable"):
        return f"{name} chats but cannot call tools, so it cannot {WHAT_TOOLS_DO}. {GET_FULL_AGENT}"
    return f"{name} can call tools: it can {WHAT_TOOLS_DO} when you ask."


def memory_guidance(model: Mapping[str, Any]) -> str:
    """The empty memory screen's word: facts come from the companion's memory tool."""
    if not model or can_call_tools(model):
        return "Tell your companion something about yourself: what it learns shows up here."
    return (
        f"{model.get('id') or 'This model'} cannot save memories (saving one is a tool call). "
        f"{GET_FULL_AGENT}"
    )


class EmptyChat(Static):
    """A new conversation's first screen: what the model can do, and how to get more."""

    DEFAULT_CSS = """
    EmptyChat { height: auto; margin: 1 2; color: $text-muted; }
    """

    model: reactive[dict[str, Any]] = reactive(dict)

    def render(self) -> Text:
        said = model_guidance(self.model)
        if not said:
            return Text(
                "Say something to start. What the model can do shows here once the hub "
                "says which model answers."
            )
        return Text(f"Say something to start.\n\n{said}")
