"""What the model that answers can and cannot do, in one or two sentences, where a newcomer
looks first: the empty chat, the empty memory screen and the model picker.

Built from /api/health's ``model`` (``provider`` and ``toolsCapable``), so it says what the hub
really runs, the embedded 1.5B's tools included. Where tools are missing, it names both ways to
get them, in the words ``tiny-hub doctor`` uses (``hub.contracts.HOW_TO_GET_TOOLS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from hub import contracts as c

FULL_AGENT_COMMAND = c.OLLAMA_TOOLS_COMMAND
GET_TOOLS = f"For tools, {c.HOW_TO_GET_TOOLS}. The hub uses either by itself."
WHAT_TOOLS_DO = "save memories, reach your devices or call other tools"


def can_call_tools(model: Mapping[str, Any]) -> bool:
    """What /api/health says, for every provider: the embedded 1.5B calls tools too."""
    return bool(model.get("toolsCapable"))


def tools_word(capable: object) -> str:
    return "tools on" if capable else "tools off"


def model_words(model: Mapping[str, Any]) -> str:
    """The model in a few words, as the header, the status line and the picker all say it:
    ``embedded Qwen2.5-Coder-1.5B-Instruct · offline, tools on``."""
    offline = "offline, " if model.get("provider") == c.PROVIDER_EMBEDDED else ""
    return (
        f"{model.get('provider', '?')} {model.get('id') or '(no id)'} · "
        f"{offline}{tools_word(can_call_tools(model))}"
    )


def model_guidance(model: Mapping[str, Any]) -> str:
    """What the model can and cannot do, and (when it cannot call tools) both ways to get one
    that can. Empty while the model is not known yet."""
    if not model:
        return ""
    name = str(model.get("id") or "the model")
    embedded = model.get("provider") == c.PROVIDER_EMBEDDED
    if can_call_tools(model) and embedded:
        return (
            f"You are talking to {name}, an embedded model that runs offline on this machine: "
            f"it can {WHAT_TOOLS_DO} when you ask. A turn that calls a tool takes a while on "
            "a small machine; the status line shows what it is doing."
        )
    if can_call_tools(model):
        return f"{name} can call tools: it can {WHAT_TOOLS_DO} when you ask."
    if embedded:
        return (
            f"You are talking to the small embedded model ({name}): it chats offline but "
            f"cannot {WHAT_TOOLS_DO}. {GET_TOOLS}"
        )
    return f"{name} chats but cannot call tools, so it cannot {WHAT_TOOLS_DO}. {GET_TOOLS}"


def memory_guidance(model: Mapping[str, Any]) -> str:
    """The empty memory screen's word: facts come from the companion's memory tool."""
    if not model or can_call_tools(model):
        return "Tell your companion something about yourself: what it learns shows up here."
    return (
        f"{model.get('id') or 'This model'} cannot save memories (saving one is a tool call). "
        f"{GET_TOOLS}"
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
