"""A conversation as a client keeps it: the messages it sends whole with each turn, and the one
recorder of what a turn adds to them.

The hub keeps no history: each turn's body holds the conversation so far. Sent back as plain
text, earlier replies teach a small model to answer without its tools (it imitates the
history, and invents the readings a tool would have given); so a turn is kept as the tool calls
it made, their results and then its text (docs/http-api.md, one chat turn)::

    {"role": "assistant", "content": [{"toolUse": {toolUseId, name, input}}, ...]}
    {"role": "user", "content": [{"toolResult": {toolUseId, status, content: [{text}]}}, ...]}
    {"role": "assistant", "content": "the reply's text"}

Every call of the turn is in the one assistant message, every result in the user message after
it, whichever model round made them; each result's text is cut to ``RESULT_CHARS_KEPT`` so a
long conversation stays small. The TUI and ``tiny-hub chat`` both record with
:class:`TurnRecorder`, and show or export a conversation through :func:`readable`. This module
imports nothing of the hub but the contracts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict, TypeGuard

from hub import contracts as c

RESULT_CHARS_KEPT = 2000
INPUT_CHARS_KEPT = 4000
STRING_CHARS_KEPT = 500  # each string of an input longer than INPUT_CHARS_KEPT
NO_RESULT = "(no result: the turn ended before the tool answered)"
TOOL_NAME = re.compile(c.TOOL_NAME_PATTERN)
TOOL_USE_ID = re.compile(c.TOOL_USE_ID_PATTERN)

Role = Literal["user", "assistant", "system"]
Status = Literal["success", "error"]


class TextBlock(TypedDict):
    text: str
    type: NotRequired[Literal["text"]]


class ToolUse(TypedDict):
    toolUseId: str
    name: str
    input: dict[str, Any]


class ToolUseBlock(TypedDict):
    toolUse: ToolUse


class ResultText(TypedDict):
    text: str


class ToolResult(TypedDict):
    toolUseId: str
    status: Status
    content: list[ResultText]


class ToolResultBlock(TypedDict):
    toolResult: ToolResult


Block = TextBlock | ToolUseBlock | ToolResultBlock


class HistoryMessage(TypedDict):
    """One message of ``/api/chat``'s body as a client keeps it: plain text, or blocks."""

    role: Role
    content: str | list[Block]


@dataclass
class _Call:
    use: ToolUse
    result: ToolResult | None = None
    said: list[str] = field(default_factory=list)
    """What the client did about it (a client tool), after the hub's result."""


