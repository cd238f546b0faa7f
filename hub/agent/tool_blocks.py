"""The tool calls and results a client sends back in its history: read, checked, paired.

A small model shown a history of plain-text answers imitates answering directly and stops
calling tools; shown the calls and results that produced those answers, it goes on calling
them. So a chat body's assistant message may hold ``{"toolUse": {toolUseId, name, input}}``
blocks and the user message after it ``{"toolResult": {toolUseId, status, content}}`` blocks
(docs/http-api.md, one chat turn). Each is held to the contract's bounds (hub/contracts.py), and
the pairing strands and every provider require is checked before the turn: the calls of an
assistant message are answered, each once, in the user message right after it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from hub import contracts as c
from hub.agent.attachments import BlockError
from hub.agent.turn import ChatMessage, ToolAnswer, ToolCall

TOOL_NAME = re.compile(c.TOOL_NAME_PATTERN)
TOOL_USE_ID = re.compile(c.TOOL_USE_ID_PATTERN)
USE_KEYS = frozenset({"toolUseId", "name", "input"})
RESULT_KEYS = frozenset({"toolUseId", "status", "content"})


def tool_block(where: str, block: Any, role: str) -> ToolCall | ToolAnswer | None:
    """The call or result in one content block of a ``role`` message, or None for a block of
    another kind; BlockError naming the field for one that is not what it claims."""
    if not isinstance(block, dict):
        return None
    if c.BLOCK_TOOL_USE in block:
        _only_key(where, block, c.BLOCK_TOOL_USE)
        if role != "assistant":
            raise BlockError(
                f"{where}: a toolUse block belongs in an assistant message (the model's call)"
            )
        return _call(f"{where}.toolUse", block[c.BLOCK_TOOL_USE])
    if c.BLOCK_TOOL_RESULT in block:
        _only_key(where, block, c.BLOCK_TOOL_RESULT)
        if role != "user":
            raise BlockError(
                f"{where}: a toolResult block belongs in a user message (the one right after "
                "the assistant message whose call it answers)"
            )
        return _answer(f"{where}.toolResult", block[c.BLOCK_TOOL_RESULT])
    return None


def _only_key(where: str, block: dict[str, Any], key: str) -> None:
    """A tool block is that one key (and a ``type`` naming it, which some clients add)."""
    extra = set(block) - {key, "type"}
    if extra or block.get("type", key) != key:
        named = ", ".join(sorted(extra)) or f"type {block.get('type')!r}"
        raise BlockError(f"{where}: a {key} block holds only {key} (it also has {named})")


def _call(where: str, raw: Any) -> ToolCall:
    fields = _fields(where, raw, USE_KEYS, "{toolUseId, name, input}")
    call_id = _tool_use_id(where, fields.get("toolUseId"))
    name = fields.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise BlockError(f"{where}.name must be 1-64 letters, digits, _ or -")
    tool_input = fields.get("input")
    if not isinstance(tool_input, dict):
        raise BlockError(f"{where}.input must be a JSON object (the tool's arguments)")
    if _depth(tool_input) > c.MAX_TOOL_INPUT_DEPTH:
        raise BlockError(f"{where}.input is nested deeper than {c.MAX_TOOL_INPUT_DEPTH} levels")
    size = len(json.dumps(tool_input, separators=(",", ":"), ensure_ascii=False))
    if size > c.MAX_TOOL_INPUT_CHARS:
        raise BlockError(
            f"{where}.input is longer than {c.MAX_TOOL_INPUT_CHARS} characters as JSON ({size})"
        )
    return ToolCall(call_id, name, tool_input)


def _answer(where: str, raw: Any) -> ToolAnswer:
    fields = _fields(where, raw, RESULT_KEYS, "{toolUseId, status, content}")
    call_id = _tool_use_id(where, fields.get("toolUseId"))
    status = fields.get("status", "success")
    if status not in c.TOOL_RESULT_STATUSES:
        raise BlockError(f"{where}.status must be one of {', '.join(c.TOOL_RESULT_STATUSES)}")
    content = fields.get("content")
    if not isinstance(content, list) or len(content) > c.MAX_TOOL_BLOCKS:
        raise BlockError(
            f"{where}.content must be an array of at most {c.MAX_TOOL_BLOCKS} "
            '{"text"} or {"json"} blocks'
        )
    parts = [_result_part(f"{where}.content[{i}]", part) for i, part in enumerate(content)]
    text = "\n".join(parts)
    if len(text) > c.MAX_TOOL_RESULT_CHARS:
        raise BlockError(
            f"{where}.content is longer than {c.MAX_TOOL_RESULT_CHARS} characters ({len(text)})"
        )
    return ToolAnswer(call_id, text, status)


def _fields(where: str, raw: Any, keys: frozenset[str], shape: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise BlockError(f"{where} must be an object {shape}")
    if unknown := sorted(set(raw) - keys):
        raise BlockError(f"{where} has fields it does not take: {', '.join(unknown)}")
    return raw


def _tool_use_id(where: str, value: Any) -> str:
    if not isinstance(value, str) or not TOOL_USE_ID.fullmatch(value):
        raise BlockError(
            f"{where}.toolUseId must be 1-{c.MAX_TOOL_USE_ID_CHARS} visible characters, no spaces"
        )
    return value


def _result_part(where: str, part: Any) -> str:
    """One block of a result's content, as the text the model reads: text as it is, JSON
    written out (every provider takes text; not all take JSON)."""
    if isinstance(part, dict) and set(part) == {"text"} and isinstance(part["text"], str):
        return str(part["text"])
    if isinstance(part, dict) and set(part) == {"json"}:
        if _depth(part["json"]) > c.MAX_TOOL_INPUT_DEPTH:
            raise BlockError(f"{where}.json is nested deeper than {c.MAX_TOOL_INPUT_DEPTH} levels")
        return json.dumps(part["json"], ensure_ascii=False)
    raise BlockError(f'{where} must be {{"text": string}} or {{"json": value}}')


def _depth(value: Any) -> int:
    """How deeply ``value`` nests arrays and objects (a scalar is 0), without recursing."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            pending.extend((inner, level + 1) for inner in item.values())
        elif isinstance(item, list):
            pending.extend((inner, level + 1) for inner in item)
        else:
            continue
        deepest = max(deepest, level + 1)
    return deepest


