"""What a small on-device model is shown of a conversation: strands' messages flattened into
chat-template messages whose content is one string, in the order that lets the runner keep
what it read (see ``EmbeddedModel``), a tool's result folded into the question it answers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from strands.types.content import Messages

from hub.agent.prompt import for_the_answer

RESULT_CHARS = 1500


def result_text(result: Mapping[str, Any]) -> str:
    """A tool result as one plain string: its text, which the tool writes for the model; its
    JSON (written for clients: ids, timestamps, every field) only when there is no text. The
    small model reads every token of it, and answers better from the sentence."""
    content = result.get("content", [])
    parts = [str(item["text"]) for item in content if "text" in item]
    if not any(p.strip() for p in parts):
        parts = [
            json.dumps(item["json"], ensure_ascii=False, default=str)
            for item in content
            if "json" in item
        ]
    text = " ".join(parts).strip() or str(result.get("status", ""))
    return text[:RESULT_CHARS]


def block_text(block: Mapping[str, Any], names: dict[str, str]) -> str:
    if "text" in block:
        return str(block["text"])
    if "toolUse" in block:
        use = block["toolUse"]
        names[str(use.get("toolUseId", ""))] = str(use["name"])
        arguments = json.dumps(use.get("input", {}), ensure_ascii=False)
        return f"{CALLED}{use['name']} with {arguments}.)"
    if "toolResult" in block:
        result = block["toolResult"]
        name = names.get(str(result.get("toolUseId", "")), "the tool")
        return f"What the tool {name} returned: {for_the_answer(result_text(result))}"
    return ""


CALLED = "(I called the tool "
# Spoken to the person: told only to answer from the result, the 1.5B wrote about "the user"
# ("The tool learned that the user's sister is called Ana").
ANSWER_FROM_RESULT = (
    "Answer me in one short sentence from this result, quoting its numbers and names and "
    'speaking to me as "you".'
)


def flatten_messages(
    messages: Messages, system_prompt: str | None, lasting_note: str = "", turn_note: str = ""
) -> list[dict[str, str]]:
    """Strands messages → chat-template messages whose content is one string.

    A tool's result is folded into the question it answers, as plain text, with the ask to
    answer from it: small models ground their answer on a result in the user's own message far
    better than on a turn of its own (see :mod:`hub.agent.small_tools`). A history that holds
    tool blocks from an earlier turn on another model renders the same way.

    The order keeps what stays the same first, so the runner's cache serves it (see
    ``runner/prefix_cache.py``): the system prompt (the template renders the tools right after
    it), then ``lasting_note`` (what changes rarely: the person's remembered facts, oldest
    first, so a new one joins the end), then the conversation, and ``turn_note`` (what this
    message brings: memories that match it, related tinys) as a system message right before the
    question.
    """
    flat: list[dict[str, str]] = []
    if system_prompt:
        flat.append({"role": "system", "content": system_prompt})
    if lasting_note:
        flat.append({"role": "system", "content": lasting_note})
    names: dict[str, str] = {}
    called = False  # the message before ended with a call
    for message in messages:
        parts = [block_text(block, names) for block in message["content"]]
        content = "\n".join(p for p in parts if p)
        results = all("toolResult" in b for b in message["content"]) and message["content"]
        if results and len(flat) >= 2 and called:
            flat.pop()  # the call (and any words before it) becomes the question's answer
            if flat[-1]["role"] == "user":
                question = flat.pop()["content"]
                content = f"{question}\n\n{content}\n\n{ANSWER_FROM_RESULT}"
        flat.append({"role": message["role"], "content": content})
        called = bool(message["content"]) and "toolUse" in message["content"][-1]
    if turn_note and flat and flat[-1]["role"] == "user":
        flat.insert(len(flat) - 1, {"role": "system", "content": turn_note})
    return flat


def after_tool_result(messages: Messages) -> bool:
    return bool(messages) and any("toolResult" in b for b in messages[-1]["content"])


def last_user_text(messages: Messages) -> str:
    for message in reversed(messages):
        if message["role"] == "user":
            texts = [b["text"] for b in message["content"] if "text" in b]
            if texts:
                return " ".join(texts)
    return ""