@dataclass
class TurnRecorder:
    """Fed every SSE event of one turn, in order (:meth:`feed`); :meth:`messages` are then
    what the turn adds to the history. A call without a result (the turn was stopped, or the
    hub went away) is left out, its call too: a call must be answered in the history."""

    result_chars: int = RESULT_CHARS_KEPT
    texts: list[str] = field(default_factory=list)
    """The reply's text, one segment per stretch between tool calls."""
    _calls: list[_Call] = field(default_factory=list)
    _after_call: bool = True

    @property
    def text(self) -> str:
        return "\n\n".join(t for t in self.texts if t.strip())

    def feed(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == c.EV_BLOCK_DELTA and isinstance(event.get(c.DELTA_TEXT), str):
            if self._after_call:
                self.texts.append("")
                self._after_call = False
            self.texts[-1] += event[c.DELTA_TEXT]
        elif kind == c.EV_BEFORE_TOOL and isinstance(event.get("toolCall"), Mapping):
            self._called(event["toolCall"])
        elif kind == c.EV_AFTER_TOOL and isinstance(event.get("toolResult"), Mapping):
            self._answered(event["toolResult"])
        elif kind == c.EV_TOOL_RESULT_BLOCK and isinstance(event.get("toolResultBlock"), Mapping):
            self._answered(event["toolResultBlock"])

    def client_did(self, tool_use_id: str, text: str) -> None:
        """Add what the client did for a client tool's call (``noted on this device``, ``this
        terminal cannot vibrate``) to its result: the model reads it in the next turn."""
        call = next((c for c in self._calls if c.use["toolUseId"] == tool_use_id), None)
        if call is not None and text.strip():
            call.said.append(text.strip())

    def messages(self) -> list[HistoryMessage]:
        """The turn's calls, their results, then its text; none of those it did not have. A
        turn of more calls than a message may hold keeps its last ones: what led to the
        reply."""
        answered = [call for call in self._calls if call.result is not None]
        answered = answered[-c.MAX_TOOL_BLOCKS :]
        out: list[HistoryMessage] = []
        if answered:
            uses: list[Block] = [ToolUseBlock(toolUse=call.use) for call in answered]
            results: list[Block] = [ToolResultBlock(toolResult=self._kept(c)) for c in answered]
            out += [
                HistoryMessage(role="assistant", content=uses),
                HistoryMessage(role="user", content=results),
            ]
        if self.text:
            out.append(HistoryMessage(role="assistant", content=self.text))
        return out

    def _called(self, call: Mapping[str, Any]) -> None:
        self._after_call = True
        use_id, name = call.get("toolUseId"), call.get("name")
        if not (isinstance(use_id, str) and TOOL_USE_ID.fullmatch(use_id)):
            return  # an id the hub would refuse: the call cannot be sent back
        if not (isinstance(name, str) and TOOL_NAME.fullmatch(name)):
            return  # a name the model made up that no tool has
        self._calls.append(_Call(ToolUse(toolUseId=use_id, name=name, input=_input(call))))

    def _answered(self, result: Mapping[str, Any]) -> None:
        """The first call of that id still waiting gets the result (Ollama's ids are the
        tool's name, so two calls of one tool share one); a repeat (afterToolCallEvent, then
        toolResultBlock) changes nothing."""
        use_id = result.get("toolUseId")
        call = next(
            (c for c in self._calls if c.use["toolUseId"] == use_id and c.result is None), None
        )
        if call is None:
            return
        status: Status = "success" if result.get("status") == "success" else "error"
        text = result_text(result.get("content"))
        if status == "error" and not text and isinstance(result.get("error"), str):
            text = result["error"]
        call.result = ToolResult(toolUseId=call.use["toolUseId"], status=status, content=[])
        call.result["content"].append(ResultText(text=text))

    def _kept(self, call: _Call) -> ToolResult:
        assert call.result is not None
        text = "\n".join([call.result["content"][0]["text"], *call.said]).strip()
        return {**call.result, "content": [ResultText(text=clip(text, self.result_chars))]}


def result_text(content: Any) -> str:
    """A result's content as the text kept: text as it is, JSON written out, an image said."""
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif "json" in block:
            parts.append(json.dumps(block["json"], ensure_ascii=False, default=str))
        elif "image" in block:
            parts.append("(an image)")
    return "\n".join(parts)


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    note = f" … ({len(text)} characters in all)"
    return text[: max(0, limit - len(note))] + note


def _input(call: Mapping[str, Any]) -> dict[str, Any]:
    """The call's input, within what the hub takes back and small: an object (a model that
    sent something else called with nothing), its long strings cut when it is large."""
    value = call.get("input")
    if not isinstance(value, dict) or _depth(value) > c.MAX_TOOL_INPUT_DEPTH:
        return {}
    if _size(value) <= INPUT_CHARS_KEPT:
        return value
    cut = _cut_strings(value)
    return cut if isinstance(cut, dict) and _size(cut) <= INPUT_CHARS_KEPT else {}


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str))