def check_pairs(dialogue: Sequence[tuple[int, ChatMessage]]) -> None:
    """BlockError unless each assistant message's calls are answered, each once, by the user
    message right after it, and each answer has its call there. ``dialogue``: the messages
    that are not system ones, with their index in the body. An id may repeat (Ollama's is the
    tool's name): a call counts once per block."""
    seen: set[str] = set()
    waiting: Counter[str] = Counter()  # the calls of the message before, not yet answered
    asked_at = 0
    for index, message in dialogue:
        where = f"messages[{index}]"
        if waiting and not message.tool_answers:
            raise _unanswered(where, asked_at, waiting)
        for answer in message.tool_answers:
            if waiting[answer.id] > 0:
                waiting[answer.id] -= 1
                continue
            if answer.id in seen:
                raise BlockError(
                    f"{where}: the toolResult for {answer.id} answers no call of the assistant "
                    "message right before it (each call is answered once, in the user message "
                    "right after the call)"
                )
            raise BlockError(
                f"{where}: the toolResult for {answer.id} matches no earlier toolUse block"
            )
        if +waiting:
            raise _unanswered(where, asked_at, waiting)
        waiting = Counter(call.id for call in message.tool_calls)
        seen |= set(waiting)
        asked_at = index


def _unanswered(where: str, asked_at: int, waiting: Counter[str]) -> BlockError:
    return BlockError(
        f"{where}: each toolUse of messages[{asked_at}] needs its toolResult in the user "
        f"message right after it; not answered: {', '.join(sorted(+waiting))}"
    )