def _cut_strings(value: Any) -> Any:
    if isinstance(value, str):
        return clip(value, STRING_CHARS_KEPT)
    if isinstance(value, dict):
        return {key: _cut_strings(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_cut_strings(inner) for inner in value]
    return value


def _depth(value: Any) -> int:
    pending: list[tuple[Any, int]] = [(value, 0)]
    deepest = 0
    while pending:
        item, level = pending.pop()
        inner = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if inner is None:
            continue
        deepest = max(deepest, level + 1)
        pending.extend((each, level + 1) for each in inner)
    return deepest


# --- reading a history --------------------------------------------------------------------------


def blocks_of(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def message_text(message: Mapping[str, Any]) -> str:
    """A message's words: its content, or the text blocks of a content of blocks (a message of
    tool calls or results has none)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [b["text"] for b in blocks_of(message) if isinstance(b.get("text"), str)]
    return " ".join(texts)


def is_tool_message(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` only carries tool calls or results: no words of its own."""
    blocks = blocks_of(message)
    has_tools = any(c.BLOCK_TOOL_USE in b or c.BLOCK_TOOL_RESULT in b for b in blocks)
    return has_tools and not message_text(message).strip()


def tool_uses(message: Mapping[str, Any]) -> list[ToolUse]:
    return [b[c.BLOCK_TOOL_USE] for b in blocks_of(message) if _is_use(b.get(c.BLOCK_TOOL_USE))]


def tool_results(message: Mapping[str, Any]) -> list[ToolResult]:
    found = (b.get(c.BLOCK_TOOL_RESULT) for b in blocks_of(message))
    return [r for r in found if _is_result(r)]


def _is_use(value: Any) -> TypeGuard[ToolUse]:
    return (
        isinstance(value, dict)
        and isinstance(value.get("toolUseId"), str)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("input"), dict)
    )


def _is_result(value: Any) -> TypeGuard[ToolResult]:
    return (
        isinstance(value, dict)
        and isinstance(value.get("toolUseId"), str)
        and value.get("status") in c.TOOL_RESULT_STATUSES
        and isinstance(value.get("content"), list)
    )


@dataclass(frozen=True)
class ToolRun:
    """One tool call of the history, with what it answered: how a person reads it."""

    name: str
    input: dict[str, Any]
    status: str
    result: str


@dataclass(frozen=True)
class Said:
    """What a person reads of the history: who spoke, the words, and the tools that ran just
    before them (a turn that ran tools and said nothing is a Said with no text).
    ``index``: the history's message it stands for (the last one of its tool messages)."""

    role: str
    text: str
    index: int
    tools: tuple[ToolRun, ...] = ()


def readable(messages: Sequence[Mapping[str, Any]]) -> list[Said]:
    """The history as a person reads it: each message with words, in order, and each
    stretch of tool calls and results folded into the reply that follows it."""
    said: list[Said] = []
    runs: list[ToolRun] = []
    last_tool_message = 0
    calls: dict[str, list[ToolUse]] = {}
    for index, message in enumerate(messages):
        role = _role(message)
        blocks = blocks_of(message)
        for use in tool_uses(message):
            calls.setdefault(use["toolUseId"], []).append(use)
        for result in tool_results(message):
            waiting = calls.get(result["toolUseId"]) or []
            call = waiting.pop(0) if waiting else None
            name, given = (call["name"], call["input"]) if call else ("a tool", {})
            runs.append(ToolRun(name, given, result["status"], result_text(result["content"])))
        if any(c.BLOCK_TOOL_USE in b or c.BLOCK_TOOL_RESULT in b for b in blocks):
            last_tool_message = index
        text = message_text(message)
        if is_tool_message(message):
            continue
        if role == "assistant":
            said.append(Said(role, text, index, tuple(runs)))
        else:
            if runs:  # tools ran, and the turn said nothing
                said.append(Said("assistant", "", last_tool_message, tuple(runs)))
            said.append(Said(role, text, index))
        runs = []
    if runs:
        said.append(Said("assistant", "", last_tool_message, tuple(runs)))
    return said


def tools_line(runs: Iterable[ToolRun]) -> str:
    """The tools of a reply on one line: ``used recall, learn (failed)``."""
    names = [run.name + (" (failed)" if run.status == "error" else "") for run in runs]
    return f"used {', '.join(names)}" if names else ""


def paired(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with every tool block the hub would refuse left out: a call not answered
    in the user message right after it, a result whose call is not in the message right
    before, a block in a message of the other role, and then a message left with no block.
    What a client runs on a history it edited (a range of messages dropped or compacted) or
    read from disk, so the hub never refuses it."""
    kept = [dict(m) for m in messages]
    while True:
        fixed = _pair_once(kept)
        if fixed == kept:
            return kept
        kept = fixed


def _pair_once(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # For each message, the ids of its tool blocks that have their partner next to them.
    keep_uses: list[list[str]] = [[] for _ in messages]
    keep_results: list[list[str]] = [[] for _ in messages]
    for index, message in enumerate(messages[:-1]):
        after = messages[index + 1]
        if _role(message) != "assistant" or _role(after) != "user":
            continue
        results = [r["toolUseId"] for r in tool_results(after)]
        for use in tool_uses(message):
            if use["toolUseId"] in results:
                results.remove(use["toolUseId"])
                keep_uses[index].append(use["toolUseId"])
                keep_results[index + 1].append(use["toolUseId"])
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            out.append(message)
            continue
        wanted = {c.BLOCK_TOOL_USE: keep_uses[index], c.BLOCK_TOOL_RESULT: keep_results[index]}
        blocks: list[Any] = []
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = next((k for k in wanted if k in block), None)
            if kind is not None:
                inner = block[kind]
                well_formed = _is_use(inner) if kind == c.BLOCK_TOOL_USE else _is_result(inner)
                if not well_formed or inner["toolUseId"] not in wanted[kind]:
                    continue
                wanted[kind].remove(inner["toolUseId"])
            blocks.append(block)
        if blocks:
            out.append({**message, "content": blocks})
    return out


def _role(message: Mapping[str, Any]) -> str:
    return str(message.get("role", ""))
